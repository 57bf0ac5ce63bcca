// Package h2flood speaks raw HTTP/2 to a gRPC server to test its bounds on
// calls that never complete: it opens calls that send their headers and
// never a request message, which no well-behaved client library does, and
// counts how the server ends them. Tests use it; the daemon does not.
package h2flood

import (
	"bytes"
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

	closed     atomic.Bool
	advertised atomic.Uint32 // SETTINGS_MAX_CONCURRENT_STREAMS, 0 until read
	ended      atomic.Int32  // calls ended by trailers or RST_STREAM
	refused    atomic.Int32  // calls reset with REFUSED_STREAM
}

// Dial connects to addr (host:port, plaintext HTTP/2 with prior
// knowledge), sends the client preface and SETTINGS, and starts reading.
// Close ends the connection.
func Dial(addr string) (*Conn, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	h := &Conn{c: c, fr: http2.NewFramer(c, c), next: 1}
	go h.read()
	h.write(func() error { _, err := c.Write([]byte(http2.ClientPreface)); return err })
	h.write(func() error { return h.fr.WriteSettings() })
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
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for range n {
		hb.Reset()
		for _, kv := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":path", path},
			{":authority", "localhost"}, {"content-type", "application/grpc"}, {"te", "trailers"}} {
			_ = enc.WriteField(hpack.HeaderField{Name: kv[0], Value: kv[1]})
		}
		h.write(func() error {
			id := h.next
			h.next += 2
			return h.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hb.Bytes(), EndHeaders: true})
		})
	}
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
			return
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				if v, ok := f.Value(http2.SettingMaxConcurrentStreams); ok {
					h.advertised.Store(v)
				}
				h.write(h.fr.WriteSettingsAck)
			}
		case *http2.HeadersFrame:
			if f.StreamEnded() {
				h.ended.Add(1)
			}
		case *http2.RSTStreamFrame:
			h.ended.Add(1)
			if f.ErrCode == http2.ErrCodeRefusedStream {
				h.refused.Add(1)
			}
		}
	}
}
