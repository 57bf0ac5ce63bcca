package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/contextd/contextd/internal/config"
	"github.com/contextd/contextd/internal/service"
)

// serverTLS returns the gRPC server's transport credentials: TLS with the
// configured certificate and, with tls.client_ca_file, required client
// certificates signed by one of its CAs (mTLS). Nil when TLS is off.
func serverTLS(t config.TLS) (grpc.ServerOption, error) {
	if !t.Enabled() {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("tls: %w", err)
	}
	tc := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if t.ClientCAFile != "" {
		pool, err := certPool(t.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("tls.client_ca_file: %w", err)
		}
		tc.ClientCAs, tc.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return grpc.Creds(credentials.NewTLS(tc)), nil
}

func certPool(files ...string) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	for _, f := range files {
		pem, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s: no PEM certificate", f)
		}
	}
	return pool, nil
}

// clientCreds returns the dial options a CLI client uses to reach the
// daemon with auth: TLS when the daemon serves it (trusting tls.ca_file,
// or the system roots plus tls.cert_file for a self-signed certificate),
// the client certificate when configured, and the token on every call.
func clientCreds(a config.Auth) ([]grpc.DialOption, error) {
	var opts []grpc.DialOption
	t := a.TLS
	if t.Enabled() || t.CAFile != "" {
		tc := &tls.Config{MinVersion: tls.VersionTLS12}
		roots, err := x509.SystemCertPool()
		if err != nil {
			roots = x509.NewCertPool()
		}
		trust := t.CAFile
		if trust == "" {
			trust = t.CertFile
		}
		pem, err := os.ReadFile(trust)
		if err != nil {
			return nil, fmt.Errorf("tls: %w", err)
		}
		roots.AppendCertsFromPEM(pem)
		tc.RootCAs = roots
		if t.ClientCertFile != "" {
			cert, err := tls.LoadX509KeyPair(t.ClientCertFile, t.ClientKeyFile)
			if err != nil {
				return nil, fmt.Errorf("tls client certificate: %w", err)
			}
			tc.Certificates = []tls.Certificate{cert}
		}
		opts = append(opts, grpc.WithTransportCredentials(credentials.NewTLS(tc)))
	} else {
		opts = append(opts, grpc.WithTransportCredentials(insecure.NewCredentials()))
	}
	if a.Token != "" {
		// Over plain TCP the token crosses the network in clear text: the
		// daemon refuses a non-loopback listen without TLS or auth, and a
		// token on loopback or a unix socket stays on this machine.
		opts = append(opts, grpc.WithPerRPCCredentials(service.BearerToken{Token: a.Token}))
	}
	return opts, nil
}

// clientConfig loads what query and servers need from the configuration
// (the daemon's address, token and TLS), quietly: only its problems are
// printed.
func clientConfig(path string, stderr io.Writer) (*config.Config, error) {
	if path == "" {
		path = config.Find()
	}
	if path == "" {
		return config.Default(), nil
	}
	cfg, err := config.Load(path)
	if err != nil {
		return nil, err
	}
	for _, w := range cfg.Warnings {
		fmt.Fprintln(stderr, "contextd: warning:", w)
	}
	return cfg, nil
}

// listenOn listens on "host:port" or "unix:///path". A unix socket is
// created with mode 0600 whatever the umask: only its owner may connect.
func listenOn(addr string) (net.Listener, error) {
	p, ok := strings.CutPrefix(addr, "unix://")
	if !ok {
		return net.Listen("tcp", addr)
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

// unixListener removes its socket file on Close.
type unixListener struct {
	*net.UnixListener
	path string
}

func (l *unixListener) Close() error {
	err := l.UnixListener.Close()
	if rerr := os.Remove(l.path); rerr != nil && !errors.Is(rerr, os.ErrNotExist) && err == nil {
		err = rerr
	}
	return err
}
