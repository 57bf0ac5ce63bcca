// Package h2flood speaks raw HTTP/2 to a gRPC server to test its bounds on
// calls that never complete: it opens calls that send their headers and
// never a request message, or calls whose answers it reads only as far as
// it opens their flow-control windows, which no well-behaved client
// library does, and counts how the server ends them. Tests use it; the
// daemon does not.
package h2flood

import (
	"bytes"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// Conn is one client connection. Its reader answers the server's SETTINGS
// and counts what ends each call; a write after the server ended the
// connection is dropped (Closed then reports true).
type Conn struct {
	c    net.Conn
	fr   *http2.Framer
	mu   sync.Mutex // serializes writes
	next uint32     // the next client stream ID
	hb   bytes.Buffer
	enc  *hpack.Encoder

	smu      sync.Mutex
	received map[uint32]int    // DATA bytes read, by stream
	status   map[uint32]string // grpc-status, by stream

	// The server's flow-control windows for what the client sends: the
	// connection's, and each stream's (sendInit until the stream's own
	// changes); wmu guards them, and sendMore is signalled as they open.
	wmu      sync.Mutex
	sendMore *sync.Cond
	connSend int64
	sendInit int64
	sendWin  map[uint32]int64

	closed     atomic.Bool
	advertised atomic.Uint32 // SETTINGS_MAX_CONCURRENT_STREAMS, 0 until read
	ended      atomic.Int32  // calls ended by trailers or RST_STREAM
	refused    atomic.Int32  // calls reset with REFUSED_STREAM
}

// Dial connects to addr (host:port, plaintext HTTP/2 with prior
// knowledge), sends the client preface and SETTINGS, and starts reading.
// Close ends the connection.
func Dial(addr string) (*Conn, error) { return DialConfig(addr, Config{}) }

// Config says how DialConfig connects.
type Config struct {
	// TLS, when set, is the client's TLS configuration (its NextProtos
	// should hold "h2"); nil means plaintext.
	TLS *tls.Config
	// Settings are sent in the client's first SETTINGS frame, such as
	// SETTINGS_INITIAL_WINDOW_SIZE 0 to take no answer bytes until a
	// Grant.
	Settings []http2.Setting
}

// DialConfig is Dial with TLS or settings of the client's own.
func DialConfig(addr string, cfg Config) (*Conn, error) {
	var c net.Conn
	var err error
	if cfg.TLS != nil {
		c, err = tls.Dial("tcp", addr, cfg.TLS)
	} else {
		c, err = net.Dial("tcp", addr)
	}
	if err != nil {
		return nil, err
	}
	h := &Conn{c: c, fr: http2.NewFramer(c, c), next: 1, received: map[uint32]int{}, status: map[uint32]string{},
		connSend: 65535, sendInit: 65535, sendWin: map[uint32]int64{}}
	h.sendMore = sync.NewCond(&h.wmu)
	h.enc = hpack.NewEncoder(&h.hb)
	h.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	// The preface goes first: the reader acknowledges the server's
	// SETTINGS, which may arrive before it.
	h.write(func() error { _, err := c.Write([]byte(http2.ClientPreface)); return err })
	h.write(func() error { return h.fr.WriteSettings(cfg.Settings...) })
	go h.read()
	if h.closed.Load() {
		c.Close()
		return nil, fmt.Errorf("h2flood: %s ended the connection during the preface", addr)
	}
	return h, nil
}

// Close closes the connection.
func (h *Conn) Close() error { return h.c.Close() }

// OpenCalls opens n calls of the gRPC method path (such as
// "/grpc.health.v1.Health/Check"), each sending its headers and nothing
// more.
func (h *Conn) OpenCalls(path string, n int) {
	for range n {
		h.write(func() error {
			_, err := h.headers(path, nil, false)
			return err
		})
	}
}

// headers writes the HEADERS of a new call of path with the metadata md;
// h.mu is held.
func (h *Conn) headers(path string, md [][2]string, end bool) (uint32, error) {
	h.hb.Reset()
	for _, kv := range append([][2]string{{":method", "POST"}, {":scheme", "http"}, {":path", path},
		{":authority", "localhost"}, {"content-type", "application/grpc"}, {"te", "trailers"}}, md...) {
		_ = h.enc.WriteField(hpack.HeaderField{Name: kv[0], Value: kv[1]})
	}
	id := h.next
	h.next += 2
	return id, h.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: h.hb.Bytes(), EndHeaders: true, EndStream: end})
}

// Call opens a call of path with the metadata md (such as
// {"authorization", "Bearer TOKEN"}) sending the request message msg (the
// protobuf bytes, framed here), and returns its stream ID.
func (h *Conn) Call(path string, md [][2]string, msg []byte) uint32 {
	var id uint32
	h.write(func() error {
		var err error
		if id, err = h.headers(path, md, false); err != nil {
			return err
		}
		frame := make([]byte, 5+len(msg))
		binary.BigEndian.PutUint32(frame[1:], uint32(len(msg)))
		copy(frame[5:], msg)
		return h.fr.WriteData(id, true, frame)
	})
	return id
}

// Grant opens the flow-control window of stream id (0: the connection)
// by n bytes.
func (h *Conn) Grant(id, n uint32) {
	h.write(func() error { return h.fr.WriteWindowUpdate(id, n) })
}

// Received returns how many DATA bytes (the gRPC framing included) the
// server sent on stream id.
func (h *Conn) Received(id uint32) int {
	h.smu.Lock()
	defer h.smu.Unlock()
	return h.received[id]
}

// Status returns the grpc-status the server ended stream id with, and
// whether it did.
func (h *Conn) Status(id uint32) (string, bool) {
	h.smu.Lock()
	defer h.smu.Unlock()
	s, ok := h.status[id]
	return s, ok
}

// Closed reports whether the server ended the connection (or a write to
// it failed). Servers may end a whole abusive connection instead of its
// calls one by one; the client then holds nothing either.
func (h *Conn) Closed() bool { return h.closed.Load() }

// Advertised returns the server's SETTINGS_MAX_CONCURRENT_STREAMS, or 0
// before its SETTINGS arrived (or when it sets none).
func (h *Conn) Advertised() uint32 { return h.advertised.Load() }

// Ended returns how many calls the server ended, by trailers or by
// RST_STREAM.
func (h *Conn) Ended() int { return int(h.ended.Load()) }

// Refused returns how many calls the server reset with REFUSED_STREAM.
func (h *Conn) Refused() int { return int(h.refused.Load()) }

// Wait polls until cond holds, the connection ends, or d passes; it
// reports whether cond held.
func (h *Conn) Wait(d time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(d); !cond(); time.Sleep(5 * time.Millisecond) {
		if h.closed.Load() || time.Now().After(deadline) {
			return cond()
		}
	}
	return true
}

func (h *Conn) write(f func() error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed.Load() {
		return
	}
	if err := f(); err != nil {
		h.closed.Store(true)
	}
}

func (h *Conn) read() {
	for {
		f, err := h.fr.ReadFrame()
		if err != nil {
			h.closed.Store(true)
			h.wmu.Lock()
			h.sendMore.Broadcast()
			h.wmu.Unlock()
			return
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				if v, ok := f.Value(http2.SettingMaxConcurrentStreams); ok {
					h.advertised.Store(v)
				}
				if v, ok := f.Value(http2.SettingInitialWindowSize); ok {
					h.wmu.Lock()
					for id := range h.sendWin {
						h.sendWin[id] += int64(v) - h.sendInit
					}
					h.sendInit = int64(v)
					h.sendMore.Broadcast()
					h.wmu.Unlock()
				}
				h.write(h.fr.WriteSettingsAck)
			}
		case *http2.MetaHeadersFrame:
			if f.StreamEnded() {
				h.ended.Add(1)
				h.smu.Lock()
				h.status[f.StreamID] = ""
				for _, hf := range f.Fields {
					if hf.Name == "grpc-status" {
						h.status[f.StreamID] = hf.Value
					}
				}
				h.smu.Unlock()
			}
		case *http2.DataFrame:
			h.smu.Lock()
			h.received[f.StreamID] += int(f.Length)
			h.smu.Unlock()
		case *http2.WindowUpdateFrame:
			h.wmu.Lock()
			if f.StreamID == 0 {
				h.connSend += int64(f.Increment)
			} else if _, ok := h.sendWin[f.StreamID]; ok {
				h.sendWin[f.StreamID] += int64(f.Increment)
			}
			h.sendMore.Broadcast()
			h.wmu.Unlock()
		case *http2.RSTStreamFrame:
			h.ended.Add(1)
			if f.ErrCode == http2.ErrCodeRefusedStream {
				h.refused.Add(1)
			}
		}
	}
}

// Reset cancels stream id (RST_STREAM CANCEL).
func (h *Conn) Reset(id uint32) {
	h.write(func() error { return h.fr.WriteRSTStream(id, http2.ErrCodeCancel) })
}

// Partial opens a call of path with the metadata md whose request message
// declares size bytes and sends all of them but the last (within the
// server's flow-control windows, waiting for them to open), so that the
// server holds the message while it waits for the rest. It returns the
// stream ID once the bytes are sent, or the connection ended.
func (h *Conn) Partial(path string, md [][2]string, size int) uint32 {
	return h.PartialFrames(path, md, size, 16<<10)
}

// PartialFrames is Partial sending the message in DATA frames of at most
// frame bytes.
func (h *Conn) PartialFrames(path string, md [][2]string, size, frame int) uint32 {
	var id uint32
	h.write(func() error {
		var err error
		id, err = h.headers(path, md, false)
		return err
	})
	h.wmu.Lock()
	h.sendWin[id] = h.sendInit
	h.wmu.Unlock()
	msg := make([]byte, 5+size-1)
	binary.BigEndian.PutUint32(msg[1:5], uint32(size))
	for len(msg) > 0 {
		h.wmu.Lock()
		for !h.closed.Load() && (h.connSend <= 0 || h.sendWin[id] <= 0) {
			h.sendMore.Wait()
		}
		n := int(min(int64(frame), h.connSend, h.sendWin[id], int64(len(msg))))
		h.connSend -= int64(n)
		h.sendWin[id] -= int64(n)
		h.wmu.Unlock()
		if h.closed.Load() {
			break
		}
		h.write(func() error { return h.fr.WriteData(id, false, msg[:n]) })
		msg = msg[n:]
	}
	return id
}

// HeadersStub opens a new stream by sending only the 9-byte header of a
// HEADERS frame (END_HEADERS and END_STREAM set) that declares a payload
// of length bytes, and never the payload: the server's frame reader waits
// for it until the connection ends. It returns the stream ID.
func (h *Conn) HeadersStub(length int) uint32 {
	var id uint32
	h.write(func() error {
		id = h.next
		h.next += 2
		var hdr [9]byte
		hdr[0], hdr[1], hdr[2] = byte(length>>16), byte(length>>8), byte(length)
		hdr[3] = byte(http2.FrameHeaders)
		hdr[4] = byte(http2.FlagHeadersEndHeaders | http2.FlagHeadersEndStream)
		binary.BigEndian.PutUint32(hdr[5:], id)
		_, err := h.c.Write(hdr[:])
		return err
	})
	return id
}
