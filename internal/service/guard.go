package service

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"

	contextdv1 "github.com/contextd/contextd/proto/contextd/v1"
)

// GuardOptions says who may call the daemon and how much may run at once.
type GuardOptions struct {
	// Token, when not empty, must come with every call, to every service
	// (contextd, health, reflection), as the metadata
	// "authorization: Bearer TOKEN"; a call without it fails with
	// UNAUTHENTICATED. Health is not exempt: a liveness probe passes the
	// token too (grpc-health-probe -rpc-header).
	Token string
	// Tokens, when set, holds the token instead of Token, read at each
	// call: a reload may rotate it (see Token.Set). A token empty when
	// Guard is called stays so: calls are not checked.
	Tokens *Token
	// MaxConcurrent is how many Assemble and Search calls run at once;
	// zero means no limit. ListServers, health and reflection are cheap and
	// not counted.
	MaxConcurrent int
	// MaxQueued is how many more may wait for a turn. A call beyond that
	// fails at once with RESOURCE_EXHAUSTED, as does one that waits longer
	// than MaxQueueWait (or its own deadline).
	MaxQueued int
	// MaxQueueWait bounds a call's wait for a turn. Zero means
	// DefaultMaxQueueWait.
	MaxQueueWait time.Duration
	// Admission, when set, is used instead of one built from
	// MaxConcurrent, MaxQueued and MaxQueueWait, so that other entry points
	// (the MCP endpoint) share the turns with gRPC.
	Admission *Admission
	// MaxUnstarted bounds the calls, of every method and on every
	// connection, that have arrived and whose handler has not started
	// yet; a call past it fails at once with RESOURCE_EXHAUSTED. Values
	// below DefaultMaxUnstarted (zero included) mean DefaultMaxUnstarted.
	MaxUnstarted int
	// OnRefused, when set, is told of each call refused as its headers
	// arrive (no interceptor sees these), with the reason:
	// "unauthenticated", "busy" (MaxUnstarted) or "malformed" (its method
	// name). It must be cheap and safe for concurrent use.
	OnRefused func(reason string)
	// OnAuthenticated, when set, is called with the stream's context for
	// each call whose headers pass the token check (every call when there
	// is no token), as they arrive; the context carries what the
	// connection's stats handlers tagged it with. It must be cheap and safe
	// for concurrent use.
	OnAuthenticated func(ctx context.Context)
	// RequestWait bounds the wait for a call's first request message
	// after its headers; past it the call ends (CANCELLED). Zero means
	// no bound. The daemon uses its handshake timeout.
	RequestWait time.Duration
}

// DefaultMaxQueueWait is how long a call waits for a turn by default.
const DefaultMaxQueueWait = 10 * time.Second

// Guard returns the server options that enforce o: interceptors checking
// the token on every call and admitting Assemble and Search calls.
func Guard(o GuardOptions) []grpc.ServerOption {
	a := o.Admission
	if a == nil {
		a = NewAdmission(o.MaxConcurrent, o.MaxQueued, o.MaxQueueWait)
	}
	refused := status.Error(codes.Unauthenticated, "missing or wrong token: send \"authorization: Bearer TOKEN\" with the token of the daemon's auth config")
	if o.Tokens == nil {
		o.Tokens = NewToken(o.Token)
	}
	checked := o.Tokens.Get() != ""
	auth := func(ctx context.Context) error {
		if !checked {
			return nil
		}
		md, _ := metadata.FromIncomingContext(ctx)
		if bearerOK(md.Get("authorization"), o.Tokens.Get()) {
			return nil
		}
		return refused
	}
	unary := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if err := auth(ctx); err != nil {
			return nil, err
		}
		if admitted(info.FullMethod) {
			release, err := a.Admit(ctx)
			if err != nil {
				return nil, admitStatus(err)
			}
			defer release()
		}
		return handler(ctx, req)
	}
	reflections := make(chan struct{}, MaxReflectionStreams)
	watches := make(chan struct{}, MaxWatchStreams)
	stream := func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		rotated := o.Tokens.Rotated() // before the check: a rotation after it ends the stream
		if err := auth(ss.Context()); err != nil {
			return err
		}
		if checked {
			ctx, cancel := untilRotated(ss.Context(), rotated)
			defer cancel()
			ss = &rotatedStream{ServerStream: ss, ctx: ctx, rotated: rotated}
		}
		switch {
		case reflectionMethod(info.FullMethod):
			select {
			case reflections <- struct{}{}:
				defer func() { <-reflections }()
			default:
				return status.Errorf(codes.ResourceExhausted, "busy: %d server reflection streams are open; retry later", MaxReflectionStreams)
			}
		case info.FullMethod == healthWatch:
			select {
			case watches <- struct{}{}:
				defer func() { <-watches }()
			default:
				return status.Errorf(codes.ResourceExhausted, "busy: %d health Watch streams are open; retry later, or call Check", MaxWatchStreams)
			}
		}
		err := handler(srv, ss)
		if rs, ok := ss.(*rotatedStream); ok && err != nil && rs.ctx.Err() != nil {
			select {
			case <-rotated:
				// Ended by the rotation (a Watch returns its context's
				// error): say so, not "canceled".
				return errRotated
			default:
			}
		}
		return err
	}
	gate := &startGate{max: int64(max(o.MaxUnstarted, DefaultMaxUnstarted)), requestWait: o.RequestWait}
	return []grpc.ServerOption{grpc.ChainUnaryInterceptor(unary), grpc.ChainStreamInterceptor(stream),
		grpc.StatsHandler(gate),
		grpc.InTapHandle(func(ctx context.Context, info *tap.Info) (context.Context, error) {
			// Interceptors run only once a unary call's request message
			// is in: a client without the token could otherwise open
			// streams that send headers and never a message, each
			// holding a goroutine and its buffers (200,000 on one
			// connection: 2 GB). The tap refuses them as their headers
			// arrive, before any is started.
			var err error
			if checked && !bearerOK(info.Header.Get("authorization"), o.Tokens.Get()) {
				err = refused
			} else {
				if o.OnAuthenticated != nil {
					o.OnAuthenticated(ctx)
				}
				if ctx, err = gate.admit(ctx, info.FullMethodName); err == nil {
					return ctx, nil
				}
			}
			if o.OnRefused != nil {
				reason := "busy"
				switch status.Code(err) {
				case codes.Unauthenticated:
					reason = "unauthenticated"
				case codes.Unimplemented:
					reason = "malformed"
				}
				o.OnRefused(reason)
			}
			return nil, err
		})}
}

// bearerOK reports whether one of the authorization values is
// "Bearer TOKEN": the scheme in any case (RFC 9110 §11.1: "bearer" is
// "Bearer"), the token compared in constant time.
func bearerOK(values []string, token string) bool {
	const scheme = "Bearer "
	ok := false
	for _, got := range values {
		if len(got) >= len(scheme) && strings.EqualFold(got[:len(scheme)], scheme) &&
			subtle.ConstantTimeCompare([]byte(got[len(scheme):]), []byte(token)) == 1 {
			ok = true
		}
	}
	return ok
}

// A Token is the daemon's token, which a reload may rotate: the old one
// is refused from the next call on. Safe for concurrent use; a nil Token
// holds "".
type Token struct {
	v       atomic.Pointer[string]
	mu      sync.Mutex
	rotated chan struct{} // closed when the token held is replaced; nil until asked for
}

// NewToken returns a Token holding s.
func NewToken(s string) *Token {
	t := &Token{}
	t.v.Store(&s)
	return t
}

// Get returns the token held.
func (t *Token) Get() string {
	if t == nil {
		return ""
	}
	if p := t.v.Load(); p != nil {
		return *p
	}
	return ""
}

// Set replaces the token held with s, which must not be empty (whether
// calls are checked at all is decided when the guards are made).
func (t *Token) Set(s string) {
	if s == "" || s == t.Get() {
		return
	}
	t.v.Store(&s)
	t.mu.Lock()
	if t.rotated != nil {
		close(t.rotated)
		t.rotated = nil
	}
	t.mu.Unlock()
}

// Rotated returns a channel closed when Set next replaces the token held.
// A stream checked against the token it held when asked ends on it: what
// a leaked token opened does not outlive its rotation.
func (t *Token) Rotated() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.rotated == nil {
		t.rotated = make(chan struct{})
	}
	return t.rotated
}

// untilRotated returns ctx, cancelled too once rotated is closed, and its
// cancel func, which must be called.
func untilRotated(ctx context.Context, rotated <-chan struct{}) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-rotated:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// rotatedStream is a stream that ends once the token it was opened with
// is rotated: its context is cancelled, and it neither takes nor sends a
// message after that.
type rotatedStream struct {
	grpc.ServerStream
	ctx     context.Context
	rotated <-chan struct{} // closed by the rotation, before ctx is cancelled
}

// ended reports whether the stream's token was rotated or its context
// ended. The rotation is read from its channel, not only from ctx: ctx is
// cancelled by a goroutine a moment later, and a message taken or sent
// meanwhile would be answered with the token replaced.
func (s *rotatedStream) ended() bool {
	select {
	case <-s.rotated:
		return true
	default:
		return s.ctx.Err() != nil
	}
}

var errRotated = status.Error(codes.Unauthenticated, "the token this stream was opened with has been replaced: open it again with the new one")

func (s *rotatedStream) Context() context.Context { return s.ctx }

func (s *rotatedStream) RecvMsg(m any) error {
	err := s.ServerStream.RecvMsg(m)
	if s.ended() {
		return errRotated
	}
	return err
}

func (s *rotatedStream) SendMsg(m any) error {
	if s.ended() {
		return errRotated
	}
	return s.ServerStream.SendMsg(m)
}

// RequireBearer returns h guarded like the gRPC calls: when token is not
// empty, a request without the header "Authorization: Bearer TOKEN" gets
// 401 Unauthorized and never reaches h, and its connection is closed
// (nothing more is read from it), so a client without the token cannot
// hold connections open. It guards the MCP endpoint (Streamable HTTP) that
// serve runs beside the gRPC one, so a token set for a shared machine is
// not bypassed there.
func RequireBearer(token string, h http.Handler) http.Handler {
	return RequireBearerOf(NewToken(token), h)
}

// RequireBearerOf is RequireBearer with the token held by t, read at each
// request (a reload may rotate it). Empty when called, requests are not
// checked.
func RequireBearerOf(t *Token, h http.Handler) http.Handler {
	if t.Get() == "" {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rotated := t.Rotated() // before the check: a rotation after it ends the stream
		if !bearerOK(r.Header.Values("Authorization"), t.Get()) {
			// Without the read deadline, net/http would still wait for a
			// declared body that never comes before closing.
			_ = http.NewResponseController(w).SetReadDeadline(time.Now())
			w.Header().Set("Connection", "close")
			w.Header().Set("WWW-Authenticate", `Bearer realm="contextd"`)
			http.Error(w, "missing or wrong token: send \"Authorization: Bearer TOKEN\" with the token of the daemon's auth config", http.StatusUnauthorized)
			return
		}
		if r.Method == http.MethodGet {
			// An event stream (MCP's GET) lasts as long as its session:
			// it ends when the token it was opened with is rotated.
			ctx, cancel := untilRotated(r.Context(), rotated)
			defer cancel()
			r = r.WithContext(ctx)
		}
		h.ServeHTTP(w, r)
	})
}

// MaxReflectionStreams bounds the server reflection streams open at once,
// all connections together; one past it fails with RESOURCE_EXHAUSTED. Each request of one (some 40 bytes) is answered
// with up to 16 KB of descriptors, and a stream whose client does not read
// queues about 200 KB before its handler blocks: 100 streams on each of 64
// connections held 1.2 GB. A tool such as grpcurl opens one, briefly.
const MaxReflectionStreams = 16

// MaxWatchStreams bounds the health Watch streams open at once, all
// connections together; one past it fails with RESOURCE_EXHAUSTED. A
// Watch never ends on its own: 1,030 connections holding one each held
// every connection slot of the listener, and 1,000 × 100 of them 1.4 GB.
// A client's health checking opens one per connection.
const MaxWatchStreams = 64

// healthWatch is the health service's streaming method.
const healthWatch = "/grpc.health.v1.Health/Watch"

// reflectionMethod reports whether method is server reflection's (v1 or
// v1alpha).
func reflectionMethod(method string) bool {
	return strings.HasPrefix(method, "/grpc.reflection.v1.ServerReflection/") ||
		strings.HasPrefix(method, "/grpc.reflection.v1alpha.ServerReflection/")
}

// admitted reports whether method waits for a turn: the calls that rank,
// read and pack.
func admitted(method string) bool {
	return method == contextdv1.ContextService_Assemble_FullMethodName || method == contextdv1.ContextService_Search_FullMethodName
}

// ErrBusy is wrapped by Admission.Admit's error when the queue is full or
// the wait for a turn ran out.
var ErrBusy = errors.New("busy")

// An Admission lets a number of calls run at once and a number more wait
// for a turn. It is safe for concurrent use; a nil *Admission admits every
// call at once.
type Admission struct {
	run     chan struct{} // a token per running call
	tickets chan struct{} // a token per running or waiting call
	wait    time.Duration
}

// NewAdmission returns an Admission that runs at most running calls at
// once and lets at most queued more wait, each at most wait (zero means
// DefaultMaxQueueWait). running <= 0 means no limit: it returns nil.
func NewAdmission(running, queued int, wait time.Duration) *Admission {
	if running <= 0 {
		return nil
	}
	if wait <= 0 {
		wait = DefaultMaxQueueWait
	}
	return &Admission{run: make(chan struct{}, running), tickets: make(chan struct{}, running+max(queued, 0)), wait: wait}
}

// Admit waits for a turn; the caller calls release when its call is done.
// Errors: ErrBusy (wrapped) when the queue is full or the wait ran out, at
// once in the first case; ctx's error when it ends first.
func (a *Admission) Admit(ctx context.Context) (release func(), err error) {
	if a == nil {
		return func() {}, nil
	}
	select {
	case a.tickets <- struct{}{}:
	default:
		return nil, fmt.Errorf("%w: %d requests running and %d waiting; retry later", ErrBusy, cap(a.run), cap(a.tickets)-cap(a.run))
	}
	select {
	case a.run <- struct{}{}:
		return func() { <-a.run; <-a.tickets }, nil
	default:
	}
	t := time.NewTimer(a.wait)
	defer t.Stop()
	select {
	case a.run <- struct{}{}:
		return func() { <-a.run; <-a.tickets }, nil
	case <-t.C:
		<-a.tickets
		return nil, fmt.Errorf("%w: no turn within %v; retry later", ErrBusy, a.wait)
	case <-ctx.Done():
		<-a.tickets
		return nil, fmt.Errorf("while waiting for a turn: %w", ctx.Err())
	}
}

// admitStatus maps an Admit error to a gRPC status: RESOURCE_EXHAUSTED
// when busy, else DEADLINE_EXCEEDED or CANCELED.
func admitStatus(err error) error {
	switch {
	case errors.Is(err, ErrBusy):
		return status.Error(codes.ResourceExhausted, err.Error())
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, "deadline exceeded while waiting for a turn")
	}
	return status.Error(codes.Canceled, "canceled while waiting for a turn")
}

// BearerToken is the call credential CLI clients send: the token as
// "authorization: Bearer TOKEN" metadata. requireTLS says whether the
// connection must be secure (false for loopback and unix sockets).
type BearerToken struct {
	Token      string
	RequireTLS bool
}

// GetRequestMetadata implements credentials.PerRPCCredentials.
func (b BearerToken) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + strings.TrimSpace(b.Token)}, nil
}

// RequireTransportSecurity implements credentials.PerRPCCredentials.
func (b BearerToken) RequireTransportSecurity() bool { return b.RequireTLS }
