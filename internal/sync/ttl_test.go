package sync_test

import (
	"context"
	"encoding/json"

	"math"
	gosync "sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/mcp"
	"github.com/contextd/contextd/internal/mcp/mcptest"
	ctxsync "github.com/contextd/contextd/internal/sync"
)

// hinting returns a go-sdk server serving doc://a whose read results carry
// ttlMs and cacheScope (SetCacheable; the SDK fills an empty scope with
// "public", so scope "" is sent as "public"), and a recorder of the requests
// it receives. opts may add subscribe handlers.
func hinting(ttlMs int, scope string, opts *mcpsdk.ServerOptions) (*mcpsdk.Server, *mcptest.Recorder) {
	o := &mcpsdk.ServerOptions{}
	if opts != nil {
		*o = *opts
	}
	o.SetCacheable = func(_ context.Context, req mcpsdk.Request, c *mcpsdk.Cacheable) {
		if _, ok := req.(*mcpsdk.ReadResourceRequest); ok {
			c.TTLMs, c.CacheScope = ttlMs, scope
		}
	}
	srv := mcptest.NewServer(map[string]string{"doc://a": "alpha"}, o)
	rec := &mcptest.Recorder{}
	srv.AddReceivingMiddleware(rec.Middleware())
	return srv, rec
}

// notifier dials sessions to a go-sdk server like mcptest.Dial, keeping the
// server side of the latest connection so a test can send the client any
// notification, whatever the server would send on its own (a go-sdk server
// sends 2026-07-28 sessions no notification outside subscriptions/listen).
type notifier struct {
	t   *testing.T
	srv *mcpsdk.Server

	mu   gosync.Mutex
	conn mcpsdk.Connection
}

type capturing struct {
	mcpsdk.Transport
	n *notifier
}

func (c capturing) Connect(ctx context.Context) (mcpsdk.Connection, error) {
	conn, err := c.Transport.Connect(ctx)
	if err == nil {
		c.n.mu.Lock()
		c.n.conn = conn
		c.n.mu.Unlock()
	}
	return conn, err
}

func (n *notifier) dial(ctx context.Context, opts *mcp.Options) (*mcp.Session, error) {
	ct, st := mcpsdk.NewInMemoryTransports()
	ss, err := n.srv.Connect(ctx, capturing{st, n}, nil)
	if err != nil {
		return nil, err
	}
	n.t.Cleanup(func() { _ = ss.Close() })
	sess, err := mcp.ConnectTransport(ctx, "s", ct, opts)
	if err != nil {
		return nil, err
	}
	n.t.Cleanup(func() { _ = sess.Close() })
	return sess, nil
}

// send writes a notification to the client and waits until it is handled.
func (n *notifier) send(method string, params any) {
	n.t.Helper()
	raw, err := json.Marshal(params)
	if err != nil {
		n.t.Fatal(err)
	}
	n.mu.Lock()
	conn := n.conn
	n.mu.Unlock()
	if err := conn.Write(n.t.Context(), &jsonrpc.Request{Method: method, Params: raw}); err != nil {
		n.t.Fatalf("sending %s: %v", method, err)
	}
	synctest.Wait()
}

// read calls ReadFetch and fails the test on error.
func read(t *testing.T, m *ctxsync.Mirror, uri string) ctxsync.Fetch {
	t.Helper()
	c, f, err := m.ReadFetch(t.Context(), uri)
	if err != nil || len(c) != 1 || c[0].Text == "" {
		t.Fatalf("ReadFetch(%s) = %v, %+v, %v", uri, c, f, err)
	}
	return f
}

// A result with ttlMs from a server contextd does not subscribe to is read
// once and served from the cache until exactly ttlMs after it arrived, then
// read again: on 2026-07-28 sessions (where the go-sdk client would cache it
// too) and on older ones (where go-sdk servers send the fields anyway).
func TestTTLResultIsReadOnceWithinItsTTL(t *testing.T) {
	for _, proto := range []string{"", "2025-11-25"} {
		t.Run("protocol="+proto, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const ttl = time.Minute
				srv, rec := hinting(int(ttl.Milliseconds()), "public", nil)
				dial := mcptest.Dial(t, "s", srv)
				m := ctxsync.New(ctxsync.Options{ContentMaxResources: noContentIndex, Server: "s", Index: newIndex(t), Dial: func(ctx context.Context, o *mcp.Options) (*mcp.Session, error) {
					o.ProtocolVersion = proto
					return dial(ctx, o)
				}})
				start(t, m)
				<-m.Ready()

				first := read(t, m, "doc://a")
				if first.Freshness() != "ttl" || !first.Expires.Equal(first.At.Add(ttl)) {
					t.Fatalf("first read: %+v (%s); want ttl until At+%v", first, first.Freshness(), ttl)
				}
				time.Sleep(ttl - time.Millisecond)
				if again := read(t, m, "doc://a"); again != first {
					t.Errorf("1ms before expiry: %+v; want the cached %+v", again, first)
				}
				if n := rec.Count("resources/read"); n != 1 {
					t.Fatalf("%d reads within the TTL, want 1", n)
				}
				time.Sleep(time.Millisecond)
				after := read(t, m, "doc://a")
				if n := rec.Count("resources/read"); n != 2 || !after.At.After(first.At) {
					t.Errorf("at expiry: %d reads, fetch %+v; want a second read", n, after)
				}
			})
		})
	}
}

// notifications/resources/updated for the URI and
// notifications/resources/list_changed each evict a TTL entry before it
// expires. The session is 2026-07-28, whose go-sdk ClientSession has a read
// cache of its own that list_changed does not clear: contextd must not read
// through it.
func TestNotificationsEvictATTLEntry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, rec := hinting(int(time.Hour.Milliseconds()), "public", nil)
		n := &notifier{t: t, srv: srv}
		m := ctxsync.New(ctxsync.Options{ContentMaxResources: noContentIndex, Server: "s", Index: newIndex(t), Dial: n.dial})
		start(t, m)
		<-m.Ready()

		read(t, m, "doc://a")
		read(t, m, "doc://a")
		if got := rec.Count("resources/read"); got != 1 {
			t.Fatalf("%d reads before any notification, want 1 (cached by TTL)", got)
		}
		n.send("notifications/resources/updated", map[string]string{"uri": "doc://other"})
		if f := read(t, m, "doc://a"); f.Freshness() != "ttl" || rec.Count("resources/read") != 1 {
			t.Fatalf("an update for another URI evicted doc://a (%d reads)", rec.Count("resources/read"))
		}
		n.send("notifications/resources/updated", map[string]string{"uri": "doc://a"})
		read(t, m, "doc://a")
		if got := rec.Count("resources/read"); got != 2 {
			t.Fatalf("after updated: %d reads, want 2", got)
		}
		read(t, m, "doc://a") // cached again
		n.send("notifications/resources/list_changed", map[string]any{})
		if f := read(t, m, "doc://a"); f.Freshness() != "ttl" {
			t.Errorf("re-read after list_changed: %+v; want cached again by TTL", f)
		}
		if got := rec.Count("resources/read"); got != 3 {
			t.Errorf("after list_changed: %d reads, want 3", got)
		}
	})
}

// A result whose cacheScope is not "public" is never served from the cache,
// whatever its ttlMs: "private" and values the draft does not define
// (TestRawCacheHints covers an absent scope). The session is 2026-07-28,
// whose go-sdk ClientSession would serve all of them from its own cache.
func TestPrivateResultsAreNeverServedFromCache(t *testing.T) {
	for _, scope := range []string{"private", "Private", "tenant"} {
		t.Run(scope, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv, rec := hinting(int(time.Hour.Milliseconds()), scope, nil)
				m := ctxsync.New(ctxsync.Options{ContentMaxResources: noContentIndex, Server: "s", Index: newIndex(t), Dial: mcptest.Dial(t, "s", srv)})
				start(t, m)
				<-m.Ready()
				for i := range 3 {
					if f := read(t, m, "doc://a"); f.Freshness() != "read" || !f.Expires.IsZero() {
						t.Errorf("read %d: %+v (%s); want read, not cached", i, f, f.Freshness())
					}
				}
				if got := rec.Count("resources/read"); got != 3 {
					t.Errorf("%d server reads for 3 ReadFetch, want 3", got)
				}
			})
		})
	}
	// Under a subscription (protocol 2025-11-25) too: the subscription
	// would keep it current, but it must still not reach another caller.
	t.Run("subscribed", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv, rec := hinting(0, "private", &mcpsdk.ServerOptions{
				SubscribeHandler:   func(context.Context, *mcpsdk.SubscribeRequest) error { return nil },
				UnsubscribeHandler: func(context.Context, *mcpsdk.UnsubscribeRequest) error { return nil },
			})
			m := ctxsync.New(ctxsync.Options{ContentMaxResources: noContentIndex, Server: "s", Index: newIndex(t), Dial: legacy(mcptest.Dial(t, "s", srv))})
			start(t, m)
			<-m.Ready()
			for i := range 3 {
				if f := read(t, m, "doc://a"); f.Freshness() != "read" {
					t.Errorf("read %d: %+v (%s); want read, not cached", i, f, f.Freshness())
				}
			}
			if got, subs := rec.Count("resources/read"), rec.Count("resources/subscribe"); got != 3 || subs != 1 {
				t.Errorf("%d reads and %d subscribes for 3 ReadFetch, want 3 and 1 (the subscription is kept, not redone per read)", got, subs)
			}
		})
	})
}

// Without a positive ttlMs a result is cached only under a subscription;
// bad ttlMs values are safe: negative means 0, a huge one is capped at
// mcp.MaxCacheTTL, and a result larger than the cache is not kept.
func TestTTLEdgeCases(t *testing.T) {
	tests := []struct {
		name       string
		ttlMs      int
		cacheBytes int64
		subscribe  bool
		want       string        // Freshness of the second read
		wantTTL    time.Duration // Expires - At when want is "ttl"
		reads      int           // server reads for two ReadFetch
	}{
		{name: "no ttl", ttlMs: 0, want: "read", reads: 2},
		{name: "negative ttl", ttlMs: -5, want: "read", reads: 2},
		{name: "no ttl, subscribed", ttlMs: 0, subscribe: true, want: "subscription", reads: 1},
		{name: "ttl, subscribed", ttlMs: 1000, subscribe: true, want: "subscription", reads: 1},
		{name: "huge ttl", ttlMs: math.MaxInt64, want: "ttl", wantTTL: mcp.MaxCacheTTL, reads: 1},
		{name: "1ms", ttlMs: 1, want: "ttl", wantTTL: time.Millisecond, reads: 1},
		{name: "larger than the cache", ttlMs: 60000, cacheBytes: 4, want: "read", reads: 2},
		{name: "cache disabled", ttlMs: 60000, cacheBytes: -1, want: "read", reads: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var opts *mcpsdk.ServerOptions
				dial := mcptest.Dial
				if tt.subscribe {
					opts = &mcpsdk.ServerOptions{
						SubscribeHandler:   func(context.Context, *mcpsdk.SubscribeRequest) error { return nil },
						UnsubscribeHandler: func(context.Context, *mcpsdk.UnsubscribeRequest) error { return nil },
					}
				}
				srv, rec := hinting(tt.ttlMs, "public", opts)
				d := dial(t, "s", srv)
				if tt.subscribe {
					d = legacy(d)
				}
				m := ctxsync.New(ctxsync.Options{ContentMaxResources: noContentIndex, Server: "s", Index: newIndex(t), Dial: d, CacheBytes: tt.cacheBytes})
				start(t, m)
				<-m.Ready()
				read(t, m, "doc://a")
				f := read(t, m, "doc://a")
				if f.Freshness() != tt.want {
					t.Errorf("second read: %+v is %q, want %q", f, f.Freshness(), tt.want)
				}
				if tt.want == "ttl" && f.Expires.Sub(f.At) != tt.wantTTL {
					t.Errorf("expires %v after the fetch, want %v", f.Expires.Sub(f.At), tt.wantTTL)
				}
				if got := rec.Count("resources/read"); got != tt.reads {
					t.Errorf("%d server reads, want %d", got, tt.reads)
				}
			})
		})
	}
}

// Hints a go-sdk server cannot send, from a hand-written server (protocol
// 2025-06-18, no subscribe): ttlMs without cacheScope is not shared (the
// draft is unclear whether absence means "public"; the field is required),
// and a malformed ttlMs fails no read.
func TestRawCacheHints(t *testing.T) {
	tests := []struct {
		name  string
		hints string // JSON members appended to the read result
		want  string
		reads int
	}{
		{name: "ttl without scope", hints: `,"ttlMs":60000`, want: "read", reads: 2},
		{name: "ttl, public", hints: `,"ttlMs":60000,"cacheScope":"public"`, want: "ttl", reads: 1},
		{name: "ttl, null scope", hints: `,"ttlMs":60000,"cacheScope":null`, want: "read", reads: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := &mcptest.RawServer{Results: map[string]string{
				"resources/list": `{"resources":[{"uri":"x://a","name":"a"}]}`,
				"resources/read": `{"contents":[{"uri":"x://a","mimeType":"text/plain","text":"hello"}]` + tt.hints + `}`,
			}}
			m := ctxsync.New(ctxsync.Options{ContentMaxResources: noContentIndex, Server: "s", Index: newIndex(t), Dial: func(ctx context.Context, o *mcp.Options) (*mcp.Session, error) {
				return mcp.ConnectTransport(ctx, "s", srv.Transport(t), o)
			}, MinBackoff: time.Hour, MaxBackoff: time.Hour})
			start(t, m)
			<-m.Ready()
			read(t, m, "x://a")
			if f := read(t, m, "x://a"); f.Freshness() != tt.want {
				t.Errorf("second read: %+v is %q, want %q", f, f.Freshness(), tt.want)
			}
			if got := srv.Count("resources/read"); got != tt.reads {
				t.Errorf("%d server reads, want %d", got, tt.reads)
			}
		})
	}
}
