package sync_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/contextd/contextd/internal/config"
	"github.com/contextd/contextd/internal/mcp"
	"github.com/contextd/contextd/internal/mcp/mcptest"
	ctxsync "github.com/contextd/contextd/internal/sync"
)

// rawHTTPMirror runs a mirror of srv over Streamable HTTP on loopback.
func rawHTTPMirror(t *testing.T, srv *mcptest.RawServer, opts ctxsync.Options) *ctxsync.Mirror {
	t.Helper()
	url := srv.StartHTTP(t)
	opts.Server = "web"
	opts.Index = newIndex(t)
	opts.Dial = func(ctx context.Context, o *mcp.Options) (*mcp.Session, error) {
		return mcp.Connect(ctx, config.Server{Name: "web", Transport: config.TransportHTTP, URL: url}, o)
	}
	m := ctxsync.New(opts)
	start(t, m)
	<-m.Ready()
	if st := m.Status(); st.State != ctxsync.StateReady {
		t.Fatalf("initial sync: %+v", st)
	}
	return m
}

// eventually polls cond for up to 10 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

var rawDocs = map[string]string{
	"initialize":          `{"protocolVersion":"2025-06-18","capabilities":{"resources":{"subscribe":true}},"serverInfo":{"name":"raw","version":"0"}}`,
	"resources/list":      `{"resources":[{"uri":"x://a","name":"a"},{"uri":"x://b","name":"b"}]}`,
	"resources/read":      `{"contents":[{"uri":"x://a","mimeType":"text/plain","text":"hello"}]}`,
	"resources/subscribe": `{}`,
}

func TestExpiredHTTPSessionIsReinitializedAndRetriedOnce(t *testing.T) {
	srv := &mcptest.RawServer{Results: rawDocs}
	m := rawHTTPMirror(t, srv, ctxsync.Options{MinBackoff: time.Hour, MaxBackoff: time.Hour})
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := m.Read(ctx, "x://a"); err != nil {
		t.Fatal(err)
	}

	srv.ExpireSessions()
	got, err := m.Read(ctx, "x://b")
	if err != nil {
		t.Fatalf("Read after the session expired: %v, want it retried on a new session", err)
	}
	if len(got) != 1 || got[0].Text != "hello" {
		t.Fatalf("Read = %+v", got)
	}
	if n := srv.Count("initialize"); n != 2 {
		t.Errorf("initialize sent %d times, want 2 (the first session and one re-initialize)", n)
	}
	// A 2025-era Streamable HTTP session cannot receive resources/updated
	// (the standalone stream is not opened), so neither session subscribed.
	if n := subscribes(srv, "x://a"); n != 0 {
		t.Errorf("x://a subscribed %d times on sessions that cannot be notified", n)
	}
	eventually(t, "ready after the re-initialize", func() bool { return m.Status().State == ctxsync.StateReady })
}

func TestServerExpiringEverySessionGetsOneRetryNotALoop(t *testing.T) {
	srv := &mcptest.RawServer{Results: rawDocs}
	m := rawHTTPMirror(t, srv, ctxsync.Options{ContentMaxResources: noContentIndex, MinBackoff: time.Hour, MaxBackoff: time.Hour})
	srv.ExpireOn("resources/read", -1)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, err := m.Read(ctx, "x://b")
	if !errors.Is(err, mcp.ErrSessionExpired) {
		t.Fatalf("Read = %v, want ErrSessionExpired after one retry", err)
	}
	// The second expiry within MaxBackoff waits out the backoff (an hour here).
	eventually(t, "the mirror to go stale", func() bool { return m.Status().State == ctxsync.StateStale })
	if n := srv.Count("initialize"); n != 2 {
		t.Errorf("initialize sent %d times, want 2: one re-initialize, then backoff", n)
	}
	if n := srv.Count("resources/read"); n != 0 {
		t.Errorf("server answered %d reads, want 0 (every one expired)", n)
	}
}

func TestSecondExpiryWithinMaxBackoffBacksOff(t *testing.T) {
	srv := &mcptest.RawServer{Results: rawDocs}
	m := rawHTTPMirror(t, srv, ctxsync.Options{MinBackoff: time.Hour, MaxBackoff: time.Hour})
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	srv.ExpireOn("resources/read", 1)
	if _, err := m.Read(ctx, "x://b"); err != nil {
		t.Fatalf("first expiry: %v, want a retry on a new session", err)
	}
	eventually(t, "the second session's sync", func() bool { return m.Status().Syncs == 2 })

	srv.ExpireOn("resources/read", 1)
	_, err := m.Read(ctx, "x://a") // x://b is cached now
	if !errors.Is(err, mcp.ErrSessionExpired) || ctx.Err() != nil {
		t.Fatalf("second expiry = %v (ctx %v), want ErrSessionExpired at once, without waiting out the backoff", err, ctx.Err())
	}
	if n := srv.Count("initialize"); n != 2 {
		t.Errorf("initialize sent %d times, want 2: the second expiry waits for the backoff", n)
	}
}

func TestExpiredSessionWhoseReconnectFailsFailsTheReadAtOnce(t *testing.T) {
	srv := &mcptest.RawServer{Results: rawDocs}
	m := rawHTTPMirror(t, srv, ctxsync.Options{MinBackoff: time.Hour, MaxBackoff: time.Hour})
	srv.ExpireOn("resources/read", 1)
	srv.SetUnavailable("initialize", true)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, err := m.Read(ctx, "x://b")
	if !errors.Is(err, mcp.ErrSessionExpired) || ctx.Err() != nil {
		t.Fatalf("Read = %v (ctx %v), want ErrSessionExpired as soon as the reconnect failed", err, ctx.Err())
	}
}

func subscribes(srv *mcptest.RawServer, uri string) int {
	n := 0
	for _, r := range srv.Requests() {
		var p struct{ URI string }
		if r.Method == "resources/subscribe" && json.Unmarshal(r.Params, &p) == nil && p.URI == uri {
			n++
		}
	}
	return n
}

// An HTTP server that expires sessions during the content pass is ending
// them as it may, not dying of a read: no read is blamed, and every text is
// indexed once the reads are answered.
func TestExpiredSessionsDuringTheContentPassBlameNoRead(t *testing.T) {
	srv := &mcptest.RawServer{Results: rawDocs}
	srv.ExpireOn("resources/read", 3)
	url := srv.StartHTTP(t)
	ix := newIndex(t)
	m := ctxsync.New(ctxsync.Options{Server: "web", Index: ix, MinBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond,
		Dial: func(ctx context.Context, o *mcp.Options) (*mcp.Session, error) {
			return mcp.Connect(ctx, config.Server{Name: "web", Transport: config.TransportHTTP, URL: url}, o)
		}})
	start(t, m)
	eventually(t, "both texts indexed", func() bool { return ix.ContentLen("web") == 2 })
}
