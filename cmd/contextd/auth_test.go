package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/contextd/contextd/internal/config"
)

func TestServeRefusesAnOpenNonLoopbackListen(t *testing.T) {
	cfg := writeConfig(t, fmt.Sprintf("listen: 0.0.0.0:0\ndata_dir: %s\nmcpServers: {}\n", t.TempDir()))
	out := &syncWriter{w: &bytes.Buffer{}}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second) // a serve that starts stops here
	defer cancel()
	err := run(ctx, []string{"serve", "--config", cfg}, out, out)
	if err == nil || !strings.Contains(err.Error(), "allow_insecure_listen") {
		t.Fatalf("serve on 0.0.0.0 without auth: %v", err)
	}
}

// writePKI writes a CA, a server certificate for 127.0.0.1 and a client
// certificate, both signed by the CA, as PEM files in dir.
func writePKI(t *testing.T, dir string) {
	t.Helper()
	key := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	write := func(name, typ string, der []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	caKey := key()
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test ca"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	write("ca.pem", "CERTIFICATE", caDER)
	for i, name := range []string{"server", "client"} {
		k := key()
		c := &x509.Certificate{SerialNumber: big.NewInt(int64(i + 2)), Subject: pkix.Name{CommonName: name}, NotBefore: time.Now().Add(-time.Hour),
			NotAfter: time.Now().Add(time.Hour), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature}
		der, err := x509.CreateCertificate(rand.Reader, c, ca, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kder, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		write(name+".pem", "CERTIFICATE", der)
		write(name+"-key.pem", "EC PRIVATE KEY", kder)
	}
}

// The daemon requires the token and a client certificate over TLS; query
// and servers find the address, token and certificates in the same config.
func TestCLIClientsUseTheConfigsTokenAndTLS(t *testing.T) {
	pki := t.TempDir()
	writePKI(t, pki)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	t.Setenv("CTX_TEST_TOKEN", "0123456789abcdef0123456789abcdef")
	config := func(auth, clientCert string) string {
		return writeConfig(t, fmt.Sprintf(`
listen: %s
data_dir: %s
%s
tls:
  cert_file: %[4]s/server.pem
  key_file: %[4]s/server-key.pem
  client_ca_file: %[4]s/ca.pem
  ca_file: %[4]s/ca.pem
%s
mcpServers: {}
`, addr, t.TempDir(), auth, pki, clientCert))
	}
	const withToken = "auth: { token: '${CTX_TEST_TOKEN}' }"
	clientCert := fmt.Sprintf("  client_cert_file: %[1]s/client.pem\n  client_key_file: %[1]s/client-key.pem", pki)
	full := config(withToken, clientCert)

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	var logs bytes.Buffer
	go func() { done <- run(ctx, []string{"serve", "--config", full}, &logs, &syncWriter{w: &logs}) }()
	defer func() { cancel(); <-done }()

	servers := func(cfg string) error {
		var out, errb bytes.Buffer
		return run(t.Context(), []string{"servers", "--config", cfg}, &out, &errb)
	}
	deadline := time.Now().Add(30 * time.Second)
	for err := servers(full); err != nil; err = servers(full) {
		if time.Now().After(deadline) {
			t.Fatalf("servers with the token and a client certificate: %v\nlogs:\n%s", err, logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := servers(config("", clientCert)); err == nil || !strings.Contains(err.Error(), "Unauthenticated") {
		t.Errorf("servers without the token: %v, want UNAUTHENTICATED", err)
	}
	if err := servers(config(withToken, "")); err == nil {
		t.Error("servers without a client certificate succeeded")
	} else if !strings.Contains(err.Error(), "something answered at "+addr) {
		t.Errorf("servers without a client certificate: %v; want it told a daemon answered, not as it spoke", err)
	}
	plain := writeConfig(t, fmt.Sprintf("listen: %s\ndata_dir: %s\n%s\nmcpServers: {}\n", addr, t.TempDir(), withToken))
	if err := servers(plain); err == nil || !strings.Contains(err.Error(), "something answered at "+addr) {
		t.Errorf("servers without TLS at a TLS daemon: %v; want it told a daemon answered, not as it spoke", err)
	}
	var out, errb bytes.Buffer
	if err := run(t.Context(), []string{"query", "--config", full, "anything"}, &out, &errb); err == nil || !strings.Contains(err.Error(), "no servers configured") {
		t.Errorf("query through TLS and the token: %v (want the daemon's own answer: no servers configured)", err)
	}
}

// With client certificates as the only access control, serve refuses the
// plain-HTTP endpoints that cannot ask for one (the MCP endpoint, pprof),
// which would otherwise answer every local user; with a token it serves
// them, guarded by the token.
func TestServeRefusesHTTPEndpointsClientCertificatesCannotGuard(t *testing.T) {
	pki := t.TempDir()
	writePKI(t, pki)
	base := fmt.Sprintf("listen: 127.0.0.1:0\ndata_dir: %s\nmcpServers: {}\ntls: {cert_file: %s, key_file: %s, client_ca_file: %s}\n",
		t.TempDir(), filepath.Join(pki, "server.pem"), filepath.Join(pki, "server-key.pem"), filepath.Join(pki, "ca.pem"))
	for _, tc := range []struct{ extra, want string }{
		{"mcp_listen: 127.0.0.1:0\n", "mcp_listen"},
		{"metrics_listen: 127.0.0.1:0\nmetrics_pprof: true\n", "metrics_pprof"},
	} {
		out := &syncWriter{w: &bytes.Buffer{}}
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second) // a serve that starts stops here
		err := run(ctx, []string{"serve", "--config", writeConfig(t, base+tc.extra)}, out, out)
		cancel()
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "auth.token") {
			t.Errorf("serve with client certificates only and %q: %v; want refused, naming %s and auth.token", tc.extra, err, tc.want)
		}
	}
	t.Setenv("CTX_TEST_TOKEN", "0123456789abcdef0123456789abcdef")
	out := &syncWriter{w: &bytes.Buffer{}}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	if err := run(ctx, []string{"serve", "--config", writeConfig(t, base+"mcp_listen: 127.0.0.1:0\nauth: {token: \"${CTX_TEST_TOKEN}\"}\n")}, out, out); err != nil {
		t.Errorf("serve with client certificates, a token and mcp_listen: %v", err)
	}
}

// An expired certificate, or one expiring within two weeks, is warned of
// at start: clients refuse an expired one, and the daemon started
// without a word.
func TestCertWarning(t *testing.T) {
	now := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		notAfter time.Time
		want     string
	}{
		{time.Time{}, ""},
		{now.Add(-time.Hour), "expired"},
		{now, "expired"},
		{now.Add(3 * 24 * time.Hour), "expires soon"},
		{now.Add(90 * 24 * time.Hour), ""},
	} {
		got := certWarning(c.notAfter, now)
		if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("certWarning(%v) = %q; want %q", c.notAfter, got, c.want)
		}
	}
}

// A TLS file rewritten in place (a renewed certificate, a client CA
// replaced to drop one) is named at a reload: serve reads them only at
// start, and a reload had said nothing, as if applied.
func TestTLSFilesRewrittenInPlaceAreNamed(t *testing.T) {
	dir := t.TempDir()
	tls := config.TLS{CertFile: filepath.Join(dir, "srv.pem"), KeyFile: filepath.Join(dir, "srv.key"), ClientCAFile: filepath.Join(dir, "ca.pem")}
	for _, p := range []string{tls.CertFile, tls.KeyFile, tls.ClientCAFile} {
		if err := os.WriteFile(p, []byte("first "+p), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	read := tlsDigests(tls)
	if got := tlsRewritten(read, tls, tls); len(got) != 0 {
		t.Errorf("nothing rewritten: %q", got)
	}
	if err := os.WriteFile(tls.ClientCAFile, []byte("another CA"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tls.CertFile, []byte("a renewed certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := tlsRewritten(read, tls, tls); !slices.Equal(got, []string{"tls.cert_file", "tls.client_ca_file"}) {
		t.Errorf("the certificate and the client CA rewritten: %q", got)
	}
	other := tls
	other.CertFile = filepath.Join(dir, "new.pem")
	if got := tlsRewritten(read, tls, other); len(got) != 0 {
		t.Errorf("another path (restartOnly's to name): %q", got)
	}
	if err := os.Remove(tls.KeyFile); err != nil {
		t.Fatal(err)
	}
	if got := tlsRewritten(read, tls, tls); !slices.Contains(got, "tls.key_file") {
		t.Errorf("the key removed: %q", got)
	}
}
