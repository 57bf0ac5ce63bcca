//go:build unix

package mcp_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/contextd/contextd/internal/mcp"
)

// A helper a stdio server started and left running is stopped with it.
func TestStdioCloseStopsWhatTheServerStarted(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	pidFile := filepath.Join(t.TempDir(), "helper.pid")
	srv := fakeServer("spawner")
	srv.Env["HELPER_PID_FILE"] = pidFile
	sess, err := mcp.Connect(ctx, srv, &mcp.Options{TerminateDuration: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sess.ListResources(ctx); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(string(b))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	if !running(pid) {
		t.Fatalf("the helper (pid %d) is not running before Close: the test proves nothing", pid)
	}
	_ = sess.Close()
	deadline := time.Now().Add(5 * time.Second)
	for running(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("the helper (pid %d) the server started still runs 5 s after Close", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// running reports whether pid is a live process (a zombie waiting for its
// reaper is not).
func running(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true // no /proc: kill 0 is all there is
	}
	// "pid (comm) S ...": the state follows the last ')'.
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) {
		return stat[i+2] != 'Z'
	}
	return true
}
