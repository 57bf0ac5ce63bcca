// Package client dials a contextd daemon and calls its gRPC API
// (contextd.v1.ContextService): Assemble, Search and ListServers.
//
// A daemon listens on a TCP host:port or a unix socket (unix:///path), in
// plain text or over TLS, and may require a bearer token on every call and
// client certificates (mTLS). [Dial] takes those as [Options];
// [ReadConfig] reads them from a contextd configuration file, as the
// contextd CLI does, so a program finds the daemon the same way:
//
//	t, err := client.ReadConfig("") // $CONTEXTD_CONFIG, ~/.config/contextd/config.yaml
//	if err != nil { … }
//	c, err := client.Dial(t.Addr, &t.Options)
//	if err != nil { … }
//	defer c.Close()
//	resp, err := c.Assemble(ctx, &contextdv1.AssembleRequest{Query: "…", TokenBudget: 2000})
//
// Requests and responses are the generated messages of package
// github.com/contextd/contextd/proto/contextd/v1; the .proto file documents
// every field. A failed call returns an [*Error] carrying the gRPC status;
// errors.Is(err, [ErrNoDaemon]) tells that nothing answered at the address.
package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math"
	"net"
	"strings"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/contextd/contextd/internal/config"
	contextdv1 "github.com/contextd/contextd/proto/contextd/v1"
)

// DefaultAddr is where a daemon listens when its configuration sets no
// listen address.
const DefaultAddr = "127.0.0.1:7878"

// errorDomain is the ErrorInfo domain the daemon puts on its own errors.
const errorDomain = "contextd"

// ErrNoDaemon is matched (errors.Is) by the error of a call that nothing
// answered: no daemon listens at the address, or it could not be reached.
// A daemon's own UNAVAILABLE (no server in scope has synced yet) does not
// match it, nor does a connection that ended under the call.
var ErrNoDaemon = errors.New("no daemon answering")

// Options say how to reach a daemon. The zero value dials in plain text
// with no token, as for a daemon on loopback or a unix socket without auth.
type Options struct {
	// Token, when not empty, is sent on every call as
	// "authorization: Bearer TOKEN" (the daemon's auth.token). Over plain
	// TCP it crosses the network in clear text; use TLS off this machine.
	Token string
	// TLS, when not nil, dials with TLS using this configuration: RootCAs
	// to trust the daemon's certificate, Certificates for mTLS. Nil dials
	// in plain text.
	TLS *tls.Config
	// MaxAnswerBytes is the largest answer a call accepts (bytes); a
	// larger one fails the call (RESOURCE_EXHAUSTED) before it is decoded.
	// Zero means AnswerBytesFor(config.DefaultMaxResponseBytes), which fits
	// every answer of a daemon with the default max_response_bytes;
	// ReadConfig sets it from the configuration's max_response_bytes.
	// Without a bound, whatever answers at the address (another local user
	// who took the port while no daemon runs) could send 2 GiB answers,
	// which a client holds several times over while it decodes them.
	MaxAnswerBytes int
	// DialOptions are appended to the client's own (tests, interceptors).
	DialOptions []grpc.DialOption
}

// AnswerBytesFor returns the largest answer (bytes) of a daemon whose
// max_response_bytes is maxResponse: twice that, for the contents, their
// URIs and the encoding, plus 16 MiB for what an answer says besides
// (omitted candidates and their details, server statuses).
func AnswerBytesFor(maxResponse int) int {
	return int(min(2*int64(maxResponse)+16<<20, math.MaxInt32))
}

// A Client calls one daemon. Its methods may be called concurrently; the
// connection is made on the first call and re-made as needed (a daemon that
// is not up yet is no error until a call is made).
type Client struct {
	addr string
	conn *grpc.ClientConn
	svc  contextdv1.ContextServiceClient
	// tlsNoCert is a TLS client without a certificate of its own: a daemon
	// asking for one closes its connections after the handshake.
	tlsNoCert bool
}

// retryConfig retries a call that failed UNAVAILABLE (its connection was
// closed before the answer: a daemon with every connection slot taken
// closes idle ones to make room, and a call sent as its connection closed
// is lost) up to twice, after a random wait of up to 0.1 s, then 0.2 s.
// Every ContextService call only reads, so sending it again is safe for
// the daemon (it may read upstream resources again). The daemon's own
// UNAVAILABLE (no server in scope could answer) says not to retry (server
// pushback). Retries stop while more than half of a client's recent calls
// failed (retryThrottling), so clients do not pile onto a daemon already
// shedding connections. Options.DialOptions with grpc.WithDisableRetry()
// turns retries off.
const retryConfig = `{"methodConfig": [{
  "name": [{"service": "contextd.v1.ContextService"}],
  "retryPolicy": {
    "maxAttempts": 3,
    "initialBackoff": "0.1s",
    "maxBackoff": "1s",
    "backoffMultiplier": 2,
    "retryableStatusCodes": ["UNAVAILABLE"]
  }
}],
"retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}}`

// Dial returns a Client for the daemon at addr: "host:port" (TCP) or
// "unix:///absolute/path" (a unix socket). It does not wait for the
// daemon; an address that cannot be parsed, or unusable options, is an
// error, as is a token to send in plain text over a unix socket another
// user owns. opts may be nil. Close the Client when done.
func Dial(addr string, opts *Options) (*Client, error) {
	if opts == nil {
		opts = &Options{}
	}
	target, err := grpcTarget(addr)
	if err != nil {
		return nil, err
	}
	if p, ok := strings.CutPrefix(addr, "unix://"); ok && opts.Token != "" && opts.TLS == nil {
		if err := checkSocketOwner(p); err != nil {
			return nil, err
		}
		// The socket may not exist yet, or be made again later (a daemon
		// restarted): every connection is checked, not only the first.
		opts = &Options{Token: opts.Token, TLS: opts.TLS, MaxAnswerBytes: opts.MaxAnswerBytes, DialOptions: append([]grpc.DialOption{grpc.WithContextDialer(ownSocketDialer(p))}, opts.DialOptions...)}
	}
	var dopts []grpc.DialOption
	if opts.TLS != nil {
		dopts = append(dopts, grpc.WithTransportCredentials(credentials.NewTLS(opts.TLS)))
	} else {
		dopts = append(dopts, grpc.WithTransportCredentials(insecure.NewCredentials()))
	}
	if opts.Token != "" {
		dopts = append(dopts, grpc.WithPerRPCCredentials(bearerToken(strings.TrimSpace(opts.Token))))
	}
	// An answer holds up to the daemon's max_response_bytes of contents.
	maxAnswer := opts.MaxAnswerBytes
	if maxAnswer <= 0 {
		maxAnswer = AnswerBytesFor(config.DefaultMaxResponseBytes)
	}
	dopts = append(dopts, grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxAnswer)))
	dopts = append(dopts, grpc.WithDefaultServiceConfig(retryConfig))
	dopts = append(dopts, opts.DialOptions...)
	conn, err := grpc.NewClient(target, dopts...)
	if err != nil {
		return nil, fmt.Errorf("client: dial %s: %w", addr, err)
	}
	tlsNoCert := opts.TLS != nil && len(opts.TLS.Certificates) == 0 && opts.TLS.GetClientCertificate == nil
	return &Client{addr: addr, conn: conn, svc: contextdv1.NewContextServiceClient(conn), tlsNoCert: tlsNoCert}, nil
}

// grpcTarget turns a contextd address into a gRPC target.
// ownSocketDialer connects to the unix socket at path and keeps the
// connection only when the socket, and on Linux the process listening on
// it, belong to this user: the token is sent on it next.
func ownSocketDialer(path string) func(context.Context, string) (net.Conn, error) {
	return func(ctx context.Context, _ string) (net.Conn, error) {
		var d net.Dialer
		c, err := d.DialContext(ctx, "unix", path)
		if err != nil {
			return nil, err
		}
		if err := checkSocketOwner(path); err != nil {
			c.Close()
			return nil, err
		}
		if err := checkPeerOwner(c, path); err != nil {
			c.Close()
			return nil, err
		}
		return c, nil
	}
}

func grpcTarget(addr string) (string, error) {
	switch p, ok := strings.CutPrefix(addr, "unix://"); {
	case ok && p == "":
		return "", fmt.Errorf("client: address %q has no socket path", addr)
	case ok:
		return "unix:" + p, nil
	case addr == "":
		return "", errors.New("client: empty address (want host:port or unix:///path)")
	case strings.Contains(addr, "://"):
		return "", fmt.Errorf("client: address %q: want host:port or unix:///path", addr)
	}
	return "passthrough:///" + addr, nil
}

// Addr returns the address the Client dials.
func (c *Client) Addr() string { return c.addr }

// Close closes the connection. Calls in flight fail.
func (c *Client) Close() error { return c.conn.Close() }

// Conn returns the underlying connection, for the daemon's other services
// (grpc.health.v1.Health, server reflection).
func (c *Client) Conn() *grpc.ClientConn { return c.conn }

// Assemble asks the daemon for the context a task needs within
// in.TokenBudget tokens (counted with the daemon's tokenizer). The response
// lists the returned items, each with its form and reason, what was
// omitted and why, and total_tokens ≤ token_budget. A bad request is an
// *Error with code InvalidArgument; a daemon with no synced server in scope
// answers Unavailable; a busy one ResourceExhausted.
func (c *Client) Assemble(ctx context.Context, in *contextdv1.AssembleRequest, opts ...grpc.CallOption) (*contextdv1.AssembleResponse, error) {
	resp, err := c.svc.Assemble(ctx, in, opts...)
	return resp, c.wrap(err)
}

// Search ranks the daemon's mirrored resources for a query (at most
// in.Limit of them) and reads none: each result has the resource's server,
// URI, descriptor and score. Errors are as for Assemble.
func (c *Client) Search(ctx context.Context, in *contextdv1.SearchRequest, opts ...grpc.CallOption) (*contextdv1.SearchResponse, error) {
	resp, err := c.svc.Search(ctx, in, opts...)
	return resp, c.wrap(err)
}

// ListServers returns the daemon's upstream servers: state, transport,
// resource, content and template counts, last sync and last error.
func (c *Client) ListServers(ctx context.Context, opts ...grpc.CallOption) (*contextdv1.ListServersResponse, error) {
	resp, err := c.svc.ListServers(ctx, &contextdv1.ListServersRequest{}, opts...)
	return resp, c.wrap(err)
}

func (c *Client) wrap(err error) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	return &Error{Addr: c.addr, Status: st, tlsNoCert: c.tlsNoCert}
}

// An Error is a call that failed with a gRPC status: the daemon's answer
// (its code and message), or, when nothing answered, an Unavailable that
// matches ErrNoDaemon. status.FromError and status.Code read it.
type Error struct {
	// Addr is the daemon's address as dialled.
	Addr string
	// Status is the call's gRPC status.
	Status *status.Status
	// tlsNoCert: see Client.
	tlsNoCert bool
}

// Error says who answered, the code and the message: "daemon at ADDR:
// InvalidArgument: …", or "no daemon answering at ADDR (start one with
// `contextd serve`): …".
func (e *Error) Error() string {
	if e.noDaemon() {
		if e.mismatched() {
			return fmt.Sprintf("something answered at %s but not as this client spoke (TLS on one side only, or a client certificate asked for: compare the tls block of the daemon's config and this one): %s", e.Addr, e.Status.Message())
		}
		if e.lost() {
			return fmt.Sprintf("the daemon at %s closed the connection before answering (try again): %s", e.Addr, e.Status.Message())
		}
		return fmt.Sprintf("no daemon answering at %s (start one with `contextd serve`): %s", e.Addr, e.Status.Message())
	}
	return fmt.Sprintf("daemon at %s: %s: %s", e.Addr, e.Status.Code(), e.Status.Message())
}

// Is reports whether target is ErrNoDaemon and nothing answered: not when
// a connection was made and ended under the call.
func (e *Error) Is(target error) bool { return target == ErrNoDaemon && e.noDaemon() && !e.lost() }

// lost reports a connection that ended under the call (a daemon making
// room or restarting, a network cut): grpc-go's words for a read that
// failed on a connection it had.
func (e *Error) lost() bool {
	return strings.Contains(e.Status.Message(), "error reading from server")
}

// mismatched reports a connection the other side closed during the
// handshake for want of TLS, or of a client certificate: grpc-go's words
// for a plaintext client at a TLS daemon (the daemon closes before its
// HTTP/2 preface), a TLS client at a plaintext one, a TLS alert, and a
// TLS client without a certificate whose connection broke.
func (e *Error) mismatched() bool {
	m := e.Status.Message()
	if e.tlsNoCert && (strings.Contains(m, "broken pipe") || strings.Contains(m, "connection reset by peer")) {
		// TLS 1.3: the daemon's refusal of a client without a
		// certificate comes after the client's handshake is done, so the
		// client may see only its next write fail.
		return true
	}
	return strings.Contains(m, "error reading server preface") || strings.Contains(m, "first record does not look like a TLS handshake") ||
		strings.Contains(m, "remote error: tls:")
}

// GRPCStatus returns the call's status (for status.FromError).
func (e *Error) GRPCStatus() *status.Status { return e.Status }

// noDaemon reports an Unavailable without the daemon's ErrorInfo: the
// transport's, not the daemon's.
func (e *Error) noDaemon() bool {
	if e.Status.Code() != codes.Unavailable {
		return false
	}
	for _, d := range e.Status.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetDomain() == errorDomain {
			return false
		}
	}
	return true
}

// bearerToken sends "authorization: Bearer TOKEN" on every call.
type bearerToken string

func (b bearerToken) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(b)}, nil
}

// RequireTransportSecurity is false: a daemon on loopback or a unix socket
// takes a token without TLS (it refuses a non-loopback listen that has
// neither).
func (bearerToken) RequireTransportSecurity() bool { return false }
