//go:build !windows

package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestUnixSocketIsPrivateWhateverTheUmask(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	sock := filepath.Join(t.TempDir(), "c.sock")
	l, err := listenOn("unix://" + sock)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(sock)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 || fi.Mode()&os.ModeSocket == 0 {
		t.Errorf("socket mode %v, want a socket with 0600", fi.Mode())
	}
	// The log names the configured path, not where it was bound first.
	if got := l.Addr().String(); got != sock {
		t.Errorf("listener address %q, want %q", got, sock)
	}
	if entries, _ := os.ReadDir(filepath.Dir(sock)); len(entries) != 1 {
		t.Errorf("listen left %d entries next to the socket", len(entries))
	}
	l.Close()
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Errorf("socket still there after Close: %v", err)
	}
	// A file that is not a socket is never replaced.
	if err := os.WriteFile(sock, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := listenOn("unix://" + sock); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Errorf("listen over a regular file: %v", err)
	}
	if b, _ := os.ReadFile(sock); string(b) != "keep me" {
		t.Error("listen replaced a regular file")
	}
}
