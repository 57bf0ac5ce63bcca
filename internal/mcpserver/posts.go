package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxSessionHeaderBytes bounds the request headers the go-sdk is handed
// with a POST on a session (names and values, as counted on the wire): a
// larger set of the headers it reads is refused with 431. The go-sdk keeps
// a request's headers with its message (RequestExtra.Header) until the
// message is handled, and its per-session queue of messages can keep a
// handled one reachable until the next one takes its place.
const MaxSessionHeaderBytes = 16 << 10

// Bounds on the hand-over of a session's messages (see posts); variables
// for tests.
var (
	// handOverWait is how long a POST waits for the session's previous
	// message to start before it is refused with 503.
	handOverWait = 10 * time.Second
	// startWait is how long after its POST ended a message that has not
	// started still holds its session's hand-over: a message the go-sdk
	// drops before any handler (bad params, a malformed cancellation) never
	// starts, and must not block its session for good.
	startWait = 5 * time.Second
)

// postHeader names the header through which a message's handler finds the
// POST that carried it. It is set by contextd, never taken from a caller:
// serve removes it from every request, and handed-over headers are rebuilt
// from keptHeader's names only.
const postHeader = "Contextd-Post"

// errCallerLeft is the error of a call whose POST ended before its answer
// could be sent: the connection closed, so nobody is left to answer.
var errCallerLeft = errors.New("the caller's request ended (its connection closed) before the answer was ready")

// keptHeader reports whether the go-sdk reads the request header name (in
// canonical form) on a session's POST: content negotiation, the session
// and protocol headers (Mcp-*), stream resumption and the cross-origin
// check. Others (User-Agent, cookies, a proxy's additions, junk) are not
// handed over.
func keptHeader(name string) bool {
	switch name {
	case "Accept", "Content-Type", "Content-Length", "Last-Event-Id", "Origin", "Sec-Fetch-Site":
		return true
	}
	return strings.HasPrefix(name, "Mcp-")
}

// posts hands the messages of a session's POSTs to the go-sdk one at a
// time and ties each call to its POST.
//
// The go-sdk queues a session's messages without bound, handles them in
// order, and keeps a handled one reachable from its queue until later
// ones have used up the queue's capacity; a caller that POSTs faster than
// they are handled and closes each connection at once (1 MiB calls: 1.5
// GB kept after 40 s of it) grows that queue for as long as the session
// lives. So a session's next message is handed over only once the
// previous one has started: the queue never holds more than one, and a
// POST waiting for its turn holds its connection (max_connections) and
// its body (the large-body bound) meanwhile.
//
// And the go-sdk runs a call to its end even once its POST has ended (for
// protocol versions before 2026-07-28 a call's context is the session's):
// a call whose caller left fails without running (errCallerLeft), and one
// running is cancelled when its POST ends.
type posts struct {
	next     atomic.Uint64
	mu       sync.Mutex
	tickets  map[string]*ticket // messages handed over, not yet started
	sessions map[string]*turn   // by session ID
}

// A turn is a session's hand-over: held from a message's hand-over to its
// start (or startWait past its POST's end).
type turn struct {
	ch    chan struct{} // holds a token while a message is handed over
	users int           // POSTs using it, plus one while a ticket holds it
}

// A ticket is a message handed over and not yet started.
type ticket struct {
	post  context.Context // the POST's context
	sid   string
	timer *time.Timer // startWait past the POST's end; nil before
}

func newPosts() *posts {
	return &posts{tickets: map[string]*ticket{}, sessions: map[string]*turn{}}
}

// serve returns h with each POST on a session handed over with only the
// headers the go-sdk reads (431 past MaxSessionHeaderBytes) and, when it
// carries a request or notification, once the session's previous one has
// started (503 after handOverWait). A POST without a session (an
// initialize, or a 2026-07-28 request) is its own connection in the
// go-sdk, ended with it: it is handed over as it is.
func (p *posts) serve(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Only serve sets it, on the copy it hands over.
		r.Header.Del(postHeader)
		sid := r.Header.Get("Mcp-Session-Id")
		if r.Method != http.MethodPost || sid == "" {
			h.ServeHTTP(w, r)
			return
		}
		kept, size := http.Header{}, 0
		for name, values := range r.Header {
			if !keptHeader(name) {
				continue
			}
			// Copies: net/http's header values share one array per
			// request, which holds every header's strings.
			vs := make([]string, len(values))
			for i, v := range values {
				size += len(name) + len(v) + 4 // ": " and CRLF
				vs[i] = strings.Clone(v)
			}
			kept[name] = vs
		}
		if size > MaxSessionHeaderBytes {
			http.Error(w, fmt.Sprintf("Request Header Fields Too Large: the content, session and Mcp-* headers hold over %d bytes", MaxSessionHeaderBytes), http.StatusRequestHeaderFieldsTooLarge)
			return
		}
		r2 := *r
		r2.Header = kept
		body, _ := r.Context().Value(bodyKey{}).([]byte)
		if !isRequest(body) {
			// An answer to a request of the server's: it goes to the
			// call waiting for it, not to the queue.
			h.ServeHTTP(w, &r2)
			return
		}

		t := p.session(sid)
		defer p.leave(sid)
		wait := time.NewTimer(handOverWait)
		defer wait.Stop()
		select {
		case t.ch <- struct{}{}:
		case <-r.Context().Done():
			return
		case <-wait.C:
			w.Header().Set("Retry-After", "1")
			http.Error(w, fmt.Sprintf("Service Unavailable: the session's previous request has not started after %v", handOverWait), http.StatusServiceUnavailable)
			return
		}
		id := strconv.FormatUint(p.next.Add(1), 36)
		p.mu.Lock()
		t.users++
		p.tickets[id] = &ticket{post: r.Context(), sid: sid}
		p.mu.Unlock()
		kept.Set(postHeader, id)

		rec := &statusWriter{ResponseWriter: w}
		h.ServeHTTP(rec, &r2)

		switch {
		case rec.status >= 400, r.Context().Err() == nil && rec.status == http.StatusOK:
			// Refused before it was queued, or a call answered (possibly
			// with an error found before any handler ran): done with.
			p.start(id)
		default:
			// Queued (a notification, or a call whose caller left): it
			// starts soon, or is taken as dropped after startWait.
			p.mu.Lock()
			if tk := p.tickets[id]; tk != nil {
				tk.timer = time.AfterFunc(startWait, func() { p.start(id) })
			}
			p.mu.Unlock()
		}
	})
}

// session returns sid's turn, counting the caller as one of its users
// (until leave).
func (p *posts) session(sid string) *turn {
	p.mu.Lock()
	defer p.mu.Unlock()
	t := p.sessions[sid]
	if t == nil {
		t = &turn{ch: make(chan struct{}, 1)}
		p.sessions[sid] = t
	}
	t.users++
	return t
}

// leave undoes one session call (p.mu not held).
func (p *posts) leave(sid string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.leaveLocked(sid)
}

func (p *posts) leaveLocked(sid string) {
	t := p.sessions[sid]
	if t.users--; t.users == 0 {
		delete(p.sessions, sid)
	}
}

// start marks ticket id started: its session's turn passes to the next
// message. It returns the ticket's POST context, or nil when there is no
// such ticket (already started, or never handed over).
func (p *posts) start(id string) context.Context {
	p.mu.Lock()
	defer p.mu.Unlock()
	tk := p.tickets[id]
	if tk == nil {
		return nil
	}
	delete(p.tickets, id)
	if tk.timer != nil {
		tk.timer.Stop()
	}
	<-p.sessions[tk.sid].ch
	p.leaveLocked(tk.sid)
	return tk.post
}

// tie is a receiving middleware: a message handed over by serve has
// started. A call whose POST has ended (or whose connection closed) fails
// with errCallerLeft without running, and one running stops (its context
// is cancelled) when its POST ends. Notifications, and messages that came
// another way (stdio, a POST without a session), run as they are.
func (p *posts) tie(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
	return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
		extra := req.GetExtra()
		if extra == nil || extra.Header == nil {
			return next(ctx, method, req)
		}
		id := extra.Header.Get(postHeader)
		if id == "" {
			return next(ctx, method, req)
		}
		post := p.start(id)
		if strings.HasPrefix(method, "notifications/") {
			return next(ctx, method, req)
		}
		if post == nil || post.Err() != nil {
			return nil, errCallerLeft
		}
		ctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		stop := context.AfterFunc(post, func() { cancel(errCallerLeft) })
		defer stop()
		return next(ctx, method, req)
	}
}

// isRequest reports whether the go-sdk takes body for anything but an
// answer to a request of the server's: the go-sdk's own decoder decides,
// since a decoder of other rules (encoding/json matches member names in
// any case) would let a call pass for an answer.
func isRequest(body []byte) bool {
	msg, err := jsonrpc.DecodeMessage(body)
	if err != nil {
		return true
	}
	_, answer := msg.(*jsonrpc.Response)
	return !answer
}

// statusWriter records the status of what it writes.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (flushes,
// deadlines).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
