package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contextd/contextd/internal/config"
)

// A config file other users can read must not hold credentials unnoticed:
// with the token written in it, anyone who reads it can call the daemon.
func TestCredentialsInAFileOthersCanReadAreWarnedOf(t *testing.T) {
	t.Setenv("SEC2_TEST_TOKEN", "from-the-environment-0123456789")
	for _, tc := range []struct {
		name, body string
		mode       os.FileMode
		warn       bool
	}{
		{"token written, 0644", "auth: {token: written-in-the-file-0123456789}\n", 0o644, true},
		{"token written, 0600", "auth: {token: written-in-the-file-0123456789}\n", 0o600, false},
		{"token from ${VAR}, 0644", "auth: {token: \"${SEC2_TEST_TOKEN}\"}\n", 0o644, false},
		{"header written, 0644", "mcpServers:\n  docs:\n    url: https://docs.example/mcp\n    headers: {Authorization: \"Bearer hdr-secret-0123456789\"}\n", 0o644, true},
		{"nothing secret, 0644", "mcpServers:\n  docs:\n    url: https://docs.example/mcp?page=2\n", 0o644, false},
	} {
		p := filepath.Join(t.TempDir(), "contextd.yaml")
		if err := os.WriteFile(p, []byte(tc.body), tc.mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, tc.mode); err != nil { // whatever the umask
			t.Fatal(err)
		}
		c, err := config.Load(p)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		warned := false
		for _, w := range c.Warnings {
			if strings.Contains(w, "readable by others") {
				warned = true
				if strings.Contains(w, "0123456789") {
					t.Errorf("%s: the warning quotes the credential: %s", tc.name, w)
				}
			}
		}
		if warned != tc.warn {
			t.Errorf("%s: warned %v, want %v (%q)", tc.name, warned, tc.warn, c.Warnings)
		}
	}
}
