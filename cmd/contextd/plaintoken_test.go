package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A token sent without TLS to an address off this machine can be read on
// the way: the CLI says so on stderr (and still sends it, as the daemon
// may sit on a trusted network). Loopback, a unix socket or TLS: nothing
// to say.
func TestThePlainTextTokenOffLoopbackIsWarnedOf(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "contextd.yaml")
	if err := os.WriteFile(cfg, []byte("auth:\n  token: 0123456789abcdef0123456789abcdef\nmcpServers: {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		addr string
		warn bool
	}{
		{"192.0.2.2:7878", true},
		{"[2001:db8::1]:7878", true},
		{"db.example:7878", true},
		{"127.0.0.1:7878", false},
		{"localhost:7878", false},
		{"[::1]:7878", false},
		{"unix://" + filepath.Join(dir, "s.sock"), false},
	} {
		var stderr bytes.Buffer
		c2, err := daemonClient(cfg, c.addr, &stderr)
		if err != nil {
			t.Fatalf("%s: %v", c.addr, err)
		}
		c2.Close()
		if got := strings.Contains(stderr.String(), "sending the token in plain text"); got != c.warn {
			t.Errorf("%s: warned %v; want %v (stderr %q)", c.addr, got, c.warn, stderr.String())
		}
	}
}
