package main

import (
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"

	"github.com/contextd/contextd/internal/config"
)

// clientCAs counts the certificates of tls.client_ca_file, so that serve
// can warn of a system bundle let in as client CAs.
func TestClientCAsCountsTheCertificates(t *testing.T) {
	dir := t.TempDir()
	var b []byte
	for range 12 {
		b = append(b, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("der")})...)
	}
	b = append(b, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte("der")})...)
	f := filepath.Join(dir, "bundle.pem")
	if err := os.WriteFile(f, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if n := clientCAs(config.TLS{ClientCAFile: f}); n != 12 {
		t.Errorf("clientCAs = %d, want 12", n)
	}
	if n := clientCAs(config.TLS{}); n != 0 || 12 <= maxClientCAs {
		t.Errorf("clientCAs of none = %d, maxClientCAs %d", n, maxClientCAs)
	}
}
