//go:build !windows

package main

import (
	"fmt"
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

// A socket path that fits, in a directory deep enough that the private
// directory it is bound in first does not, fails saying how long the
// directory's path may be, not "bind: invalid argument"; a directory that
// long binds.
func TestALongSocketPathFailsSayingHowLongAPathMayBe(t *testing.T) {
	base := t.TempDir()
	most := maxSocketPath - bindOverhead
	if len(base)+2 > most {
		t.Fatalf("the test's directory %s is too long for this test", base)
	}
	fits := filepath.Join(base, strings.Repeat("d", most-len(base)-1))
	over := fits + "x"
	for _, d := range []string{fits, over} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	l, err := listenOn("unix://" + filepath.Join(fits, "c.sock"))
	if err != nil {
		t.Fatalf("listen in a directory of %d bytes, the most allowed: %v", len(fits), err)
	}
	l.Close()
	_, err = listenOn("unix://" + filepath.Join(over, "c.sock"))
	if want := fmt.Sprintf("may be at most %d", most); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("listen in a directory of %d bytes: err = %v, want one saying it %s", len(over), err, want)
	}
	long := filepath.Join(base, strings.Repeat("s", maxSocketPath))
	if _, err := listenOn("unix://" + long); err == nil || !strings.Contains(err.Error(), "over the") {
		t.Fatalf("listen at a %d-byte path: err = %v, want it too long", len(long), err)
	}
}
