//go:build unix

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A config file that is a FIFO (fed once, at start) or is swapped for a link
// to a device neither hangs the reload nor the daemon's stop behind it: the
// watcher blocked in open(2) on the FIFO for good, so SIGHUP reloaded
// nothing and serve never returned after it was told to stop; a link to
// /dev/zero would have been read until memory ran out.
func TestReloadDoesNotBlockOnAFIFOOrReadADevice(t *testing.T) {
	dir, state := t.TempDir(), t.TempDir()
	cfgPath := filepath.Join(dir, "contextd.yaml")
	if err := syscall.Mkfifo(cfgPath, 0o600); err != nil {
		t.Fatal(err)
	}
	body := fmt.Sprintf("listen: unix://%s\ndata_dir: %s\nembedder: glove\nmcpServers: {}\n", filepath.Join(state, "c.sock"), filepath.Join(state, "data"))
	go func() {
		f, err := os.OpenFile(cfgPath, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		f.WriteString(body)
		f.Close()
	}()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	logs := &lockedBuffer{}
	go func() { done <- run(ctx, []string{"serve", "--config", cfgPath}, io.Discard, logs) }()
	unblock := func() { // a writer lets a blocked open return
		if f, err := os.OpenFile(cfgPath, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	}
	defer unblock()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(logs.String(), "contextd serving") {
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start; logs:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	// SIGHUP: the FIFO is refused at once.
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	for !strings.Contains(logs.String(), "not a regular file") {
		if time.Now().After(deadline) {
			t.Fatalf("SIGHUP with a FIFO config: no refusal; logs:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Swapped for a link to /dev/zero: refused too, not read.
	if err := os.Remove(cfgPath); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", cfgPath); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	for strings.Count(logs.String(), "not a regular file") < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("SIGHUP with a config linked to /dev/zero: no refusal; logs:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Errorf("serve did not stop 15 s after it was told to; logs:\n%s", logs.String())
		os.Remove(cfgPath)
		syscall.Mkfifo(cfgPath, 0o600)
		unblock()
		<-done
	}
}
