package mcp

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/text/unicode/norm"

	"github.com/contextd/contextd/internal/config"
	"github.com/contextd/contextd/internal/redact"
)

// DefaultMaxPages bounds one list walk when Options.MaxPages is zero.
const DefaultMaxPages = 1000

// Defaults for Options.MaxResources and Options.MaxTemplates.
const (
	// DefaultMaxResources is about 300 MiB of index at 512 dimensions.
	DefaultMaxResources = 100_000
	// DefaultMaxTemplates: every Search and Assemble parses every template
	// of the servers in scope.
	DefaultMaxTemplates = 1000
	// DefaultMaxResourceBytes bounds the text of the descriptors one walk
	// keeps (resource.Descriptor.TextBytes summed): 64 MiB, about 230 MiB
	// of heap once indexed at worst (the daemon keeps each descriptor, its
	// document ID, its terms; 5,000 descriptors of 4 KiB URIs took 66 MiB
	// past the engine's fixed cost). A real catalogue is far below it (100,000
	// files of 100-byte URIs and names: 10 MB); 100,000 entries at every
	// field's cap would be about 1 GB.
	DefaultMaxResourceBytes = 64 << 20
)

// UpstreamOfEnv is set (to contextd's process ID) in the environment of
// every stdio server contextd starts. A contextd that finds it set was
// started as an upstream of another: a configuration listing contextd
// itself under a name or wrapper it does not recognise, where each would
// start the next without end, so commands that start servers refuse to run.
const UpstreamOfEnv = "CONTEXTD_UPSTREAM_OF"

// DefaultKeepAlive is the ping interval for HTTP and SSE servers when
// Options.KeepAlive is zero.
const DefaultKeepAlive = 30 * time.Second

// Sentinel errors.
var (
	// ErrNoResources is returned by Read and Subscribe when the server did not
	// declare the resources capability; no request was sent.
	ErrNoResources = errors.New("server does not declare the resources capability")
	// ErrNoSubscribe is returned by Subscribe when the server did not declare
	// resources.subscribe; no request was sent.
	ErrNoSubscribe = errors.New("server does not declare resources.subscribe")
)

// Options configures a Session. The zero value (or nil) is usable.
type Options struct {
	// Logger receives session events. Nil discards them.
	Logger *slog.Logger
	// OnListChanged is called (from the SDK's reader goroutine: it must not
	// block) when the server sends notifications/resources/list_changed.
	OnListChanged func()
	// OnListMissed is called (must not block) when the server may have
	// changed its list without telling this session: on 2026-07-28 a
	// go-sdk server forgets the session's list_changed subscription each
	// time a listen stream ends, and the session subscribes again (see
	// restoreListChanged). A re-list catches up; unlike list_changed it
	// announces no change, so it is no notification storm. Nil: such
	// gaps call OnListChanged.
	OnListMissed func()
	// OnUpdated is called (must not block) with the URI of
	// notifications/resources/updated, byte for byte as sent.
	OnUpdated func(uri string)
	// MaxPages caps one list walk. Zero means DefaultMaxPages.
	MaxPages int
	// MaxResources and MaxTemplates cap the entries one walk of
	// resources/list and of resources/templates/list keeps: a server
	// listing more has the first ones kept and its list marked Capped.
	// Zero means DefaultMaxResources and DefaultMaxTemplates.
	MaxResources, MaxTemplates int
	// MaxResourceBytes caps the text of the descriptors one walk of
	// resources/list keeps (resource.Descriptor.TextBytes summed): a
	// server listing more has the first ones kept and its list marked
	// Capped. Zero means DefaultMaxResourceBytes.
	MaxResourceBytes int
	// TerminateDuration is how long a stdio server gets between closing its
	// stdin and SIGTERM, then SIGTERM and SIGKILL. Zero means the SDK's 5s.
	TerminateDuration time.Duration
	// MaxMessageBytes caps one JSON-RPC message from the server, over any
	// transport. A larger response fails its own request ("exceeds
	// max_message_bytes") and the session stays up; memory per message stays
	// within the cap. Zero means DefaultMaxMessageBytes (16 MiB).
	MaxMessageBytes int
	// KeepAlive is the interval of the pings that detect a dead HTTP or SSE
	// server (a stdio server's exit is seen at once); two failed pings in a
	// row end the session. Zero means DefaultKeepAlive for HTTP and SSE
	// servers and none for stdio; negative means none.
	KeepAlive time.Duration
	// ProtocolVersion is the version offered in initialize. Empty means the
	// SDK's latest; the server may negotiate an older one.
	ProtocolVersion string
	// Stderr, if set, receives a stdio server's stderr. The last 4 KiB are
	// kept regardless and reported by Session.StderrTail.
	Stderr io.Writer
	// OnSubscriptionEnded is called (must not block) with the URIs whose
	// subscription the server ended on a session that negotiated
	// 2026-07-28 or later: it answered their subscriptions/listen request
	// (or, over Streamable HTTP, the stream broke) without contextd
	// cancelling it. Those URIs are no longer subscribed; notifications for
	// them may have been missed.
	OnSubscriptionEnded func(uris []string)
	// MaxListens bounds the subscriptions/listen streams a 2026-07-28
	// session holds for resource subscriptions; Subscribe beyond it fails
	// with ErrListenLimit. Zero means DefaultMaxListens.
	MaxListens int
	// Redact masks the server's credentials in what errors quote of its
	// stderr (one short line, see Session.StderrLine). Nil masks only URL
	// credentials, query values and bearer tokens.
	Redact *redact.Redactor
	// CallerText says an earlier session already sent the server a
	// caller's words (see Session.NoteCallerText), which it may have kept:
	// its stderr is withheld from the handshake on.
	CallerText bool
	// HiddenEnv are credentials (the daemon's token, every server's
	// secrets) that a stdio server must not inherit: a variable of
	// contextd's environment whose value is one of them (8 bytes or more),
	// or holds one worth looking for inside values (redact.Inside), as
	// written, percent-encoded, in base64 or in hex, is left out of the server's environment
	// (REPO_URL=https://x:TOKEN@host as much as TOKEN itself). The
	// server's own env entries are passed whatever they hold.
	HiddenEnv []string
}

// Capabilities are the resource-related server capabilities from initialize.
type Capabilities struct {
	Resources   bool // the server declared "resources"
	Subscribe   bool // resources.subscribe
	ListChanged bool // resources.listChanged
	Completions bool // "completions"
}

// A Session is one live connection to an upstream MCP server.
// Its methods are safe for concurrent use.
type Session struct {
	name   string
	self   *atomic.Bool // a list answer named this process (see repairTransport)
	cs     *mcpsdk.ClientSession
	caps   Capabilities
	opts   Options
	stderr *tailBuffer
	proc   *process // stdio servers only

	listens     *listenTracker
	standalone  *standaloneStream  // Streamable HTTP before 2026-07-28, when the server serves it
	listenMu    sync.Mutex         // serializes opening subscriptions/listen streams, and guards closed
	closed      bool               // Close has begun: no stream is opened any more
	stopRestore context.CancelFunc // ends restoreListChanged, or nil
	restoring   sync.WaitGroup

	closeOnce sync.Once
	closeErr  error

	// callerText is set once a request carried text a caller chose (see
	// NoteCallerText); StderrLine then withholds the server's stderr.
	callerText atomic.Bool
}

// Connect starts (stdio) or dials (HTTP) the configured server and runs the
// initialize handshake. ctx bounds the handshake only: the session lives until
// Close, and a stdio child is stopped in stages by Close, never killed by ctx.
func Connect(ctx context.Context, srv config.Server, opts *Options) (*Session, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	tail := &tailBuffer{max: 4096}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.KeepAlive == 0 && srv.Transport != config.TransportStdio {
		o.KeepAlive = DefaultKeepAlive
	}
	var t mcpsdk.Transport
	var st *stdioTransport
	var hc *http.Client // HTTP and SSE
	var held *heldLog   // what the HTTP client logs until the handshake ends
	status := new(atomic.Int32)
	switch srv.Transport {
	case config.TransportStdio:
		cmd := exec.Command(srv.Command, srv.Args...)
		cmd.Dir = srv.Cwd
		cmd.Env = inheritedEnv(os.Environ(), o.HiddenEnv)
		for k, v := range srv.Env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		cmd.Env = append(cmd.Env, UpstreamOfEnv+"="+strconv.Itoa(os.Getpid()))
		if o.Stderr != nil {
			cmd.Stderr = io.MultiWriter(tail, o.Stderr)
		} else {
			cmd.Stderr = tail
		}
		st = &stdioTransport{cmd: cmd, terminateDuration: o.TerminateDuration, log: o.Logger, maxMessage: o.MaxMessageBytes}
		t = st
	case config.TransportHTTP:
		held = newHeldLog(o.Logger.Handler())
		ho := o
		ho.Logger = slog.New(held)
		hc = httpClient(srv.URL, srv.Headers, &ho, status)
		t = &mcpsdk.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: hc, MaxEventSize: maxMessage(&o) + 4096}
	case config.TransportSSE:
		t = sseTransport{&mcpsdk.SSEClientTransport{Endpoint: srv.URL, HTTPClient: sseHTTPClient(srv.URL, srv.Headers, &o, status), MaxEventSize: maxMessage(&o) + 4096}}
	default:
		return nil, fmt.Errorf("mcp: server %q: unknown transport %q", srv.Name, srv.Transport)
	}
	s, err := ConnectTransport(ctx, srv.Name, t, &o)
	legacy := false
	if err != nil && srv.Transport == config.TransportHTTP && ctx.Err() == nil && speaksOnlySSE(int(status.Load())) {
		// A server of the 2024-11-05 HTTP+SSE transport answers the POST
		// of initialize with a 4xx; MCP asks a client that took its URL
		// for Streamable HTTP to GET it then and look for an endpoint
		// event. Host files name either kind with a bare url.
		sctx, cancel := context.WithTimeout(ctx, sseFallbackTimeout)
		sse := sseTransport{&mcpsdk.SSEClientTransport{Endpoint: srv.URL, HTTPClient: sseHTTPClient(srv.URL, srv.Headers, &o, new(atomic.Int32)), MaxEventSize: maxMessage(&o) + 4096}}
		if ls, lerr := ConnectTransport(sctx, srv.Name, sse, &o); lerr == nil {
			o.Logger.Info("the server answered Streamable HTTP with an error and speaks the HTTP+SSE transport of 2024-11-05: using that (set type: sse to skip the first attempt)", "status", status.Load())
			s, err, legacy = ls, nil, true
		} else {
			o.Logger.Debug("the server is not an HTTP+SSE server either", "error", boundedError{lerr})
		}
		cancel()
	}
	if held != nil {
		held.release(!legacy)
	}
	if err != nil {
		if st != nil && st.proc != nil && ctx.Err() == nil && !errors.Is(err, context.DeadlineExceeded) {
			// A server that exits during the handshake says how, as one
			// that exits later does. (One that did not answer in time was
			// stopped by contextd: its exit says nothing.)
			failed := &Session{name: srv.Name, opts: o, proc: st.proc, stderr: tail}
			failed.callerText.Store(o.CallerText)
			if werr := failed.exited(err); werr != err {
				return nil, werr
			}
		}
		if code := int(status.Load()); code >= 400 {
			// The go-sdk names an HTTP failure by its reason phrase only,
			// in text that also holds the server's words.
			err = &HTTPStatusError{Code: code, Err: err}
		}
		if tl := tail.String(); tl != "" {
			o.Logger.Debug("stdio server stderr", "server", srv.Name, "stderr", tl)
			line := o.Redact.Line(tl)
			if o.CallerText {
				line = StderrWithheld
			}
			if line != "" {
				return nil, fmt.Errorf("%w; stderr: %s", err, line)
			}
		}
		return nil, err
	}
	s.stderr = tail
	if st != nil {
		s.proc = st.proc
	}
	if srv.Transport == config.TransportHTTP && !legacy && !s.streamingSubscriptions() && !s.openStandalone(ctx, hc, srv.URL) {
		// Before 2026-07-28 a Streamable HTTP server sends what it notifies
		// outside a call (resources/updated, list_changed) on the standalone
		// GET stream. One that offers none (405) cannot notify: such a
		// session neither subscribes nor waits for list_changed, so its
		// reads are not cached under subscriptions and its list is polled
		// every poll_interval.
		s.caps.Subscribe, s.caps.ListChanged = false, false
	}
	return s, nil
}

// sseFallbackTimeout bounds the attempt to reach a server by the HTTP+SSE
// transport after Streamable HTTP failed: a Streamable HTTP server may
// answer the GET with a stream that never names an endpoint.
const sseFallbackTimeout = 10 * time.Second

// speaksOnlySSE reports whether an HTTP status that failed the Streamable
// HTTP handshake may come from a server of the HTTP+SSE transport (a 4xx
// such as 404 or 405). Credentials refused (401, 403) or a rate limit (429)
// would be refused the same way on the GET.
func speaksOnlySSE(code int) bool {
	return code >= 400 && code < 500 && code != http.StatusUnauthorized && code != http.StatusForbidden && code != http.StatusTooManyRequests
}

// exited wraps err when the session failed because the server process
// exited: "server exited (exit status 3); stderr: LAST LINE" (see
// StderrLine; the whole tail goes to the log at debug level). An error the server
// answered, or the caller's deadline, says the process was alive: those
// are returned at once, without waiting to see whether it exits.
func (s *Session) exited(err error) error {
	if s.proc == nil {
		return err
	}
	var werr *jsonrpc.Error
	gone, status := s.proc.exitStatus()
	if !gone && (errors.As(err, &werr) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)) {
		return err
	}
	if !gone {
		// The exit and the failed request race: give the reaper a moment.
		select {
		case <-s.proc.exited:
			gone, status = s.proc.exitStatus()
		case <-time.After(100 * time.Millisecond):
		}
	}
	if !gone {
		return err
	}
	msg := fmt.Sprintf("server exited (%s)", status)
	if line := s.StderrLine(); line != "" {
		msg += "; stderr: " + line
	}
	return fmt.Errorf("%s: %w", msg, err)
}

// ConnectTransport runs the initialize handshake over t. Tests use it with
// mcpsdk.NewInMemoryTransports.
func ConnectTransport(ctx context.Context, name string, t mcpsdk.Transport, opts *Options) (*Session, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.MaxPages <= 0 {
		o.MaxPages = DefaultMaxPages
	}
	if o.MaxResources <= 0 {
		o.MaxResources = DefaultMaxResources
	}
	if o.MaxTemplates <= 0 {
		o.MaxTemplates = DefaultMaxTemplates
	}
	if o.MaxResourceBytes <= 0 {
		o.MaxResourceBytes = DefaultMaxResourceBytes
	}
	copts := &mcpsdk.ClientOptions{
		Logger:       o.Logger,
		Capabilities: &mcpsdk.ClientCapabilities{}, // contextd offers no roots, sampling or elicitation
		// A read that needs input (resultType "input_required", 2026-07-28)
		// comes back as it is and fails with ErrInputRequired: contextd has
		// no user to ask, so retrying it could only loop.
		MultiRoundTrip: &mcpsdk.MultiRoundTripOptions{Disabled: true},
	}
	if o.KeepAlive > 0 {
		copts.KeepAlive, copts.KeepAliveFailureThreshold = o.KeepAlive, 2
	}
	if f := o.OnListChanged; f != nil {
		copts.ResourceListChangedHandler = func(context.Context, *mcpsdk.ResourceListChangedRequest) { f() }
	}
	if f := o.OnUpdated; f != nil {
		copts.ResourceUpdatedHandler = func(_ context.Context, req *mcpsdk.ResourceUpdatedNotificationRequest) {
			if req != nil && req.Params != nil {
				f(req.Params.URI)
			}
		}
	}
	client := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "contextd", Version: Version}, copts)
	client.AddSendingMiddleware(readHints)    // the SDK's read cache stays off: see ReadHint
	client.AddSendingMiddleware(listCacheOff) // and its list cache holds one page at most
	client.AddSendingMiddleware(initializeBounds)
	client.AddSendingMiddleware(discoverDeadline)
	listens := newListenTracker()
	listens.onEnd = o.OnSubscriptionEnded
	self := new(atomic.Bool)
	cs, err := client.Connect(ctx, repairTransport{base: t, listens: listens, log: o.Logger, self: self}, &mcpsdk.ClientSessionOptions{ProtocolVersion: o.ProtocolVersion})
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("mcp: server %q: initialize: no answer before the connect deadline (is it an MCP server?): %w", name, err)
		}
		// The handshake's errors may quote what the server sent (the legacy
		// SSE transport's first event, an endpoint URL), up to
		// max_message_bytes; they are logged at every reconnect.
		return nil, fmt.Errorf("mcp: server %q: initialize: %w", name, boundedError{err})
	}
	s := &Session{name: name, cs: cs, opts: o, stderr: &tailBuffer{max: 4096}, listens: listens, self: self}
	s.callerText.Store(o.CallerText)
	if ir := cs.InitializeResult(); ir != nil && ir.Capabilities != nil {
		c := ir.Capabilities
		if c.Resources != nil {
			s.caps = Capabilities{Resources: true, Subscribe: c.Resources.Subscribe, ListChanged: c.Resources.ListChanged}
		}
		s.caps.Completions = c.Completions != nil
	}
	if s.streamingSubscriptions() && s.caps.ListChanged && s.caps.Subscribe && o.OnListChanged != nil && listens.conn != nil {
		rctx, stop := context.WithCancel(context.Background())
		s.stopRestore = stop
		missed := o.OnListMissed
		if missed == nil {
			missed = o.OnListChanged
		}
		s.restoring.Go(func() { s.restoreListChanged(rctx, listens.conn, missed) })
	}
	return s, nil
}

// discoverTimeout bounds server/discover, the first call of a session of
// 2026-07-28: a server before that version answers it with an error and
// the go-sdk falls back to initialize, but a relay between contextd and
// the server (a stdio bridge to an HTTP server) may drop a call it could
// not forward and answer nothing, which held the connect for its whole
// deadline and then failed it.
const discoverTimeout = 5 * time.Second

// discoverDeadline is a client sending middleware that fails a
// server/discover not answered within discoverTimeout as method-not-found,
// so that the go-sdk falls back to initialize on the same connection.
func discoverDeadline(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
	return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
		if method != "server/discover" {
			return next(ctx, method, req)
		}
		dctx, cancel := context.WithTimeout(ctx, discoverTimeout)
		defer cancel()
		res, err := next(dctx, method, req)
		if err != nil && ctx.Err() == nil && dctx.Err() != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("server/discover: no answer in %v; trying initialize", discoverTimeout)}
		}
		return res, err
	}
}

// Version is the client version contextd sends in initialize.
var Version = "dev"

// Name returns the configured server name.
func (s *Session) Name() string { return s.name }

// Capabilities returns what the server declared in initialize.
func (s *Session) Capabilities() Capabilities { return s.caps }

// MaxServerInfoBytes bounds the server's name and its version, each, as
// ServerInfo returns them: they are logged at every connect and returned by
// every ListServers, and initialize is bounded only by max_message_bytes.
const MaxServerInfoBytes = 256

// ServerInfo returns the server's name and version, each cut to
// MaxServerInfoBytes at a character boundary (then ending with redact.Cut,
// counted in the bytes, so that a secret the cut split is still masked),
// and the negotiated protocol version.
func (s *Session) ServerInfo() (name, version, protocol string) {
	ir := s.cs.InitializeResult()
	if ir == nil {
		return "", "", ""
	}
	if ir.ServerInfo != nil {
		name, version = clipInfo(ir.ServerInfo.Name), clipInfo(ir.ServerInfo.Version)
	}
	return name, version, clipInfo(ir.ProtocolVersion)
}

// clipInfo returns s cut to MaxServerInfoBytes, the mark included.
func clipInfo(s string) string {
	if len(s) <= MaxServerInfoBytes {
		return strings.Clone(s)
	}
	return clipCut(s, MaxServerInfoBytes-len(redact.Cut))
}

// initializeBounds is a client sending middleware that trims what the
// go-sdk keeps of a server's initialize (or server/discover) result for
// the session's life, and quotes in errors: the result is bounded only by
// max_message_bytes. The protocol version and the server's name and
// version are cut to MaxServerInfoBytes (an unsupported version is quoted
// whole in the handshake's error, which is logged at every reconnect and
// shown in ListServers); the instructions, experimental capabilities and
// extensions, which contextd does not use, are dropped.
func initializeBounds(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
	return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
		res, err := next(ctx, method, req)
		trimCaps := func(c *mcpsdk.ServerCapabilities) {
			if c != nil {
				c.Experimental, c.Extensions = nil, nil
			}
		}
		switch r := res.(type) {
		case *mcpsdk.InitializeResult:
			if r == nil {
				break
			}
			if isSelf(r.Meta) {
				return nil, ErrSelf
			}
			r.ProtocolVersion = clipInfo(r.ProtocolVersion)
			r.Instructions, r.Meta = "", nil
			trimCaps(r.Capabilities)
			if i := r.ServerInfo; i != nil {
				r.ServerInfo = &mcpsdk.Implementation{Name: clipInfo(i.Name), Version: clipInfo(i.Version)}
			}
		case *mcpsdk.DiscoverResult:
			if r == nil {
				break
			}
			if isSelf(r.Meta) {
				return nil, ErrSelf
			}
			r.Instructions = ""
			trimCaps(r.Capabilities)
			if len(r.SupportedVersions) > 64 {
				r.SupportedVersions = r.SupportedVersions[:64]
			}
		}
		return res, err
	}
}

// StderrTail returns the last bytes a stdio server wrote to stderr. It may
// hold anything the server printed, secrets included: log it, at debug
// level, and show callers StderrLine.
func (s *Session) StderrTail() string { return s.stderr.String() }

// StderrLine returns the last line a stdio server wrote to stderr, masked
// (Options.Redact), control characters escaped, at most 200 bytes; "" when
// it wrote nothing. The whole tail is logged at debug level.
//
// Once the session carried text a caller chose (NoteCallerText), it
// returns StderrWithheld instead: the server may have printed that text,
// and a line masked for pieces of secrets would tell a caller which of
// its guesses begin one.
func (s *Session) StderrLine() string {
	tail := s.stderr.String()
	if strings.TrimSpace(tail) == "" {
		return ""
	}
	if s.opts.Logger != nil {
		s.opts.Logger.Debug("stdio server stderr", "server", s.name, "stderr", tail)
	}
	if s.callerText.Load() {
		return StderrWithheld
	}
	return s.opts.Redact.Line(tail)
}

// StderrWithheld stands for a stdio server's stderr line in errors once the
// session carried a caller's text (see Session.StderrLine).
const StderrWithheld = "(withheld from callers, who could steer what a server prints; its stderr is in the log at debug level)"

// NoteCallerText records that a request on s is about to carry text a
// caller chose rather than one the server listed: the URI of a pin or of a
// template's expansion, a value to complete. From then on, for the life of
// the session, StderrLine withholds what the server printed. Complete
// calls it itself.
func (s *Session) NoteCallerText() { s.callerText.Store(true) }

// CarriedCallerText reports whether a request on s carried text a caller
// chose (see NoteCallerText): what the server writes from then on, its
// errors included, may quote it.
func (s *Session) CarriedCallerText() bool { return s.callerText.Load() }

// Wait blocks until the session ends (the server exits or Close is called).
func (s *Session) Wait() error { return s.cs.Wait() }

// Close ends the session. For stdio servers the SDK closes stdin, then sends
// SIGTERM, then SIGKILL. Safe to call more than once.
func (s *Session) Close() error {
	s.closeOnce.Do(func() {
		// A stream the go-sdk opens after its Close began would never be
		// cancelled (its goroutine would wait for good).
		s.listenMu.Lock()
		s.closed = true
		s.listenMu.Unlock()
		if s.stopRestore != nil {
			s.stopRestore()
		}
		if s.listens != nil && s.listens.conn != nil {
			s.listens.conn.stopAnswers() // the go-sdk's close waits for them
		}
		s.closeErr = s.cs.Close()
		s.restoring.Wait() // after the close, which unblocks its writes
	})
	return s.closeErr
}

// httpClient returns a client that bounds every message (see capTransport)
// and adds the configured headers to every request. status is set to the
// HTTP status code of each answer.
func httpClient(endpoint string, headers map[string]string, o *Options, status *atomic.Int32) *http.Client {
	return newHTTPClient(endpoint, headers, o, status, false)
}

// sseHTTPClient is httpClient for the HTTP+SSE transport of 2024-11-05.
func sseHTTPClient(endpoint string, headers map[string]string, o *Options, status *atomic.Int32) *http.Client {
	return newHTTPClient(endpoint, headers, o, status, true)
}

func newHTTPClient(endpoint string, headers map[string]string, o *Options, status *atomic.Int32, legacySSE bool) *http.Client {
	c := capTransport{base: http.DefaultTransport, max: maxMessage(o), log: o.Logger, quiet: &warnLimit{}, odd: &warnLimit{}, status: status, calls: &callStreams{}}
	if legacySSE {
		c.legacy = newLegacyCalls()
	}
	var rt http.RoundTripper = c
	if len(headers) > 0 {
		h := headerTransport{base: rt, headers: headers}
		if u, err := url.Parse(endpoint); err == nil {
			h.scheme, h.host = u.Scheme, u.Host
		}
		rt = h
	}
	return &http.Client{Transport: rt, CheckRedirect: dropReferer}
}

// dropReferer is the HTTP client's redirect policy: net/http's own (at most
// 10 redirects), except that a redirected request carries no Referer.
// net/http sets it to the URL redirected from, query included, and a
// server's URL may hold its credential there (?token=…): a redirect to
// another origin must not receive it, as it does not receive the
// configured headers (headerTransport).
func dropReferer(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	req.Header.Del("Referer")
	return nil
}

// maxMessage returns the message cap in bytes.
func maxMessage(o *Options) int {
	if o.MaxMessageBytes > 0 {
		return o.MaxMessageBytes
	}
	return DefaultMaxMessageBytes
}

// headerTransport adds the configured headers to the requests that go to
// the server's own origin (scheme and host of its URL) only: a redirect,
// or an SSE endpoint event, naming another origin must not receive its
// credentials (browsers' fetch drops Authorization the same way).
type headerTransport struct {
	base         http.RoundTripper
	headers      map[string]string
	scheme, host string
}

func (h headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !strings.EqualFold(req.URL.Scheme, h.scheme) || !strings.EqualFold(req.URL.Host, h.host) {
		return h.base.RoundTrip(req)
	}
	req = req.Clone(req.Context())
	for k, v := range h.headers {
		req.Header.Set(k, v)
	}
	return h.base.RoundTrip(req)
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
	cut bool // earlier bytes were dropped
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
		b.cut = true
	}
	return len(p), nil
}

// String returns the bytes kept, after redact.Cut when earlier ones were
// dropped: the tail may begin inside a secret the server printed, and the
// redactor masks such a piece only next to a cut.
func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.cut {
		return string(b.buf)
	}
	i := 0
	for i < len(b.buf) && i < utf8.UTFMax && !utf8.RuneStart(b.buf[i]) {
		i++
	}
	return redact.Cut + string(b.buf[i:])
}

// minHidden is the shortest HiddenEnv value looked for: shorter ones ("1",
// "true") are what many harmless variables hold.
const minHidden = 8

// InheritedEnv returns what a stdio server inherits of env ("KEY=value"
// entries) when hidden are the credentials it must not (see
// Options.HiddenEnv): env without the variables that hold one.
func InheritedEnv(env, hidden []string) []string { return inheritedEnv(env, hidden) }

// inheritedEnv returns env ("KEY=value" entries) without the variables
// whose value is one of hidden, or holds one worth looking for inside
// values (see redact.Inside), as written, percent-encoded, quoted, in base64
// (also inside base64 of a longer text) or in hex: a stdio server
// inherits contextd's environment (PATH, HOME, …) but not the credentials
// it holds for the daemon and for the other servers, whole or inside a URL
// or a "key=value" list. A value that merely contains a word-like secret
// (a URL's user name "postgres", a query value "engineering") is kept:
// PATH=/usr/lib/postgresql/16/bin holds the one and PWD the other.
func inheritedEnv(env, hidden []string) []string {
	exact := map[string]bool{}
	var within []string
	for _, h := range hidden {
		if len(h) < minHidden {
			continue
		}
		// Composed and decomposed too (a macOS program writes "é" as "e"
		// and U+0301).
		exact[h], exact[norm.NFC.String(h)], exact[norm.NFD.String(h)] = true, true, true
		// A passphrase of words ("correct horse 42!") is no word a
		// harmless variable holds either.
		if !redact.Inside(h) && !strings.ContainsRune(strings.TrimSpace(h), ' ') {
			continue
		}
		forms := []string{h, norm.NFC.String(h), norm.NFD.String(h), hex.EncodeToString([]byte(h)), strings.ToUpper(hex.EncodeToString([]byte(h)))}
		// Percent-encoded, inside a quoted string (a JSON config),
		// HTML-escaped, and inside base64 of a longer text ("user:TOKEN"
		// in a Docker auth or a Basic credential), wherever it begins.
		forms = append(forms, redact.Escaped(h)...)
		forms = append(forms, redact.Base64Inside(h)...)
		for _, e := range forms {
			if !slices.Contains(within, e) {
				within = append(within, e)
			}
		}
	}
	if len(exact) == 0 {
		return env
	}
	out := make([]string, 0, len(env))
	for _, kv := range env {
		_, v, _ := strings.Cut(kv, "=")
		if !exact[v] && !slices.ContainsFunc(within, func(h string) bool { return strings.Contains(v, h) }) {
			out = append(out, kv)
		}
	}
	return out
}
