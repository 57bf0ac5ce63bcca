package main

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/contextd/contextd/internal/metrics"
	"github.com/contextd/contextd/internal/service"
)

// partialConn returns a followed connection reading a client preface and
// calls calls, each sending size bytes of a request it never ends; the
// connection is trusted as one whose calls passed the token check when
// trusted is set.
func partialConn(t *testing.T, u *unsentAnswers, calls, size int, trusted bool) *h2Conn {
	t.Helper()
	var in bytes.Buffer
	in.WriteString(http2.ClientPreface)
	fr := http2.NewFramer(&in, nil)
	_ = fr.WriteSettings()
	for i := range calls {
		id := uint32(2*i + 1)
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: []byte{0x82}, EndHeaders: true})
		for sent := 0; sent < size; sent += 16 << 10 {
			_ = fr.WriteData(id, false, make([]byte, min(16<<10, size-sent)))
		}
	}
	l := limitConns(nil, 4, time.Second, "listen", slog.New(slog.DiscardHandler)).(*limitListener)
	l.answers = u
	l.slots <- struct{}{}
	lc := &limitConn{Conn: &readConn{sinkConn: sinkConn{}, r: &in}, l: l, accepted: time.Now()}
	lc.trusted.Store(trusted)
	u.track(lc)
	return u.watch(lc, lc).(*h2Conn)
}

// The bytes of unfinished requests past each connection's bound are
// counted toward a room all connections share; a connection gives its
// count back when it closes, and does not take it again if a read or a
// write of it ends after that (the count leaked, and an honest client's
// burst of requests was then closed for good). A connection none of
// whose calls passed the token check counts nothing toward it: gRPC
// refused those calls and keeps none of their bytes.
func TestUnfinishedRequestsShareARoomThatClosingGivesBack(t *testing.T) {
	u := newUnsentAnswers(256<<20, time.Minute)
	h := partialConn(t, u, 2, 800<<10, true)
	buf := make([]byte, 64<<10)
	for {
		if _, err := h.Read(buf); err != nil {
			break
		}
	}
	if got := u.partialExcess.Load(); got <= 0 {
		t.Fatalf("1.6 MB of unfinished requests counted %d bytes past the bound, want more than 0", got)
	}
	h.Close()
	h.mu.Lock()
	h.partial += 1 << 20 // a read that ended as the connection closed
	h.notePartial(time.Now())
	h.mu.Unlock()
	if got := u.partialExcess.Load(); got != 0 {
		t.Errorf("after the connection closed, %d bytes are still counted", got)
	}

	untrusted := partialConn(t, u, 2, 800<<10, false)
	for {
		if _, err := untrusted.Read(buf); err != nil {
			break
		}
	}
	if got := u.partialExcess.Load(); got != 0 {
		t.Errorf("a connection with no authenticated call counted %d bytes toward the shared room", got)
	}
	untrusted.Close()
}

// A connection whose write has been blocked for idleGrace (its client
// reads nothing) may be closed to make room, calls in flight or not.
func TestAConnectionWhoseWritesAreBlockedMakesRoom(t *testing.T) {
	l := limitConns(nil, 1, 5*time.Second, "listen", slog.New(slog.DiscardHandler)).(*limitListener)
	busy := &limitConn{Conn: &closeConn{}, l: l, accepted: time.Now().Add(-time.Minute)}
	busy.heard.Store(true)
	busy.trusted.Store(true)
	busy.callStarted()
	l.slots <- struct{}{}
	l.conns[busy] = struct{}{}
	if v, _ := l.victim(); v != nil {
		t.Fatalf("a connection with a call in flight and no write blocked was chosen")
	}
	busy.writeSince.Store(time.Now().Add(-2 * idleGrace).UnixNano())
	if v, left := l.victim(); v != busy || left > 0 {
		t.Errorf("victim %v (left %v), want the connection whose write has been blocked for %v", v, left, 2*idleGrace)
	}
}

// With a token, an open /metrics scrape does not make its connection
// trusted: scrapes without the token could otherwise keep a full metrics
// listener's connections from being closed for others. A request that
// passes the token check does.
func TestMetricsScrapesWithoutTheTokenAreNotTrusted(t *testing.T) {
	const token = "metrics-trust-token-0123456789ab"
	h := guardMetrics(service.NewToken(token), metrics.New().Handler(true))
	for _, tc := range []struct {
		path, auth string
		want       bool
	}{
		{"/metrics", "", false},
		{"/debug/pprof/", "", false},
		{"/debug/pprof/", "Bearer " + token, true},
	} {
		lc := &limitConn{}
		req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1"+tc.path, nil)
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		req = req.WithContext(contextWithLimitConn(req, lc))
		h.ServeHTTP(httptest.NewRecorder(), req)
		if lc.trusted.Load() != tc.want {
			t.Errorf("%s (authorization %q): trusted %v, want %v", tc.path, tc.auth, lc.trusted.Load(), tc.want)
		}
	}
}

func contextWithLimitConn(r *http.Request, lc *limitConn) context.Context {
	return context.WithValue(r.Context(), limitConnKey{}, lc)
}
