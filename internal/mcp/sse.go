package mcp

import (
	"context"
	"log/slog"
	"slices"
	"sync"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// sseTransport is the go-sdk's client of the HTTP+SSE transport of
// 2024-11-05, whose event stream lives as long as the session rather than
// the context of the handshake: the go-sdk opens the stream's GET with the
// context passed to Connect, and Connect's context bounds the handshake
// only (a session that ended with it would end as soon as it began).
type sseTransport struct {
	*mcpsdk.SSEClientTransport
}

func (t sseTransport) Connect(ctx context.Context) (mcpsdk.Connection, error) {
	streamCtx, endStream := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, endStream)
	conn, err := t.SSEClientTransport.Connect(streamCtx)
	if !stop() {
		// ctx ended while the stream was opened.
		if err == nil {
			conn.Close()
		}
		endStream()
		return nil, context.Cause(ctx)
	}
	if err != nil {
		endStream()
		return nil, err
	}
	return sseConn{Connection: conn, endStream: endStream}, nil
}

// sseConn ends its event stream when closed.
type sseConn struct {
	mcpsdk.Connection
	endStream context.CancelFunc
}

func (c sseConn) Close() error {
	err := c.Connection.Close()
	c.endStream()
	return err
}

// heldLog is a slog handler that holds the records of a Streamable HTTP
// handshake that may yet fall back to SSE (at most maxHeld), until
// release: they are then written, or, when the server turned out to speak
// SSE, dropped (its 4xx to the POST is what a legacy server answers, not
// a fault to warn about).
type heldLog struct {
	next  slog.Handler
	state *heldState
	attrs []slog.Attr
	group string
}

type heldState struct {
	mu      sync.Mutex
	holding bool
	held    []heldRecord
}

type heldRecord struct {
	h slog.Handler
	r slog.Record
}

const maxHeld = 16

func newHeldLog(next slog.Handler) *heldLog {
	return &heldLog{next: next, state: &heldState{holding: true}}
}

func (h *heldLog) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h *heldLog) Handle(ctx context.Context, r slog.Record) error {
	s := h.state
	s.mu.Lock()
	if s.holding {
		if len(s.held) < maxHeld {
			s.held = append(s.held, heldRecord{h.target(), r.Clone()})
		}
		s.mu.Unlock()
		return nil
	}
	s.mu.Unlock()
	return h.target().Handle(ctx, r)
}

func (h *heldLog) target() slog.Handler {
	t := h.next
	if h.group != "" {
		t = t.WithGroup(h.group)
	}
	if len(h.attrs) > 0 {
		t = t.WithAttrs(h.attrs)
	}
	return t
}

func (h *heldLog) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(slices.Clip(h.attrs), as...)
	return &c
}

func (h *heldLog) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return &heldLog{next: h.target().WithGroup(name), state: h.state}
}

// release ends the holding: the held records are written, or dropped.
func (h *heldLog) release(write bool) {
	s := h.state
	s.mu.Lock()
	held := s.held
	s.held, s.holding = nil, false
	s.mu.Unlock()
	if write {
		for _, r := range held {
			_ = r.h.Handle(context.Background(), r.r)
		}
	}
}
