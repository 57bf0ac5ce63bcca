package mcp

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// capTransport is the http.RoundTripper under every Streamable HTTP and SSE
// session. It bounds each JSON-RPC message the server sends to max bytes, as
// the stdio transport does: a larger message is never buffered whole; the
// call it answers fails on its own ("exceeds max_message_bytes") and the
// session stays up.
//
// An application/json body is one message; a text/event-stream body is
// checked event by event (the WHATWG HTML "Server-sent events" framing:
// events end at a blank line). The answer to a call is recognised by the id
// of the POSTed request, or on streams that carry no request (the standalone
// GET stream, the legacy SSE transport) by the id near the head or tail of
// the oversized message.
type capTransport struct {
	base  http.RoundTripper
	max   int
	log   *slog.Logger
	quiet *warnLimit // the session's: events that are not JSON-RPC
	// odd limits the warnings about HTTP answers (another session id, a
	// body that is not JSON-RPC): a server can give every answer one.
	odd *warnLimit
	// status, when set, holds the status code of the last answer to a
	// POST.
	status *atomic.Int32
	// legacy, set for the HTTP+SSE transport of 2024-11-05 (whose POSTs
	// are answered 202 Accepted with a body of no matter: the answers come
	// on the event stream), holds the calls its stream owes an answer.
	legacy *legacyCalls
	// calls, when set, links a call's event stream to the streams that
	// resume it (see callStreams).
	calls *callStreams
}

// legacyCalls holds the ids of the calls POSTed on an HTTP+SSE session
// (2024-11-05) whose answers its event stream has not carried yet: those
// answers, each bounded by max_message_bytes, come at the pace contextd
// asks for them, and do not count against the stream's bound (sseCap:
// an Assemble reading large resources would otherwise end the session).
// It keeps the maxLegacyCalls latest; one whose answer never came is
// forgotten then.
type legacyCalls struct {
	mu   sync.Mutex
	ids  map[string]uint64 // by idKey: the order added
	next uint64
}

// maxLegacyCalls bounds legacyCalls: far more than the calls a session
// has in flight (reads are bounded per server).
const maxLegacyCalls = 4096

func newLegacyCalls() *legacyCalls { return &legacyCalls{ids: map[string]uint64{}} }

// jsonIDKey returns the idKey of the raw JSON id raw.
func jsonIDKey(raw []byte) (string, bool) {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return "", false
	}
	return rawIDKey(v)
}

// waits reports whether the call whose raw JSON id is raw waits for its
// answer.
func (l *legacyCalls) waits(raw []byte) bool {
	k, ok := jsonIDKey(raw)
	if !ok {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok = l.ids[k]
	return ok
}

// takeRaw forgets the call whose raw JSON id is raw.
func (l *legacyCalls) takeRaw(raw []byte) {
	if k, ok := jsonIDKey(raw); ok {
		l.mu.Lock()
		delete(l.ids, k)
		l.mu.Unlock()
	}
}

// add records the call whose raw JSON id is raw.
func (l *legacyCalls) add(raw []byte) {
	k, ok := jsonIDKey(raw)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.ids) >= maxLegacyCalls {
		oldest, at := "", ^uint64(0)
		for id, n := range l.ids {
			if n < at {
				oldest, at = id, n
			}
		}
		delete(l.ids, oldest)
	}
	l.next++
	l.ids[k] = l.next
}

// take reports whether id is a call's that was waiting, and forgets it.
func (l *legacyCalls) take(id jsonrpc.ID) bool {
	k := idKey(id)
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.ids[k]
	delete(l.ids, k)
	return ok
}

// A callBudget is what one call's event streams carried besides its
// answer, in all: the stream the POST opened and those the go-sdk opens
// to resume it (GET with Last-Event-ID) count together.
type callBudget struct {
	id    []byte // the call's id; nil when unknown (a resumption of a stream forgotten)
	other int    // bytes besides the answer
	last  string // the last event id seen on its streams
}

// callStreams maps the last event id of each call's stream to its budget,
// so that a stream resuming it (Last-Event-ID) goes on counting: else a
// server ending the stream after each event id, without answering, would
// get max_message_bytes afresh at each resumption (603 MB in a read's
// 29 s). At most maxCallStreams are kept (calls in flight); past it an
// arbitrary one is forgotten.
type callStreams struct {
	mu     sync.Mutex
	byLast map[string]*callBudget
	// unknown is the budget resumptions of ids not kept share, since
	// unknownAt.
	unknown   *callBudget
	unknownAt time.Time
}

// maxCallStreams bounds callStreams.
const maxCallStreams = 1024

// note records that b's streams carried event id last.
func (c *callStreams) note(b *callBudget, last string) {
	if c == nil || last == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byLast == nil {
		c.byLast = map[string]*callBudget{}
	}
	if b.last != "" && c.byLast[b.last] == b {
		delete(c.byLast, b.last)
	}
	for k := range c.byLast {
		if len(c.byLast) < maxCallStreams {
			break
		}
		delete(c.byLast, k)
	}
	b.last = last
	c.byLast[last] = b
}

// done forgets b: its call was answered.
func (c *callStreams) done(b *callBudget) {
	if c == nil || b.last == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byLast[b.last] == b {
		delete(c.byLast, b.last)
	}
}

// resumed returns the budget of the call whose stream a GET with
// Last-Event-ID last resumes. Of a call forgotten (or an id never seen)
// it is one budget all such resumptions share for a minute: a server
// cannot get max_message_bytes afresh by sending ids contextd does not
// keep.
func (c *callStreams) resumed(last string) *callBudget {
	if c == nil {
		return &callBudget{}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if b := c.byLast[eventKey(last)]; b != nil {
		return b
	}
	if c.unknown == nil || time.Since(c.unknownAt) >= time.Minute {
		c.unknown, c.unknownAt = &callBudget{}, time.Now()
	}
	return c.unknown
}

// eventKey returns what an event id is kept under: itself, or for one
// longer than maxEventID its SHA-256 (the go-sdk sends back ids of any
// length).
func eventKey(id string) string {
	if len(id) <= maxEventID {
		return id
	}
	h := sha256.Sum256([]byte(id))
	return "sha256:" + hex.EncodeToString(h[:])
}

// standaloneGET marks the context of the standalone stream's GETs (see
// standaloneStream.get), which a Last-Event-ID resumes too but which is
// no call's: it has bounds of its own.
type standaloneGET struct{}

// HTTPStatusError is a connection's failure whose last HTTP answer had an
// error status (400 to 999): Code is that status, Err what the go-sdk
// returned (which may quote the server).
type HTTPStatusError struct {
	Code int
	Err  error
}

func (e *HTTPStatusError) Error() string {
	return fmt.Sprintf("%v (HTTP %d)", e.Err, e.Code)
}

func (e *HTTPStatusError) Unwrap() error { return e.Err }

func (c capTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	id, method := postedCall(req)
	if c.legacy != nil && id != nil {
		c.legacy.add(id) // its answer may come on the stream before the POST's
	}
	resp, err := c.base.RoundTrip(req)
	if err != nil {
		return resp, boundedError{err}
	}
	if c.status != nil && req.Method == http.MethodPost {
		// Only what answered a message: after a failed handshake the
		// go-sdk DELETEs the session, and that answer says nothing of why.
		c.status.Store(int32(resp.StatusCode))
	}
	if resp.StatusCode < 200 {
		// 101 Switching Protocols is a final answer to net/http: the
		// connection is handed over as the body, which no context
		// cancels. The go-sdk would read it to the end inside the call,
		// past every deadline, for as long as the server holds it.
		resp.Body.Close()
		return nil, fmt.Errorf("the server answered HTTP %d, which no MCP request expects", resp.StatusCode)
	}
	if sent, got := req.Header.Get(sessionIDHeader), resp.Header.Get(sessionIDHeader); sent != "" && got != "" && got != sent {
		// A session id is fixed by initialize; the go-sdk ends the session
		// on a different one. Keep ours: the server still knows it, or
		// answers 404 and the session is re-initialized.
		if ok, n := c.odd.allow(); ok {
			c.log.Warn("the server answered with another session id; ignoring it", "sent", clipCut(sent, maxHeaderQuote), "got", clipCut(got, maxHeaderQuote), "not_logged_since_last", n)
		}
		resp.Header.Del(sessionIDHeader)
	}
	if id != nil && resp.StatusCode >= 400 && resp.StatusCode < 500 &&
		resp.StatusCode != http.StatusNotFound && resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
		// The go-sdk keeps the session only when a 4xx body is a JSON-RPC
		// error (404 means an expired session; 401/403 are authorization).
		rejectPlainError(resp, id, c.log, c.odd)
		return resp, nil
	}
	mt, _, perr := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if perr != nil {
		mt = "" // as the go-sdk reads it: an unsupported type
	}
	if id != nil && resp.StatusCode/100 == 2 && mt != "text/event-stream" && mt != "application/json" &&
		!(c.legacy != nil && resp.StatusCode == http.StatusAccepted) {
		// The go-sdk ends the session on any other type (a proxy's HTML
		// page): answer the call with an error instead.
		resp.Body.Close()
		ct := clipCut(resp.Header.Get("Content-Type"), maxHeaderQuote)
		if ok, n := c.odd.allow(); ok {
			c.log.Warn("an HTTP answer is not JSON-RPC", "content_type", ct, "id", string(id), "not_logged_since_last", n)
		}
		body := errorAnswer(id, fmt.Sprintf("malformed response: Content-Type %q is neither application/json nor text/event-stream", ct))
		resp.Header.Set("Content-Type", "application/json")
		resp.Body = io.NopCloser(bytes.NewReader(body))
		resp.ContentLength = -1
		resp.Header.Del("Content-Length")
		return resp, nil
	}
	if mt == "text/event-stream" {
		buf := 64 << 10
		if method == "subscriptions/listen" {
			// A listen stream stays open for the subscription's life and
			// carries small notifications: a small buffer (longer lines
			// are read in pieces) keeps each subscription cheap.
			buf = 4 << 10
		}
		var b *callBudget
		switch {
		case id != nil:
			b = &callBudget{id: id}
		case req.Method == http.MethodGet && req.Header.Get(lastEventIDHeader) != "" && req.Context().Value(standaloneGET{}) == nil:
			b = c.calls.resumed(req.Header.Get(lastEventIDHeader))
			id = b.id
		}
		sc := &sseCap{body: resp.Body, r: bufio.NewReaderSize(resp.Body, buf), max: c.max, id: id, b: b, calls: c.calls, log: c.log, quiet: c.quiet, lineStart: true}
		if c.legacy != nil && req.Method == http.MethodGet {
			sc.legacy, sc.window = c.legacy, time.Now()
		}
		resp.Body = sc
	} else {
		resp.Body = &wholeCap{body: resp.Body, max: c.max, id: id, ok: resp.StatusCode/100 == 2, log: c.log}
	}
	resp.ContentLength = -1
	resp.Header.Del("Content-Length")
	return resp, nil
}

// postedCall returns the raw JSON id and the method of the call a POST
// carries, or nil and "".
func postedCall(req *http.Request) (id []byte, method string) {
	if req.Method != http.MethodPost || req.GetBody == nil {
		return nil, ""
	}
	body, err := req.GetBody()
	if err != nil {
		return nil, ""
	}
	defer body.Close()
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.NewDecoder(io.LimitReader(body, 1<<20)).Decode(&m) != nil || m.Method == "" || len(m.ID) == 0 {
		return nil, ""
	}
	return m.ID, m.Method
}

// tooLarge returns the JSON-RPC error answer that replaces an oversized
// message answering id.
func tooLarge(id []byte, size string, max int) []byte {
	return errorAnswer(id, fmt.Sprintf("response of %s bytes exceeds max_message_bytes (%d)", size, max))
}

// errorAnswer returns a JSON-RPC error answer to id with code -32603.
func errorAnswer(id []byte, message string) []byte {
	msg, _ := json.Marshal(message)
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":%s}}`, id, codeTooLarge, msg)
}

// errBodyTooLarge ends a non-JSON-RPC body (an error page) over the cap.
var errBodyTooLarge = errors.New("mcp: HTTP response body exceeds max_message_bytes")

// wholeCap reads a whole (non-stream) body of at most max bytes.
//
// It also keeps a failed or malformed answer from ending the session: the
// go-sdk fails the whole connection when it cannot read or decode a JSON
// answer (a stall after the headers cut by the call's deadline, a truncated
// body, a proxy's HTML page with status 200), so those become an error answer
// to the call instead.
type wholeCap struct {
	body io.ReadCloser
	max  int
	id   []byte
	ok   bool // 2xx: the body is the answer to the call
	log  *slog.Logger

	buf  *bytes.Reader
	err  error
	done bool
}

func (w *wholeCap) Read(p []byte) (int, error) {
	if !w.done {
		w.done = true
		data, err := io.ReadAll(io.LimitReader(w.body, int64(w.max)+1))
		switch {
		case err != nil && w.ok && w.id != nil:
			data = errorAnswer(w.id, "reading the response: "+err.Error())
		case err != nil:
			w.err = err
		case len(data) > w.max:
			w.log.Warn("dropped an HTTP response over the size cap", "max_message_bytes", w.max, "id", string(w.id))
			data = nil
			w.err = errBodyTooLarge
			if w.ok && w.id != nil {
				data, w.err = tooLarge(w.id, fmt.Sprintf("more than %d", w.max), w.max), nil
			}
			w.body.Close() // do not read the rest
		case w.ok && w.id != nil:
			msg, err := decodeMessage(data)
			if err != nil {
				data = errorAnswer(w.id, fmt.Sprintf("malformed response (%v): %q", err, clipBytes(data, 100)))
			} else if r, ok := msg.(*jsonrpc.Response); !ok || !sameID(w.id, r.ID) {
				// A JSON body answers the POSTed call and nothing else; any
				// other message would leave the call waiting for its timeout.
				data = errorAnswer(w.id, fmt.Sprintf("malformed response: the body is not the answer to call %s: %q", w.id, clipBytes(data, 100)))
			}
		}
		w.buf = bytes.NewReader(data)
	}
	n, _ := w.buf.Read(p)
	if n == 0 {
		if w.err != nil {
			return 0, w.err
		}
		return 0, io.EOF
	}
	return n, nil
}

func (w *wholeCap) Close() error { return w.body.Close() }

// sseCap passes a server-sent event stream through event by event, replacing
// an event over max bytes with an error answer to the call it answers (or
// dropping it when it answers none).
type sseCap struct {
	body  io.ReadCloser
	r     *bufio.Reader
	max   int
	id    []byte // the POSTed call's id, nil on streams without one
	log   *slog.Logger
	quiet *warnLimit

	event   []byte // the event being read, up to max bytes
	size    int    // bytes of an oversized event so far; 0 while within max
	skipped int    // bytes of the oversized events before it, on this stream
	head    []byte // the first bytes of an oversized event
	tail    []byte // its last bytes
	// b counts what a call's streams carry besides its answer (nil on
	// streams of no call); calls links it to those resuming this one.
	b       *callBudget
	calls   *callStreams
	eventID string // the id field of the event being read
	// legacy is set on the event stream of the HTTP+SSE transport, which
	// lives as long as the session and carries the answers to its calls:
	// carried counts what it carried since window began besides those
	// answers (see legacyCalls).
	legacy    *legacyCalls
	window    time.Time
	carried   int
	answering []byte // the raw id of the call an oversized event answers, if it waits (legacy)
	exempt    int    // what of that event may yet pass uncounted
	lineStart bool
	out       []byte
	err       error
}

func (s *sseCap) Close() error { return s.body.Close() }

func (s *sseCap) Read(p []byte) (int, error) {
	for len(s.out) == 0 {
		if s.err != nil {
			return 0, s.err
		}
		s.next()
	}
	n := copy(p, s.out)
	s.out = s.out[n:]
	return n, nil
}

// next reads one line (or a buffer's worth of one) and moves complete
// events to out.
func (s *sseCap) next() {
	line, err := s.r.ReadSlice('\n')
	if s.b != nil && s.max > 0 {
		// Everything on a call's streams counts but its answer (taken
		// back when it completes): notifications, the server's requests,
		// answers to other calls, comments and ignored fields. A call's
		// progress and log messages are small; without a bound a server
		// could keep a call, and a core, busy for its whole time share
		// (ping requests or comment lines: 4.6 GB in a read's 30 s).
		// The event being read may be the answer: what came before it
		// counts now.
		if s.b.other-len(s.event) > s.max {
			s.failCall()
			return
		}
		s.b.other += len(line)
	}
	if s.legacy != nil && s.max > 0 {
		if time.Since(s.window) >= standaloneRateWindow {
			s.window, s.carried = time.Now(), 0
		}
		if s.carried > 2*s.max {
			s.flooded()
			return
		}
		if s.exempt > 0 && s.size > 0 {
			n := min(s.exempt, len(line))
			s.exempt -= n
			s.carried += len(line) - n
		} else {
			s.carried += len(line)
		}
	}
	if s.lineStart && err == nil {
		if v, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r\n"), []byte("id:")); ok {
			// As the go-sdk reads it, and sends it back: whitespace
			// around it trimmed.
			s.eventID = eventKey(string(bytes.TrimSpace(v)))
		}
	}
	blank := s.lineStart && (string(line) == "\n" || string(line) == "\r\n")
	if s.lineStart && !blank && err == nil && (ignorableLine(line) || shortRetry(line)) {
		// A field the SSE spec ignores, which the go-sdk rejects, or a
		// retry field under minRetry (the go-sdk's own backoff applies):
		// dropped, but read, so inside an oversized event it counts
		// towards the bound on what is skipped.
		if s.size > 0 {
			s.size += len(line)
			s.stopSkipping()
		}
		return
	}
	s.lineStart = err == nil
	switch {
	case s.size > 0:
		s.size += len(line)
		s.tail = append(s.tail, line...)
		s.tail = s.tail[max(0, len(s.tail)-256):]
		if s.stopSkipping() {
			return
		}
	case len(s.event)+len(line) > s.max:
		s.size = len(s.event) + len(line)
		s.head = append(s.event[:0:0], s.event[:min(len(s.event), 256)]...)
		if len(s.head) < 256 {
			s.head = append(s.head, line[:min(len(line), 256-len(s.head))]...)
		}
		s.tail = append([]byte(nil), line[max(0, len(line)-256):]...)
		s.event = nil
		if s.legacy != nil {
			if m := idPatterns[0].FindSubmatch(eventData(s.head)); m != nil && s.legacy.waits(m[1]) {
				// The answer to a call contextd made, too big: it fails
				// that call alone, and its first twice max_message_bytes
				// count no more than other answers; past them it counts
				// (an answer that never ends floods like anything else).
				s.answering = m[1]
				s.exempt = max(0, 2*s.max-s.size)
				s.carried -= min(s.size, 2*s.max)
			}
		}
		if s.id != nil && !isRequest(eventData(s.head)) {
			// The POSTed call's answer, too big: answer it now and read no
			// more of the stream, as for a JSON body. Reading on to the
			// event's end would let a server that never ends it hold the
			// call, and a core, for as long as it sends.
			s.out = s.oversized(false)
			s.err = io.EOF
			s.body.Close()
			return
		}
		if s.id != nil {
			// A request of the server's own, too big, on the call's
			// stream: fail the call and read no more. Skipping to the
			// event's end would read up to skipFactor × max bytes a call,
			// which a compressed body makes cheap to send (a 1 MB gzip
			// body: a GiB inflated, over a second of CPU a read).
			s.log.Warn("dropped a server-sent request over the size cap; failing the call it came with", "max_message_bytes", s.max, "id", string(s.id))
			s.out = append(append([]byte("event: message\ndata: "), errorAnswer(s.id, fmt.Sprintf("a request from the server on this call's stream exceeds max_message_bytes (%d)", s.max))...), "\n\n"...)
			s.id = nil
			s.err = io.EOF
			s.body.Close()
			return
		}
	default:
		s.event = append(s.event, line...)
	}
	if errors.Is(err, bufio.ErrBufferFull) {
		return
	}
	if blank || err != nil {
		if s.legacy != nil {
			// What handling an event costs, whatever its size (decoding,
			// a ping's answer POSTed back): tiny ones cannot flood.
			s.carried += standaloneEventBytes
		}
		var msg jsonrpc.Message
		valid := true
		if s.size == 0 {
			msg, valid = s.message()
		}
		switch {
		case s.size > 0:
			s.out = s.oversized(true)
			s.skipped += s.size
			if s.answering != nil {
				s.legacy.takeRaw(s.answering)
				s.carried -= standaloneEventBytes
				s.answering, s.exempt = nil, 0
			}
		case !valid:
			s.out = s.malformed()
		default:
			s.out = s.event
			r, isResponse := msg.(*jsonrpc.Response)
			if s.legacy != nil && isResponse && s.legacy.take(r.ID) {
				s.carried -= len(s.event) + standaloneEventBytes // an answer contextd waited for
			}
			if s.b != nil && s.id != nil && isResponse && sameID(s.id, r.ID) {
				// The call's answer: it ends the call, and the stream
				// (one answer per call; reading on, events the go-sdk
				// takes for no answer could be taken for one here).
				s.b.other -= len(s.event)
				s.calls.done(s.b)
				s.event, s.size, s.head, s.tail = nil, 0, nil, nil
				s.err = io.EOF
				s.body.Close()
				return
			}
			if s.b != nil {
				s.calls.note(s.b, s.eventID)
			}
		}
		s.eventID = ""
		s.event, s.size, s.head, s.tail = nil, 0, nil, nil
	}
	if err != nil {
		s.err = err
	}
}

// flooded ends the event stream of the HTTP+SSE transport: it carried more
// than twice max_message_bytes within standaloneRateWindow besides the
// answers contextd waited for (each event counted standaloneEventBytes
// more). The session ends with it, and contextd reconnects after its
// backoff, which grows while sessions end that soon. Unbounded, a flood
// of notifications took 1.3 cores for as long as the session lasted.
func (s *sseCap) flooded() {
	if ok, n := s.quiet.allow(); ok {
		s.log.Warn("the server sent more than twice max_message_bytes on its SSE stream within a minute besides the answers to calls; ending the session", "bytes", s.carried, "max_message_bytes", s.max, "not_logged_since_last", n)
	}
	s.out = nil
	s.event, s.size, s.head, s.tail = nil, 0, nil, nil
	s.err = errFlooded
	s.body.Close()
}

// errFlooded ends an event stream closed by sseCap.flooded.
var errFlooded = errors.New("mcp: the server sent more than twice max_message_bytes within a minute on its event stream")

// stopSkipping ends the stream when the oversized events skipped on it
// pass skipBound (one that does not end, or ones that do not stop), and
// reports whether it did.
func (s *sseCap) stopSkipping() bool {
	if b := skipBound(s.max); b > 0 && s.skipped+s.size > b {
		s.out = s.oversized(false)
		s.err = errEndless
		s.body.Close()
		return true
	}
	return false
}

// failCall ends the call's stream with an error answer: the server sent
// more than max_message_bytes on its streams besides the answer (see
// next). On a resumed stream of a call forgotten (no id), the stream
// ends.
func (s *sseCap) failCall() {
	s.log.Warn("a server sent more than max_message_bytes on one call's streams without answering it; failing the call", "bytes", s.b.other, "max_message_bytes", s.max, "id", string(s.id))
	s.out = nil
	if s.id != nil {
		s.out = append(append([]byte("event: message\ndata: "), errorAnswer(s.id, fmt.Sprintf("the server sent more than max_message_bytes (%d) of other messages on this call's stream without answering it", s.max))...), "\n\n"...)
	}
	s.calls.done(s.b)
	s.id = nil
	s.event, s.size, s.head, s.tail = nil, 0, nil, nil
	s.err = io.EOF
	if s.out == nil {
		s.err = errEndless
	}
	s.body.Close()
}

// oversized returns the event that replaces one of s.size bytes (so far,
// unless ended).
func (s *sseCap) oversized(ended bool) []byte {
	head := eventData(s.head)
	var id []byte
	switch {
	case isRequest(head):
		// A request from the server: its id is in the server's id space.
	case s.id != nil:
		id = s.id
	default:
		if m := idPatterns[0].FindSubmatch(head); m != nil {
			id = m[1]
		} else if m := idPatterns[1].FindSubmatch(bytes.TrimRight(s.tail, "\r\n")); m != nil {
			id = m[1]
		}
	}
	s.log.Warn("dropped a server-sent event over the size cap", "bytes", s.size, "max_message_bytes", s.max, "id", string(id))
	if id == nil {
		return nil
	}
	s.id = nil // one answer per call
	size := fmt.Sprint(s.size)
	if !ended {
		size = fmt.Sprintf("more than %d", s.max)
	}
	return append(append([]byte("event: message\ndata: "), tooLarge(id, size, s.max)...), "\n\n"...)
}

// eventData returns the data of the event whose first bytes are head,
// roughly: enough to find an id or a method.
func eventData(head []byte) []byte {
	if i := bytes.Index(head, []byte("data:")); i >= 0 {
		return bytes.TrimLeft(head[i+len("data:"):], " ")
	}
	return nil
}

// eventData returns the data of the event in s.event: its data lines joined
// by newlines (WHATWG HTML, "Server-sent events", interpreting an event
// stream).
func (s *sseCap) eventData() (data []byte, ok bool) {
	for line := range bytes.Lines(s.event) {
		line = bytes.TrimRight(line, "\r\n")
		v, found := bytes.CutPrefix(line, []byte("data"))
		if !found || (len(v) > 0 && v[0] != ':') {
			continue
		}
		v = bytes.TrimPrefix(bytes.TrimPrefix(v, []byte(":")), []byte(" "))
		if ok {
			data = append(data, '\n')
		}
		data, ok = append(data, v...), true
	}
	return data, ok
}

// messageEvent reports whether the event in s.event is a message event as
// the go-sdk reads it: its last event field (trimmed) empty or "message",
// or none.
func (s *sseCap) messageEvent() bool {
	var name []byte
	for line := range bytes.Lines(s.event) {
		if n, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r\n"), []byte("event:")); ok {
			name = bytes.TrimSpace(n)
		}
	}
	return len(name) == 0 || string(name) == "message"
}

// message returns the JSON-RPC message the event in s.event carries as the
// go-sdk reads it (a message event whose data decodes whole), nil for an
// event it skips (another name, no data); ok is false when it would fail
// the session on it (data that is not a JSON-RPC message).
func (s *sseCap) message() (msg jsonrpc.Message, ok bool) {
	if !s.messageEvent() {
		return nil, true
	}
	data, found := s.eventData()
	if !found || len(bytes.TrimSpace(data)) == 0 {
		return nil, true
	}
	msg, err := decodeMessage(data)
	return msg, err == nil
}

// malformed returns the event that replaces one whose data is not a
// JSON-RPC message: the go-sdk would end the session on it.
func (s *sseCap) malformed() []byte {
	data, _ := s.eventData()
	if ok, n := s.quiet.allow(); ok {
		s.log.Warn("dropped a server-sent event that is not JSON-RPC", "data", fmt.Sprintf("%q", clipBytes(data, 100)), "id", string(s.id), "not_logged_since_last", n)
	}
	if s.id == nil {
		return nil
	}
	id := s.id
	s.id = nil // one answer per call
	return append(append([]byte("event: message\ndata: "), errorAnswer(id, fmt.Sprintf("malformed response: event data is not a JSON-RPC message: %q", clipBytes(data, 100)))...), "\n\n"...)
}

// minRetry is the shortest reconnection delay an event stream's retry
// field may set. The go-sdk reconnects a stream that ends before the call's
// answer (with Last-Event-ID) after the delay the server last set, and
// starts again from no delay each time the event id moves on: a server
// sending a new id and "retry: 1" then ending the stream had it reconnect
// 730 times a second for as long as the call waited (a fifth of a core
// per call, 64 reads an Assemble). A shorter retry field is dropped, and
// the go-sdk's backoff (from 1 s) applies.
const minRetry = time.Second

// shortRetry reports whether line is a retry field (WHATWG HTML,
// "Server-sent events": ASCII digits, in milliseconds) asking for less than
// minRetry.
func shortRetry(line []byte) bool {
	v, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r\n"), []byte("retry:"))
	if !ok {
		return false
	}
	ms, err := strconv.ParseInt(string(bytes.TrimPrefix(v, []byte(" "))), 10, 64)
	return err == nil && ms < minRetry.Milliseconds()
}

// ignorableLine reports whether a complete, non-blank SSE line is one the
// WHATWG "Server-sent events" interpretation ignores: no colon, and not one
// of the field names data, event, id or retry (a line without a colon is a
// field with an empty value; unknown fields are ignored).
func ignorableLine(line []byte) bool {
	l := bytes.TrimRight(line, "\r\n")
	if bytes.IndexByte(l, ':') >= 0 {
		return false
	}
	switch string(l) {
	case "data", "event", "id", "retry":
		return false
	}
	return true
}

// boundedError is a transport or handshake error whose message is cut to
// maxTransportError bytes: net/http quotes a malformed status line or
// header whole ("malformed HTTP response …", up to its 10 MB of headers),
// and the error reaches the call's error, ListServers and the log. It
// unwraps to the error it cuts.
type boundedError struct{ err error }

// maxTransportError bounds a transport error's message, in bytes.
const maxTransportError = 512

func (e boundedError) Error() string {
	if m := e.err.Error(); len(m) > maxTransportError {
		return clipCut(m, maxTransportError)
	}
	return e.err.Error()
}

func (e boundedError) Unwrap() error { return e.err }

// Timeout reports whether the error it cuts is a timeout (net.Error), as
// net/http's callers ask.
func (e boundedError) Timeout() bool {
	var t interface{ Timeout() bool }
	return errors.As(e.err, &t) && t.Timeout()
}

// maxHeaderQuote bounds, in bytes, what the log and errors quote of a
// header value or a status line: the server chooses them (Go reads up to
// 10 MB of headers an answer), and any call may carry new ones.
const maxHeaderQuote = 256

// sessionIDHeader is the Streamable HTTP session header (MCP 2025-06-18,
// Transports, Session Management).
const sessionIDHeader = "Mcp-Session-Id"

// rejectPlainError makes a 4xx answer to call id a JSON-RPC error answer
// unless it already is one, keeping the status.
func rejectPlainError(resp *http.Response, id []byte, log *slog.Logger, quiet *warnLimit) {
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	status := clipCut(resp.Status, maxHeaderQuote) // its reason phrase is the server's
	msg, err := decodeMessage(data)
	if err == nil && isErrorAnswer(msg) && clipError(msg.(*jsonrpc.Response)) {
		// The go-sdk puts the message in the call's error.
		if b, err := jsonrpc.EncodeMessage(msg); err == nil {
			data = b
		}
	}
	if err != nil || !isErrorAnswer(msg) {
		if fixed, ok := withID(data, id); ok {
			// A JSON-RPC error without an id (JSON-RPC 2.0 § 5: null when
			// the request could not be read). Servers of the 2025 era answer
			// the go-sdk's first try, server/discover (2026-07-28), this way
			// before it falls back to initialize: a normal exchange, not a
			// fault. The id is the posted one, so the call gets the error.
			log.Debug("an HTTP error answer has no id; answering the posted call with it", "status", status, "id", string(id))
			data = fixed
		} else {
			if ok, n := quiet.allow(); ok {
				log.Warn("an HTTP error answer is not JSON-RPC", "status", status, "id", string(id), "not_logged_since_last", n)
			}
			data = errorAnswer(id, fmt.Sprintf("HTTP %s: %s", status, clipBytes(bytes.TrimSpace(data), 200)))
		}
		resp.Header.Set("Content-Type", "application/json")
	}
	resp.Body = io.NopCloser(bytes.NewReader(data))
	resp.ContentLength = -1
	resp.Header.Del("Content-Length")
}

// withID returns data, a JSON-RPC error answer whose id is null or absent,
// with id in its place, and whether data was such an answer.
func withID(data, id []byte) ([]byte, bool) {
	var m struct {
		Version string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *struct {
			Code    int64           `json:"code"`
			Message string          `json:"message"`
			Data    json.RawMessage `json:"data,omitempty"`
		} `json:"error"`
	}
	if json.Unmarshal(data, &m) != nil || m.Version != "2.0" || m.Error == nil || (len(m.ID) > 0 && string(m.ID) != "null") {
		return nil, false
	}
	e, err := json.Marshal(m.Error)
	if err != nil {
		return nil, false
	}
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":%s}`, id, e), true
}

func isErrorAnswer(msg jsonrpc.Message) bool {
	r, ok := msg.(*jsonrpc.Response)
	return ok && r.Error != nil
}

// sameID reports whether the raw JSON id of a request names id.
func sameID(raw []byte, id jsonrpc.ID) bool {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return false
	}
	switch x := id.Raw().(type) {
	case int64:
		f, ok := v.(float64)
		return ok && f == float64(x)
	case string:
		s, ok := v.(string)
		return ok && s == x
	}
	return false
}
