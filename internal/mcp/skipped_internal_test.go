package mcp

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// repeating serves the same event again and again, up to max bytes.
type repeating struct {
	event string
	max   int64
	n     atomic.Int64
	off   int
}

func (r *repeating) Read(p []byte) (int, error) {
	if r.n.Load() >= r.max {
		return 0, io.EOF
	}
	k := 0
	for k < len(p) {
		c := copy(p[k:], r.event[r.off:])
		k += c
		r.off = (r.off + c) % len(r.event)
	}
	r.n.Add(int64(k))
	return k, nil
}

func (r *repeating) Close() error { return nil }

// Oversized events that each end before the bound, one after another, on a
// stream with no call (the legacy SSE transport's): each is skipped, but
// the stream may not skip more than the bound in all, or a server (with a
// compressed body, for little of its own bandwidth) keeps a core busy for
// as long as it likes.
func TestSSESkipsAtMostTheBoundPerStream(t *testing.T) {
	const limit = 1 << 10
	ev := "event: message\ndata: " + `{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"` + strings.Repeat("z", 8*limit) + `"}}` + "\n\n"
	src := &repeating{event: ev, max: 1 << 30}
	rt := capTransport{base: bodyTransport{func() io.ReadCloser { return src }}, max: limit, log: slog.New(slog.DiscardHandler)}
	req, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1/sse", nil)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, resp.Body); !errors.Is(err, errEndless) {
		t.Errorf("a stream of oversized events ended with %v, want errEndless", err)
	}
	if n := src.n.Load(); n > int64(skipBound(limit))+(128<<10) {
		t.Errorf("read %d bytes of oversized events, want at most about %d", n, skipBound(limit))
	}
}
