package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc/credentials"

	"github.com/contextd/contextd/internal/config"
)

// serverTLS returns the gRPC server's transport credentials: TLS with the
// configured certificate and, with tls.client_ca_file, required client
// certificates signed by one of its CAs (mTLS), and when the certificate
// stops being valid (zero when TLS is off). Nil when TLS is off.
func serverTLS(t config.TLS) (credentials.TransportCredentials, time.Time, error) {
	if !t.Enabled() {
		return nil, time.Time{}, nil
	}
	cert, err := keyPair(t.CertFile, t.KeyFile)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("tls: %w", err)
	}
	var notAfter time.Time
	if cert.Leaf != nil {
		notAfter = cert.Leaf.NotAfter
	}
	tc := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if t.ClientCAFile != "" {
		pool, err := certPool(t.ClientCAFile)
		if err != nil {
			return nil, time.Time{}, fmt.Errorf("tls.client_ca_file: %w", err)
		}
		tc.ClientCAs, tc.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return credentials.NewTLS(tc), notAfter, nil
}

// certExpiryWarning is how long before its certificate expires serve
// warns at start.
const certExpiryWarning = 14 * 24 * time.Hour

// certWarning returns what serve warns of a certificate valid until
// notAfter, at now: "" when it is valid for longer than
// certExpiryWarning (or unknown).
func certWarning(notAfter, now time.Time) string {
	switch {
	case notAfter.IsZero():
		return ""
	case !now.Before(notAfter):
		return "tls.cert_file has expired: clients that verify it (the CLI, gRPC clients) refuse every connection until it is replaced and contextd restarted"
	case notAfter.Sub(now) < certExpiryWarning:
		return "tls.cert_file expires soon: replace it and restart contextd before then"
	}
	return ""
}

// maxClientCAs is the most CAs a tls.client_ca_file may hold before
// serve warns that it lets in too much (a system bundle holds over 100).
const maxClientCAs = 8

// clientCAs returns how many certificates t's client_ca_file holds (0 if
// none is set or it cannot be read: serverTLS says why).
func clientCAs(t config.TLS) int {
	if t.ClientCAFile == "" {
		return 0
	}
	b, err := config.ReadTLSFile(t.ClientCAFile)
	if err != nil {
		return 0
	}
	n := 0
	for {
		var blk *pem.Block
		if blk, b = pem.Decode(b); blk == nil {
			return n
		}
		if blk.Type == "CERTIFICATE" {
			n++
		}
	}
}

// keyPair is tls.LoadX509KeyPair reading the files with
// config.ReadTLSFile.
func keyPair(certFile, keyFile string) (tls.Certificate, error) {
	cert, err := config.ReadTLSFile(certFile)
	if err != nil {
		return tls.Certificate{}, err
	}
	key, err := config.ReadTLSFile(keyFile)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.X509KeyPair(cert, key)
}

func certPool(files ...string) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	for _, f := range files {
		pem, err := config.ReadTLSFile(f)
		if err != nil {
			return nil, err
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s: no PEM certificate", f)
		}
	}
	return pool, nil
}

// listenOn listens on "host:port" or "unix:///path". A unix socket is
// created with mode 0600 whatever the umask: only its owner may connect.
func listenOn(addr string) (net.Listener, error) {
	p, ok := strings.CutPrefix(addr, "unix://")
	if !ok {
		return listenTCP(addr, listenWhat)
	}
	if fi, err := os.Lstat(p); err == nil && fi.Mode()&os.ModeSocket == 0 {
		return nil, fmt.Errorf("listen %s: %s exists and is not a socket", addr, p)
	}
	if fi, err := os.Stat(p); err == nil && fi.Mode()&os.ModeSocket != 0 {
		// Remove a socket left by a previous run, but never a live daemon's.
		if c, err := net.DialTimeout("unix", p, dialProbe); err == nil {
			c.Close()
			return nil, fmt.Errorf("listen %s: another daemon is already serving there", addr)
		}
		_ = os.Remove(p)
	}
	// bind would say only "invalid argument".
	switch {
	case len(p) > maxSocketPath:
		return nil, fmt.Errorf("listen %s: the socket path is %d bytes, over the %d a unix socket path may hold", addr, len(p), maxSocketPath)
	case len(filepath.Dir(p)) > maxSocketPath-bindOverhead:
		return nil, fmt.Errorf("listen %s: the socket's directory is a path of %d bytes: contextd binds the socket first in a private directory inside it, and a unix socket path may hold %d bytes, so that directory's path may be at most %d",
			addr, len(filepath.Dir(p)), maxSocketPath, maxSocketPath-bindOverhead)
	}
	// Bind inside a private (0700) directory next to the socket, set the
	// mode, then move it into place: it is never reachable with the
	// umask's mode, not even for a moment.
	dir, err := os.MkdirTemp(filepath.Dir(p), ".contextd-sock-")
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", addr, err)
	}
	defer os.RemoveAll(dir)
	tmp := filepath.Join(dir, "s")
	l, err := net.Listen("unix", tmp)
	if err != nil {
		return nil, err
	}
	ul := l.(*net.UnixListener)
	ul.SetUnlinkOnClose(false)
	if err := os.Chmod(tmp, 0o600); err != nil {
		l.Close()
		return nil, fmt.Errorf("listen %s: %w", addr, err)
	}
	if err := os.Rename(tmp, p); err != nil {
		l.Close()
		return nil, fmt.Errorf("listen %s: %w", addr, err)
	}
	return &unixListener{UnixListener: ul, path: p}, nil
}

// maxSocketPath is the longest path a unix socket may be bound at: the
// system's sun_path (108 bytes on Linux, 104 on macOS) less its NUL.
var maxSocketPath = len(syscall.RawSockaddrUnix{}.Path) - 1

// bindOverhead is what binding in a private directory adds to the path of
// the socket's directory: os.MkdirTemp's name (the pattern and at most 10
// digits) and the socket's own name there.
const bindOverhead = len("/.contextd-sock-") + 10 + len("/s")

// unixListener removes its socket file on Close.
type unixListener struct {
	*net.UnixListener
	path string
}

// Addr returns the socket's configured path, not the private directory it
// was bound in before it was moved into place.
func (l *unixListener) Addr() net.Addr { return &net.UnixAddr{Net: "unix", Name: l.path} }

func (l *unixListener) Close() error {
	err := l.UnixListener.Close()
	if rerr := os.Remove(l.path); rerr != nil && !errors.Is(rerr, os.ErrNotExist) && err == nil {
		err = rerr
	}
	return err
}
