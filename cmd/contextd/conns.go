package main

import (
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"

	"github.com/contextd/contextd/internal/config"
)

// Bounds on the default connection cap (max_connections unset): a quarter
// of the open-file limit per listener, so that three listeners full at
// once still leave a quarter of it for the index, the upstream sessions
// and the stdio servers' pipes.
const (
	minDefaultConns = 16
	maxDefaultConns = 1024
)

// maxConns returns the per-listener connection cap: c.Max, or a default
// derived from the open-file limit nofile (0 when unknown).
func maxConns(c config.Conns, nofile uint64) int {
	if c.Max > 0 {
		return c.Max
	}
	if nofile == 0 {
		return maxDefaultConns
	}
	return int(min(max(nofile/4, minDefaultConns), maxDefaultConns))
}

// grpcConnOptions returns the gRPC server options that bound a connection's
// life by c: a handshake deadline, MaxConnectionIdle, and a ping policy.
// A connection with a call in flight (a Health Watch, a slow Assemble) is
// never idle.
func grpcConnOptions(c config.Conns) []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.ConnectionTimeout(c.HandshakeTimeout),
		grpc.KeepaliveParams(keepalive.ServerParameters{
			MaxConnectionIdle: c.IdleTimeout,
			// Ping a connection silent this long, and close it when the
			// ping is not answered: a peer that vanished mid-stream.
			Time:    time.Minute,
			Timeout: 20 * time.Second,
		}),
		// A client may ping every 10 s, and only while it has a call in
		// flight; one that pings more often is sent GOAWAY.
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 10 * time.Second}),
	}
}

// newHTTPServer returns an http.Server for h bounded by c: a request's
// headers, then the rest of the request, must arrive within
// c.HandshakeTimeout each (ReadHeaderTimeout, ReadTimeout), and a
// keep-alive connection is closed after c.IdleTimeout without a request.
// ReadTimeout does not cut a response that streams for longer (MCP's SSE
// streams, pprof's profile): net/http lifts the read deadline once the
// request's body has been read. There is no WriteTimeout, which would.
func newHTTPServer(h http.Handler, c config.Conns, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: c.HandshakeTimeout,
		ReadTimeout:       c.HandshakeTimeout,
		IdleTimeout:       c.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}

// limitListener accepts at most a fixed number of connections at once.
// While that many are open, Accept waits: the next connection stays in
// the kernel's accept queue, holding none of the daemon's descriptors, and
// is accepted in arrival order when one closes (the idle and handshake
// timeouts see that held connections do). A client therefore waits, up to
// its own deadline, rather than being refused; the first wait of a run
// of them is logged.
type limitListener struct {
	net.Listener
	slots     chan struct{}
	done      chan struct{}
	closeOnce sync.Once
	full      atomic.Bool // the cap was reached and not yet left
	log       *slog.Logger
	what      string
}

// limitConns returns l accepting at most n connections at once.
func limitConns(l net.Listener, n int, what string, log *slog.Logger) net.Listener {
	return &limitListener{Listener: l, slots: make(chan struct{}, n), done: make(chan struct{}), log: log, what: what}
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
		l.full.Store(false)
	default:
		if !l.full.Swap(true) {
			l.log.Warn("connection limit reached: new connections wait until one closes (max_connections)",
				"listener", l.what, "max_connections", cap(l.slots))
		}
		select {
		case l.slots <- struct{}{}:
		case <-l.done:
			return nil, net.ErrClosed
		}
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &limitConn{Conn: c, release: sync.OnceFunc(func() { <-l.slots })}, nil
}

func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// limitConn gives its slot back on its first Close.
type limitConn struct {
	net.Conn
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.release()
	return err
}
