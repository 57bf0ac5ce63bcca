package client

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"

	"github.com/contextd/contextd/internal/config"
)

// A Target is a daemon's address and the Options to reach it, as a
// contextd configuration gives them.
type Target struct {
	// Addr is the configuration's listen: "host:port" or "unix:///path";
	// DefaultAddr when it sets none.
	Addr string
	// Options carry the token (auth.token or auth.token_file) and, when
	// the daemon serves TLS, the TLS configuration: it trusts tls.ca_file,
	// else the system roots plus tls.cert_file (a self-signed daemon
	// certificate), and presents tls.client_cert_file for mTLS.
	Options Options
	// Path is the file read; "" when none was found (the built-in default).
	Path string
	// Warnings name keys of the file that contextd does not read.
	Warnings []string
}

// ReadConfig reads the contextd configuration at path, or when path is ""
// the one the contextd CLI would find ($CONTEXTD_CONFIG, then
// contextd/config.yaml in the user config directory; never the working
// directory's), and returns where its daemon listens and how to
// authenticate. With no file it returns DefaultAddr and no credentials.
//
// Only listen, auth, tls and max_response_bytes (which sets
// Options.MaxAnswerBytes, see AnswerBytesFor) are read: the upstream servers, which only the
// daemon needs, are not resolved, so a server's unset ${VAR} is no error.
// An unreadable or invalid file, an unset variable in auth, or an
// unreadable certificate is an error naming the file and field.
func ReadConfig(path string) (*Target, error) {
	if path == "" {
		path = config.Find()
	}
	if path == "" {
		return &Target{Addr: DefaultAddr}, nil
	}
	cfg, err := config.LoadClient(path)
	if err != nil {
		return nil, err
	}
	opts, err := optionsFor(cfg.Auth)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	opts.MaxAnswerBytes = AnswerBytesFor(cfg.Limits.WithDefaults().MaxResponseBytes)
	return &Target{Addr: cfg.Listen, Options: *opts, Path: path, Warnings: cfg.Warnings}, nil
}

// optionsFor returns the Options that reach a daemon configured with a.
func optionsFor(a config.Auth) (*Options, error) {
	opts := &Options{Token: a.Token}
	t := a.TLS
	if !t.Enabled() && t.CAFile == "" {
		return opts, nil
	}
	roots, err := x509.SystemCertPool()
	if err != nil {
		roots = x509.NewCertPool()
	}
	trust, field := t.CAFile, "tls.ca_file"
	if trust == "" {
		trust, field = t.CertFile, "tls.cert_file"
	}
	pem, err := config.ReadTLSFile(trust)
	if err != nil {
		return nil, fmt.Errorf("field %s: %w", field, err)
	}
	if !roots.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("field %s: %s holds no PEM certificate", field, trust)
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: roots}
	if t.ClientCertFile != "" {
		certPEM, err := config.ReadTLSFile(t.ClientCertFile)
		if err != nil {
			return nil, fmt.Errorf("field tls.client_cert_file: %w", err)
		}
		keyPEM, err := config.ReadTLSFile(t.ClientKeyFile)
		if err != nil {
			return nil, fmt.Errorf("field tls.client_key_file: %w", err)
		}
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, fmt.Errorf("field tls.client_cert_file: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	opts.TLS = tc
	return opts, nil
}
