package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// From protocol revision 2026-07-28 a resource subscription is a
// subscriptions/listen request that stays open: the server first sends
// notifications/subscriptions/acknowledged with the subset of the request
// it honours, then notifications/resources/updated for those URIs, and
// answers the request only when it ends the subscription. The go-sdk
// (v1.8.0) ClientSession.Subscribe opens one such stream per URI and
// returns without waiting for the acknowledgement, ignores the
// acknowledgement (so a URI the server did not honour looks subscribed),
// and never learns that a stream ended: it does not await the call, so the
// server's answer, or the error its Streamable HTTP transport makes up for
// a stream that broke ("request terminated without response"), is dropped,
// and the URI stays in its table of subscriptions. A listenTracker watches
// the connection to fill those gaps: it pairs each listen request with its
// acknowledgement and its end.

// DefaultMaxListens bounds the subscriptions/listen streams one session
// keeps open for resource subscriptions when Options.MaxListens is zero.
// Each stream costs a pending request on both sides and, over Streamable
// HTTP, an open HTTP response (a connection of its own under HTTP/1.1);
// see BenchmarkListenStreams.
const DefaultMaxListens = 32

// Errors of Subscribe on sessions that negotiated 2026-07-28 or later.
var (
	// ErrNotHonoured is returned by Subscribe when the server's
	// acknowledgement left the URI out, or it refused the listen request:
	// the URI is not subscribed, and nothing the server sends keeps a copy
	// of it fresh.
	ErrNotHonoured = errors.New("the server did not honour the subscription")
	// ErrListenLimit is returned by Subscribe when the session already
	// holds Options.MaxListens subscription streams; nothing is sent.
	ErrListenLimit = errors.New("too many open subscriptions/listen streams")
)

// A listen is one subscriptions/listen request on the connection.
type listen struct {
	listChanged bool          // it asked for notifications/resources/list_changed
	done        chan struct{} // closed when the server answers it
	uris        []string
	acked       chan struct{} // closed by the acknowledgement or the end
	honoured    map[string]bool
	refusal     string // the error answer, when the request ended before any acknowledgement
	cancelled   bool   // contextd cancelled it (Unsubscribe)
	cancelledAt time.Time
}

// A listenTracker follows the subscriptions/listen requests of one
// connection. It is safe for concurrent use.
type listenTracker struct {
	// onEnd is called, outside the lock, with the honoured URIs of a
	// stream the server ended (answered) without contextd cancelling it.
	onEnd func(uris []string)
	// ended (capacity 1) is signalled whenever a listen stream is
	// answered; see restoreListChanged.
	ended chan struct{}

	conn *repairConn // set when the connection opens

	mu      sync.Mutex
	byID    map[string]*listen // idKey of the request → listen, until answered
	byURI   map[string]*listen // resource URI → the live listen that asked for it
	refused map[string]string  // resource URI → why the server did not honour it
	// refusedAll, once set, is why every URI counts as refused: the
	// server refused maxRefused of them (refused is then nil).
	refusedAll string
	// serverEnded is set when a stream ends that contextd did not end by
	// unsubscribing from its resource: one the server ended or refused,
	// or a list_changed stream (see restoreListChanged); takeServerEnded
	// clears it.
	serverEnded bool
}

// takeServerEnded reports whether a stream ended since the last call that
// contextd did not end by unsubscribing (see serverEnded).
func (t *listenTracker) takeServerEnded() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	was := t.serverEnded
	t.serverEnded = false
	return was
}

func newListenTracker() *listenTracker {
	return &listenTracker{byID: map[string]*listen{}, byURI: map[string]*listen{}, refused: map[string]string{}, ended: make(chan struct{}, 1)}
}

// listenParams is the part of subscriptions/listen params and of the
// acknowledgement that the tracker reads.
type listenParams struct {
	Meta          map[string]any `json:"_meta"`
	Notifications struct {
		ResourcesListChanged  bool     `json:"resourcesListChanged"`
		ResourceSubscriptions []string `json:"resourceSubscriptions"`
	} `json:"notifications"`
}

// sent records a request or notification contextd writes.
func (t *listenTracker) sent(req *jsonrpc.Request) {
	switch {
	case req.Method == "subscriptions/listen" && req.ID.IsValid():
		var p listenParams
		if json.Unmarshal(req.Params, &p) != nil {
			return
		}
		l := &listen{uris: p.Notifications.ResourceSubscriptions, listChanged: p.Notifications.ResourcesListChanged,
			acked: make(chan struct{}), done: make(chan struct{}), honoured: map[string]bool{}}
		t.mu.Lock()
		t.byID[idKey(req.ID)] = l
		for _, u := range l.uris {
			t.byURI[u] = l
		}
		t.mu.Unlock()
	case req.Method == "notifications/cancelled":
		key, ok := cancelledID(req.Params)
		if !ok {
			return
		}
		t.mu.Lock()
		if l := t.byID[key]; l != nil && !l.cancelled {
			l.cancelled, l.cancelledAt = true, time.Now()
			t.forgetLocked(l)
		}
		t.mu.Unlock()
	}
}

// received records a message from the server.
func (t *listenTracker) received(msg jsonrpc.Message) {
	switch m := msg.(type) {
	case *jsonrpc.Request:
		if m.Method != "notifications/subscriptions/acknowledged" {
			return
		}
		var p listenParams
		if json.Unmarshal(m.Params, &p) != nil {
			return
		}
		id, ok := subscriptionID(p.Meta)
		if !ok {
			return
		}
		t.mu.Lock()
		defer t.mu.Unlock()
		l := t.byID[id]
		if l == nil {
			return
		}
		select {
		case <-l.acked:
			return // one acknowledgement per stream
		default:
		}
		for _, u := range p.Notifications.ResourceSubscriptions {
			if slices.Contains(l.uris, u) { // the server's list may name anything
				l.honoured[u] = true
			}
		}
		if !l.cancelled {
			// Remembered here, not only by verdict: the stream may end
			// before the caller that sent it looks for it.
			for _, u := range l.uris {
				if !l.honoured[u] {
					t.refuseLocked(u, "left out of the acknowledgement")
				}
			}
		}
		close(l.acked)
	case *jsonrpc.Response:
		if !m.ID.IsValid() {
			return
		}
		t.mu.Lock()
		l := t.byID[idKey(m.ID)]
		if l == nil {
			t.mu.Unlock()
			return
		}
		delete(t.byID, idKey(m.ID))
		if !l.cancelled || l.listChanged {
			t.serverEnded = true
		}
		var ended []string
		select {
		case <-l.acked:
			if !l.cancelled {
				for _, u := range l.uris {
					if l.honoured[u] && t.byURI[u] == l {
						ended = append(ended, u)
					}
				}
			}
		default:
			l.refusal = "ended without an acknowledgement"
			if m.Error != nil {
				l.refusal = m.Error.Error()
			}
			if !l.cancelled {
				for _, u := range l.uris {
					t.refuseLocked(u, l.refusal)
				}
			}
			close(l.acked)
		}
		t.forgetLocked(l)
		close(l.done)
		t.mu.Unlock()
		select {
		case t.ended <- struct{}{}:
		default:
		}
		if len(ended) > 0 && t.onEnd != nil {
			t.onEnd(ended)
		}
	}
}

// forgetLocked removes l's URIs from byURI.
func (t *listenTracker) forgetLocked(l *listen) {
	for _, u := range l.uris {
		if t.byURI[u] == l {
			delete(t.byURI, u)
		}
	}
}

// cancel marks the live listen for uri cancelled, before the go-sdk sends
// the notifications/cancelled (asynchronously), so that open no longer
// counts it.
func (t *listenTracker) cancel(uri string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if l := t.byURI[uri]; l != nil {
		l.cancelled, l.cancelledAt = true, time.Now()
		t.forgetLocked(l)
	}
}

// closingGrace is how long a cancelled listen stream counts as closing when
// the server does not answer it (MCP lets a receiver leave a cancelled
// request unanswered).
const closingGrace = 10 * time.Second

// closing reports whether a cancelled listen stream for uri has not been
// answered yet (within closingGrace). A go-sdk server (v1.8.0) keeps one
// subscription per URI and session and removes it when any stream for the
// URI ends: a new stream opened before the old one's answer would be
// removed by it, silently.
func (t *listenTracker) closing(uri string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, l := range t.byID {
		if !l.cancelled {
			continue
		}
		if time.Since(l.cancelledAt) >= closingGrace {
			delete(t.byID, k) // never answered: forget it
			continue
		}
		if slices.Contains(l.uris, uri) {
			return true
		}
	}
	return false
}

// lookup returns the live listen for uri.
func (t *listenTracker) lookup(uri string) *listen {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.byURI[uri]
}

// open returns how many resource subscription streams are live.
func (t *listenTracker) open() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, l := range t.byID {
		if len(l.uris) > 0 && !l.cancelled {
			n++
		}
	}
	return n
}

// verdict reports, once l is acknowledged or ended, whether uri is honoured
// and, if not, why.
// A URI not honoured is remembered (see refusal).
func (t *listenTracker) verdict(l *listen, uri string) (bool, string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	why := l.refusal
	if why == "" {
		if l.honoured[uri] {
			return true, ""
		}
		why = "left out of the acknowledgement"
	}
	t.refuseLocked(uri, why)
	return false, why
}

// maxRefused bounds the URIs a connection remembers as refused. A server
// that refuses this many distinct ones (each a template expansion, say,
// with a 1 KiB message) is taken to refuse them all: held one by one they
// grew without end, about 1.3 KB each.
const maxRefused = 4096

// refuseLocked remembers that the server did not honour uri, and why;
// t.mu is held.
func (t *listenTracker) refuseLocked(uri, why string) {
	if t.refusedAll != "" {
		return
	}
	if _, ok := t.refused[uri]; !ok && len(t.refused) >= maxRefused {
		t.refusedAll = fmt.Sprintf("the server refused listens for %d resources; no more are asked on this connection (the last: %s)", maxRefused, why)
		t.refused = nil
		return
	}
	t.refused[uri] = why
}

// refusal returns why the server did not honour uri on this connection, or
// "" if it did not refuse it. The session does not ask again: each listen
// request costs the server a stream, and a go-sdk server its list_changed
// registration when it ends (see restoreListChanged).
func (t *listenTracker) refusal(uri string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.refusedAll != "" {
		return t.refusedAll
	}
	return t.refused[uri]
}

// cancelledID returns the idKey of the request a notifications/cancelled
// names.
func cancelledID(params json.RawMessage) (string, bool) {
	var p struct {
		RequestID any `json:"requestId"`
	}
	if json.Unmarshal(params, &p) != nil || p.RequestID == nil {
		return "", false
	}
	return rawIDKey(p.RequestID)
}

// subscriptionID returns the idKey of the listen request named in an
// acknowledgement's _meta.
func subscriptionID(meta map[string]any) (string, bool) {
	v, ok := meta["io.modelcontextprotocol/subscriptionId"]
	if !ok {
		return "", false
	}
	return rawIDKey(v)
}

// rawIDKey is idKey for an id decoded from JSON into an any.
func rawIDKey(v any) (string, bool) {
	switch x := v.(type) {
	case float64:
		return fmt.Sprintf("%T:%v", int64(x), int64(x)), true
	case string:
		return fmt.Sprintf("%T:%v", x, x), true
	}
	return "", false
}

// ourListen reports whether a response answers a listen request contextd
// wrote itself (restoreListChanged): the go-sdk, which did not send it,
// must not see the answer.
func ourListen(msg jsonrpc.Message) bool {
	r, ok := msg.(*jsonrpc.Response)
	if !ok || !r.ID.IsValid() {
		return false
	}
	s, ok := r.ID.Raw().(string)
	return ok && strings.HasPrefix(s, listenIDPrefix)
}

// listenIDPrefix starts the ids of the listen requests contextd writes; the
// go-sdk's own ids are numbers.
const listenIDPrefix = "contextd/list_changed/"

// currentListChanged returns the listen that asked for list_changed and is
// neither cancelled nor answered (restoreListChanged keeps at most one).
func (t *listenTracker) currentListChanged() (string, *listen) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, l := range t.byID {
		if l.listChanged && !l.cancelled {
			return k, l
		}
	}
	return "", nil
}

// restoreListChanged keeps a 2026-07-28 session's list_changed
// subscription alive. go-sdk servers (v1.8.0) keep one list_changed
// registration per session, and every subscriptions/listen stream that ends
// (a resource subscription cancelled on eviction, or ended by the server)
// deletes it, whatever it asked for: from then on the server sends no
// notifications/resources/list_changed. So after each stream's answer,
// this cancels the list_changed stream in use (and waits for its answer,
// after which its own end can delete nothing more), opens a new one, and
// calls missed, since a list change may have gone unnoticed meanwhile. It
// runs until ctx ends.
//
// Rounds that follow each other quickly because of the server (one that
// answers every listen at once, or refuses it, or answers the cancelled
// list_changed stream late, which ends the registration of the next) are
// spaced out: each waits twice the last, from restoreMinWait up to
// restoreMaxWait, until a round comes after a quiet spell. Rounds for
// streams contextd ended itself, unsubscribing as its cache evicts, come
// at most once per restoreMinWait and do not grow the spacing: a list
// change the server sends to no one meanwhile goes unseen for as long,
// and a copy cached under a subscription is served though the re-list
// that would drop it (its descriptor changed) waits.
func (s *Session) restoreListChanged(ctx context.Context, conn *repairConn, missed func()) {
	n := 0
	var last time.Time
	var wait time.Duration
	pause := func(d time.Duration) bool {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return true
		case <-ctx.Done():
			return false
		}
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.listens.ended:
		}
		switch {
		case !s.listens.takeServerEnded():
			if d := restoreMinWait - time.Since(last); !last.IsZero() && d > 0 && !pause(d) {
				return
			}
		case !last.IsZero() && time.Since(last) < 2*wait+restoreQuiet:
			wait = min(max(2*wait, restoreMinWait), restoreMaxWait)
			if !pause(wait) {
				return
			}
		default:
			wait = 0
		}
		last = time.Now()
		id, cur := s.listens.currentListChanged()
		if cur != nil {
			select {
			case <-cur.done:
			default:
				// Still open on the server: replace it. Not before the
				// server acknowledged it, though: a cancellation that
				// overtakes the request on the server cancels nothing, and
				// the stream would stay open for good.
				ack := time.NewTimer(listenAckWait)
				select {
				case <-cur.acked:
				case <-ack.C:
				case <-ctx.Done():
					ack.Stop()
					return
				}
				ack.Stop()
				raw, ok := idFromKey(id)
				if !ok {
					continue
				}
				s.listens.mu.Lock()
				cur.cancelled = true
				s.listens.mu.Unlock()
				params, _ := json.Marshal(map[string]any{"requestId": raw, "reason": "replaced"})
				if err := conn.Write(ctx, &jsonrpc.Request{Method: "notifications/cancelled", Params: params}); err != nil {
					return
				}
				// Its answer says its end can delete nothing more. Some
				// ends go unanswered (a go-sdk server sometimes ends a
				// cancelled listen without a response), so do not wait long.
				wait := time.NewTimer(replaceWait)
				select {
				case <-cur.done:
				case <-wait.C:
				case <-ctx.Done():
					wait.Stop()
					return
				}
				wait.Stop()
				// That answer signalled ended again: it needs no new round.
				select {
				case <-cur.done:
					select {
					case <-s.listens.ended:
					default:
					}
					s.listens.takeServerEnded()
				default:
				}
			}
		}
		n++
		_, _, proto := s.ServerInfo()
		params, _ := json.Marshal(map[string]any{
			"_meta": map[string]any{
				"io.modelcontextprotocol/protocolVersion":    proto,
				"io.modelcontextprotocol/clientInfo":         map[string]string{"name": "contextd", "version": Version},
				"io.modelcontextprotocol/clientCapabilities": map[string]any{},
			},
			"notifications": map[string]bool{"resourcesListChanged": true},
		})
		id2, _ := jsonrpc.MakeID(fmt.Sprintf("%s%d", listenIDPrefix, n))
		if err := conn.Write(ctx, &jsonrpc.Request{ID: id2, Method: "subscriptions/listen", Params: params}); err != nil {
			return
		}
		missed()
	}
}

// restoreListChanged's spacing of rounds that follow each other within
// restoreQuiet (plus twice the last wait): from restoreMinWait, doubling,
// up to restoreMaxWait. A server ending each stream restoreQuiet after it
// began gets a round (a new stream and a re-list) that often at most: with
// a second, one holding each stream a second got one a second.
const (
	restoreQuiet   = 10 * time.Second
	restoreMinWait = 250 * time.Millisecond
	restoreMaxWait = 30 * time.Second
)

// replaceWait bounds how long restoreListChanged waits for the answer to
// the list_changed stream it cancelled before it opens the next one.
const replaceWait = 500 * time.Millisecond

// idFromKey turns an idKey back into the raw id it was made from.
func idFromKey(key string) (any, bool) {
	typ, v, ok := strings.Cut(key, ":")
	if !ok {
		return nil, false
	}
	switch typ {
	case "int64":
		n, err := strconv.ParseInt(v, 10, 64)
		return n, err == nil
	case "string":
		return v, true
	}
	return nil, false
}
