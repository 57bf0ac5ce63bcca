package main

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/contextd/contextd/internal/config"
)

// unsentAnswers bounds the bytes of gRPC answers the daemon holds for
// clients that do not read them. gRPC queues an answer in memory and sends
// it as the client's HTTP/2 flow-control window allows; a client that
// advertises no window takes nothing, and its answers (up to
// max_response_bytes, 8 MiB, each) stay queued for as long as it keeps the
// connection: a hundred calls a connection, on every connection. So:
//
//   - an answer that would take the bytes queued but not yet written to
//     clients past max is dropped, and its call fails with
//     RESOURCE_EXHAUSTED;
//   - a connection with bytes queued that has written less than
//     minProgress in stall is closed (its queued answers go with it).
//
// Bytes are counted per connection: an answer adds its size when the
// handler returns it, and every write to the connection (answers, headers,
// framing) takes what it wrote off that connection's queue.
type unsentAnswers struct {
	max   int64
	stall time.Duration
	total atomic.Int64

	mu    sync.Mutex
	conns map[string]*limitConn // by connKey
	h2    map[*h2Conn]struct{}  // connections whose streams are followed
	seq   atomic.Uint64

	// partialExcess is the bytes of unfinished requests past
	// maxPartialRequests, all connections together.
	partialExcess atomic.Int64
}

// unsentAnswersFactor × max_response_bytes is how many bytes of answers
// the daemon holds for clients that have not read them (256 MiB by
// default): room for every admitted request's answer several times over.
const unsentAnswersFactor = 32

// unsentAnswersMax returns the bound on unsent answers for limits l.
func unsentAnswersMax(l config.Limits) int64 {
	return unsentAnswersFactor * int64(l.WithDefaults().MaxResponseBytes)
}

func newUnsentAnswers(max int64, stall time.Duration) *unsentAnswers {
	return &unsentAnswers{max: max, stall: stall, conns: map[string]*limitConn{}, h2: map[*h2Conn]struct{}{}}
}

// answerConn is limitConn's part in unsentAnswers.
type answerConn struct {
	mu       sync.Mutex
	queued   int64     // bytes of answers handed to gRPC
	written  int64     // bytes written to the connection
	progress time.Time // when written last passed mark, or the queue last became non-empty
	mark     int64     // written at progress
	addr     net.Addr  // a unique remote address (unix peers have none)
}

func (a *answerConn) unsent() int64 { return max(0, a.queued-a.written) }

func connKey(remote, local net.Addr) string {
	if remote == nil || local == nil {
		return ""
	}
	return remote.Network() + " " + remote.String() + " " + local.String()
}

// track registers c; its remote address becomes unique (a unix socket's
// peers are all unnamed), so gRPC's view of the connection finds it.
func (u *unsentAnswers) track(c *limitConn) {
	c.ans = &answerConn{progress: time.Now(), addr: c.Conn.RemoteAddr()}
	if ua, ok := c.ans.addr.(*net.UnixAddr); ok || c.ans.addr == nil {
		name := ""
		if ua != nil {
			name = ua.Name
		}
		c.ans.addr = &net.UnixAddr{Net: "unix", Name: fmt.Sprintf("%s@%d", name, u.seq.Add(1))}
	}
	u.mu.Lock()
	u.conns[connKey(c.ans.addr, c.LocalAddr())] = c
	u.mu.Unlock()
}

// wrote takes n written bytes off c's queue.
func (u *unsentAnswers) wrote(c *limitConn, n int) {
	a := c.ans
	a.mu.Lock()
	before := a.unsent()
	// Bytes written with nothing queued earn no credit for later answers.
	a.written = min(a.written+int64(n), a.queued)
	if a.written-a.mark >= minProgress {
		a.progress, a.mark = time.Now(), a.written
	}
	u.total.Add(a.unsent() - before)
	a.mu.Unlock()
}

// closed forgets c and its queue.
func (u *unsentAnswers) closed(c *limitConn) {
	a := c.ans
	u.mu.Lock()
	delete(u.conns, connKey(a.addr, c.LocalAddr()))
	u.mu.Unlock()
	a.mu.Lock()
	u.total.Add(-a.unsent())
	a.queued, a.written = 0, 0
	a.mu.Unlock()
}

// reserve adds an answer of n bytes to c's queue, or reports false when it
// would take the daemon's unsent answers past u.max.
func (u *unsentAnswers) reserve(c *limitConn, n int64) bool {
	a := c.ans
	a.mu.Lock()
	defer a.mu.Unlock()
	before := a.unsent()
	if u.total.Load()+n > u.max {
		return false
	}
	a.queued += n
	if before == 0 {
		a.progress, a.mark = time.Now(), a.written
	}
	u.total.Add(a.unsent() - before)
	return true
}

// sweep closes the connections whose queue has not moved for u.stall.
func (u *unsentAnswers) sweep(now time.Time) {
	u.mu.Lock()
	var stalled []*limitConn
	for _, c := range u.conns {
		c.ans.mu.Lock()
		if c.ans.unsent() > 0 && now.Sub(c.ans.progress) > u.stall {
			stalled = append(stalled, c)
		}
		c.ans.mu.Unlock()
	}
	u.mu.Unlock()
	for _, c := range stalled {
		c.Close()
	}
}

// run sweeps (sweep, sweepStuck) every quarter of u.stall until ctx ends.
func (u *unsentAnswers) run(ctx context.Context) {
	t := time.NewTicker(max(u.stall/4, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			u.sweep(now)
			u.sweepStuck(now)
		}
	}
}

// minProgress is how much a connection must write to count as reading its
// answers: the small frames a client can make the server write at will
// (ping acknowledgements, refusals of new calls) do not keep a stalled
// connection open.
const minProgress = 64 << 10

type answerConnKey struct{}

// TagConn, HandleConn, TagRPC and HandleRPC make unsentAnswers a gRPC
// stats.Handler that puts each call's connection in its context.
func (u *unsentAnswers) TagConn(ctx context.Context, info *stats.ConnTagInfo) context.Context {
	u.mu.Lock()
	c := u.conns[connKey(info.RemoteAddr, info.LocalAddr)]
	u.mu.Unlock()
	if c == nil {
		return ctx
	}
	return context.WithValue(ctx, answerConnKey{}, c)
}

func (u *unsentAnswers) HandleConn(context.Context, stats.ConnStats) {}
func (u *unsentAnswers) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context {
	return ctx
}
func (u *unsentAnswers) HandleRPC(context.Context, stats.RPCStats) {}

// options returns the gRPC server options that count and bound answers.
func (u *unsentAnswers) options() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.StatsHandler(u),
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
			resp, err := handler(ctx, req)
			c, _ := ctx.Value(answerConnKey{}).(*limitConn)
			m, ok := resp.(proto.Message)
			if err != nil || c == nil || !ok {
				return resp, err
			}
			if err := ctx.Err(); err != nil {
				// The client gave up (deadline, cancel): gRPC drops the
				// answer, so it would wait for nobody, counted until
				// the connection closed.
				return nil, status.FromContextError(err).Err()
			}
			n := int64(proto.Size(m))
			if !u.reserve(c, n) {
				return nil, status.Errorf(codes.ResourceExhausted, "busy: %d MiB of answers wait for clients that do not read them; try again later", u.max>>20)
			}
			// The frame follower reads the size back from the answer's
			// headers, and releases it if the call is reset before the
			// answer is written.
			_ = grpc.SetHeader(ctx, metadata.Pairs(answerBytesHeader, strconv.FormatInt(n, 10)))
			return resp, nil
		}),
	}
}
