//go:build unix

package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/contextd/contextd/internal/config"
)

// A file the tls section names is read only if it is a regular file of a
// bounded size: /dev/zero was read without end (130 MB a second, SIGTERM
// ignored meanwhile) and a FIFO nobody writes blocked the start for good.
func TestTLSFilesAreRegularAndBounded(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.pem")
	if err := os.WriteFile(big, make([]byte, config.MaxTLSFileBytes+1), 0o600); err != nil {
		t.Fatal(err)
	}
	pem := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(pem, []byte("-----BEGIN CERTIFICATE-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{"/dev/zero": "not a regular file", fifo: "not a regular file", big: "over", filepath.Join(dir, "none"): "no such file"} {
		done := make(chan error, 1)
		go func() { _, err := config.ReadTLSFile(path); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), path) {
				t.Errorf("%s: err = %v; want %q, naming the path", path, err, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: still reading after 5 s", path)
		}
	}
	if b, err := config.ReadTLSFile(pem); err != nil || string(b) != "-----BEGIN CERTIFICATE-----\n" {
		t.Errorf("a regular file: %q, %v", b, err)
	}
}

// A TLS key others can read is warned of, as a token file is.
func TestTLSKeysReadableByOthersAreWarnedAbout(t *testing.T) {
	dir := t.TempDir()
	for name, mode := range map[string]os.FileMode{"srv.pem": 0o644, "srv.key": 0o644, "cli.pem": 0o644, "cli.key": 0o600} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(dir, name), mode); err != nil {
			t.Fatal(err)
		}
	}
	c, err := config.Parse("c.yaml", []byte("tls: { cert_file: "+dir+"/srv.pem, key_file: "+dir+"/srv.key, client_cert_file: "+dir+"/cli.pem, client_key_file: "+dir+"/cli.key }\n"), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], "tls.key_file is readable by others") {
		t.Errorf("warnings %q; want one, for tls.key_file", c.Warnings)
	}
}
