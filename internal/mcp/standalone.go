package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"mime"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The standalone stream (MCP 2025-06-18 and 2025-11-25, Transports,
// Streamable HTTP, "Listening for messages from the server"): after
// initialize, a client may GET the endpoint with Accept: text/event-stream;
// the server answers with an event stream that carries what it sends
// outside a call (resources/updated, list_changed, ping), or with 405
// Method Not Allowed when it offers none. The go-sdk opens it only for a
// connection of its own type, which repairConn hides, so contextd opens it
// itself and feeds what arrives to the go-sdk through repairConn.Read.
//
// Bounds, against a server that would use the stream to cost contextd:
//   - each event goes through the session's http.Client (capTransport), so
//     an event over max_message_bytes is dropped and one that never ends
//     closes the stream; the reader here buffers one event of at most
//     maxEvent bytes and one decoded message waiting for Read;
//   - a stream that breaks is opened again after the server's retry field
//     (at least minRetry, at most standaloneMaxDelay) or the backoff, which
//     grows (from standaloneBaseDelay, ×1.5, up to standaloneMaxDelay) while
//     streams keep breaking within standaloneStable of opening;
//   - a stream that carries more than twice max_message_bytes within
//     standaloneRateWindow, each event counted standaloneEventBytes more (a
//     flood of notifications or comments: 667 MB in 20 s, most of a core;
//     of tiny pings: 830 answers a second) is closed, and opened again
//     standaloneMaxDelay later;
//   - standaloneMaxAttempts GETs in a row that do not give a stream end the
//     session (its Read fails), so contextd reconnects and drops what it
//     cached under subscriptions instead of claiming them without the stream.
const (
	// standaloneOpenWait bounds the wait for the first GET's response
	// headers at connect (within the connect deadline).
	standaloneOpenWait = 10 * time.Second
	// standaloneMaxAttempts is how many GETs in a row may fail to give a
	// stream before the session ends.
	standaloneMaxAttempts = 5
	// standaloneMaxDelay caps the wait before a reconnection, the server's
	// retry field included: notifications are not received meanwhile.
	standaloneMaxDelay = 30 * time.Second
	// standaloneStable is how long a stream must have stayed open for the
	// next break to start the backoff over.
	standaloneStable = 30 * time.Second
	// standaloneRateWindow is the window the bytes a stream carries are
	// counted over (see above).
	standaloneRateWindow = time.Minute
	// standaloneEventBytes is what each event counts for besides its
	// bytes: 8,192 events a minute at the default max_message_bytes.
	standaloneEventBytes = 4 << 10
	// maxEventID bounds an event id kept for Last-Event-ID; a longer one
	// is ignored (it would be sent back in every reconnection's headers).
	maxEventID = 1024
)

// standaloneBaseDelay is the first reconnection delay, in nanoseconds.
// Tests shorten it.
var standaloneBaseDelay atomic.Int64

func init() { standaloneBaseDelay.Store(int64(time.Second)) }

// Headers of the Streamable HTTP transport besides sessionIDHeader.
const (
	protocolVersionHeader = "Mcp-Protocol-Version"
	lastEventIDHeader     = "Last-Event-ID"
)

// standaloneStream is one session's standalone GET stream. Messages read
// from it are handed, one at a time, to repairConn.Read (msgs); when the
// stream cannot be re-established, dead is closed and err says why.
type standaloneStream struct {
	client    *http.Client
	url       string
	sessionID string
	protocol  string
	maxEvent  int
	log       *slog.Logger
	quiet     warnLimit // malformed or oversized events

	// listChanged: the server declared resources.listChanged, so a gap in
	// the stream is covered by a list_changed as well.
	listChanged bool

	msgs chan jsonrpc.Message
	dead chan struct{}
	err  error // set before dead is closed

	ctx    context.Context // ends at Close
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu         sync.Mutex
	subscribed map[string]bool // URIs subscribed on this session
	stopped    bool            // stop was called: start must not run

	// Read and written by the stream's goroutine only.
	lastID string
	retry  time.Duration
}

func newStandaloneStream() *standaloneStream {
	ctx, cancel := context.WithCancel(context.Background())
	return &standaloneStream{msgs: make(chan jsonrpc.Message), dead: make(chan struct{}), ctx: ctx, cancel: cancel, subscribed: map[string]bool{}}
}

// errNoStream reports a GET that the server did not answer with a stream.
type errNoStream struct {
	status int // 0: the request failed
	ctype  string
	err    error
}

func (e *errNoStream) Error() string {
	if e.err != nil {
		return e.err.Error()
	}
	return fmt.Sprintf("HTTP %d, Content-Type %q", e.status, clipCut(e.ctype, maxHeaderQuote))
}

func (e *errNoStream) Unwrap() error { return e.err }

// get sends one GET for the stream (resuming after lastID when it is set)
// and returns the response when it is an event stream. wait, if positive,
// bounds the wait for the response headers.
func (s *standaloneStream) get(ctx context.Context, lastID string, wait time.Duration) (*http.Response, context.CancelFunc, error) {
	rctx, cancel := context.WithCancel(s.ctx)
	stop := context.AfterFunc(ctx, cancel)
	var timer *time.Timer
	if wait > 0 {
		timer = time.AfterFunc(wait, cancel)
	}
	req, err := http.NewRequestWithContext(context.WithValue(rctx, standaloneGET{}, true), http.MethodGet, s.url, nil)
	if err != nil {
		stop()
		cancel()
		return nil, nil, &errNoStream{err: err}
	}
	req.Header.Set("Accept", "text/event-stream")
	if s.sessionID != "" {
		req.Header.Set(sessionIDHeader, s.sessionID)
	}
	if s.protocol != "" {
		req.Header.Set(protocolVersionHeader, s.protocol)
	}
	if lastID != "" {
		req.Header.Set(lastEventIDHeader, lastID)
	}
	resp, err := s.client.Do(req)
	// The request lives on (its body is the stream) only if neither the
	// caller's context nor the header wait cut it meanwhile.
	alive := stop()
	if timer != nil && !timer.Stop() {
		alive = false
	}
	if err != nil {
		cancel()
		return nil, nil, &errNoStream{err: err}
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if !alive || resp.StatusCode/100 != 2 || mt != "text/event-stream" {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		resp.Body.Close()
		cancel()
		if !alive {
			return nil, nil, &errNoStream{err: context.DeadlineExceeded}
		}
		return nil, nil, &errNoStream{status: resp.StatusCode, ctype: resp.Header.Get("Content-Type")}
	}
	return resp, cancel, nil
}

// start runs the stream whose first response is resp until stop, and
// reports whether it did: a stream stopped already (the session ended
// while the GET was under way) is not started.
func (s *standaloneStream) start(resp *http.Response, cancel context.CancelFunc) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		resp.Body.Close()
		cancel()
		return false
	}
	s.wg.Go(func() { s.run(resp, cancel) })
	return true
}

// stop ends the stream and waits for its goroutine. Safe to call more than
// once, and on a stream never started.
func (s *standaloneStream) stop() {
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
}

// fail ends the session: repairConn.Read returns err.
func (s *standaloneStream) fail(err error) {
	s.err = err
	close(s.dead)
}

func (s *standaloneStream) run(resp *http.Response, cancel context.CancelFunc) {
	quick := 0 // breaks in a row of streams that lasted under standaloneStable
	for {
		began := time.Now()
		flooded := s.consume(resp)
		cancel()
		if s.ctx.Err() != nil {
			return
		}
		if time.Since(began) >= standaloneStable {
			quick = 0
		}
		quick++
		if flooded {
			quick = max(quick, floodedQuick) // the longest wait at once
		}
		var err error
		resumed := false
		for failures := 0; ; {
			if !s.sleep(s.delay(quick + failures)) {
				return
			}
			lastID := s.lastID
			resp, cancel, err = s.get(s.ctx, lastID, standaloneOpenWait)
			if err == nil {
				resumed = lastID != ""
				break
			}
			if s.ctx.Err() != nil {
				return
			}
			var ns *errNoStream
			if errors.As(err, &ns) && ns.status == http.StatusNotFound && s.sessionID != "" {
				// MCP 2025-06-18, Session Management: the server ended
				// the session.
				s.fail(fmt.Errorf("standalone SSE stream: %w", ErrSessionExpired))
				return
			}
			if lastID != "" && errors.As(err, &ns) && ns.status/100 == 4 {
				// The server cannot replay (the go-sdk's server without
				// an event store answers 400): open a new stream.
				s.lastID = ""
			}
			failures++
			if failures >= standaloneMaxAttempts {
				s.fail(fmt.Errorf("the standalone SSE stream broke and %d attempts to open it again failed (last: %w); ending the session so that nothing is served as subscribed without it", failures, boundedError{err}))
				return
			}
			if ok, _ := s.quiet.allow(); ok {
				s.log.Warn("reopening the standalone SSE stream failed; retrying", "attempt", failures, "error", boundedError{err})
			}
		}
		if !resumed && !s.gap() {
			resp.Body.Close()
			cancel()
			return
		}
	}
}

// delay returns the wait before reconnection attempt n (from 1): the
// server's retry field, or the backoff if longer, with up to a quarter more
// of jitter.
func (s *standaloneStream) delay(n int) time.Duration {
	d := time.Duration(standaloneBaseDelay.Load())
	for i := 1; i < n && d < standaloneMaxDelay; i++ {
		d = d * 3 / 2
	}
	d = max(min(d, standaloneMaxDelay), s.retry)
	return d + rand.N(d/4+1)
}

func (s *standaloneStream) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.ctx.Done():
		return false
	}
}

// gap covers what the server may have sent while the stream was down and
// that a new stream (not resumed with Last-Event-ID) does not replay: every
// URI subscribed on the session is reported updated, and the list changed,
// so what was cached under a subscription is read again. It reports false
// when the stream was closed meanwhile.
func (s *standaloneStream) gap() bool {
	s.mu.Lock()
	uris := make([]string, 0, len(s.subscribed))
	for u := range s.subscribed {
		uris = append(uris, u)
	}
	s.mu.Unlock()
	var notes []jsonrpc.Message
	if s.listChanged {
		notes = append(notes, &jsonrpc.Request{Method: "notifications/resources/list_changed", Params: json.RawMessage(`{}`)})
	}
	for _, u := range uris {
		p, err := json.Marshal(map[string]string{"uri": u})
		if err != nil {
			continue
		}
		notes = append(notes, &jsonrpc.Request{Method: "notifications/resources/updated", Params: p})
	}
	if len(notes) > 0 {
		s.log.Info("the standalone SSE stream was reopened without resuming; treating the subscribed resources as updated", "subscribed", len(uris))
	}
	for _, m := range notes {
		if !s.deliver(m) {
			return false
		}
	}
	return true
}

// track records that uri is subscribed (on) or no longer is.
func (s *standaloneStream) track(uri string, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if on {
		s.subscribed[uri] = true
	} else {
		delete(s.subscribed, uri)
	}
}

func (s *standaloneStream) deliver(m jsonrpc.Message) bool {
	select {
	case s.msgs <- m:
		return true
	case <-s.ctx.Done():
		return false
	}
}

// floodedQuick is the count of quick breaks a stream closed for carrying
// too much counts as: the next opening waits standaloneMaxDelay (the
// backoff from a 1 s start passes it at the tenth).
const floodedQuick = 10

// consume reads resp's events until the body ends, handing each JSON-RPC
// message to Read, and keeps the last event id and retry field. It reports
// whether it closed the stream for carrying too much (see above).
func (s *standaloneStream) consume(resp *http.Response) (flooded bool) {
	defer resp.Body.Close()
	body := &countedReader{r: resp.Body}
	r := bufio.NewReaderSize(body, 4<<10)
	var data []byte
	var name string
	hasData, over := false, false
	window := time.Now()
	for {
		line, err := readLine(r, s.maxEvent+1)
		if err != nil && !errors.Is(err, errLongLine) {
			return
		}
		if time.Since(window) >= standaloneRateWindow {
			window, body.n = time.Now(), 0
		} else if body.n > 2*int64(s.maxEvent) {
			if ok, _ := s.quiet.allow(); ok {
				s.log.Warn("the server sent more than twice max_message_bytes on the standalone SSE stream within a minute; closing it, to open again later", "bytes", body.n, "max_message_bytes", s.maxEvent, "reopen_in", standaloneMaxDelay)
			}
			return true
		}
		if errors.Is(err, errLongLine) {
			over = true
			continue
		}
		if len(line) == 0 { // the blank line that ends an event
			// Each event costs what it takes to handle (decoding, a
			// ping's answer POSTed back), whatever its size: counted
			// as standaloneEventBytes at least, tiny ones cannot flood.
			body.n += standaloneEventBytes
			if over {
				if ok, _ := s.quiet.allow(); ok {
					s.log.Warn("dropped a standalone SSE event over the size cap", "max_bytes", s.maxEvent)
				}
			} else if hasData && (name == "" || name == "message") && len(bytes.TrimSpace(data)) > 0 {
				msg, derr := decodeMessage(data)
				if derr != nil {
					if ok, _ := s.quiet.allow(); ok {
						s.log.Warn("dropped a standalone SSE event that is not JSON-RPC", "data", fmt.Sprintf("%q", clipBytes(data, 100)))
					}
				} else if !s.deliver(msg) {
					return
				}
			}
			if cap(data) > 64<<10 {
				data = nil // a large event's buffer is not kept for the stream's life
			}
			data, name, hasData, over = data[:0], "", false, false
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "data":
			if hasData {
				data = append(data, '\n')
			}
			data, hasData = append(data, value...), true
			if len(data) > s.maxEvent {
				over, data = true, data[:0]
			}
		case "event":
			name = string(value)
		case "id":
			if len(value) <= maxEventID && bytes.IndexByte(value, 0) < 0 {
				s.lastID = string(value)
			}
		case "retry":
			if ms, err := strconv.ParseInt(string(value), 10, 64); err == nil && ms >= 0 {
				s.retry = max(minRetry, time.Duration(min(ms, standaloneMaxDelay.Milliseconds()))*time.Millisecond)
			}
		}
	}
}

// countedReader counts the bytes read through it.
type countedReader struct {
	r io.Reader
	n int64
}

func (c *countedReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// errLongLine reports a line longer than readLine's bound; the rest of it
// was read and dropped.
var errLongLine = errors.New("line too long")

// readLine returns the next line without its end (LF, CRLF or CR before
// LF), at most max bytes; a longer line is read to its end, dropped, and
// reported as errLongLine.
func readLine(r *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	long := false
	for {
		frag, err := r.ReadSlice('\n')
		if !long {
			if len(line)+len(frag) > max {
				long, line = true, nil
			} else {
				line = append(line, frag...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if long {
			return nil, errLongLine
		}
		return bytes.TrimRight(line, "\r\n"), nil
	}
}

// openStandalone opens the session's standalone stream (see
// standaloneStream) and reports whether the server serves one: a 405,
// another status or Content-Type, or a GET that fails or gets no headers
// within standaloneOpenWait (and ctx) mean it does not, and the session is
// left as it was.
func (s *Session) openStandalone(ctx context.Context, hc *http.Client, endpoint string) bool {
	rc := s.listens.conn
	if rc == nil || rc.side == nil || hc == nil {
		return false
	}
	ss := rc.side
	ss.client, ss.url, ss.log = hc, endpoint, s.opts.Logger
	ss.sessionID = s.cs.ID()
	_, _, ss.protocol = s.ServerInfo()
	ss.maxEvent = maxMessage(&s.opts) + 4096
	ss.listChanged = s.caps.ListChanged
	resp, cancel, err := ss.get(ctx, "", standaloneOpenWait)
	if err != nil {
		var ns *errNoStream
		if errors.As(err, &ns) && ns.status == http.StatusMethodNotAllowed {
			s.opts.Logger.Debug("the server offers no standalone SSE stream (405): resources are polled, not subscribed")
		} else {
			s.opts.Logger.Info("the server offers no standalone SSE stream: resources are polled, not subscribed", "answer", boundedError{err})
		}
		return false
	}
	if !ss.start(resp, cancel) {
		return false // the session ended meanwhile
	}
	s.standalone = ss
	return true
}
