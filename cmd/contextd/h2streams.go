package main

import (
	"encoding/binary"
	"errors"
	"net"
	"strconv"
	"sync"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/contextd/contextd/internal/service"
)

// Stuck answers, per stream. The byte count of unsentAnswers cannot tell
// which stream the bytes a connection writes belong to, so a client could
// read one answer (or provoke small frames) while another stays queued for
// good. h2Conn follows the plaintext HTTP/2 frames of one gRPC connection,
// beneath TLS when there is TLS, and keeps for every call:
//
//   - its send window: the client's SETTINGS_INITIAL_WINDOW_SIZE and
//     WINDOW_UPDATEs, less the DATA the server wrote (likewise for the
//     connection's window);
//   - whether the server has started its answer (response HEADERS) and
//     not yet ended it (END_STREAM, or RST_STREAM either way).
//
// So it keeps a call only for as long as gRPC does: not past the last
// stream of the server's GOAWAY (a draining server ignores later streams
// without answering them), and a client that takes a window past
// HTTP/2's maximum (where gRPC's 32-bit connection window wraps) has its
// connection closed, its windows no longer known.
//
// An answer is stuck while it is started and its window or the
// connection's is below minWindow. A connection with an answer stuck for
// longer than the stall time (idle_timeout), during which that answer
// took less than minProgress, is closed, and gRPC frees what it held.
// A call the server is not answering (a health Watch between updates)
// holds nothing and is never stuck with a client that keeps its windows
// open, as every HTTP/2 client library does.

// minWindow is the window below which a started answer counts as waiting
// for the client: one full DATA frame (16 KiB). A client library opens
// its windows again once a quarter of them (of at least 64 KiB) is used.
const minWindow = 16 << 10

// h2InitialWindow is HTTP/2's initial window, for the connection and for
// streams until the client's SETTINGS say otherwise.
const h2InitialWindow = 65535

// h2MaxKept bounds the frame payloads h2Conn reads (SETTINGS,
// WINDOW_UPDATE, GOAWAY): gRPC's server refuses frames over 16 KiB and
// writes a GOAWAY with little debug data.
const h2MaxKept = 16 << 10

// h2Stream is one call, from its request HEADERS to the end of its answer.
type h2Stream struct {
	win       int64     // send window
	answering bool      // the server wrote the response HEADERS
	sent      int64     // DATA bytes written
	since     time.Time // when the answer was first seen stuck; zero while not
	mark      int64     // sent at since
	connMark  int64     // the connection's sentAll at since
	requested bool      // the client ended its request: a handler may answer it
	partial   int64     // DATA bytes the client sent before ending its request
	// answer is the size of the answer counted as unsent for this call
	// (its answerBytesHeader); 0 when none was.
	answer int64
	// waiting is when the answer first waited for the client's window:
	// from then on it must end within maxAnswerWait stalls, however it
	// trickles.
	waiting time.Time
}

// maxAnswerWait is how many stall periods (idle_timeout) an answer may
// take from the first time it waits for the client's window to its end:
// 8 minutes by default, so an 8 MiB answer needs about 17 KB/s. A client
// granting 64 KiB per idle_timeout keeps each stall's progress above
// minProgress, but cannot hold an answer, and its share of the bound on
// unsent answers, for hours.
const maxAnswerWait = 8

// h2Conn is a gRPC server connection whose frames are followed.
type h2Conn struct {
	net.Conn
	u         *unsentAnswers
	in, out   frameReader
	closeOnce sync.Once

	mu      sync.Mutex
	streams map[uint32]*h2Stream
	connWin int64 // the connection's send window
	sentAll int64 // DATA bytes the server wrote, on every stream
	initWin int64 // SETTINGS_INITIAL_WINDOW_SIZE
	// overflow is set once the client takes a window past h2MaxWindow:
	// gRPC keeps the connection's window in 32 bits, so past it the two
	// disagree (grants adding up to 2^32 leave gRPC's window as it was).
	overflow bool
	// lastID is the last stream the server said it will serve (GOAWAY):
	// once it is draining, gRPC ignores later streams without a word.
	lastID uint32
	// lc is the accepted connection under the handshake, whose answers
	// unsentAnswers counts; nil when the listener does not count them.
	lc *limitConn
	// requested counts the streams whose request is complete and whose
	// answer is not: only these can have an answer counted as unsent.
	// idleSince is when it last fell to 0.
	requested int
	idleSince time.Time
	// partial is the DATA the client sent on calls whose request has not
	// ended: gRPC holds it (a handler reads the message as it arrives,
	// and waits for the rest). Past maxPartialRequests the connection is
	// closed.
	partial int64
	// excess is partial past maxPartialRequests, as counted in
	// unsentAnswers.partialExcess; overSince is when partial went past
	// it (zero while it is not), and partialTimer checks it partialGrace
	// later; closed is set by Close.
	excess       int64
	overSince    time.Time
	partialTimer *time.Timer
	closed       bool
	// dec reads the server's header blocks, for the answer sizes in
	// them; hdrID is the stream of the block being read. dec is nil
	// once a block could not be read (the answers' sizes are unknown
	// from then on, and only releaseDropped releases them).
	dec   *hpack.Decoder
	hdrID uint32

	// contID is the client stream whose header block goes on in
	// CONTINUATION frames, and contEnd whether its HEADERS ended the
	// stream; c.mu guards both.
	contID  uint32
	contEnd bool
	// writing counts the writes under way: the connection beneath has
	// counted (some of) their bytes as written, and the frames in them
	// are not followed yet.
	writing int
}

// answerBytesHeader is the response header in which the daemon gives the
// size in bytes of a gRPC answer it counts as unsent, so that the answer
// of a call reset before it is written can be released at once.
const answerBytesHeader = "contextd-answer-bytes"

// releaseReset releases the unsent part of stream s's counted answer:
// its call was reset, and gRPC dropped it; c.mu is held.
func (c *h2Conn) releaseReset(s *h2Stream) {
	if c.lc == nil || s == nil || s.answer == 0 {
		return
	}
	// The DATA written for it holds the answer behind gRPC's 5-byte
	// message prefix.
	left := s.answer + 5 - s.sent
	a := c.lc.ans
	a.mu.Lock()
	if n := min(left, a.unsent()); n > 0 {
		a.written += n
		c.u.total.Add(-n)
	}
	a.mu.Unlock()
	s.answer = 0
}

// serverHeaders reads a fragment of the server's header block on stream
// id; end is set on the block's last frame. c.mu is held.
func (c *h2Conn) serverHeaders(id uint32, frag []byte, end bool) {
	if c.dec == nil {
		return
	}
	c.hdrID = id
	if _, err := c.dec.Write(frag); err != nil {
		c.dec = nil
		return
	}
	if end {
		if err := c.dec.Close(); err != nil {
			c.dec = nil
		}
	}
}

// headerField notes the answer size in a field of the server's header
// block on stream c.hdrID; c.mu is held.
func (c *h2Conn) headerField(f hpack.HeaderField) {
	if f.Name != answerBytesHeader {
		return
	}
	if s := c.streams[c.hdrID]; s != nil {
		if n, err := strconv.ParseInt(f.Value, 10, 64); err == nil && n > 0 {
			s.answer = n
		}
	}
}

// maxPartialRequests bounds the bytes of unfinished requests one
// connection may keep sending: a request message may take
// service.MaxRecvMsgSize, and gRPC keeps what has arrived of it, without a
// deadline, until it ends. A client sending all but the last byte of a
// 1 MiB message on each of 100 calls held 100 MiB per connection for good
// (at the 1,024 connection cap, 100 GiB). A connection may be past it for
// partialGrace (a client library interleaving many concurrent requests of
// tens of kilobytes each, which end at once, is: 25 of 64 KB each had
// 1.6 MB unfinished for a few milliseconds), up to
// hardPartialRequests, and while all connections together are past their
// bound by at most maxPartialExcess.
const maxPartialRequests = service.MaxRecvMsgSize + 64<<10

const (
	hardPartialRequests = 4 * maxPartialRequests
	partialGrace        = time.Second
	maxPartialExcess    = 32 << 20
)

// errPartialRequests ends a connection that kept more than
// maxPartialRequests of unfinished requests for partialGrace, or more
// than hardPartialRequests.
var errPartialRequests = errors.New("contextd: connection closed: more than 1 MiB of requests sent and not ended for over a second")

// maxFollowedStreams bounds the calls a connection has sent whose answer
// (or refusal) the daemon has not finished writing. gRPC serves at most
// maxStreamsPerConn at once and refuses the rest, but a refusal waits to
// be written like any answer: a client that sends whole calls and reads
// nothing (a tiny receive window) had thousands of refusals queued on each
// connection, and as many streams followed here, with or without the
// token (1,100 connections: 1 GB, and 3.4 GB at 4,000 calls each). An
// honest client has at most maxStreamsPerConn open, plus refusals it is
// reading.
const maxFollowedStreams = 2 * maxStreamsPerConn

// errUnansweredCalls ends a connection past maxFollowedStreams.
var errUnansweredCalls = errors.New("contextd: connection closed: more calls sent than answered while its answers are not read")

// dataFrameCost is what each non-empty DATA frame of an unfinished request
// counts against maxPartialRequests besides its bytes: gRPC keeps each
// such frame as a buffer of its own until the message ends (16–28 bytes of
// memory a frame beyond the payload), so a client sending a 1 MiB message
// a byte a frame held 14–28 times what was counted, 1.6 GB over 64
// connections. Honest clients send frames of up to 16 KiB: 64 of them
// for a 1 MiB request, 4 KiB counted.
const dataFrameCost = 64

// grpcFrameBuffers are the sizes of the buffers grpc-go's framer reads a
// frame of over 1 KiB into (its tiered pool, internal/mem): the smallest
// that holds it.
var grpcFrameBuffers = []int{4 << 10, 16 << 10, 32 << 10, 1 << 20}

// heldForFrame is what gRPC holds for a non-empty DATA frame of length
// bytes of an unfinished request: the frame, or the pooled buffer it was
// read into, and dataFrameCost. Frames of 1,025 bytes each held a 4 KiB
// buffer: 16 such requests per connection, counted just under the bound,
// held 4 times it (384 connections: 1.1 GB).
func heldForFrame(length int) int64 {
	n := length
	if length > 1<<10 {
		for _, size := range grpcFrameBuffers {
			if length <= size {
				n = size
				break
			}
		}
	}
	return int64(n) + dataFrameCost
}

// drop forgets stream id (its answer ended, or it was reset); c.mu is held.
func (c *h2Conn) drop(id uint32) {
	if s, ok := c.streams[id]; ok {
		delete(c.streams, id)
		c.partial -= s.partial
		if s.requested {
			c.requested--
			if c.lc != nil {
				c.lc.callEnded()
			}
			if c.requested == 0 {
				c.idleSince = time.Now()
			}
		}
	}
}

// markRequested notes that the client ended stream id's request; c.mu is
// held.
func (c *h2Conn) markRequested(id uint32) {
	if s := c.streams[id]; s != nil && !s.requested {
		s.requested = true
		c.requested++
		if c.lc != nil {
			c.lc.callStarted()
		}
		c.partial -= s.partial
		s.partial = 0
	}
}

// h2MaxWindow is the largest flow-control window HTTP/2 allows; a peer
// that takes one past it commits a FLOW_CONTROL_ERROR (RFC 9113, 6.9.1).
const h2MaxWindow = 1<<31 - 1

func (c *h2Conn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.mu.Lock()
		c.in.feed(p[:n], c.fromClient)
		over := c.notePartial(time.Now())
		many := len(c.streams) > maxFollowedStreams
		c.mu.Unlock()
		switch {
		case over:
			c.Close()
			return 0, errPartialRequests
		case many:
			c.Close()
			return 0, errUnansweredCalls
		}
	}
	return n, err
}

func (c *h2Conn) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.writing++
	c.mu.Unlock()
	n, err := c.Conn.Write(p)
	c.mu.Lock()
	if n > 0 {
		c.out.feed(p[:n], c.fromServer)
		c.notePartial(time.Now())
	}
	c.writing--
	c.mu.Unlock()
	return n, err
}

// notePartial notes the bytes of unfinished requests after a change, and
// reports whether the connection must be closed now for them: past
// hardPartialRequests, or past maxPartialRequests while the connections
// together are past theirs by more than maxPartialExcess. Past
// maxPartialRequests for partialGrace, a timer closes it. c.mu is held.
func (c *h2Conn) notePartial(now time.Time) bool {
	if c.closed {
		return false // Close took its excess back
	}
	ex := max(0, c.partial-maxPartialRequests)
	if c.lc != nil && !c.lc.trusted.Load() {
		// No call on it passed the token check, so gRPC refused every
		// stream and keeps none of their DATA: it bounds the connection
		// alone, and takes none of the room others share.
		ex = 0
	}
	all := c.u.partialExcess.Add(ex - c.excess)
	c.excess = ex
	if c.partial <= maxPartialRequests {
		c.overSince = time.Time{}
		return false
	}
	if c.overSince.IsZero() {
		c.overSince = now
		if c.partialTimer == nil && !c.closed {
			c.partialTimer = time.AfterFunc(partialGrace, c.checkPartial)
		}
	}
	return c.partial > hardPartialRequests || all > maxPartialExcess
}

// checkPartial closes the connection if it has been past
// maxPartialRequests for partialGrace, and looks again later if it went
// past it since.
func (c *h2Conn) checkPartial() {
	c.mu.Lock()
	c.partialTimer = nil
	over := !c.overSince.IsZero() && !c.closed
	left := time.Duration(0)
	if over {
		if left = partialGrace - time.Since(c.overSince); left > 0 {
			c.partialTimer = time.AfterFunc(left, c.checkPartial)
		}
	}
	c.mu.Unlock()
	if over && left <= 0 {
		c.Close()
	}
}

func (c *h2Conn) Close() error {
	c.closeOnce.Do(func() {
		c.u.unwatch(c)
		c.mu.Lock()
		c.closed = true
		c.u.partialExcess.Add(-c.excess)
		c.excess = 0
		if c.partialTimer != nil {
			c.partialTimer.Stop()
		}
		c.mu.Unlock()
	})
	return c.Conn.Close()
}

// fromClient follows a frame read from the client; c.mu is held.
func (c *h2Conn) fromClient(typ http2.FrameType, flags http2.Flags, id uint32, length int, payload []byte) {
	switch typ {
	case http2.FrameHeaders:
		if _, ok := c.streams[id]; !ok && id != 0 && id <= c.lastID {
			c.streams[id] = &h2Stream{win: c.initWin}
		}
		// The request has arrived when its header block has: with
		// END_STREAM, at the frame with END_HEADERS.
		c.contID, c.contEnd = 0, false
		switch {
		case !flags.Has(http2.FlagHeadersEndHeaders):
			c.contID, c.contEnd = id, flags.Has(http2.FlagHeadersEndStream)
		case flags.Has(http2.FlagHeadersEndStream):
			c.markRequested(id)
		}
	case http2.FrameContinuation:
		if id == c.contID && flags.Has(http2.FlagContinuationEndHeaders) {
			if c.contEnd {
				c.markRequested(id)
			}
			c.contID, c.contEnd = 0, false
		}
	case http2.FrameData:
		if s := c.streams[id]; s != nil && !s.requested && length > 0 {
			n := heldForFrame(length)
			s.partial += n
			c.partial += n
		}
		if flags.Has(http2.FlagDataEndStream) {
			c.markRequested(id)
		}
	case http2.FrameRSTStream:
		c.releaseReset(c.streams[id])
		c.drop(id)
	case http2.FrameWindowUpdate:
		if len(payload) != 4 {
			return
		}
		inc := int64(binary.BigEndian.Uint32(payload) & (1<<31 - 1))
		if id == 0 {
			c.connWin += inc
			c.overflow = c.overflow || c.connWin > h2MaxWindow
		} else if s := c.streams[id]; s != nil {
			s.win += inc
			c.overflow = c.overflow || s.win > h2MaxWindow
		}
	case http2.FrameSettings:
		if flags.Has(http2.FlagSettingsAck) {
			return
		}
		// Settings apply in order, so only the frame's last initial
		// window size counts: applied once, not once per entry (a 16 KiB
		// frame holds 2,730).
		v, set := c.initWin, false
		for p := payload; len(p) >= 6; p = p[6:] {
			if http2.SettingID(binary.BigEndian.Uint16(p)) == http2.SettingInitialWindowSize {
				v, set = int64(binary.BigEndian.Uint32(p[2:])), true
				c.overflow = c.overflow || v > h2MaxWindow
			}
		}
		if !set {
			return
		}
		for _, s := range c.streams {
			s.win += v - c.initWin
			c.overflow = c.overflow || s.win > h2MaxWindow
		}
		c.initWin = v
	}
}

// fromServer follows a frame written to the client; c.mu is held.
func (c *h2Conn) fromServer(typ http2.FrameType, flags http2.Flags, id uint32, length int, payload []byte) {
	switch typ {
	case http2.FrameHeaders:
		frag := payload
		if flags.Has(http2.FlagHeadersPadded) && len(frag) > 0 {
			frag = frag[1:max(1, len(frag)-int(payload[0]))]
		}
		if flags.Has(http2.FlagHeadersPriority) {
			frag = frag[min(5, len(frag)):]
		}
		if payload == nil && length > 0 {
			c.dec = nil // a block too big to keep
		}
		c.serverHeaders(id, frag, flags.Has(http2.FlagHeadersEndHeaders))
		if s := c.streams[id]; s != nil {
			s.answering = true
			if flags.Has(http2.FlagHeadersEndStream) {
				c.drop(id)
			}
		}
	case http2.FrameContinuation:
		if payload == nil && length > 0 {
			c.dec = nil
		}
		c.serverHeaders(id, payload, flags.Has(http2.FlagContinuationEndHeaders))
	case http2.FrameData:
		c.connWin -= int64(length)
		c.sentAll += int64(length)
		if s := c.streams[id]; s != nil {
			s.win -= int64(length)
			s.sent += int64(length)
			if !s.since.IsZero() && s.sent-s.mark >= minProgress {
				s.since, s.mark = time.Now(), s.sent
			}
			if flags.Has(http2.FlagDataEndStream) {
				c.drop(id)
			}
		}
	case http2.FrameRSTStream:
		c.releaseReset(c.streams[id])
		c.drop(id)
	case http2.FrameGoAway:
		if len(payload) < 8 {
			return
		}
		c.lastID = min(c.lastID, binary.BigEndian.Uint32(payload)&(1<<31-1))
		for id := range c.streams {
			if id > c.lastID {
				c.drop(id)
			}
		}
	}
}

// stuck reports whether c holds an answer stuck for longer than stall, or
// its client took a window past h2MaxWindow (its windows can no longer be
// followed); it starts the clock of answers newly stuck and stops that of
// answers whose windows opened.
func (c *h2Conn) stuck(now time.Time, stall time.Duration) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.overflow {
		return true
	}
	for _, s := range c.streams {
		if !s.answering {
			continue
		}
		if min(s.win, c.connWin) >= minWindow {
			s.since = time.Time{}
			continue
		}
		// Only a counted answer must end in time: a call that answers
		// for as long as the connection lives (a health Watch) holds
		// none, and waits whenever another answer takes the
		// connection's window for a moment. When the sizes cannot be
		// read, every answer is taken to be counted.
		counted := s.answer > 0 || c.dec == nil
		if s.waiting.IsZero() && counted {
			s.waiting = now
		}
		switch {
		case counted && now.Sub(s.waiting) > maxAnswerWait*stall:
			return true // trickling: progress each stall, but no end
		case s.since.IsZero():
			s.since, s.mark, s.connMark = now, s.sent, c.sentAll
		case s.win >= minWindow && c.sentAll-s.connMark >= minProgress:
			// Only the connection's window is short, and answers on it go
			// on: the client is reading, and this call (a health Watch with
			// nothing to send, say) waits its turn.
			s.since, s.connMark = now, c.sentAll
		case now.Sub(s.since) > stall:
			return true
		}
	}
	return false
}

// frameReader splits a byte stream into HTTP/2 frames as it arrives, in
// pieces of any size.
type frameReader struct {
	// headers is set to keep the payloads of HEADERS and CONTINUATION
	// frames too (the server's).
	headers bool
	skip    int // bytes to pass over (the client preface, unread payloads)
	hdr     [9]byte
	hn      int // bytes of hdr read
	want    int // payload bytes still to keep
	buf     []byte
	typ     http2.FrameType
	flags   http2.Flags
	id      uint32
	length  int
	pending bool // a frame whose payload is being skipped: reported at its end
}

// feed reads p, calling frame for each whole frame read, with the payload
// of SETTINGS, WINDOW_UPDATE and GOAWAY frames (nil for others). A frame
// is reported only once all of it has arrived: gRPC acts on none before,
// and a client that sent a HEADERS frame's 9-byte header and never its
// payload had a call in flight as far as the listener could tell.
func (r *frameReader) feed(p []byte, frame func(typ http2.FrameType, flags http2.Flags, id uint32, length int, payload []byte)) {
	for len(p) > 0 {
		switch {
		case r.skip > 0:
			n := min(r.skip, len(p))
			r.skip -= n
			p = p[n:]
			if r.skip == 0 && r.pending {
				r.pending = false
				frame(r.typ, r.flags, r.id, r.length, nil)
			}
		case r.want > 0:
			n := min(r.want, len(p))
			r.buf = append(r.buf, p[:n]...)
			r.want -= n
			p = p[n:]
			if r.want == 0 {
				frame(r.typ, r.flags, r.id, len(r.buf), r.buf)
				r.buf = r.buf[:0]
			}
		default:
			n := copy(r.hdr[r.hn:], p)
			r.hn += n
			p = p[n:]
			if r.hn < len(r.hdr) {
				continue
			}
			r.hn = 0
			length := int(r.hdr[0])<<16 | int(r.hdr[1])<<8 | int(r.hdr[2])
			typ, flags := http2.FrameType(r.hdr[3]), http2.Flags(r.hdr[4])
			id := binary.BigEndian.Uint32(r.hdr[5:]) & (1<<31 - 1)
			keep := typ == http2.FrameSettings || typ == http2.FrameWindowUpdate || typ == http2.FrameGoAway ||
				r.headers && (typ == http2.FrameHeaders || typ == http2.FrameContinuation)
			if keep && length > 0 && length <= h2MaxKept {
				r.typ, r.flags, r.id, r.want = typ, flags, id, length
				continue
			}
			if length == 0 {
				frame(typ, flags, id, 0, nil)
				continue
			}
			r.typ, r.flags, r.id, r.length, r.pending = typ, flags, id, length, true
			r.skip = length
		}
	}
}

// watch returns c with its frames followed and registers it for sweeps;
// raw is the accepted connection under c's handshake.
func (u *unsentAnswers) watch(c, raw net.Conn) net.Conn {
	h := &h2Conn{Conn: c, u: u, in: frameReader{skip: len(http2.ClientPreface)}, out: frameReader{headers: true},
		streams: map[uint32]*h2Stream{}, connWin: h2InitialWindow, initWin: h2InitialWindow, lastID: 1<<31 - 1,
		idleSince: time.Now()}
	if lc, ok := raw.(*limitConn); ok && lc.ans != nil {
		h.lc = lc
		h.dec = hpack.NewDecoder(4096, h.headerField)
	}
	u.mu.Lock()
	u.h2[h] = struct{}{}
	u.mu.Unlock()
	return h
}

func (u *unsentAnswers) unwatch(c *h2Conn) {
	u.mu.Lock()
	delete(u.h2, c)
	u.mu.Unlock()
}

// sweepStuck closes the connections holding an answer stuck for u.stall,
// and releases the count of a connection that has had no answer due for
// answerGrace: the answers it counts were dropped by gRPC (the client
// reset their calls, or gave them up) and will never be written.
func (u *unsentAnswers) sweepStuck(now time.Time) {
	u.mu.Lock()
	var stuck []*h2Conn
	for c := range u.h2 {
		if c.stuck(now, u.stall) {
			stuck = append(stuck, c)
		}
		c.releaseDropped(now)
	}
	u.mu.Unlock()
	for _, c := range stuck {
		c.Close()
	}
}

// transport returns the server option that sets gRPC's transport
// credentials: tc (nil: plaintext) with each connection's frames followed
// after the handshake.
func (u *unsentAnswers) transport(tc credentials.TransportCredentials) grpc.ServerOption {
	if tc == nil {
		tc = insecure.NewCredentials()
	}
	return grpc.Creds(watchedCreds{tc, u})
}

type watchedCreds struct {
	credentials.TransportCredentials
	u *unsentAnswers
}

func (w watchedCreds) ServerHandshake(c net.Conn) (net.Conn, credentials.AuthInfo, error) {
	hc, info, err := w.TransportCredentials.ServerHandshake(c)
	if err != nil {
		return nil, nil, err
	}
	return w.u.watch(hc, c), info, nil
}

func (w watchedCreds) Clone() credentials.TransportCredentials {
	return watchedCreds{w.TransportCredentials.Clone(), w.u}
}

// answerGrace is how long after its last answer was due a connection's
// count of unsent answers is taken as dropped: a handler's answer is
// counted as it returns, and a call reset just before may be counted a
// moment after its stream is gone.
const answerGrace = 100 * time.Millisecond

// releaseDropped clears the unsent answers counted for c when no call on
// it has had its request complete and its answer not ended for
// answerGrace: nothing counted can still be written. Otherwise it counts
// at least what is left of the answers of known size not yet written.
func (c *h2Conn) releaseDropped(now time.Time) {
	if c.lc == nil {
		return
	}
	// c.mu is held throughout, so no call's request completes (and no
	// answer of it is counted) between the check and the release.
	c.mu.Lock()
	defer c.mu.Unlock()
	a := c.lc.ans
	a.mu.Lock()
	defer a.mu.Unlock()
	if c.requested == 0 && now.Sub(c.idleSince) >= answerGrace {
		if n := a.unsent(); n > 0 {
			a.written = a.queued
			c.u.total.Add(-n)
		}
		return
	}
	// Every byte the connection writes (other calls' refusals, ping
	// acknowledgements) takes as much off its count, though the answers
	// counted may be written later: the answers whose size is known and
	// whose calls are not over are counted at least for what is left of
	// them. Not while a write is under way: the bytes it wrote are off the
	// count, but not yet off what is left of their answers, and counting
	// them again would keep them counted for good once the answer ends.
	if c.writing > 0 {
		return
	}
	var left int64
	for _, s := range c.streams {
		if s.answer > 0 {
			left += max(0, s.answer+5-s.sent)
		}
	}
	if n := min(left, a.queued) - a.unsent(); n > 0 {
		a.written -= n
		c.u.total.Add(n)
	}
}
