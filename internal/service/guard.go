package service

import (
	"context"
	"crypto/subtle"
	"net/http"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

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
}

// DefaultMaxQueueWait is how long a call waits for a turn by default.
const DefaultMaxQueueWait = 10 * time.Second

// Guard returns the server options that enforce o: interceptors checking
// the token on every call and admitting Assemble and Search calls.
func Guard(o GuardOptions) []grpc.ServerOption {
	a := newAdmission(o.MaxConcurrent, o.MaxQueued, o.MaxQueueWait)
	auth := func(ctx context.Context) error {
		if o.Token == "" {
			return nil
		}
		md, _ := metadata.FromIncomingContext(ctx)
		if bearerOK(md.Get("authorization"), o.Token) {
			return nil
		}
		return status.Error(codes.Unauthenticated, "missing or wrong token: send \"authorization: Bearer TOKEN\" with the token of the daemon's auth config")
	}
	unary := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if err := auth(ctx); err != nil {
			return nil, err
		}
		if a != nil && admitted(info.FullMethod) {
			release, err := a.admit(ctx)
			if err != nil {
				return nil, err
			}
			defer release()
		}
		return handler(ctx, req)
	}
	stream := func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if err := auth(ss.Context()); err != nil {
			return err
		}
		return handler(srv, ss)
	}
	return []grpc.ServerOption{grpc.ChainUnaryInterceptor(unary), grpc.ChainStreamInterceptor(stream)}
}

// bearerOK reports whether one of the authorization values is
// "Bearer TOKEN", compared in constant time.
func bearerOK(values []string, token string) bool {
	want := []byte("Bearer " + token)
	ok := false
	for _, got := range values {
		if subtle.ConstantTimeCompare([]byte(got), want) == 1 {
			ok = true
		}
	}
	return ok
}

// RequireBearer returns h guarded like the gRPC calls: when token is not
// empty, a request without the header "Authorization: Bearer TOKEN" gets
// 401 Unauthorized and never reaches h. It guards the MCP endpoint
// (Streamable HTTP) that serve runs beside the gRPC one, so a token set
// for a shared machine is not bypassed there.
func RequireBearer(token string, h http.Handler) http.Handler {
	if token == "" {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !bearerOK(r.Header.Values("Authorization"), token) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="contextd"`)
			http.Error(w, "missing or wrong token: send \"Authorization: Bearer TOKEN\" with the token of the daemon's auth config", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// admitted reports whether method waits for a turn: the calls that rank,
// read and pack.
func admitted(method string) bool {
	return method == contextdv1.ContextService_Assemble_FullMethodName || method == contextdv1.ContextService_Search_FullMethodName
}

// An admission lets max calls run at once and up to queued more wait.
type admission struct {
	run     chan struct{} // a token per running call
	tickets chan struct{} // a token per running or waiting call
	wait    time.Duration
}

func newAdmission(running, queued int, wait time.Duration) *admission {
	if running <= 0 {
		return nil
	}
	if wait <= 0 {
		wait = DefaultMaxQueueWait
	}
	return &admission{run: make(chan struct{}, running), tickets: make(chan struct{}, running+max(queued, 0)), wait: wait}
}

// admit waits for a turn. Errors: RESOURCE_EXHAUSTED when the queue is
// full or the wait ran out, or the status of ctx's end.
func (a *admission) admit(ctx context.Context) (release func(), err error) {
	select {
	case a.tickets <- struct{}{}:
	default:
		return nil, status.Errorf(codes.ResourceExhausted, "busy: %d requests running and %d waiting; retry later", cap(a.run), cap(a.tickets)-cap(a.run))
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
		return nil, status.Errorf(codes.ResourceExhausted, "busy: no turn within %v; retry later", a.wait)
	case <-ctx.Done():
		<-a.tickets
		if ctx.Err() == context.DeadlineExceeded {
			return nil, status.Error(codes.DeadlineExceeded, "deadline exceeded while waiting for a turn")
		}
		return nil, status.Error(codes.Canceled, "canceled while waiting for a turn")
	}
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
