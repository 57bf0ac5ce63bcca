package sync_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	gosync "sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/index"
	"github.com/contextd/contextd/internal/index/indextest"
	"github.com/contextd/contextd/internal/mcp"
	"github.com/contextd/contextd/internal/mcp/mcptest"
	"github.com/contextd/contextd/internal/redact"
	"github.com/contextd/contextd/internal/resource"
	ctxsync "github.com/contextd/contextd/internal/sync"
)

// noContentIndex turns the content pass off, for tests that count the
// server's reads of the read cache.
const noContentIndex = -1

func newIndex(t *testing.T) *index.Index {
	t.Helper()
	ix, err := index.Open(t.Context(), index.Options{Embedder: &indextest.BagEmbedder{}})
	if err != nil {
		t.Fatal(err)
	}
	return ix
}

// start runs m until the test ends.
func start(t *testing.T, m *ctxsync.Mirror) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg gosync.WaitGroup
	wg.Go(func() { _ = m.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
}

func TestListChangedIsMirroredWithinTheDebounceWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mcptest.NewServer(map[string]string{"doc://intro": "hello"}, nil)
		var rec mcptest.Recorder
		srv.AddReceivingMiddleware(rec.Middleware())
		ix := newIndex(t)
		const debounce = 200 * time.Millisecond
		m := ctxsync.New(ctxsync.Options{Server: "s", Dial: mcptest.Dial(t, "s", srv), Index: ix, Debounce: debounce})
		start(t, m)
		<-m.Ready()
		synctest.Wait()
		if st := m.Status(); st.State != ctxsync.StateReady || st.Resources != 1 {
			t.Fatalf("after initial sync: %+v", st)
		}

		// A burst of changes: each AddResource makes the server send list_changed.
		t0 := time.Now()
		mcptest.AddText(srv, "doc://architecture", "architecture", "how it is built")
		mcptest.AddText(srv, "doc://billing", "billing", "invoices")
		mcptest.AddText(srv, "doc://calendar", "calendar", "dates")
		synctest.Wait()
		if hits := ix.Lexical("architecture", 5, index.Filter{}); len(hits) != 0 {
			t.Fatalf("found before the debounce window ended: %+v", hits)
		}
		time.Sleep(debounce + 20*time.Millisecond) // fake time inside the bubble
		synctest.Wait()
		hits := ix.Lexical("architecture", 5, index.Filter{})
		if len(hits) != 1 || hits[0].Key != (resource.Key{Server: "s", URI: "doc://architecture"}) {
			t.Fatalf("Search after list_changed = %+v, want doc://architecture", hits)
		}
		if el := time.Since(t0); el > debounce+50*time.Millisecond {
			t.Errorf("mirrored after %v, want within the debounce window (%v) plus notification delay", el, debounce)
		}
		if lists := rec.Count("resources/list"); lists != 2 {
			t.Errorf("server saw %d resources/list, want 2 (initial + one coalesced re-list)", lists)
		}
		if m.Status().Resources != 4 {
			t.Errorf("Resources = %d, want 4", m.Status().Resources)
		}
	})
}

func TestRemovedResourceLeavesTheIndex(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mcptest.NewServer(map[string]string{"doc://a": "a", "doc://b": "b"}, nil)
		ix := newIndex(t)
		m := ctxsync.New(ctxsync.Options{Server: "s", Dial: mcptest.Dial(t, "s", srv), Index: ix})
		start(t, m)
		<-m.Ready()
		srv.RemoveResources("doc://b")
		time.Sleep(time.Second)
		synctest.Wait()
		if _, ok := ix.Get(resource.Key{Server: "s", URI: "doc://b"}); ok {
			t.Error("doc://b still indexed after removal and list_changed")
		}
		if _, ok := ix.Get(resource.Key{Server: "s", URI: "doc://a"}); !ok {
			t.Error("doc://a lost")
		}
	})
}

func TestUpdatedDropsCachedContent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		body := "v1"
		var mu gosync.Mutex
		var subscribed []string
		srv := mcptest.NewServer(nil, &mcpsdk.ServerOptions{
			SubscribeHandler: func(_ context.Context, req *mcpsdk.SubscribeRequest) error {
				mu.Lock()
				defer mu.Unlock()
				subscribed = append(subscribed, req.Params.URI)
				return nil
			},
			UnsubscribeHandler: func(context.Context, *mcpsdk.UnsubscribeRequest) error { return nil },
		})
		reads := 0
		srv.AddResource(&mcpsdk.Resource{URI: "doc://live/n%C3%B6te%20one", Name: "live"},
			func(_ context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
				mu.Lock()
				defer mu.Unlock()
				reads++
				return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: req.Params.URI, Text: body}}}, nil
			})
		ix := newIndex(t)
		m := ctxsync.New(ctxsync.Options{ContentMaxResources: noContentIndex, Server: "s", Index: ix, Dial: legacy(mcptest.Dial(t, "s", srv))})
		start(t, m)
		<-m.Ready()
		ctx := t.Context()
		read := func() string {
			c, err := m.Read(ctx, "doc://live/n%C3%B6te%20one")
			if err != nil {
				t.Fatal(err)
			}
			return c[0].Text
		}
		if got := read(); got != "v1" {
			t.Fatalf("first read = %q", got)
		}
		if got := read(); got != "v1" {
			t.Fatalf("cached read = %q", got)
		}
		mu.Lock()
		if reads != 1 || len(subscribed) != 1 || subscribed[0] != "doc://live/n%C3%B6te%20one" {
			t.Errorf("reads=%d subscribed=%q; want one read served from cache after subscribing to the exact URI", reads, subscribed)
		}
		body = "v2"
		mu.Unlock()
		if err := srv.ResourceUpdated(ctx, &mcpsdk.ResourceUpdatedNotificationParams{URI: "doc://live/n%C3%B6te%20one"}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if got := read(); got != "v2" {
			t.Errorf("read after notifications/resources/updated = %q, want v2", got)
		}
	})
}

func TestUnreachableServerFailsAndOthersKeepServing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ix := newIndex(t)
		bad := ctxsync.New(ctxsync.Options{Server: "bad", Index: ix,
			Dial: func(context.Context, *mcp.Options) (*mcp.Session, error) {
				return nil, errors.New("exec: \"no-such-server\": executable file not found in $PATH")
			}})
		good := ctxsync.New(ctxsync.Options{Server: "good", Index: ix,
			Dial: mcptest.Dial(t, "good", mcptest.NewServer(map[string]string{"doc://x": "x"}, nil))})
		start(t, bad)
		start(t, good)
		<-bad.Ready()
		<-good.Ready()
		synctest.Wait()
		if st := bad.Status(); st.State != ctxsync.StateFailed || !strings.Contains(st.LastError, "no-such-server") || st.LastErrorTime.IsZero() {
			t.Errorf("bad status = %+v, want failed with the exec error", st)
		}
		if st := good.Status(); st.State != ctxsync.StateReady || st.Resources != 1 {
			t.Errorf("good status = %+v, want ready with 1 resource", st)
		}
	})
}

// A server whose list takes a while to walk and that says it changed a
// little after each list (past the debounce window, so no storm) is
// re-listed for at most about a tenth of the time: a list of 20,000 was
// walked every second, a quarter of a core.
func TestListChangedSoonAfterEveryListIsSpacedByTheListsCost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mcptest.NewServer(map[string]string{"doc://a": "a"}, nil)
		var mu gosync.Mutex
		lists := 0
		srv.AddReceivingMiddleware(func(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
			return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
				if method != "resources/list" {
					return next(ctx, method, req)
				}
				time.Sleep(time.Second) // a long list's walk
				res, err := next(ctx, method, req)
				mu.Lock()
				lists++
				mu.Unlock()
				time.AfterFunc(300*time.Millisecond, func() { mcptest.AddText(srv, "doc://a", "a", "a") })
				return res, err
			}
		})
		m := ctxsync.New(ctxsync.Options{Server: "s", Index: newIndex(t), Dial: mcptest.Dial(t, "s", srv),
			Debounce: 250 * time.Millisecond, MaxStormDelay: 30 * time.Second})
		start(t, m)
		<-m.Ready()
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		// A second's walk, then nine seconds' wait: about 12 in 2 minutes,
		// where the debounce alone allows about 77.
		if lists > 20 || lists < 8 {
			t.Errorf("%d lists of a second each in 2 minutes from a server notifying 300 ms after every list; want 8..20", lists)
		}
	})
}

// legacy dials with protocol 2025-11-25, the resources/subscribe era.
func legacy(dial ctxsync.DialFunc) ctxsync.DialFunc {
	return func(ctx context.Context, o *mcp.Options) (*mcp.Session, error) {
		o.ProtocolVersion = "2025-11-25"
		return dial(ctx, o)
	}
}

func TestUpdateDuringReadIsNotCachedOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu gosync.Mutex
		body, reads := "v1", 0
		srv := subscribableServer()
		srv.AddResource(&mcpsdk.Resource{URI: "doc://racy", Name: "racy"},
			func(ctx context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
				mu.Lock()
				reads++
				served := body
				body = "v2" // the resource changes right after this read...
				mu.Unlock()
				// ...and the server says so before its answer reaches the client.
				if err := srv.ResourceUpdated(ctx, &mcpsdk.ResourceUpdatedNotificationParams{URI: req.Params.URI}); err != nil {
					return nil, err
				}
				return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: req.Params.URI, Text: served}}}, nil
			})
		m := ctxsync.New(ctxsync.Options{ContentMaxResources: noContentIndex, Server: "s", Index: newIndex(t), Dial: legacy(mcptest.Dial(t, "s", srv))})
		start(t, m)
		<-m.Ready()
		first, err := m.Read(t.Context(), "doc://racy")
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		second, err := m.Read(t.Context(), "doc://racy")
		if err != nil {
			t.Fatal(err)
		}
		if first[0].Text != "v1" || second[0].Text != "v2" {
			t.Errorf("reads = %q then %q; want v1 then v2 (the first answer was outdated when it arrived)", first[0].Text, second[0].Text)
		}
	})
}

func TestCrashLoopingServerBacksOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mcptest.NewServer(map[string]string{"doc://a": "a"}, nil)
		dial := mcptest.Dial(t, "s", srv)
		var mu gosync.Mutex
		dials := 0
		m := ctxsync.New(ctxsync.Options{Server: "s", Index: newIndex(t),
			MinBackoff: 500 * time.Millisecond, MaxBackoff: 30 * time.Second,
			Dial: func(ctx context.Context, o *mcp.Options) (*mcp.Session, error) {
				mu.Lock()
				dials++
				mu.Unlock()
				sess, err := dial(ctx, o)
				if err == nil {
					go func() { time.Sleep(10 * time.Millisecond); sess.Close() }() // dies right after connecting
				}
				return sess, err
			}})
		start(t, m)
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		// Delays grow 0.5, 1, 2, 4, 8, 16, 30, 30... s (each at least half of
		// that): 2 minutes hold at most about 12 attempts, where a reset after
		// every connect would make hundreds.
		if dials > 14 || dials < 5 {
			t.Errorf("%d connects in 2 minutes; want capped exponential backoff (5..14)", dials)
		}
		if st := m.Status(); st.State != ctxsync.StateStale || st.Resources != 1 {
			t.Errorf("status = %+v, want stale with the last good mirror kept", st)
		}
	})
}

func TestNotFoundEvictsTheDescriptor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mcptest.NewServer(map[string]string{"doc://gone": "x", "doc://kept": "y"}, nil)
		// The server keeps listing doc://gone but, once gone is set, can
		// no longer read it.
		var gone atomic.Bool
		var lists atomic.Int32
		srv.AddReceivingMiddleware(func(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
			return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
				if method == "resources/list" {
					lists.Add(1)
				}
				if rr, ok := req.(*mcpsdk.ReadResourceRequest); ok && (rr.Params.URI == "doc://gone" && gone.Load() || rr.Params.URI == "doc://never-listed") {
					return nil, mcpsdk.ResourceNotFoundError(rr.Params.URI)
				}
				return next(ctx, method, req)
			}
		})
		ix := newIndex(t)
		m := ctxsync.New(ctxsync.Options{Server: "s", Index: ix, Dial: mcptest.Dial(t, "s", srv)})
		start(t, m)
		<-m.Ready()
		synctest.Wait()
		// A URI the server never listed is no sign the list is out of
		// date: no re-list.
		before := lists.Load()
		var nf *mcp.NotFoundError
		for range 3 {
			if _, err := m.Read(t.Context(), "doc://never-listed"); !errors.As(err, &nf) {
				t.Fatalf("Read = %v, want *mcp.NotFoundError", err)
			}
			time.Sleep(ctxsync.DefaultDebounce + 50*time.Millisecond)
			synctest.Wait()
		}
		if n := lists.Load(); n != before {
			t.Errorf("reads of an unlisted missing URI made %d re-lists", n-before)
		}
		gone.Store(true)
		if _, err := m.Read(t.Context(), "doc://gone"); !errors.As(err, &nf) {
			t.Fatalf("Read = %v, want *mcp.NotFoundError", err)
		}
		time.Sleep(ctxsync.DefaultDebounce + 50*time.Millisecond)
		synctest.Wait()
		if lists.Load() == before {
			t.Error("a listed URI found missing made no re-list")
		}
		if _, ok := ix.Get(resource.Key{Server: "s", URI: "doc://gone"}); ok {
			t.Error("not-found resource still indexed after the re-list, though it cannot be read")
		}
		if _, ok := ix.Get(resource.Key{Server: "s", URI: "doc://kept"}); !ok {
			t.Error("doc://kept lost")
		}
	})
}

func TestHungListEndsTheFirstSyncWithinSyncTimeoutAndIsRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mcptest.NewServer(map[string]string{"doc://a": "a"}, nil)
		var mu gosync.Mutex
		hang := true
		srv.AddReceivingMiddleware(func(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
			return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
				mu.Lock()
				h := hang
				mu.Unlock()
				if method == "resources/list" && h {
					<-ctx.Done() // initializes fine, never lists
					return nil, ctx.Err()
				}
				return next(ctx, method, req)
			}
		})
		m := ctxsync.New(ctxsync.Options{Server: "s", Index: newIndex(t), Dial: mcptest.Dial(t, "s", srv), SyncTimeout: 10 * time.Second})
		start(t, m)
		t0 := time.Now()
		<-m.Ready()
		if el := time.Since(t0); el > 11*time.Second {
			t.Errorf("Ready after %v, want within the 10s sync timeout", el)
		}
		if st := m.Status(); st.State != ctxsync.StateDegraded || !strings.Contains(st.LastError, "deadline") {
			t.Errorf("status = %+v, want degraded with a deadline error", st)
		}
		// The server recovers but sends no notification: the mirror retries.
		mu.Lock()
		hang = false
		mu.Unlock()
		time.Sleep(time.Minute)
		synctest.Wait()
		if st := m.Status(); st.State != ctxsync.StateReady || st.Resources != 1 {
			t.Errorf("a minute after the server recovered: %+v, want ready with 1 resource", st)
		}
	})
}

func TestListChangedAfterEveryListIsThrottled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mcptest.NewServer(map[string]string{"doc://a": "a"}, nil)
		var mu gosync.Mutex
		lists := 0
		srv.AddReceivingMiddleware(func(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
			return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
				res, err := next(ctx, method, req)
				if method == "resources/list" {
					mu.Lock()
					lists++
					mu.Unlock()
					// A server that says its list changed after every list.
					mcptest.AddText(srv, "doc://a", "a", "a")
				}
				return res, err
			}
		})
		m := ctxsync.New(ctxsync.Options{Server: "s", Index: newIndex(t), Dial: mcptest.Dial(t, "s", srv),
			Debounce: 250 * time.Millisecond, MaxStormDelay: 10 * time.Second})
		start(t, m)
		<-m.Ready()
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		// Windows of 0.25, 0.25, 0.5, 1, 2, 4, 8, then 10 s: about 17 lists in
		// 2 minutes, where a plain debounce would make about 480.
		t.Logf("%d lists in 2 minutes", lists)
		if lists > 25 || lists < 8 {
			t.Errorf("%d lists in 2 minutes under a notify-after-every-list storm; want a throttled 8..25", lists)
		}
		if st := m.Status(); st.State != ctxsync.StateReady {
			t.Errorf("status = %+v", st)
		}
	})
}

func TestServerWithoutListChangedIsPolled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mcptest.NewServer(map[string]string{"doc://a": "a"},
			&mcpsdk.ServerOptions{Capabilities: &mcpsdk.ServerCapabilities{Resources: &mcpsdk.ResourceCapabilities{}}})
		ix := newIndex(t)
		m := ctxsync.New(ctxsync.Options{Server: "s", Index: ix, Dial: mcptest.Dial(t, "s", srv), PollInterval: time.Minute})
		start(t, m)
		<-m.Ready()
		if m.Status().Capabilities.ListChanged {
			t.Fatal("test server declares listChanged")
		}
		mcptest.AddText(srv, "doc://b", "b", "b") // the server tells no one
		time.Sleep(30 * time.Second)
		synctest.Wait()
		if ix.Len("s") != 1 {
			t.Fatalf("Len = %d before the poll interval, want 1", ix.Len("s"))
		}
		time.Sleep(31 * time.Second)
		synctest.Wait()
		if ix.Len("s") != 2 {
			t.Errorf("Len = %d after the poll interval, want 2", ix.Len("s"))
		}
	})
}

func TestEvictionDropsTheSubscription(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu gosync.Mutex
		var subs, unsubs []string
		srv := mcptest.NewServer(map[string]string{"doc://a": strings.Repeat("a", 600), "doc://b": strings.Repeat("b", 600)}, &mcpsdk.ServerOptions{
			SubscribeHandler: func(_ context.Context, r *mcpsdk.SubscribeRequest) error {
				mu.Lock()
				defer mu.Unlock()
				subs = append(subs, r.Params.URI)
				return nil
			},
			UnsubscribeHandler: func(_ context.Context, r *mcpsdk.UnsubscribeRequest) error {
				mu.Lock()
				defer mu.Unlock()
				unsubs = append(unsubs, r.Params.URI)
				return nil
			},
		})
		m := ctxsync.New(ctxsync.Options{Server: "s", Index: newIndex(t), Dial: legacy(mcptest.Dial(t, "s", srv)), CacheBytes: 1000})
		start(t, m)
		<-m.Ready()
		for _, u := range []string{"doc://a", "doc://b"} { // b does not fit beside a: a is evicted
			if _, err := m.Read(t.Context(), u); err != nil {
				t.Fatal(err)
			}
		}
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		if !slices.Equal(subs, []string{"doc://a", "doc://b"}) || !slices.Equal(unsubs, []string{"doc://a"}) {
			t.Errorf("subscribed %q, unsubscribed %q; want a and b subscribed, a dropped on eviction", subs, unsubs)
		}
	})
}

func TestContinuousListChangedStormIsThrottled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mcptest.NewServer(map[string]string{"doc://a": "a"}, nil)
		var rec mcptest.Recorder
		srv.AddReceivingMiddleware(rec.Middleware())
		m := ctxsync.New(ctxsync.Options{Server: "s", Index: newIndex(t), Dial: mcptest.Dial(t, "s", srv), MaxStormDelay: 10 * time.Second})
		start(t, m)
		<-m.Ready()
		ctx, cancel := context.WithCancel(t.Context())
		var wg gosync.WaitGroup
		wg.Go(func() { // a list_changed about every 20 ms, for 2 minutes
			for i := 0; ctx.Err() == nil; i++ {
				time.Sleep(20 * time.Millisecond)
				mcptest.AddText(srv, fmt.Sprintf("doc://churn/%d", i%10), "churn", "x")
			}
		})
		time.Sleep(2 * time.Minute)
		cancel()
		wg.Wait()
		synctest.Wait()
		lists := rec.Count("resources/list")
		t.Logf("%d lists in 2 minutes of ~6000 notifications", lists)
		if lists > 25 {
			t.Errorf("%d lists in 2 minutes under a continuous storm; want at most 25", lists)
		}
	})
}

func TestReadFetchSaysWhenAndHowContentIsKeptFresh(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mcptest.NewServer(map[string]string{"doc://a": "alpha"}, &mcpsdk.ServerOptions{
			SubscribeHandler:   func(context.Context, *mcpsdk.SubscribeRequest) error { return nil },
			UnsubscribeHandler: func(context.Context, *mcpsdk.UnsubscribeRequest) error { return nil },
		})
		plain := mcptest.NewServer(map[string]string{"doc://b": "beta"}, nil) // no subscribe
		subscribing := ctxsync.New(ctxsync.Options{Server: "s", Index: newIndex(t), Dial: legacy(mcptest.Dial(t, "s", srv))})
		reading := ctxsync.New(ctxsync.Options{Server: "p", Index: newIndex(t), Dial: legacy(mcptest.Dial(t, "p", plain))})
		start(t, subscribing)
		start(t, reading)
		<-subscribing.Ready()
		<-reading.Ready()

		_, first, err := subscribing.ReadFetch(t.Context(), "doc://a")
		if err != nil || !first.Subscribed || first.At.IsZero() {
			t.Fatalf("first read: %+v, %v; want a fetch time, kept fresh by subscription", first, err)
		}
		time.Sleep(time.Minute)
		_, again, err := subscribing.ReadFetch(t.Context(), "doc://a")
		if err != nil || !again.Subscribed || !again.At.Equal(first.At) {
			t.Errorf("cached read: %+v, %v; want the first fetch's time %v", again, err, first.At)
		}

		_, f1, err := reading.ReadFetch(t.Context(), "doc://b")
		if err != nil || f1.Subscribed {
			t.Fatalf("read without subscribe: %+v, %v; want not subscribed", f1, err)
		}
		time.Sleep(time.Minute)
		_, f2, err := reading.ReadFetch(t.Context(), "doc://b")
		if err != nil || !f2.At.After(f1.At) {
			t.Errorf("second read without subscribe: %+v, %v; want a new fetch after %v", f2, err, f1.At)
		}
	})
}

// A server that stays down is warned about once, not at every backoff.
func TestTheSameConnectFailureIsWarnedOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs bytes.Buffer
		var mu gosync.Mutex
		log := slog.New(slog.NewTextHandler(&lockedWriter{mu: &mu, w: &logs}, &slog.HandlerOptions{Level: slog.LevelWarn}))
		attempts := 0
		m := ctxsync.New(ctxsync.Options{Server: "s", Index: newIndex(t), Logger: log,
			Dial: func(context.Context, *mcp.Options) (*mcp.Session, error) {
				mu.Lock()
				attempts++
				mu.Unlock()
				return nil, errors.New("dial tcp 127.0.0.1:1: connect: connection refused")
			}})
		start(t, m)
		time.Sleep(5 * time.Minute)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		if n := strings.Count(logs.String(), "connect failed"); attempts < 3 || n != 1 {
			t.Errorf("%d attempts, %d warnings; want one warning for the same failure\n%s", attempts, n, logs.String())
		}
	})
}

type lockedWriter struct {
	mu *gosync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func TestWhatAServerCallsItselfIsMasked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const secret = "tok-8sJq2LxW0pZr5vYc"
		srv := mcpsdk.NewServer(&mcpsdk.Implementation{Name: "docs for " + secret, Version: "1.2.0+" + secret}, nil)
		srv.AddResource(&mcpsdk.Resource{URI: "doc://a", Name: "a"}, func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
			return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: "doc://a", Text: "a"}}}, nil
		})
		m := ctxsync.New(ctxsync.Options{Server: "s", Dial: mcptest.Dial(t, "s", srv), Index: newIndex(t), Redact: redact.New(secret)})
		start(t, m)
		<-m.Ready()
		synctest.Wait()
		st := m.Status()
		if st.ServerName == "" || st.ServerVersion == "" {
			t.Fatalf("status = %+v, want the server's name and version", st)
		}
		for _, s := range []string{st.ServerName, st.ServerVersion} {
			if strings.Contains(s, "8sJq2LxW") || !strings.Contains(s, redact.Mask) {
				t.Errorf("server info %q, want the secret masked", s)
			}
		}
	})
}

// A name and a version that spell a secret one half each, as ListServers
// shows them side by side, are both masked.
func TestAServerInfoSplittingASecretIsMasked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const secret = "Misty-Books-Jade!"
		const token = "Qx7vR2mK9pL4wZ8nT3jH6cF1"
		for _, info := range [][2]string{
			{"Misty-Bo", "oks-Jade!"},
			// Each half masked alone first: the name as pieces of a
			// generated token, or cut inside the secret.
			{token[:17], token[17:]},
			{strings.Repeat("n", mcp.MaxServerInfoBytes-len(redact.Cut)-8) + "Misty-Bo" + strings.Repeat("z", 100), "oks-Jade!"},
		} {
			srv := mcpsdk.NewServer(&mcpsdk.Implementation{Name: info[0], Version: info[1]}, nil)
			m := ctxsync.New(ctxsync.Options{Server: "s", Dial: mcptest.Dial(t, "s", srv), Index: newIndex(t), Redact: redact.New(secret, token)})
			start(t, m)
			<-m.Ready()
			synctest.Wait()
			if st := m.Status(); st.ServerName != redact.Mask || st.ServerVersion != redact.Mask {
				t.Errorf("server info %q %q, want both masked", st.ServerName, st.ServerVersion)
			}
		}
	})
}
