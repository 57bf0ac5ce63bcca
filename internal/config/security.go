package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"strings"
)

// maxTokenFileBytes bounds the first line of auth.token_file, the token;
// a longer one is refused.
const maxTokenFileBytes = 64 << 10

// readHead returns at most n bytes from the start of the file at path.
func readHead(path string, n int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, n))
}

// MaxTLSFileBytes bounds what ReadTLSFile reads: a certificate chain, a
// key or a bundle of CAs (the system's is about 220 KB).
const MaxTLSFileBytes = 4 << 20

// ReadTLSFile returns the contents of a file the configuration's tls
// section names (cert_file, key_file, client_ca_file, ca_file,
// client_cert_file, client_key_file). It fails, naming the path, if that
// is no regular file (a device such as /dev/zero would be read without
// end, a FIFO would block the start), or holds more than MaxTLSFileBytes.
func ReadTLSFile(path string) ([]byte, error) {
	if fi, err := os.Stat(path); err != nil {
		return nil, err
	} else if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	b, err := readHead(path, MaxTLSFileBytes+1)
	if err != nil {
		return nil, err
	}
	if len(b) > MaxTLSFileBytes {
		return nil, fmt.Errorf("%s: over %d bytes", path, MaxTLSFileBytes)
	}
	return b, nil
}

// Limits bound the work one request, and all requests together, can make
// the daemon do. A zero field means its default.
type Limits struct {
	// MaxPins is the most resources one Assemble may pin (max_pins).
	// Default DefaultMaxPins.
	MaxPins int
	// MaxReads is the most resources/read calls one Assemble may make
	// (max_reads); the candidates past it are omitted as read_failed.
	// Default DefaultMaxReads.
	MaxReads int
	// MaxResponseBytes bounds the bytes of contents one Assemble reads from
	// servers (max_response_bytes): each item's text or blob, URI, MIME type
	// and error, and 64 bytes an item besides; once they are spent,
	// later reads are not made and their candidates are omitted as
	// read_failed. Default DefaultMaxResponseBytes.
	MaxResponseBytes int
	// MaxConcurrent is how many Assemble and Search calls run at once
	// (max_concurrent_requests). Default DefaultMaxConcurrent.
	MaxConcurrent int
	// MaxQueued is how many more may wait for a turn
	// (max_queued_requests); a call beyond it, or one that waits longer
	// than MaxQueueWait, fails at once with RESOURCE_EXHAUSTED. Default
	// DefaultMaxQueued.
	MaxQueued int
}

// Limit defaults.
const (
	DefaultMaxPins          = 32
	DefaultMaxReads         = 64
	DefaultMaxResponseBytes = 8 << 20
	DefaultMaxConcurrent    = 8
	DefaultMaxQueued        = 64
)

// WithDefaults returns l with each zero field set to its default.
func (l Limits) WithDefaults() Limits {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&l.MaxPins, DefaultMaxPins)
	def(&l.MaxReads, DefaultMaxReads)
	def(&l.MaxResponseBytes, DefaultMaxResponseBytes)
	def(&l.MaxConcurrent, DefaultMaxConcurrent)
	def(&l.MaxQueued, DefaultMaxQueued)
	return l
}

// Auth is who may call the daemon.
type Auth struct {
	// Token, when not empty, must come with every gRPC call as
	// "authorization: Bearer TOKEN" (auth.token, usually "${VAR}", or the
	// first line of the file auth.token_file).
	Token string
	// TokenFile is where Token was read from, for messages.
	TokenFile string
	// TLS serves gRPC over TLS; CLI clients dial with TLS.
	TLS TLS
	// AllowInsecureListen lets the daemon listen on an address other than
	// loopback or a unix socket with no token and no client certificates
	// (allow_insecure_listen). Without it, such a listen is refused.
	AllowInsecureListen bool
}

// TLS holds the tls block's file paths.
type TLS struct {
	CertFile string // the daemon's certificate (PEM); with KeyFile, turns TLS on
	KeyFile  string
	// ClientCAFile, when set, makes the daemon require client certificates
	// signed by one of its CAs (mTLS).
	ClientCAFile string
	// CAFile is what CLI clients trust for the daemon's certificate;
	// empty means the system roots plus CertFile itself (a self-signed
	// certificate).
	CAFile string
	// ClientCertFile and ClientKeyFile are what CLI clients present (mTLS).
	ClientCertFile, ClientKeyFile string
}

// Enabled reports whether the daemon serves TLS.
func (t TLS) Enabled() bool { return t.CertFile != "" }

// authFile is the auth block; nil fields were not written (or written
// null).
type authFile struct {
	Token     *string `yaml:"token"`
	TokenFile *string `yaml:"token_file"`
}

type tlsFile struct {
	CertFile       string `yaml:"cert_file"`
	KeyFile        string `yaml:"key_file"`
	ClientCAFile   string `yaml:"client_ca_file"`
	CAFile         string `yaml:"ca_file"`
	ClientCertFile string `yaml:"client_cert_file"`
	ClientKeyFile  string `yaml:"client_key_file"`
}

// minTokenBytes is the shortest token accepted: shorter ones can be guessed.
const minTokenBytes = 16

// maxTokenBytes is the longest token accepted: it travels in every call's
// headers, which the daemon bounds (16 KiB a gRPC call).
const maxTokenBytes = 4096

func (c *Config) parseSecurity(f *file, lookup func(string) (string, bool)) error {
	for _, v := range []struct {
		name string
		n    int
	}{{"max_pins", f.MaxPins}, {"max_reads", f.MaxReads}, {"max_response_bytes", f.MaxResponseBytes},
		{"max_concurrent_requests", f.MaxConcurrent}, {"max_queued_requests", f.MaxQueued}} {
		if v.n < 0 {
			return fmt.Errorf("field %s: %d is negative", v.name, v.n)
		}
	}
	c.Limits = Limits{MaxPins: f.MaxPins, MaxReads: f.MaxReads, MaxResponseBytes: f.MaxResponseBytes,
		MaxConcurrent: f.MaxConcurrent, MaxQueued: f.MaxQueued}.WithDefaults()

	var a authFile
	if f.Auth != nil {
		a = *f.Auth
		if a.Token == nil && a.TokenFile == nil {
			return errors.New("field auth: set token or token_file (an auth block without either would leave the daemon open; remove it to run without a token)")
		}
	}
	ex := expander{lookup: lookup}
	var tok, file string
	if a.Token != nil {
		// Spaces and line breaks around it (an env file saved with CRLF)
		// are no part of a token, as in token_file.
		tok = strings.TrimSpace(ex.str("auth.token", *a.Token))
	}
	if a.TokenFile != nil {
		file = expandHome(ex.str("auth.token_file", *a.TokenFile))
	}
	if ex.err != nil {
		return ex.err
	}
	switch {
	case a.Token != nil && a.TokenFile != nil:
		return errors.New("field auth: set token or token_file, not both")
	case a.Token != nil && tok == "":
		// Silently serving without the token the operator wrote would
		// leave the daemon open: "${CONTEXTD_TOKEN}" set to "" by a
		// compose file, or a value YAML reads as something else.
		return errors.New("field auth.token is empty (is a variable it names set to an empty value?); remove auth to run without a token")
	case a.TokenFile != nil && file == "":
		return errors.New("field auth.token_file is empty; remove auth to run without a token")
	case file != "":
		// A device or a FIFO (/dev/zero, a pipe nobody writes) would be read
		// without end or block the start; a token needs one short line.
		// The path is not quoted: a token pasted here by mistake
		// ("token_file: <the token>") would be.
		if fi, err := os.Stat(file); err == nil && !fi.Mode().IsRegular() {
			return errors.New("field auth.token_file: not a regular file")
		}
		b, err := readHead(file, maxTokenFileBytes+2)
		line, _, _ := bytes.Cut(b, []byte("\n"))
		if err == nil && len(bytes.TrimSuffix(line, []byte("\r"))) > maxTokenFileBytes {
			return fmt.Errorf("field auth.token_file: its first line is over %d bytes; the token is the first line", maxTokenFileBytes)
		}
		if err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return fmt.Errorf("field auth.token_file: cannot read it (is the token written here instead of in auth.token?): %v", err)
		}
		if fi, err := os.Stat(file); err == nil && fi.Mode().Perm()&0o077 != 0 {
			c.Warnings = append(c.Warnings, fmt.Sprintf("auth.token_file is readable by others (mode %v): chmod 600 it", fi.Mode().Perm()))
		}
		tok, _, _ = strings.Cut(string(b), "\n")
		if tok = strings.TrimSpace(tok); tok == "" {
			return errors.New("field auth.token_file: the file is empty")
		}
	}
	if tok != "" && len(tok) < minTokenBytes {
		return fmt.Errorf("field auth: the token is %d bytes; use at least %d (e.g. openssl rand -hex 32)", len(tok), minTokenBytes)
	}
	if len(tok) > maxTokenBytes {
		// gRPC callers send it in a header, and the daemon takes 16 KiB
		// of headers a call: a longer token passed the load and then
		// failed every call.
		return fmt.Errorf("field auth: the token is %d bytes; use at most %d (e.g. openssl rand -hex 32)", len(tok), maxTokenBytes)
	}
	for i := range len(tok) {
		if c := tok[i]; c < ' ' || c > '~' {
			// A client could never send it: HTTP headers and gRPC
			// metadata carry printable ASCII.
			return errors.New("field auth: the token holds a character other than printable ASCII, which clients cannot send (e.g. openssl rand -hex 32)")
		}
	}
	c.Auth = Auth{Token: tok, TokenFile: file, AllowInsecureListen: f.AllowInsecure, TLS: TLS{
		CertFile: expandHome(f.TLS.CertFile), KeyFile: expandHome(f.TLS.KeyFile), ClientCAFile: expandHome(f.TLS.ClientCAFile),
		CAFile: expandHome(f.TLS.CAFile), ClientCertFile: expandHome(f.TLS.ClientCertFile), ClientKeyFile: expandHome(f.TLS.ClientKeyFile),
	}}
	t := c.Auth.TLS
	if (t.CertFile == "") != (t.KeyFile == "") {
		return errors.New("field tls: set both cert_file and key_file")
	}
	if t.ClientCAFile != "" && t.CertFile == "" {
		return errors.New("field tls.client_ca_file: client certificates need TLS: set cert_file and key_file")
	}
	if (t.ClientCertFile == "") != (t.ClientKeyFile == "") {
		return errors.New("field tls: set both client_cert_file and client_key_file")
	}
	for _, k := range []struct{ field, path string }{{"tls.key_file", t.KeyFile}, {"tls.client_key_file", t.ClientKeyFile}} {
		if fi, err := os.Stat(k.path); k.path != "" && err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o077 != 0 {
			c.Warnings = append(c.Warnings, fmt.Sprintf("%s is readable by others (mode %v): chmod 600 it", k.field, fi.Mode().Perm()))
		}
	}
	return nil
}

// CheckHTTPEndpoints returns an error when, without auth.token, something
// other than the token keeps callers out of the gRPC endpoint — client
// certificates (tls.client_ca_file), or a unix socket at listen, which
// only its owner may open — and serve would also answer on an HTTP
// endpoint that cannot check it: the MCP endpoint (mcpListen not empty)
// or pprof's profiles (pprof). Those are plain HTTP on a loopback port,
// guarded by the token alone, so every local user could read through them
// what the certificates or the socket keep from callers.
func (a Auth) CheckHTTPEndpoints(listen, mcpListen string, pprof bool) error {
	unix := strings.HasPrefix(listen, "unix://")
	if a.Token != "" || a.TLS.ClientCAFile == "" && !unix {
		return nil
	}
	what := ""
	switch {
	case mcpListen != "":
		what = "mcp_listen " + mcpListen
	case pprof:
		what = "metrics_pprof"
	default:
		return nil
	}
	if a.TLS.ClientCAFile == "" {
		return fmt.Errorf("%s: listen is a unix socket, which only its owner may open, but that endpoint is a TCP port every local user can reach; set auth.token (it asks for it), or drop %s", what, strings.Fields(what)[0])
	}
	return fmt.Errorf("%s: tls.client_ca_file is set, but that endpoint is plain HTTP and cannot ask for a client certificate; set auth.token (it asks for it), or drop %s", what, strings.Fields(what)[0])
}

// IsLoopbackHost reports whether host (no port) is "localhost" (any
// case) or a loopback IP address (127.0.0.0/8, ::1).
func IsLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// CheckListen returns an error when addr (host:port or unix:///path) is
// reachable from other machines while nothing authenticates callers: no
// token and no client certificates, and AllowInsecureListen not set.
// Loopback addresses and unix sockets are always allowed.
func (a Auth) CheckListen(addr string) error {
	if a.Token != "" || a.TLS.ClientCAFile != "" || a.AllowInsecureListen || strings.HasPrefix(addr, "unix://") {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", addr, err)
	}
	if IsLoopbackHost(host) {
		return nil
	}
	return fmt.Errorf("listen %s: not a loopback address, and no auth.token or tls.client_ca_file is set: anyone who can reach it could read what your servers' credentials can (set allow_insecure_listen: true to accept that)", addr)
}
