package mcp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/resource"
)

// JSON-RPC error codes that mean "no such resource" (MCP 2025-11-25
// "Resources > Error Handling" uses -32002; newer revisions and the go-sdk
// since v1.7 use -32602 Invalid params).
const (
	codeResourceNotFound = -32002
	codeInvalidParams    = jsonrpc.CodeInvalidParams
)

// A NotFoundError reports that the server does not know a URI.
type NotFoundError struct {
	Server, URI string
	Code        int64  // the JSON-RPC error code the server sent
	Message     string // the server's message
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("mcp: server %q: resource %q not found (%d: %s)", e.Server, e.URI, e.Code, e.Message)
}

// Read sends resources/read for uri and returns every content item. Blob
// items are base64-decoded; a missing MIME type stays empty.
//
// Errors: ErrNoResources (nothing sent), *NotFoundError, or the transport's.
func (s *Session) Read(ctx context.Context, uri string) ([]resource.Content, error) {
	c, _, err := s.ReadHint(ctx, uri)
	return c, err
}

// MaxCacheTTL caps CacheHint.TTL: a server cannot have a result kept for
// longer than a day, and a huge ttlMs cannot overflow a time.Duration.
const MaxCacheTTL = 24 * time.Hour

// A CacheHint is the caching advice a server put on a read result: its
// ttlMs and cacheScope (MCP draft revision 2026-07-28, Server Utilities >
// Caching; SEP-2549). go-sdk servers send both fields on every protocol
// revision, so older sessions can carry them too. Malformed or repeated
// fields fail no read: the connection repairs them first, erring towards
// no TTL and a private scope (see repairHints in wire.go).
type CacheHint struct {
	// TTL is how long after the result was received it may be considered
	// fresh: ttlMs milliseconds. An absent, zero or negative ttlMs gives 0,
	// "immediately stale" (the draft's default for an absent field); a
	// ttlMs above MaxCacheTTL gives MaxCacheTTL.
	TTL time.Duration
	// Scope is the cacheScope as sent: "public" (any caller may be served
	// the result), "private" (only the requesting user may), "" when the
	// server sent none, or any other string a server sent. Only "public"
	// allows sharing; see Public.
	Scope string
}

// Public reports whether the result may be served to a caller other than
// the one whose request fetched it: only cacheScope "public" allows that.
// "private", an absent scope and values the draft does not define are all
// treated as private, the most conservative reading.
func (h CacheHint) Public() bool { return h.Scope == "public" }

func cacheHint(c mcpsdk.Cacheable) CacheHint {
	h := CacheHint{Scope: c.CacheScope}
	if c.TTLMs > 0 {
		h.TTL = MaxCacheTTL
		if int64(c.TTLMs) < MaxCacheTTL.Milliseconds() {
			h.TTL = time.Duration(c.TTLMs) * time.Millisecond
		}
	}
	return h
}

// ReadHint is Read, also returning the caching advice the server put on the
// result. Errors: as Read.
//
// The go-sdk (v1.8.0) ClientSession keeps its own cache of resources/read
// results on sessions that negotiated 2026-07-28: it serves a result again
// for its ttlMs whatever its cacheScope, keeps no byte bound, and is not
// cleared by notifications/resources/list_changed. The mirror's cache does
// all of that per contextd's rules, so contextd keeps the SDK's empty: the
// sending middleware installed by ConnectTransport (readHints) hands each
// result to ReadHint through the context and gives the SDK an empty one
// with ttlMs 0 ("immediately stale") to store instead, so the SDK never
// serves a stored result and holds none of a result's memory (its _meta
// maps, about 5 KB per resource, stayed reachable from the SDK's cache
// until the URI was read again). Every ReadHint is a request to the server.
func (s *Session) ReadHint(ctx context.Context, uri string) ([]resource.Content, CacheHint, error) {
	if !s.caps.Resources {
		return nil, CacheHint{}, fmt.Errorf("mcp: server %q: read %q: %w", s.name, uri, ErrNoResources)
	}
	var slot readSlot
	res, err := s.cs.ReadResource(context.WithValue(ctx, hintKey{}, &slot), &mcpsdk.ReadResourceParams{URI: uri})
	if err != nil {
		var werr *jsonrpc.Error
		if errors.As(err, &werr) && (werr.Code == codeResourceNotFound || werr.Code == codeInvalidParams) {
			return nil, CacheHint{}, &NotFoundError{Server: s.name, URI: uri, Code: werr.Code, Message: werr.Message}
		}
		if errors.As(err, &werr) && werr.Code == codeTooLarge && strings.Contains(werr.Message, "exceeds max_message_bytes") {
			return nil, CacheHint{}, fmt.Errorf("mcp: server %q: read %q: %w (%s)", s.name, uri, ErrTooLarge, werr.Message)
		}
		return nil, CacheHint{}, fmt.Errorf("mcp: server %q: read %q: %w", s.name, uri, s.exited(err))
	}
	if slot.res != nil {
		res = slot.res
	}
	if res == nil || res == emptyRead {
		return nil, CacheHint{}, fmt.Errorf("mcp: server %q: read %q: no result", s.name, uri)
	}
	if res.NeedsInput() {
		return nil, CacheHint{}, fmt.Errorf("mcp: server %q: read %q: %w", s.name, uri, ErrInputRequired)
	}
	out := make([]resource.Content, 0, len(res.Contents))
	for _, c := range res.Contents {
		if c == nil {
			continue
		}
		item := resource.Content{URI: c.URI, MIMEType: c.MIMEType}
		if why, ok := c.Meta[metaInvalid].(string); ok {
			item.IsBlob, item.Error = true, why
		} else if c.Blob != nil {
			item.IsBlob = true
			item.Blob = c.Blob
		} else {
			item.Text = c.Text
		}
		out = append(out, item)
	}
	return out, cacheHint(slot.hint), nil
}

// hintKey is the context key under which ReadHint passes readHints the
// *readSlot to put a read's result in.
type hintKey struct{}

// readSlot is where readHints puts a resources/read result and its cache
// hint for ReadHint.
type readSlot struct {
	res  *mcpsdk.ReadResourceResult
	hint mcpsdk.Cacheable
}

// emptyRead is the result readHints gives the SDK (which stores it) in
// place of the one it hands ReadHint: no contents, ttlMs 0. It is never
// modified.
var emptyRead = &mcpsdk.ReadResourceResult{}

// readHints is a client sending middleware (see ReadHint): for a
// resources/read that ReadHint sent, it puts the result and its ttlMs and
// cacheScope in the *readSlot in the context and returns emptyRead for the
// SDK to store; for any other read it sets the result's ttlMs to 0 before
// the SDK's own cache stores it. Either way the SDK stores it under the
// URI "", not the URI read.
func readHints(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
	return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
		res, err := next(ctx, method, req)
		if p, ok := req.GetParams().(*mcpsdk.ReadResourceParams); ok && p != nil {
			// The SDK stores under the request's URI, and drops an entry
			// only when that URI is read again: every URI a session ever
			// read (a server that lists new URIs at each re-list has each
			// read once) would stay. Under "" it holds one.
			p.URI = ""
		}
		if r, ok := res.(*mcpsdk.ReadResourceResult); ok && r != nil && r != emptyRead {
			if slot, ok := ctx.Value(hintKey{}).(*readSlot); ok {
				slot.res, slot.hint = r, r.Cacheable
				return emptyRead, err
			}
			r.TTLMs = 0
		}
		return res, err
	}
}

// ErrTooLarge is wrapped by the error of a read whose response was over
// Options.MaxMessageBytes: the session stays up, and reading the same
// version of the resource again would fail the same way.
var ErrTooLarge = errors.New("response exceeds max_message_bytes")

// ErrSessionExpired is wrapped by the errors of requests a Streamable HTTP
// server answered with 404 for the session id: the server ended the session
// (MCP 2025-06-18, Transports § Session Management) and a client must
// initialize a new one. It is the go-sdk's ErrSessionMissing.
var ErrSessionExpired = mcpsdk.ErrSessionMissing

// ErrInputRequired is returned by Read when the server answered with an
// input-required result (resultType "input_required", multi round-trip
// requests, protocol 2026-07-28): it asks the client for input (an
// elicitation, a sampling) before it gives the contents. contextd has no one
// to ask and does not retry.
var ErrInputRequired = errors.New("the server asks for input before it gives the contents (input_required); contextd cannot answer it")

// errListenClosing fails a Subscribe while the stream of an earlier
// subscription to the URI is still closing (see listenTracker.closing); a
// later Subscribe succeeds.
var errListenClosing = errors.New("the previous subscriptions/listen stream for the URI is still closing")

// listenAckWait bounds how long Subscribe waits for the server to
// acknowledge a subscriptions/listen request.
const listenAckWait = 10 * time.Second

// streamingSubscriptions reports whether the negotiated protocol moved
// subscriptions to subscriptions/listen.
func (s *Session) streamingSubscriptions() bool {
	_, _, proto := s.ServerInfo()
	return proto >= "2026-07-28"
}

// Subscribe asks the server for notifications/resources/updated about uri.
//
// On sessions that negotiated 2026-07-28 or later it opens a
// subscriptions/listen stream for uri and waits (within ctx, at most
// listenAckWait) for the server's acknowledgement: it returns nil only when
// the acknowledgement includes uri. A URI already subscribed on a live
// stream is not subscribed again. Options.OnSubscriptionEnded reports a
// stream the server ends later.
//
// Errors: ErrNoResources or ErrNoSubscribe (nothing sent), ErrListenLimit
// (nothing sent), ErrNotHonoured (the stream is cancelled; a URI refused
// once is not asked for again on the session), or the server's.
func (s *Session) Subscribe(ctx context.Context, uri string) error {
	if err := s.canSubscribe("subscribe", uri); err != nil {
		return err
	}
	if s.streamingSubscriptions() {
		return s.listen(ctx, uri)
	}
	if s.standalone != nil {
		// Before the request: an update may arrive before its answer. A
		// gap in the stream reports it updated (see standaloneStream.gap).
		s.standalone.track(uri, true)
	}
	if err := s.cs.Subscribe(ctx, &mcpsdk.SubscribeParams{URI: uri}); err != nil {
		return fmt.Errorf("mcp: server %q: subscribe %q: %w", s.name, uri, err)
	}
	return nil
}

// Unsubscribe cancels a subscription made by Subscribe (on 2026-07-28
// sessions: cancels its subscriptions/listen stream). Errors: as Subscribe.
func (s *Session) Unsubscribe(ctx context.Context, uri string) error {
	if err := s.canSubscribe("unsubscribe", uri); err != nil {
		return err
	}
	if s.streamingSubscriptions() {
		s.listens.cancel(uri) // counted closed now; the go-sdk sends the cancellation later
	}
	if err := s.cs.Unsubscribe(ctx, &mcpsdk.UnsubscribeParams{URI: uri}); err != nil {
		return fmt.Errorf("mcp: server %q: unsubscribe %q: %w", s.name, uri, err)
	}
	if s.standalone != nil {
		s.standalone.track(uri, false)
	}
	return nil
}

// canSubscribe says why op (subscribe or unsubscribe) must not be sent, or nil.
func (s *Session) canSubscribe(op, uri string) error {
	var why error
	switch {
	case !s.caps.Resources:
		why = ErrNoResources
	case !s.caps.Subscribe:
		why = ErrNoSubscribe
	default:
		return nil
	}
	return fmt.Errorf("mcp: server %q: %s %q: %w", s.name, op, uri, why)
}

// listen subscribes uri with a subscriptions/listen stream (see Subscribe).
func (s *Session) listen(ctx context.Context, uri string) error {
	fail := func(err error) error { return fmt.Errorf("mcp: server %q: subscribe %q: %w", s.name, uri, err) }
	if why := s.listens.refusal(uri); why != "" {
		return fail(fmt.Errorf("%w: %s (earlier on this session)", ErrNotHonoured, why))
	}
	s.listenMu.Lock()
	if s.closed {
		s.listenMu.Unlock()
		return fail(mcpsdk.ErrConnectionClosed)
	}
	l := s.listens.lookup(uri)
	if l == nil {
		if s.listens.closing(uri) {
			s.listenMu.Unlock()
			return fail(errListenClosing)
		}
		if s.listens.open() >= s.maxListens() {
			s.listenMu.Unlock()
			return fail(fmt.Errorf("%w (%d)", ErrListenLimit, s.maxListens()))
		}
		// The go-sdk skips a URI it still counts as subscribed, even when
		// the server has ended that stream: forget it first.
		_ = s.cs.Unsubscribe(ctx, &mcpsdk.UnsubscribeParams{URI: uri})
		if err := s.cs.Subscribe(ctx, &mcpsdk.SubscribeParams{URI: uri}); err != nil {
			s.listenMu.Unlock()
			return fail(err)
		}
		l = s.listens.lookup(uri)
	}
	s.listenMu.Unlock()
	if l == nil {
		// The server may have answered already: it acknowledged the
		// stream without the URI, or refused it, and ended it.
		if why := s.listens.refusal(uri); why != "" {
			return fail(fmt.Errorf("%w: %s", ErrNotHonoured, why))
		}
		return fail(errors.New("the subscriptions/listen request was not sent"))
	}
	wctx, cancel := context.WithTimeout(ctx, listenAckWait)
	defer cancel()
	select {
	case <-l.acked:
	case <-wctx.Done():
		s.listens.cancel(uri)
		_ = s.cs.Unsubscribe(context.WithoutCancel(ctx), &mcpsdk.UnsubscribeParams{URI: uri})
		return fail(fmt.Errorf("no acknowledgement of subscriptions/listen: %w", wctx.Err()))
	}
	if ok, why := s.listens.verdict(l, uri); !ok {
		s.listens.cancel(uri)
		_ = s.cs.Unsubscribe(ctx, &mcpsdk.UnsubscribeParams{URI: uri})
		return fail(fmt.Errorf("%w: %s", ErrNotHonoured, why))
	}
	return nil
}

func (s *Session) maxListens() int {
	if s.opts.MaxListens > 0 {
		return s.opts.MaxListens
	}
	return DefaultMaxListens
}
