package main

import (
	"context"
	"errors"
	"io"
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

// maxStreamsPerConn is the most calls (streams) one gRPC connection may
// have open at once; more wait in the client. With max_connections it
// bounds what calls waiting for their request can hold, each for at most
// handshake_timeout (service.GuardOptions.RequestWait): at the 1,024 cap,
// about 1.1 GiB. Answers waiting for a client to read them are bounded
// apart (unsentAnswers).
const maxStreamsPerConn = 100

// maxHeaderListBytes bounds one gRPC call's headers (HTTP/2
// SETTINGS_MAX_HEADER_LIST_SIZE: names and values plus 32 bytes a field).
// grpc-go's default is 16 MiB, which the server holds, decoded, while a
// header block is still arriving: a client without the token that sent
// 12 MiB of headers and never ended the block held that much per
// connection for the idle timeout (80 connections: 1.3 GB RSS; at the
// 1,024-connection cap, enough to exhaust memory). A call needs well under
// a kilobyte (the token, user agent, deadline, trace context).
const maxHeaderListBytes = 16 << 10

// grpcConnOptions returns the gRPC server options that bound a connection's
// life by c: a handshake deadline, MaxConnectionIdle, a ping policy, and
// its streams at once. A connection with a call in flight (a Health Watch,
// a slow Assemble) is never idle.
func grpcConnOptions(c config.Conns) []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.ConnectionTimeout(c.HandshakeTimeout),
		// gRPC allows any number of streams per connection; each pending
		// one holds a goroutine and about 11 KiB, and a unary call waits
		// for its request message (the guard ends it after the handshake
		// timeout).
		grpc.MaxConcurrentStreams(maxStreamsPerConn),
		grpc.MaxHeaderListSize(maxHeaderListBytes),
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
		// A connection with no handler running (between requests, or
		// still sending a request's headers) may be closed to make room
		// for another when the listener is full (limitListener.victim).
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if lc, ok := r.Context().Value(limitConnKey{}).(*limitConn); ok {
				if r.Body == nil || r.Body == http.NoBody {
					lc.callStarted()
					defer lc.callEnded()
				} else {
					b := &bodyThenCall{ReadCloser: r.Body, lc: lc}
					r.Body = b
					defer b.end()
				}
			}
			h.ServeHTTP(w, r)
		}),
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			if lc := underLimit(c); lc != nil {
				return context.WithValue(ctx, limitConnKey{}, lc)
			}
			return ctx
		},
		ReadHeaderTimeout: c.HandshakeTimeout,
		ReadTimeout:       c.HandshakeTimeout,
		IdleTimeout:       c.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}

// bodyThenCall counts its request as a call in flight on lc from when its
// body has been read to its end, as a gRPC call counts from its request's
// arrival: a request still sending its body (a byte every few seconds,
// on every connection, with the token) would otherwise keep the
// connection from ever being idle, and honest callers waited for the read
// timeout to close one.
type bodyThenCall struct {
	io.ReadCloser
	lc      *limitConn
	started atomic.Bool
}

func (b *bodyThenCall) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && b.started.CompareAndSwap(false, true) {
		b.lc.callStarted()
	}
	return n, err
}

// end ends the call, if the body was read to its end.
func (b *bodyThenCall) end() {
	if b.started.Load() {
		b.lc.callEnded()
	}
}

// limitConnKey is the context key of a request's limitConn.
type limitConnKey struct{}

// underLimit returns the limitConn under c (itself, or under its TLS), or
// nil.
func underLimit(c net.Conn) *limitConn {
	for {
		switch x := c.(type) {
		case *limitConn:
			return x
		case interface{ NetConn() net.Conn }:
			c = x.NetConn()
		default:
			return nil
		}
	}
}

// limitListener holds at most a fixed number of connections at once.
// When that many are open and another arrives, it closes the oldest
// connection that has not sent a byte in silentGrace (a client that
// connects and says nothing: nothing is lost by closing it) to make room;
// when there is none, the new connection waits, accepted but not yet
// served, until one closes (the idle and handshake timeouts see that held
// connections do). So the daemon holds at most the cap plus one
// connection's descriptors, a client behind silent connections is served
// at once, and one behind busy ones waits up to its own deadline rather
// than being refused. Reaching the cap is logged, at most once a minute.
type limitListener struct {
	net.Listener
	slots     chan struct{}
	done      chan struct{}
	closeOnce sync.Once
	grace     time.Duration
	log       *slog.Logger
	what      string
	lastWarn  atomic.Int64 // unix nanoseconds

	mu    sync.Mutex
	conns map[*limitConn]struct{} // the open connections

	// trustedWhileAwaited is when a silent or untrusted connection that
	// makeRoom waited for to age made an authenticated call first, in unix
	// nanoseconds (0: never): see victim.
	trustedWhileAwaited atomic.Int64

	answers *unsentAnswers // gRPC's listener: answers its connections hold; nil otherwise

	// writeStall, when positive, fails a write that makes no progress for
	// that long: a client that stops reading an answer (an HTTP response
	// of megabytes, left in the socket) would otherwise keep it, and the
	// goroutine writing it, for as long as it keeps the connection.
	writeStall time.Duration

	// writes, when set, bounds the bytes of writes in flight on all the
	// listener's connections (see withWriteBound).
	writes *writeBound
}

// writeBound counts the bytes of the writes in flight on a listener's
// connections.
type writeBound struct {
	max      int64
	inFlight atomic.Int64
}

// smallWrite is the largest write a writeBound neither counts nor
// refuses. An HTTP connection has one write in flight, so such writes hold
// at most max_connections × smallWrite (64 MiB at the 1,024 cap); counted,
// they let a caller who fills the bound with answers it does not read (to
// within a few bytes: their sizes follow the budget it asks for) make every
// other answer fail and close its connection, an initialize or a list as
// much as a tool result, for as long as it renewed them. Now only answers
// over smallWrite can find the bound full.
const smallWrite = 64 << 10

// errWritesBusy fails a write that would take the bytes in flight past
// its listener's bound.
var errWritesBusy = errors.New("contextd: connection closed: too many bytes of answers wait for clients that do not read them")

// withWriteBound returns l (from limitConns) failing, and closing the
// connection of, a write that would take the bytes being written on its
// connections at once past max. An HTTP answer (an MCP tool result of up
// to max_response_bytes, JSON-encoded) is held by its handler until its
// write returns, which for a client that reads nothing is the write
// stall later; the admission turn of its request is over by then, so
// without this bound a caller could hold one such answer per connection.
func withWriteBound(l net.Listener, max int64) net.Listener {
	l.(*limitListener).writes = &writeBound{max: max}
	return l
}

// withWriteStall returns l (from limitConns) failing writes that make no
// progress for d.
func withWriteStall(l net.Listener, d time.Duration) net.Listener {
	l.(*limitListener).writeStall = d
	return l
}

// limitConns returns l holding at most n connections at once; a connection
// silent for grace may be closed to make room (see limitListener).
func limitConns(l net.Listener, n int, grace time.Duration, what string, log *slog.Logger) net.Listener {
	return &limitListener{Listener: l, slots: make(chan struct{}, n), done: make(chan struct{}), grace: grace,
		log: log, what: what, conns: map[*limitConn]struct{}{}}
}

// silentGrace is how long a new connection may stay silent before it may
// be closed to make room for another: a tenth of the handshake timeout,
// at most 100 ms. A client sends its first bytes (TLS ClientHello,
// HTTP/2 preface, request line) as soon as it connects, so on loopback
// they are in long before; a client more than about 200 ms of round trip
// away may lose its connection while the listener is full.
func silentGrace(c config.Conns) time.Duration {
	return min(c.HandshakeTimeout/10, 100*time.Millisecond)
}

func (l *limitListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	select {
	case l.slots <- struct{}{}:
	default:
		if now := time.Now().UnixNano(); now-l.lastWarn.Load() > int64(time.Minute) {
			l.lastWarn.Store(now)
			l.log.Warn("connection limit reached: closing silent connections, or waiting for one to close (max_connections)",
				"listener", l.what, "max_connections", cap(l.slots))
		}
		if !l.makeRoom() {
			c.Close()
			return nil, net.ErrClosed
		}
	}
	lc := &limitConn{Conn: c, l: l, accepted: time.Now()}
	if l.answers != nil {
		l.answers.track(lc)
	}
	l.mu.Lock()
	l.conns[lc] = struct{}{}
	l.mu.Unlock()
	return lc, nil
}

// makeRoom takes a slot, closing silent connections to free one; it
// reports false when the listener closed first.
func (l *limitListener) makeRoom() bool {
	for {
		// Close the oldest silent connection once it is l.grace old, or
		// else the one idle longest once it is idleGrace idle; until
		// then, or when there is none, wait for a slot.
		wait := l.grace
		var awaited *limitConn // a silent or untrusted connection waited for
		if victim, after := l.victim(); victim != nil {
			if after <= 0 {
				victim.Close()
				wait = 0
			} else {
				wait = min(wait, after)
				if !victim.trusted.Load() {
					awaited = victim
				}
			}
		}
		if wait == 0 {
			select {
			case l.slots <- struct{}{}:
				return true
			default: // another Close took the slot first: look again
				continue
			}
		}
		t := time.NewTimer(wait)
		select {
		case l.slots <- struct{}{}:
			t.Stop()
			return true
		case <-t.C:
			if awaited != nil && awaited.trusted.Load() {
				l.trustedWhileAwaited.Store(time.Now().UnixNano())
			}
		case <-l.done:
			t.Stop()
			return false
		}
	}
}

// awaitedTrustMemory is how long after a connection that makeRoom waited
// for to age made an authenticated call first an idle connection may be
// closed at once, whatever silent or untrusted ones there are (see victim).
const awaitedTrustMemory = 10 * time.Second

// idleGrace is how long a connection with no call in flight (between
// calls, or before its first) is kept when the listener is full and
// another arrives. Closing it loses nothing: a client opens a new
// connection for its next call, as after the idle timeout. Without it, a
// client holding each connection with a cheap call a minute (or one that
// never ends) kept every other client out.
const idleGrace = time.Second

// victim returns the connection to close to make room, and how long it
// has left before it may be: the oldest that has sent nothing (l.grace
// after it was accepted), the oldest that has made no authenticated call
// (idleGrace after it was accepted, whatever it has in flight), or the
// one with no call in flight for longest (idleGrace after its last call,
// or at once when there is no silent or untrusted one, or when one
// makeRoom waited for lately became trusted first), whichever may be
// closed first (in that order when several may now).
// Waiting for a silent connection to age while an idle one was ready made
// room for 67–142 connections a second, and a client behind 2,000
// reconnecting ones waited 14 s. A client without the token cannot look
// busy: calls refused unauthenticated every half second, or the first
// bytes of a call's headers and never the rest, kept every connection of
// the listener from idling, and honest callers out. Nil when there is
// none.
func (l *limitListener) victim() (*limitConn, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var silent, untrusted, idle *limitConn
	var idleAt int64
	for c := range l.conns {
		if !c.heard.Load() {
			if silent == nil || c.accepted.Before(silent.accepted) {
				silent = c
			}
		} else if !c.trusted.Load() {
			if untrusted == nil || c.accepted.Before(untrusted.accepted) {
				untrusted = c
			}
		} else if at, ok := c.idleAt(); ok && (idle == nil || at < idleAt) {
			idle, idleAt = c, at
		}
	}
	// In this order, the first that may be closed now, else the one that
	// may be closed soonest.
	var cands []*limitConn
	var lefts []time.Duration
	if silent != nil {
		cands, lefts = append(cands, silent), append(lefts, l.grace-time.Since(silent.accepted))
	}
	if untrusted != nil {
		cands, lefts = append(cands, untrusted), append(lefts, idleGrace-time.Since(untrusted.accepted))
	}
	if idle != nil {
		// With no silent or untrusted connection to close, an idle one
		// may be closed at once: callers past the token check (anyone,
		// with no token) making a call every 0.7 s on every connection
		// were never idle for idleGrace, and held every slot. So too
		// while waiting for silent or untrusted ones to age is known to
		// be in vain, because one waited for made an authenticated call
		// first lately: a token holder reconnecting every connection
		// closed and making its first call 0.7 s after connecting had
		// always such a young connection to wait for, and an honest
		// caller waited 7 s behind it. Without the token, no connection
		// becomes trusted, so an honest idle connection outlives those
		// of a flood of callers who lack it.
		grace := idleGrace
		if silent == nil && untrusted == nil {
			grace = 0
		} else if at := l.trustedWhileAwaited.Load(); at != 0 && time.Since(time.Unix(0, at)) < awaitedTrustMemory {
			grace = 0
		}
		cands, lefts = append(cands, idle), append(lefts, grace-time.Since(time.Unix(0, idleAt)))
	}
	best := -1
	for i, left := range lefts {
		if left <= 0 {
			return cands[i], left
		}
		if best < 0 || left < lefts[best] {
			best = i
		}
	}
	if best < 0 {
		return nil, 0
	}
	return cands[best], lefts[best]
}

func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// limitConn gives its slot back on its first Close, and records whether
// its peer has sent anything.
type limitConn struct {
	net.Conn
	l         *limitListener
	accepted  time.Time
	heard     atomic.Bool
	closeOnce sync.Once
	ans       *answerConn // with limitListener.answers

	// calls counts the calls in flight: gRPC calls whose request has
	// arrived and whose answer has not ended (a call still sending its
	// request is not one: anyone can open those for free), HTTP requests
	// whose body has arrived and whose handler runs. idleSince is when the count last fell to 0, in
	// unix nanoseconds (0: since accepted).
	calls     atomic.Int32
	idleSince atomic.Int64
	// writeSince is when the write under way began, in unix nanoseconds
	// (0: none is).
	writeSince atomic.Int64

	// trusted is set by the connection's first authenticated call (a gRPC
	// call whose headers passed the token check, an HTTP request that
	// reached a handler behind it: see trustConn); every call is one when
	// there is no token.
	trusted atomic.Bool
}

// trustConn returns h marking the connection of each request it serves
// trusted (see limitConn.trusted): it wraps what a listener serves behind
// its token check, so that a request refused unauthenticated, or for an
// unknown path, does not.
func trustConn(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if lc, ok := r.Context().Value(limitConnKey{}).(*limitConn); ok && !lc.trusted.Load() {
			lc.trusted.Store(true)
		}
		h.ServeHTTP(w, r)
	})
}

// trustGRPC marks trusted the connection of a gRPC call that passed the
// token check (service.GuardOptions.OnAuthenticated); ctx is the call's
// stream context, tagged by unsentAnswers.TagConn.
func trustGRPC(ctx context.Context) {
	if lc, ok := ctx.Value(answerConnKey{}).(*limitConn); ok && !lc.trusted.Load() {
		lc.trusted.Store(true)
	}
}

// callStarted and callEnded count a call in flight on the connection.
func (c *limitConn) callStarted() { c.calls.Add(1) }

func (c *limitConn) callEnded() {
	if c.calls.Add(-1) == 0 {
		c.idleSince.Store(time.Now().UnixNano())
	}
}

// idleAt returns when the connection's last call ended (or it was
// accepted), in unix nanoseconds, and false while it has one in flight,
// unless a write to it has been blocked for idleGrace (then since that write began): a client that
// reads nothing of its answers (or of the refusals of calls it keeps
// sending) would otherwise keep its connection busy until the write
// stall, and a token holder with such connections held every slot.
func (c *limitConn) idleAt() (int64, bool) {
	if c.calls.Load() > 0 {
		// Busy until the write has been blocked for idleGrace, however
		// soon idle connections may be closed.
		if at := c.writeSince.Load(); at != 0 && time.Since(time.Unix(0, at)) >= idleGrace {
			return at, true
		}
		return 0, false
	}
	if at := c.idleSince.Load(); at != 0 {
		return at, true
	}
	return c.accepted.UnixNano(), true
}

func (c *limitConn) Write(p []byte) (int, error) {
	if b := c.l.writes; b != nil && len(p) > smallWrite {
		n := int64(len(p))
		if b.inFlight.Add(n) > b.max {
			b.inFlight.Add(-n)
			c.Close()
			return 0, errWritesBusy
		}
		defer b.inFlight.Add(-n)
	}
	if c.l.writeStall > 0 {
		_ = c.Conn.SetWriteDeadline(time.Now().Add(c.l.writeStall))
	}
	started := c.writeSince.CompareAndSwap(0, time.Now().UnixNano())
	n, err := c.Conn.Write(p)
	if started {
		c.writeSince.Store(0)
	}
	if c.ans != nil && n > 0 {
		c.l.answers.wrote(c, n)
	}
	return n, err
}

// RemoteAddr is the peer's address; with answers counted, one unique to
// the connection.
func (c *limitConn) RemoteAddr() net.Addr {
	if c.ans != nil {
		return c.ans.addr
	}
	return c.Conn.RemoteAddr()
}

func (c *limitConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && !c.heard.Load() {
		c.heard.Store(true)
	}
	return n, err
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.closeOnce.Do(func() {
		if c.ans != nil {
			c.l.answers.closed(c)
		}
		c.l.mu.Lock()
		delete(c.l.conns, c)
		c.l.mu.Unlock()
		<-c.l.slots
	})
	return err
}
