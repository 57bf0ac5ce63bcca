package mcp

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/contextd/contextd/internal/config"
)

// A stdio server that stops reading its stdin (wedged in its own work)
// lets the pipe fill; the go-sdk's writes do not heed a call's context, so
// every later call to it waited for good, and each request waiting on one
// held its turn. A write now fails after stdinWriteTimeout, the server is
// stopped, and every call returns.
func TestAServerThatStopsReadingStdinIsStopped(t *testing.T) {
	old := stdinWriteTimeout
	stdinWriteTimeout = 2 * time.Second
	t.Cleanup(func() { stdinWriteTimeout = old })
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	srv := config.Server{Name: "deaf", Transport: config.TransportStdio, Command: os.Args[0],
		Env: map[string]string{"CONTEXTD_FAKE_STDIO": "deaf"}}
	sess, err := Connect(ctx, srv, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = sess.proc.cmd.Process.Kill() // without the fix, Close would wait on the stuck write
		sess.Close()
	}()
	done := make(chan error, 1)
	go func() {
		big := strings.Repeat("x", 16<<10)
		for i := range 12 { // 12 × 16 KiB: more than a pipe holds
			rctx, rcancel := context.WithTimeout(ctx, time.Second)
			begun := time.Now()
			_, err := sess.Read(rctx, fmt.Sprintf("doc://%d/%s", i, big))
			rcancel()
			// The write fails after stdinWriteTimeout; the error can wait for
			// the server's stop (stdin closed, SIGTERM after 5 s), so allow
			// that and some scheduling slack (-race, a loaded machine).
			if took := time.Since(begun); err == nil || took > stdinWriteTimeout+8*time.Second {
				done <- fmt.Errorf("read %d: %v after %v; want an error within the write timeout", i, err, took)
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(90 * time.Second):
		t.Fatal("reads of a server that stopped reading its stdin still wait after 90 s")
	}
	select {
	case <-sess.proc.exited:
	case <-time.After(20 * time.Second): // stdin closed, then SIGTERM after 5 s
		t.Error("the server still runs")
	}
}
