// Package mcpserver serves contextd to MCP hosts (Claude Desktop, Claude
// Code, VS Code, …) as an MCP server, on the go-sdk's server side, driven by
// the same [engine.Engine] as the gRPC API: one pipeline, one set of rules.
//
// What a host sees:
//   - Tools: assemble_context (the packed items for a task within a token
//     budget, as embedded resources, with structured content matching the
//     published output schema) and search_resources (ranked resource links
//     with scores).
//   - Resources: every mirrored resource of every upstream server, under
//     contextd:resource/<server>/<uri> (see ResourceURI), with the
//     upstream's name, title, description, MIME type, size and annotations.
//     Reads go through the engine's mirror and cache. A template
//     (contextd:resource/{server}/{+uri}) reads any upstream URI, listed or
//     not; another (ContextTemplate) assembles context for a task and
//     budget. The list is the go-sdk's, paginated (Options.PageSize), and
//     follows the mirrors: Run checks them every Options.CheckInterval and
//     applies all changes found at once, so a host gets at most one
//     notifications/resources/list_changed per check.
//   - Subscriptions: resources/subscribe on a namespaced URI reads the
//     resource once through its mirror, which subscribes upstream (on
//     servers that offer subscriptions); the upstream's
//     notifications/resources/updated is relayed as
//     notifications/resources/updated for the namespaced URI to the
//     sessions that subscribed. Install it with a Relay.
//   - Prompt: "context" (task, budget) returns the assembled context as
//     embedded resources in user messages, and the task.
//   - Completions: server names for the {server} variable, and the
//     session's recent tasks for "task" arguments.
//
// contextd does not tell its callers apart, so it exposes through MCP what
// the gRPC API exposes and nothing more: results marked cacheScope private
// are read per request, never kept here; no upstream configuration
// (commands, URLs, headers) is shown; a session's recent tasks are offered
// to that session only.
package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/engine"
	"github.com/contextd/contextd/internal/mcp"
	"github.com/contextd/contextd/internal/resource"
	ctxsync "github.com/contextd/contextd/internal/sync"
)

// MaxRequestBytes bounds the body of one Streamable HTTP request: a larger
// one is refused with 413. The go-sdk reads a body whole before it parses
// it (4 MiB by default), so every connection could make the daemon hold
// that much at once, and it keeps a session's last message (its params
// as sent) until the next one or the session's end, so each of
// MaxSessions sessions may hold one; a host's requests (a task, pins,
// filters) are small.
const MaxRequestBytes = 256 << 10

// Defaults for Options fields left zero.
const (
	DefaultBudget        = 2000
	DefaultPageSize      = 100
	DefaultCheckInterval = 250 * time.Millisecond
	DefaultReadyWait     = 30 * time.Second
	// DefaultSessionTimeout is Options.SessionTimeout when zero.
	DefaultSessionTimeout = time.Hour
	// DefaultMaxSessions is Options.MaxSessions when zero.
	DefaultMaxSessions = 256
	// DefaultMinIdleToClose is Options.MinIdleToClose when zero.
	DefaultMinIdleToClose = 30 * time.Second
	// DefaultMaxSubscriptions is Options.MaxSubscriptions when zero.
	DefaultMaxSubscriptions = 256
	// DefaultPaceBurst is Options.PaceBurst when zero: a large commit
	// to a repository.
	DefaultPaceBurst = 1024
	// DefaultPaceSettle is Options.PaceSettle when zero.
	DefaultPaceSettle = 30 * time.Minute
)

// Options configures New.
type Options struct {
	// Name and Version are the serverInfo sent in initialize. Empty means
	// "contextd" and "dev".
	Name, Version string
	// Logger; nil discards. Never stdout when serving stdio.
	Logger *slog.Logger
	// PageSize is how many resources one resources/list page holds. Zero
	// means DefaultPageSize.
	PageSize int
	// CheckInterval is how often Run looks for changed mirrors and applies
	// what changed to the resource list. Zero means DefaultCheckInterval.
	CheckInterval time.Duration
	// ReadyWait is how long a request waits for the servers it needs to
	// finish their first sync (a host starting contextd asks at once).
	// Zero means DefaultReadyWait.
	ReadyWait time.Duration
	// SessionTimeout closes a Streamable HTTP session that has had no
	// request for this long (a request running keeps it open). A client
	// that never ends its session (a script that initializes, calls once
	// and exits) would otherwise leave a goroutine and its state behind
	// for good; a host whose session was closed gets 404 and, as the
	// protocol says, initializes a new one. Zero means
	// DefaultSessionTimeout; negative never closes idle sessions.
	SessionTimeout time.Duration
	// MaxSessions bounds the Streamable HTTP sessions held at once: a
	// request that starts a new session first closes, past it, the
	// sessions used least recently among those with no request in
	// flight (its GET stream does not count) and none for MinIdleToClose; its host
	// gets 404 at its next request and initializes again. When too few
	// are that idle, the new session is refused with 503 and Retry-After.
	// Each session holds about 16 KiB and a goroutine until it ends, so a
	// client initializing in a loop would otherwise hold memory without
	// bound for SessionTimeout; closing the oldest instead let one
	// initializing 1,800 times a second close every host's session.
	// Zero means DefaultMaxSessions.
	MaxSessions int
	// MinIdleToClose is how long a session must have gone without a
	// request before it may be closed to make room for a new one. Zero
	// means DefaultMinIdleToClose.
	MinIdleToClose time.Duration
	// MaxSubscriptions bounds the resources one session may subscribe to
	// (resources/subscribe); past it, a subscription is refused with an
	// invalid-params error. Zero means DefaultMaxSubscriptions.
	MaxSubscriptions int
	// PaceBurst is how many entries new to the resource list one server
	// may add at once past the most it ever had listed; past it, one
	// comes each 10 s (see the pace in resources.go). Zero means
	// DefaultPaceBurst.
	PaceBurst int
	// PaceSettle is how long after its first sync ends a server's list
	// is still its first list: what it lists meanwhile (a server that
	// lists a few entries while it starts, an indexer walking a large
	// repository) is paced as ever, and what still waits of it is listed
	// when it ends. Zero means DefaultPaceSettle.
	PaceSettle time.Duration
	// StateFile, when set, is where each server's pace (see PaceBurst)
	// and what of its mirror was kept off the resource list are kept
	// between runs, so a restart of contextd gives no server a first list
	// (which comes whole). serve and mcp put it in data_dir when they
	// hold it. Beside it (servedFile) go what the copy checks compare a
	// server's resources with (mcp.ServedLists.MarshalBinary). Empty
	// keeps them in memory: each run starts afresh.
	StateFile string
	// Relay, when set, is the Relay whose WrapMirror was given to the
	// engine (engine.Options.Mirror): upstream resource updates reach this
	// server through it. Nil means updates are not relayed.
	Relay *Relay
	// Admit, when set, is called before every tools/call, prompts/get,
	// resources/read (the requests that rank, read upstream and pack) and
	// completion/complete (which scans every mirrored URI), and
	// around the upstream read of each subscription (resources/subscribe,
	// or each URI of subscriptions/listen, whose stream outlives it), and
	// must return before the request runs; release is called when it is
	// done. An error refuses the request with it (a JSON-RPC error). serve
	// passes the admission its gRPC calls share, so the MCP endpoint is
	// bounded by max_concurrent_requests too. Nil admits every request.
	Admit func(ctx context.Context) (release func(), err error)
}

// A Relay carries upstream notifications/resources/updated from the
// engine's mirrors to a Server. The engine is built before the Server, so
// the Relay is created first, given to the engine (WrapMirror), then to New.
type Relay struct {
	mu sync.Mutex
	s  *Server
}

// WrapMirror installs the relay on a mirror's options; pass it as (or call
// it from) engine.Options.Mirror. The mirror's own handling of the
// notification is unchanged; updates that arrive before New bound the
// Relay are not relayed (nobody can have subscribed yet).
func (r *Relay) WrapMirror(o *ctxsync.Options) {
	dial, server := o.Dial, o.Server
	o.Dial = func(ctx context.Context, mo *mcp.Options) (*mcp.Session, error) {
		inner := mo.OnUpdated
		mo.OnUpdated = func(uri string) {
			if inner != nil {
				inner(uri)
			}
			r.mu.Lock()
			s := r.s
			r.mu.Unlock()
			if s != nil {
				s.updated(resource.Key{Server: server, URI: uri})
			}
		}
		return dial(ctx, mo)
	}
}

// A Server is contextd's MCP server. Create it with New, run Run beside the
// engine, and connect transports to MCP().
type Server struct {
	eng  *engine.Engine
	log  *slog.Logger
	mcp  *mcpsdk.Server
	opts Options

	// mu guards the fields that follow.
	mu     sync.Mutex
	listed map[resource.Key]*mcpsdk.Resource // what the resource list holds
	seen   map[string]ctxsync.ListVersion    // per server, when listed was last brought up to date
	// withheldGen is the engine's ServedLists.WithheldGen when listed was
	// last brought up to date, and seenContents each withheld server's
	// content, copy and own-read counts then.
	withheldGen  int
	seenContents map[string][3]int
	// kept holds, for each withheld server, what listed held of it when
	// it was first withheld.
	kept map[string]map[resource.Key]bool
	// holding holds, for each held or frozen server, what listed held of
	// it when that began.
	holding map[string]map[resource.Key]bool
	// waiting holds, for each server kept still by another's hold, when
	// each entry it lists was first kept off the list (see maxQuietWait).
	waiting map[string]map[resource.Key]time.Time
	// checked holds, for each server whose new entries are listed once
	// read (mcp.ServedLists.Check), what listed held of it then; unread,
	// since when each of its later entries waits for the content pass
	// (see maxUnreadWait).
	checked map[string]map[resource.Key]bool
	unread  map[string]map[resource.Key]time.Time
	// paces holds, for each server listed, how fast its entries new to
	// the list may come (see pace).
	paces map[string]*listPace
	// prior holds the paces saved by an earlier run (Options.StateFile)
	// of the servers whose first sync of this run has not ended. stateGen
	// counts the changes to paces and the list, savedGen the count last
	// written; stateErr is the last write's error.
	prior              map[string]*savedPace
	stateGen, savedGen int64
	stateErr           string
	// servedMu serializes the writes of servedFile; servedWhole says it
	// was written whole in this run (servedSize bytes, servedAppended
	// appended since), servedErr is the last write's error.
	servedMu                   sync.Mutex
	servedWhole                bool
	servedSize, servedAppended int
	servedErr                  string
	servedFailed               time.Time
	servedWholeWrites          int // tried
	// servedDue asks Run to write servedFile whole (see saveServed).
	servedDue chan struct{}

	subs map[resource.Key]int // downstream subscriptions per resource
	// sessSubs holds each session's subscriptions, by the URI it sent:
	// they are dropped when the session ends.
	sessSubs map[*mcpsdk.ServerSession]map[string]resource.Key
	closing  map[*mcpsdk.ServerSession]bool // sessions makeRoom is closing
	// used records, by session ID, each open session's last request and
	// its requests in flight.
	used map[string]*sessionUse
	// dispatch is the go-sdk's own method handler, under every
	// middleware: a session's subscriptions are taken back through it
	// when the session ends (the go-sdk keeps a URI subscribed once for
	// good otherwise).
	dispatch mcpsdk.MethodHandler
	rereads  map[resource.Key]bool // re-reads in flight after an update
	// relaying holds the resources a relay of resources/updated is being
	// sent for, each with whether another update came meanwhile (it is
	// sent once more when the one in flight ends).
	relaying map[resource.Key]bool
	recent   map[*mcpsdk.ServerSession][]string
	order    []*mcpsdk.ServerSession // sessions in recent, oldest first
	stopped  bool                    // Run has returned: no more relays start

	refreshing sync.Mutex // one refresh at a time, so a list waits for one in flight
	// refreshStarts counts the refreshes begun; refreshedFrom is the
	// count when the last one began (under refreshing).
	refreshStarts atomic.Int64
	refreshedFrom int64
	relays        sync.WaitGroup // re-reads after relayed updates
	stop          chan struct{}  // closed when Run returns
	posts         *posts         // the session POSTs being served, for their calls

	// waitedOut (guarded by mu) holds the ready channels (one per mirror)
	// of synced servers whose first content pass a request has already
	// waited ReadyWait for in vain: later requests do not wait for them
	// again.
	waitedOut map[<-chan struct{}]bool
	// started holds the ready channels of the mirrors the engine had when
	// the server was made: only those hold up requests that name no
	// server (see waitReady).
	started map[<-chan struct{}]bool
}

// New returns the server for eng, with its tools, prompt, templates and
// handlers registered. The resource list fills as Run finds the mirrors
// synced.
func New(eng *engine.Engine, opts *Options) *Server {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Name == "" {
		o.Name = "contextd"
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	if o.PageSize <= 0 {
		o.PageSize = DefaultPageSize
	}
	if o.CheckInterval <= 0 {
		o.CheckInterval = DefaultCheckInterval
	}
	if o.ReadyWait <= 0 {
		o.ReadyWait = DefaultReadyWait
	}
	if o.SessionTimeout == 0 {
		o.SessionTimeout = DefaultSessionTimeout
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = DefaultMaxSessions
	}
	if o.MinIdleToClose <= 0 {
		o.MinIdleToClose = DefaultMinIdleToClose
	}
	if o.MaxSubscriptions <= 0 {
		o.MaxSubscriptions = DefaultMaxSubscriptions
	}
	if o.PaceBurst <= 0 {
		o.PaceBurst = DefaultPaceBurst
	}
	if o.PaceSettle <= 0 {
		o.PaceSettle = DefaultPaceSettle
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		eng: eng, log: log, opts: o,
		listed:       map[resource.Key]*mcpsdk.Resource{},
		seen:         map[string]ctxsync.ListVersion{},
		seenContents: map[string][3]int{},
		kept:         map[string]map[resource.Key]bool{},
		holding:      map[string]map[resource.Key]bool{},
		waiting:      map[string]map[resource.Key]time.Time{},
		checked:      map[string]map[resource.Key]bool{},
		unread:       map[string]map[resource.Key]time.Time{},
		paces:        map[string]*listPace{},
		subs:         map[resource.Key]int{},
		sessSubs:     map[*mcpsdk.ServerSession]map[string]resource.Key{},
		closing:      map[*mcpsdk.ServerSession]bool{},
		used:         map[string]*sessionUse{},
		rereads:      map[resource.Key]bool{},
		relaying:     map[resource.Key]bool{},
		recent:       map[*mcpsdk.ServerSession][]string{},
		stop:         make(chan struct{}),
		servedDue:    make(chan struct{}, 1),
		posts:        newPosts(),
		started:      map[<-chan struct{}]bool{},
	}
	for _, name := range eng.ServerNames() {
		if ch := eng.Ready(name); ch != nil {
			s.started[ch] = true
		}
	}
	s.loadPaces()
	// Capabilities are declared exactly as served: tools, prompts and
	// resources whose lists change (the resource list does), resource
	// subscriptions, and completions. No logging capability: logs go to
	// contextd's own log, never to the protocol stream.
	s.mcp = mcpsdk.NewServer(&mcpsdk.Implementation{Name: o.Name, Title: "contextd", Version: o.Version}, &mcpsdk.ServerOptions{
		Instructions: instructions,
		Logger:       quiet(log),
		PageSize:     o.PageSize,
		Capabilities: &mcpsdk.ServerCapabilities{
			Tools:       &mcpsdk.ToolCapabilities{ListChanged: false},
			Prompts:     &mcpsdk.PromptCapabilities{ListChanged: false},
			Resources:   &mcpsdk.ResourceCapabilities{ListChanged: true, Subscribe: true},
			Completions: &mcpsdk.CompletionCapabilities{},
		},
		// A read's contents may be one user's (upstream cacheScope
		// private): no intermediary may keep them, and nobody should
		// keep them past the answer (ttlMs 0: immediately stale).
		SetCacheable: func(_ context.Context, req mcpsdk.Request, c *mcpsdk.Cacheable) {
			if _, ok := req.(*mcpsdk.ReadResourceRequest); ok {
				c.TTLMs, c.CacheScope = 0, "private"
			}
		},
		SubscribeHandler:   s.subscribe,
		UnsubscribeHandler: s.unsubscribe,
		CompletionHandler:  s.complete,
	})
	s.mcp.AddReceivingMiddleware(func(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
		s.dispatch = next // added first: the innermost
		return next
	})
	s.mcp.AddReceivingMiddleware(trimInitialize)
	s.mcp.AddReceivingMiddleware(nameInstance)
	s.mcp.AddReceivingMiddleware(validErrorData)
	// Every message of a session marks it used (and makes its ID known,
	// so its HTTP requests, SSE streams included, are counted in flight).
	s.mcp.AddReceivingMiddleware(func(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
		return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
			if ss, ok := req.GetSession().(*mcpsdk.ServerSession); ok && ss.ID() != "" {
				s.mu.Lock()
				u := s.used[ss.ID()]
				if u == nil {
					u = &sessionUse{}
					s.used[ss.ID()] = u
				}
				u.last = time.Now()
				s.mu.Unlock()
			}
			return next(ctx, method, req)
		}
	})
	// A host asks for the list as soon as it has started contextd: the
	// first lists wait (at most ReadyWait) for the mirrors' first sync,
	// so they are not answered empty.
	s.mcp.AddReceivingMiddleware(func(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
		return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
			if method != "resources/list" {
				return next(ctx, method, req)
			}
			s.waitReady(ctx, nil)
			s.refresh()
			res, err := next(ctx, method, req)
			if _, ok := res.(*mcpsdk.ListResourcesResult); ok && err == nil {
				// Remembered: a server whose list grows at each of its
				// lists, each after one of these, may grow with what
				// contextd lists (see mcp.ServedLists.Hold).
				s.eng.ServedLists().NoteListed()
			}
			return res, err
		}
	})
	if admit := o.Admit; admit != nil {
		s.mcp.AddReceivingMiddleware(func(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
			return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
				if !admitted(method) {
					return next(ctx, method, req)
				}
				release, err := admit(ctx)
				if err != nil {
					if ctx.Err() != nil {
						return nil, ctx.Err()
					}
					return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
				}
				defer release()
				return next(ctx, method, req)
			}
		})
	}
	// Added last, so outermost: a request waits for the servers it
	// concerns to finish their first sync (up to ReadyWait) before it
	// takes a turn. Waiting holds nothing another caller needs; holding a
	// turn while waiting would let a few requests naming a server still on
	// its first content pass (minutes on a large server) take every turn,
	// and gRPC callers get RESOURCE_EXHAUSTED meanwhile.
	s.mcp.AddReceivingMiddleware(func(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
		return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
			if servers, ok := readyScope(method, req); ok {
				s.waitReady(ctx, servers)
			}
			return next(ctx, method, req)
		}
	})
	// Outermost of all: a call whose caller has left does not wait, take
	// a turn or run.
	s.mcp.AddReceivingMiddleware(s.posts.tie)
	if o.Relay != nil {
		o.Relay.mu.Lock()
		o.Relay.s = s
		o.Relay.mu.Unlock()
	}
	s.addTools()
	s.addPrompt()
	s.mcp.AddResourceTemplate(&mcpsdk.ResourceTemplate{
		URITemplate: resourceTemplate,
		Name:        "upstream-resource",
		Title:       "A resource of an upstream MCP server",
		Description: "Any resource of a server contextd mirrors, listed or not, read through contextd's mirror and cache: server is the configured server name, uri the server's own URI (percent-encode %, ?, #, spaces and non-ASCII characters).",
	}, s.readResource)
	s.mcp.AddResourceTemplate(&mcpsdk.ResourceTemplate{
		URITemplate: ContextTemplate,
		Name:        "assembled-context",
		Title:       "Assembled context for a task",
		Description: fmt.Sprintf("The resources of every mirrored server that best serve a task, read and packed within a token budget (default %d): each content item is one resource (or the sections of it that fit), its URI the resource's contextd: URI.", DefaultBudget),
	}, s.readContext)
	return s
}

// quiet returns log for the go-sdk, its records below warnings logged at
// debug level: it logs each session's start and end, each subscription
// and each update relayed at info level, three lines or more for every
// session a caller starts (thousands a second in a loop). Each record's
// message and string values are cut to maxSDKLogBytes: the go-sdk quotes
// what a caller sent in some of its warnings (a Mcp-Protocol-Version
// header of up to 64 KiB, escaped to five times that, on every request).
//
// Its warnings are kept to one a second for each kind (the message up to
// its first ": "), with the count of those not logged: the go-sdk warns
// once per notification it could not deliver ("calling
// notifications/resources/updated: … undelivered message"), and an
// upstream sending updates as fast as it can to a resource a host
// subscribed to whose stream is not connected had it log 3,500 lines
// (550 KB) a second. Of a list_changed notification it could not deliver
// for want of a stream ("undelivered") it says so at debug level only: those go to every session, and a
// session whose client opened no standalone stream (a script that lists
// once, a host that never asks for notifications) cannot take them by
// its client's choice; a daemon serving such clients logged a warning at
// every change of its list.
func quiet(log *slog.Logger) *slog.Logger {
	return slog.New(quietHandler{log.Handler(), &warnLimits{next: map[string]time.Time{}, skipped: map[string]int{}}})
}

// maxSDKLogBytes bounds the message and each string value of a record the
// go-sdk logs.
const maxSDKLogBytes = 512

// cutLog returns s cut to maxSDKLogBytes, saying how much was left out.
func cutLog(s string) string {
	if len(s) <= maxSDKLogBytes {
		return s
	}
	return fmt.Sprintf("%s… (%d bytes more)", strings.ToValidUTF8(s[:maxSDKLogBytes], ""), len(s)-maxSDKLogBytes)
}

// cutAttr cuts a's string or error value (in groups too).
func cutAttr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		a.Value = slog.StringValue(cutLog(v.String()))
	case slog.KindGroup:
		as := v.Group()
		out := make([]slog.Attr, len(as))
		for i, g := range as {
			out[i] = cutAttr(g)
		}
		a.Value = slog.GroupValue(out...)
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			a.Value = slog.StringValue(cutLog(err.Error()))
		} else if len(v.String()) > maxSDKLogBytes {
			a.Value = slog.StringValue(cutLog(v.String()))
		}
	}
	return a
}

type quietHandler struct {
	slog.Handler
	warns *warnLimits
}

// warnLimits keeps each kind of warning to one a second.
type warnLimits struct {
	mu      sync.Mutex
	next    map[string]time.Time // kind → when one may be logged again
	skipped map[string]int       // kind → not logged since the last that was
}

// maxWarnKinds bounds the kinds remembered; past it they are forgotten.
const maxWarnKinds = 256

// allow reports whether a warning with message msg may be logged now, and
// how many of its kind were not logged since the last one that was.
func (w *warnLimits) allow(msg string) (ok bool, notLogged int) {
	kind, _, _ := strings.Cut(msg, ": ")
	kind = kind[:min(len(kind), 128)]
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now()
	if now.Before(w.next[kind]) {
		w.skipped[kind]++
		return false, 0
	}
	if len(w.next) >= maxWarnKinds {
		clear(w.next)
		clear(w.skipped)
	}
	w.next[kind] = now.Add(time.Second)
	n := w.skipped[kind]
	delete(w.skipped, kind)
	return true, n
}

func demote(l slog.Level) slog.Level {
	if l < slog.LevelWarn {
		return slog.LevelDebug
	}
	return l
}

func (h quietHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.Handler.Enabled(ctx, demote(l))
}

func (h quietHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, demote(r.Level), cutLog(r.Message), r.PC)
	if kind, _, _ := strings.Cut(r.Message, ": "); strings.HasPrefix(kind, "calling notifications/") && strings.HasSuffix(kind, "/list_changed") && strings.Contains(r.Message, "undelivered") {
		if out.Level = slog.LevelDebug; !h.Handler.Enabled(ctx, out.Level) {
			return nil
		}
	}
	if out.Level >= slog.LevelWarn && h.warns != nil {
		ok, n := h.warns.allow(out.Message)
		if !ok {
			return nil
		}
		if n > 0 {
			out.AddAttrs(slog.Int("not_logged_since_last", n))
		}
	}
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(cutAttr(a))
		return true
	})
	return h.Handler.Handle(ctx, out)
}

func (h quietHandler) WithAttrs(as []slog.Attr) slog.Handler {
	cut := make([]slog.Attr, len(as))
	for i, a := range as {
		cut[i] = cutAttr(a)
	}
	return quietHandler{h.Handler.WithAttrs(cut), h.warns}
}

func (h quietHandler) WithGroup(name string) slog.Handler {
	return quietHandler{h.Handler.WithGroup(name), h.warns}
}

// admitted reports whether a request of method takes a turn from
// Options.Admit: those that rank, read upstream or pack (the context
// prompt assembles as assemble_context does), and completions, which
// match a URI prefix against every mirrored URI (at 20,000 resources,
// 0.2 s of CPU and 18 MB allocated each).
func admitted(method string) bool {
	switch method {
	case "tools/call", "prompts/get", "resources/read", "completion/complete":
		return true
	}
	return false
}

const instructions = `contextd fronts the user's MCP servers: it mirrors their resources, ranks them for a task and packs the best within a token budget.
Call assemble_context with the task in plain words before answering a question that may depend on the user's documents, code or data; call search_resources to see what exists without reading it.
Resource URIs have the form contextd:resource/<server>/<upstream URI>, where only characters a URI cannot carry there are percent-encoded.`

// MCP returns the go-sdk server, to connect transports to (Run, Connect,
// NewStreamableHTTPHandler).
func (s *Server) MCP() *mcpsdk.Server { return s.mcp }

// Run keeps the resource list in step with the mirrors until ctx ends. It
// brings it up to date at once, then every Options.CheckInterval.
func (s *Server) Run(ctx context.Context) error {
	defer func() {
		s.mu.Lock()
		s.stopped = true
		s.mu.Unlock()
		close(s.stop)
		s.relays.Wait()
	}()
	t := time.NewTicker(s.opts.CheckInterval)
	defer t.Stop()
	save := time.NewTicker(stateSaveEvery)
	defer save.Stop()
	withheld, written := s.eng.ServedLists().WithheldGen(), time.Now()
	s.saveServed(false) // whole: the reads answered from now on are appended as answered
	for {
		s.refresh()
		if g := s.eng.ServedLists().WithheldGen(); g != withheld {
			withheld = g
			s.savePaces(true) // see stateSaveEvery
		}
		select {
		case <-ctx.Done():
			s.SaveState() // its time is when contextd stopped
			return nil
		case <-save.C:
			refresh := time.Since(written) >= stateRefreshEvery
			if refresh {
				written = time.Now()
			}
			s.savePaces(refresh)
			s.saveServed(false)
		case <-s.servedDue:
			s.saveServed(false)
		case <-t.C:
		}
	}
}

// HTTPHandler returns the Streamable HTTP handler of the server. Served on
// a loopback address, it refuses requests whose Host header is not a
// loopback name or address (the go-sdk's DNS rebinding protection), and
// cross-origin requests from browsers (Sec-Fetch-Site or Origin, see
// http.CrossOriginProtection): a web page the user visits must not reach
// the user's resources through it. Sessions idle for
// Options.SessionTimeout are closed, and at most Options.MaxSessions are
// held (see there). A POST body over MaxRequestBytes or MaxRequestValues
// is refused with 413 before it is decoded; a session's POST is handed
// over with only the headers the go-sdk reads (431 past
// MaxSessionHeaderBytes). A call whose POST ends before its answer (the
// caller closed the connection) stops, or does not start.
func (s *Server) HTTPHandler() http.Handler {
	return boundBodies(s.trackSessions(s.posts.serve(mcpsdk.NewStreamableHTTPHandler(func(*http.Request) *mcpsdk.Server { return s.mcp },
		&mcpsdk.StreamableHTTPOptions{Logger: quiet(s.log), CrossOriginProtection: http.NewCrossOriginProtection(),
			SessionTimeout: max(s.opts.SessionTimeout, 0), MaxRequestBodyBytes: MaxRequestBytes,
			PropagateRequestCancellation: true}))))
}

// sessionUse is one session's use: when its last request came or ended,
// and how many of its HTTP requests are in flight.
type sessionUse struct {
	last     time.Time
	inFlight int
}

// trackSessions counts each known session's HTTP requests in flight (but
// its GET stream) and marks its use as they come and end; and, for a POST
// starting a session (no session ID) that passes the go-sdk's
// cross-origin check, makes room for it first, answering 503 when none can
// be made. (One the go-sdk then refuses for its Host header may have
// closed an idle session; it passed the token check to get here.)
func (s *Server) trackSessions(next http.Handler) http.Handler {
	cop := http.NewCrossOriginProtection()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("Mcp-Session-Id")
		if id == "" {
			if r.Method == http.MethodPost && cop.Check(r) == nil && !s.makeRoom() {
				w.Header().Set("Retry-After", strconv.Itoa(int(max(1, s.opts.MinIdleToClose/time.Second/4))))
				http.Error(w, fmt.Sprintf("too many sessions in use: %d (max sessions), none idle for %v; retry later", s.opts.MaxSessions, s.opts.MinIdleToClose), http.StatusServiceUnavailable)
				return
			}
			next.ServeHTTP(w, r)
			return
		}
		// A GET is the session's stream of server messages: counted in
		// flight while held open, it kept the session for good, and 256
		// of them, costing nothing, kept every new host out.
		s.mu.Lock()
		u := s.used[id]
		counted := u != nil && r.Method != http.MethodGet
		if u != nil {
			u.last = time.Now()
		}
		if counted {
			u.inFlight++
		}
		s.mu.Unlock()
		if counted {
			defer func() {
				s.mu.Lock()
				u.inFlight--
				u.last = time.Now()
				s.mu.Unlock()
			}()
		}
		next.ServeHTTP(w, r)
	})
}

// makeRoom closes sessions so that a new one leaves at most
// Options.MaxSessions open: past it, those used least recently among the
// ones with no request in flight and none for Options.MinIdleToClose. It
// reports false, closing none, when too few are that idle. A session
// closes once its requests in flight finish, so it is closed in the
// background, once: until then it is not counted, and no other request
// closes it again.
func (s *Server) makeRoom() bool {
	all := slices.Collect(s.mcp.Sessions())
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	live := make(map[string]bool, len(all))
	var open []*mcpsdk.ServerSession
	for _, ss := range all {
		live[ss.ID()] = true
		if !s.closing[ss] {
			open = append(open, ss)
		}
	}
	for id := range s.used {
		if !live[id] {
			delete(s.used, id)
		}
	}
	excess := len(open) - s.opts.MaxSessions + 1
	if excess <= 0 {
		return true
	}
	type idle struct {
		ss   *mcpsdk.ServerSession
		last time.Time
	}
	var idles []idle
	for _, ss := range open {
		u := s.used[ss.ID()]
		if u == nil { // no message yet: used as of now
			u = &sessionUse{last: now}
			s.used[ss.ID()] = u
		}
		if u.inFlight == 0 && now.Sub(u.last) >= s.opts.MinIdleToClose {
			idles = append(idles, idle{ss, u.last})
		}
	}
	if len(idles) < excess {
		return false
	}
	slices.SortStableFunc(idles, func(a, b idle) int { return a.last.Compare(b.last) })
	for _, v := range idles[:excess] {
		ss := v.ss
		s.closing[ss] = true
		go func() {
			_ = ss.Close()
			s.mu.Lock()
			delete(s.closing, ss)
			s.mu.Unlock()
		}()
	}
	return true
}

// readyScope returns the servers a request waits for before it runs (nil:
// every server), and whether it waits at all: tool calls for the servers
// they name (every server when they name none), the context prompt and
// context reads for every server, a resource read for its server.
func readyScope(method string, req mcpsdk.Request) ([]string, bool) {
	switch r := req.(type) {
	case *mcpsdk.CallToolRequest:
		if r.Params == nil {
			return nil, false
		}
		var in struct {
			Servers []string `json:"servers"`
			Pins    []string `json:"pins"`
		}
		// Arguments that do not decode are refused by the tool's own
		// schema check; they wait for nothing.
		if err := json.Unmarshal(r.Params.Arguments, &in); err != nil {
			return nil, false
		}
		return toolScope(in.Servers, in.Pins), true
	case *mcpsdk.GetPromptRequest:
		return nil, method == "prompts/get"
	case *mcpsdk.ReadResourceRequest:
		if r.Params == nil {
			return nil, false
		}
		if k, err := ParseResourceURI(r.Params.URI); err == nil {
			return []string{k.Server}, true
		}
		return nil, strings.HasPrefix(r.Params.URI, contextPrefix)
	}
	return nil, false
}

// toolScope returns the servers a tool call with these servers and pins
// concerns: the servers named and the pins' servers, or nil (every
// server) when none is named.
func toolScope(servers, pins []string) []string {
	if len(servers) == 0 {
		return nil
	}
	scope := slices.Clone(servers)
	for _, p := range pins {
		if k, err := ParseResourceURI(p); err == nil {
			scope = append(scope, k.Server)
		}
	}
	return scope
}

// waitReady waits, at most ReadyWait, until the servers in scope have
// finished their first sync and first content pass. A request that names
// no server waits for the mirrors contextd started with, not for one a
// reload started since (a server added, or a name pointed elsewhere): its
// hosts already have a list, and are told when it changes; and a server
// that answers contextd from contextd's own list would have every such
// request wait on itself. A server that does not get there in time only
// delays the request, which is answered with what is mirrored. A server
// that has synced but whose first content pass outlasted one such wait
// delays no later request: the pass may read slowly for minutes
// (content_pass_time), and its descriptors already answer. One that has
// not synced is waited for by each request, until its connect attempt
// ends (within sync_timeout).
func (s *Server) waitReady(ctx context.Context, servers []string) {
	all := len(servers) == 0
	if all {
		servers = s.eng.ServerNames()
	}
	var chans []<-chan struct{}
	var names []string
	s.mu.Lock()
	for _, name := range servers {
		if ch := s.eng.Ready(name); ch != nil && !s.waitedOut[ch] && (!all || s.started[ch]) {
			chans, names = append(chans, ch), append(names, name)
		}
	}
	s.mu.Unlock()
	if len(chans) == 0 {
		return
	}
	t := time.NewTimer(s.opts.ReadyWait)
	defer t.Stop()
	for i, ch := range chans {
		select {
		case <-ch:
		case <-t.C:
			synced := map[string]bool{}
			for name, v := range s.eng.ListVersions() {
				synced[name] = v.Syncs > 0
			}
			s.mu.Lock()
			if s.waitedOut == nil {
				s.waitedOut = map[<-chan struct{}]bool{}
			}
			for j, c := range chans[i:] {
				select {
				case <-c:
				default:
					if synced[names[i+j]] {
						s.waitedOut[c] = true
					}
				}
			}
			// Mirrors a reload replaced, or that got ready since, are
			// not waited for anyway.
			for c := range s.waitedOut {
				select {
				case <-c:
					delete(s.waitedOut, c)
				default:
				}
			}
			s.mu.Unlock()
			return
		case <-ctx.Done():
			return
		}
	}
}

// validErrorData is a receiving middleware that keeps an error's data
// valid JSON. The go-sdk's ResourceNotFoundError writes the URI with Go's
// %q, whose escapes (\x01, \a, \U0001D173) are not JSON's: the answer could
// not be encoded, and the session ended (a stdio host lost contextd, an
// HTTP session stopped answering). Such data is written anew from the
// request's URI, or dropped.
func validErrorData(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
	return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
		res, err := next(ctx, method, req)
		var je *jsonrpc.Error
		if err == nil || !errors.As(err, &je) || je.Data == nil || json.Valid(je.Data) {
			return res, err
		}
		e := *je
		e.Data = nil
		if r, ok := req.(*mcpsdk.ReadResourceRequest); ok && r.Params != nil {
			e.Data = uriData(r.Params.URI)
		}
		return res, &e
	}
}

// uriData returns the data of a "resource not found" error:
// {"uri": uri}, as JSON.
func uriData(uri string) json.RawMessage {
	b, err := json.Marshal(struct {
		URI string `json:"uri"`
	}{uri})
	if err != nil {
		return nil
	}
	return b
}

// rpcError maps an engine or upstream error to a JSON-RPC error with a
// clear message. uri names the resource, for not-found errors.
//
// An upstream's JSON-RPC error keeps its code, but not its own message and
// data: the message is err's, which the mirror masked (the upstream's
// message may quote a credential), and the data is dropped, since nothing
// masks it and a caller has no use for another server's details.
func rpcError(ctx context.Context, err error, uri string) error {
	var je *jsonrpc.Error
	var nf *mcp.NotFoundError
	switch {
	case errors.As(err, &je):
		return &jsonrpc.Error{Code: je.Code, Message: err.Error()}
	case ctx.Err() != nil:
		return ctx.Err() // the SDK answers a cancelled request itself
	case errors.Is(err, errNotOurs), errors.Is(err, engine.ErrInvalidArgument):
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	case errors.As(err, &nf):
		e := *mcpsdk.ResourceNotFoundError(uri).(*jsonrpc.Error)
		e.Message = "Resource not found: " + err.Error()
		e.Data = uriData(uri)
		return &e
	case errors.Is(err, engine.ErrUnavailable), errors.Is(err, ctxsync.ErrUnavailable):
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "upstream unavailable: " + err.Error()}
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
}

// nameInstance is a receiving middleware that names this process in the
// _meta of initialize and server/discover results (mcp.InstanceMetaKey),
// so that a contextd whose configuration lists its own mcp_listen knows
// the server it reached is itself, and mirrors it not.
func nameInstance(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
	return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
		res, err := next(ctx, method, req)
		switch r := res.(type) {
		case *mcpsdk.InitializeResult:
			if r != nil {
				r.Meta = withInstance(r.Meta)
			}
		case *mcpsdk.DiscoverResult:
			if r != nil {
				r.Meta = withInstance(r.Meta)
			}
		}
		return res, err
	}
}

func withInstance(m mcpsdk.Meta) mcpsdk.Meta {
	out := mcpsdk.Meta{mcp.InstanceMetaKey: mcp.Instance()}
	for k, v := range m {
		if k != mcp.InstanceMetaKey {
			out[k] = v
		}
	}
	return out
}
