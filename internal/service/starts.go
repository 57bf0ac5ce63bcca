package service

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"
)

// Calls waiting to start. gRPC reads a call's headers and request on the
// connection's reader goroutine, then starts a goroutine for its handler;
// the request waits in memory until that goroutine runs and reads it. A
// client that sends whole calls and resets each one at once (HTTP/2
// "rapid reset") frees its stream slot at once, so its calls arrive faster
// than the scheduler starts their handlers: 64 such connections had about
// 600 handlers waiting to start, and, as every reset call's request
// buffers become garbage rather than returning to gRPC's pool, 1.3 GB of
// RSS. gRPC bounds the handlers of one connection (MaxConcurrentStreams),
// not of all.
//
// startGate bounds the calls, on all connections, that have arrived and
// whose handler has not started: a call past the bound fails at once
// with RESOURCE_EXHAUSTED, before its request is kept (gRPC drops the
// DATA of a call it refused, its buffers back in the pool).

// DefaultMaxUnstarted is the least bound on calls waiting to start.
// Honest calls wait microseconds; it is reached only when the daemon's
// CPU is far behind its callers.
const DefaultMaxUnstarted = 256

// unstartedGrace is how long after its call ended (reset, deadline, or
// aborted by gRPC before any handler) an unstarted call stops counting:
// its handler, if gRPC started one, runs within it unless the process is
// starved, and a call gRPC never hands to a handler is not counted for
// good.
const unstartedGrace = time.Second

// startGate counts the calls that arrived and whose handler has not
// started. It is a gRPC InTapHandle (admit) and stats.Handler (TagRPC
// marks the start). Safe for concurrent use.
//
// It also ends a call whose first request message has not arrived
// requestWait after its headers: a started handler waits for it without a
// deadline, so a client sending headers and never a message, on each of
// its connections, held every connection slot of the listener (and a
// goroutine per call) for as long as it liked.
type startGate struct {
	max         int64
	waiting     atomic.Int64
	requestWait time.Duration // zero: no limit
}

// errNoRequest ends a call whose request message did not arrive in time.
var errNoRequest = errors.New("no request message within the handshake timeout after the call's headers")

type startKey struct{}

// startTicket is one call's place in the gate, given up once.
type startTicket struct {
	g        *startGate
	done     atomic.Bool
	stop     func() bool // deregisters the release at the call's end
	received atomic.Bool // the first request message arrived
	noReq    *time.Timer // ends the call when it has not; nil without requestWait
}

func (t *startTicket) release() {
	if t.done.CompareAndSwap(false, true) {
		t.g.waiting.Add(-1)
	}
}

// admit takes a place for a call to method whose headers arrived; ctx is
// the call's context, ended by gRPC when the call ends. Calls gRPC ends
// without a handler take none: one already over (a deadline of a
// nanosecond), which gRPC aborts right after the tap, and one whose
// method name is malformed, which it answers before the start is marked
// (otherwise each would hold a place for unstartedGrace: a thousand such
// calls a second, 17 KB/s, kept the gate full).
func (g *startGate) admit(ctx context.Context, method string) (context.Context, error) {
	if m, ok := strings.CutPrefix(method, "/"); !ok || !strings.Contains(m, "/") {
		return nil, status.Error(codes.Unimplemented, "malformed method name: want /package.Service/Method")
	}
	if ctx.Err() != nil {
		return ctx, nil
	}
	if n := g.waiting.Add(1); n > g.max {
		g.waiting.Add(-1)
		return nil, status.Error(codes.ResourceExhausted,
			fmt.Sprintf("busy: %d calls have arrived and wait for the daemon to start them; retry later", g.max))
	}
	t := &startTicket{g: g}
	if g.requestWait > 0 {
		var cancel context.CancelCauseFunc
		ctx, cancel = context.WithCancelCause(ctx)
		t.noReq = time.AfterFunc(g.requestWait, func() {
			if !t.received.Load() {
				cancel(errNoRequest)
			}
		})
	}
	t.stop = context.AfterFunc(ctx, func() {
		if t.noReq != nil {
			t.noReq.Stop()
		}
		if !t.done.Load() {
			time.AfterFunc(unstartedGrace, t.release)
		}
	})
	return context.WithValue(ctx, startKey{}, t), nil
}

// TagRPC is called as a call's handler starts.
func (g *startGate) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context {
	if t, ok := ctx.Value(startKey{}).(*startTicket); ok {
		t.release()
		if t.noReq == nil {
			t.stop()
		}
	}
	return ctx
}

// HandleRPC notes the arrival of a call's first request message.
func (g *startGate) HandleRPC(ctx context.Context, s stats.RPCStats) {
	if _, ok := s.(*stats.InPayload); !ok {
		return
	}
	if t, ok := ctx.Value(startKey{}).(*startTicket); ok && t.noReq != nil && t.received.CompareAndSwap(false, true) {
		t.noReq.Stop()
		t.stop()
	}
}

func (g *startGate) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	return ctx
}

func (g *startGate) HandleConn(context.Context, stats.ConnStats) {}
