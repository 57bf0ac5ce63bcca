package sync_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
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

// listenServer is a go-sdk server of text resources doc://0 … doc://n-1
// that accepts subscriptions, leaves the URIs in refuse out of every
// subscriptions/listen it acknowledges, and records the listen streams
// (2026-07-28) it holds open. end ends the open streams of a URI from the
// server's side.
type listenServer struct {
	srv    *mcpsdk.Server
	refuse map[string]bool

	mu      gosync.Mutex
	open    map[string]int // URI → open listen streams naming it
	listens map[string]int // URI → listen requests naming it
	peak    int            // most streams open at once
	cancels map[string][]context.CancelFunc
}

func newListenServer(n int, scope string, refuse ...string) *listenServer {
	ls := &listenServer{refuse: map[string]bool{}, open: map[string]int{}, listens: map[string]int{}, cancels: map[string][]context.CancelFunc{}}
	for _, u := range refuse {
		ls.refuse[u] = true
	}
	docs := map[string]string{}
	for i := range n {
		docs[fmt.Sprintf("doc://%d", i)] = fmt.Sprintf("text %d", i)
	}
	ls.srv = mcptest.NewServer(docs, &mcpsdk.ServerOptions{
		SubscribeHandler:   func(context.Context, *mcpsdk.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcpsdk.UnsubscribeRequest) error { return nil },
		SetCacheable: func(_ context.Context, req mcpsdk.Request, c *mcpsdk.Cacheable) {
			if _, ok := req.(*mcpsdk.ReadResourceRequest); ok {
				c.TTLMs, c.CacheScope = 0, scope
			}
		},
	})
	ls.srv.AddReceivingMiddleware(func(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
		return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
			p, ok := req.GetParams().(*mcpsdk.SubscriptionsListenParams)
			if method != "subscriptions/listen" || !ok || p.Notifications == nil || len(p.Notifications.ResourceSubscriptions) == 0 {
				return next(ctx, method, req)
			}
			uris := slices.DeleteFunc(slices.Clone(p.Notifications.ResourceSubscriptions), func(u string) bool { return ls.refuse[u] })
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			ls.mu.Lock()
			for _, u := range p.Notifications.ResourceSubscriptions {
				ls.listens[u]++
			}
			for _, u := range uris {
				ls.open[u]++
				ls.cancels[u] = append(ls.cancels[u], cancel)
			}
			ls.peak = max(ls.peak, ls.streams())
			ls.mu.Unlock()
			defer func() {
				ls.mu.Lock()
				for _, u := range uris {
					ls.open[u]--
				}
				ls.mu.Unlock()
			}()
			p.Notifications.ResourceSubscriptions = uris
			return next(ctx, method, req)
		}
	})
	return ls
}

// streams counts open streams; ls.mu is held.
func (ls *listenServer) streams() int {
	n := 0
	for _, c := range ls.open {
		n += c
	}
	return n
}

func (ls *listenServer) state(uri string) (open, listens int) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return ls.open[uri], ls.listens[uri]
}

// end ends, from the server's side, the listen streams naming uri.
func (ls *listenServer) end(uri string) {
	ls.mu.Lock()
	cs := ls.cancels[uri]
	ls.cancels[uri] = nil
	ls.mu.Unlock()
	for _, c := range cs {
		c()
	}
}

// On 2026-07-28 a read subscribes with subscriptions/listen and caches the
// result only when the server's acknowledgement honours the URI;
// notifications/resources/updated on the stream evicts it. A URI left out
// of the acknowledgement is treated as unsubscribed: read each time, its
// stream cancelled.
func TestListenHonouredSubset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ls := newListenServer(2, "public", "doc://1")
		m := ctxsync.New(ctxsync.Options{Server: "s", Index: newIndex(t), ContentMaxResources: noContentIndex,
			Dial: era("2026-07-28", mcptest.Dial(t, "s", ls.srv))})
		start(t, m)
		<-m.Ready()
		read(t, m, "doc://0")
		if f := read(t, m, "doc://0"); f.Freshness() != "subscription" {
			t.Fatalf("honoured doc://0 read twice: %s, want cached under its subscription", f.Freshness())
		}
		if open, listens := ls.state("doc://0"); open != 1 || listens != 1 {
			t.Errorf("doc://0: %d open streams after %d listens, want 1 and 1", open, listens)
		}
		if err := ls.srv.ResourceUpdated(t.Context(), &mcpsdk.ResourceUpdatedNotificationParams{URI: "doc://0"}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		time.Sleep(time.Second) // so that a copy cached before is older than now
		if f := read(t, m, "doc://0"); f.Freshness() == "subscription" && f.At.Before(time.Now()) {
			t.Errorf("doc://0 after resources/updated on its stream: still the cached copy from %v", f.At)
		}
		for range 2 {
			if f := read(t, m, "doc://1"); f.Freshness() != "read" {
				t.Errorf("doc://1, left out of the acknowledgement: %s, want read (not cached)", f.Freshness())
			}
		}
		if _, listens := ls.state("doc://1"); listens != 1 {
			t.Errorf("doc://1 asked for %d times, want once: a URI refused on a session is not asked for again", listens)
		}
	})
}

// A stream the server ends takes the cached copy with it (updates may be
// missed from then on), and the mirror listens again at once and caches a
// new copy; a server that ends the new stream too gets no loop: the next
// re-listen waits a minute, until then reads listen again themselves.
func TestListenEndedByTheServerIsListenedAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ls := newListenServer(1, "public")
		m := ctxsync.New(ctxsync.Options{Server: "s", Index: newIndex(t), ContentMaxResources: noContentIndex,
			Dial: era("2026-07-28", mcptest.Dial(t, "s", ls.srv))})
		start(t, m)
		<-m.Ready()
		read(t, m, "doc://0")
		time.Sleep(time.Second) // so that the copy cached before is older than the end
		ended := time.Now()
		ls.end("doc://0")
		synctest.Wait()
		if open, listens := ls.state("doc://0"); open != 1 || listens != 2 {
			t.Errorf("doc://0 after its stream ended: %d open streams after %d listens, want listened again at once: 1 and 2", open, listens)
		}
		if f := read(t, m, "doc://0"); f.Freshness() != "subscription" || f.At.Before(ended) {
			t.Errorf("after the server ended the stream: a copy read at %v served as %s; want one read since, under the new subscription", f.At, f.Freshness())
		}
		ls.end("doc://0") // again, within the minute
		synctest.Wait()
		if open, listens := ls.state("doc://0"); open != 0 || listens != 2 {
			t.Errorf("doc://0 ended again: %d open streams after %d listens, want no new listen before a read: 0 and 2", open, listens)
		}
		read(t, m, "doc://0")
		if open, listens := ls.state("doc://0"); open != 1 || listens != 3 {
			t.Errorf("doc://0 read after its second end: %d open streams after %d listens, want 1 and 3", open, listens)
		}
	})
}

// Open listen streams stay within the session's bound: reading more private
// resources than the bound (each subscribed, none cached) gives up the
// least recently read stream for each new one; and an entry evicted for room
// cancels its stream.
func TestListenStreamsAreBoundedAndCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const bound = 4
		ls := newListenServer(3*bound, "private")
		dial := func(ctx context.Context, o *mcp.Options) (*mcp.Session, error) {
			o.MaxListens = bound
			return era("2026-07-28", mcptest.Dial(t, "s", ls.srv))(ctx, o)
		}
		m := ctxsync.New(ctxsync.Options{Server: "s", Index: newIndex(t), ContentMaxResources: noContentIndex, Dial: dial})
		start(t, m)
		<-m.Ready()
		for i := range 3 * bound {
			read(t, m, fmt.Sprintf("doc://%d", i))
		}
		synctest.Wait()
		ls.mu.Lock()
		peak, open := ls.peak, ls.streams()
		ls.mu.Unlock()
		// Once settled, exactly the bound is open. (A cancelled stream
		// closes on the server a moment after contextd counts it gone, since
		// notifications/cancelled is sent asynchronously and is not
		// answered, so the server may briefly see a few more.)
		if open != bound {
			t.Errorf("%d streams open after reading %d private resources (at most %d at once); want %d", open, 3*bound, peak, bound)
		}
		if o, _ := ls.state(fmt.Sprintf("doc://%d", 3*bound-1)); o != 1 {
			t.Errorf("the last read's stream is not open")
		}
	})
}

// A read that needs input (input_required, 2026-07-28) fails with a clear
// reason after one request, and the server's handler is not called again;
// a 2025-11-25 session (where the go-sdk server asks the client itself, and
// contextd declares no elicitation) fails too, without a loop.
func TestInputRequiredReadFailsOnce(t *testing.T) {
	for _, proto := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(proto, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := subscribableServer()
				var mu gosync.Mutex
				calls := 0
				srv.AddResource(&mcpsdk.Resource{URI: "doc://ask", Name: "ask"}, func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
					mu.Lock()
					calls++
					mu.Unlock()
					return &mcpsdk.ReadResourceResult{InputRequests: mcpsdk.InputRequestMap{
						"who": &mcpsdk.ElicitParams{Message: "who are you?", RequestedSchema: map[string]any{"type": "object"}},
					}}, nil
				})
				m := ctxsync.New(ctxsync.Options{Server: "s", Index: newIndex(t), ContentMaxResources: noContentIndex,
					Dial: era(proto, mcptest.Dial(t, "s", srv))})
				start(t, m)
				<-m.Ready()
				_, _, err := m.ReadFetch(t.Context(), "doc://ask")
				if err == nil {
					t.Fatal("a read that needs input succeeded")
				}
				if proto >= "2026-07-28" && !errors.Is(err, mcp.ErrInputRequired) {
					t.Errorf("read: %v, want ErrInputRequired", err)
				}
				mu.Lock()
				defer mu.Unlock()
				if calls != 1 {
					t.Errorf("the server's read handler ran %d times, want once", calls)
				}
			})
		})
	}
}

// Cancelling a resource's listen stream (eviction) must not cost the
// session its list_changed notifications: the next list change is still
// mirrored within the debounce window.
func TestListChangedSurvivesACancelledStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ls := newListenServer(2, "public")
		ix := newIndex(t)
		m := ctxsync.New(ctxsync.Options{Server: "s", Index: ix, ContentMaxResources: noContentIndex, CacheBytes: 300,
			Dial: era("2026-07-28", mcptest.Dial(t, "s", ls.srv))})
		start(t, m)
		<-m.Ready()
		read(t, m, "doc://0")
		read(t, m, "doc://1") // evicts doc://0 for room: its stream is cancelled
		synctest.Wait()
		if open, _ := ls.state("doc://0"); open != 0 {
			t.Fatalf("doc://0 evicted, yet %d streams open for it", open)
		}
		mcptest.AddText(ls.srv, "doc://new", "new", "new")
		time.Sleep(time.Second)
		synctest.Wait()
		if m.Status().Resources != 3 {
			t.Errorf("%d resources mirrored a second after a list change, want 3: list_changed was lost with the cancelled stream", m.Status().Resources)
		}
	})
}

// Streams contextd cancels itself, as its cache evicts, do not space out
// the rounds that restore list_changed: spaced as a server ending them
// would be, ten evictions a second left the session deaf to list
// changes for seconds (up to 30), and copies cached under a subscription
// whose descriptor changed meanwhile were served as fresh.
func TestListChangedIsRestoredSoonAfterEveryEviction(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ls := newListenServer(2, "public")
		m := ctxsync.New(ctxsync.Options{Server: "s", Index: newIndex(t), ContentMaxResources: noContentIndex, CacheBytes: 300,
			Dial: era("2026-07-28", mcptest.Dial(t, "s", ls.srv))})
		start(t, m)
		<-m.Ready()
		for i := range 45 { // each read evicts the other's copy: its stream is cancelled
			read(t, m, fmt.Sprintf("doc://%d", i%2))
			time.Sleep(100 * time.Millisecond)
			synctest.Wait()
		}
		mcptest.AddText(ls.srv, "doc://new", "new", "new")
		time.Sleep(time.Second)
		synctest.Wait()
		if m.Status().Resources != 3 {
			t.Errorf("%d resources mirrored a second after a list change, want 3: list_changed was not restored after the evictions", m.Status().Resources)
		}
	})
}

// A server that speaks 2026-07-28 on one session and 2025-11-25 on the
// next (a rollback, or a proxy in front of two versions) is served on both:
// each session subscribes in its own era, caches, and evicts on
// notifications/resources/updated.
func TestEraChangesOnReconnect(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ls := newListenServer(1, "public")
		var mu gosync.Mutex
		var sessions []*mcpsdk.ServerSession
		inner := dialWith(t, ls.srv, func(ss *mcpsdk.ServerSession) {
			mu.Lock()
			defer mu.Unlock()
			sessions = append(sessions, ss)
		})
		eras := []string{"2026-07-28", "2025-11-25", "2026-07-28"}
		dial := func(ctx context.Context, o *mcp.Options) (*mcp.Session, error) {
			mu.Lock()
			o.ProtocolVersion = eras[min(len(sessions), len(eras)-1)]
			mu.Unlock()
			return inner(ctx, o)
		}
		m := ctxsync.New(ctxsync.Options{Server: "s", Index: newIndex(t), ContentMaxResources: noContentIndex, Dial: dial,
			MinBackoff: 10 * time.Millisecond, MaxBackoff: 20 * time.Millisecond})
		start(t, m)
		<-m.Ready()
		for i, want := range eras {
			synctest.Wait()
			if got := m.Status().Protocol; got != want {
				t.Fatalf("session %d negotiated %q, want %q", i+1, got, want)
			}
			read(t, m, "doc://0")
			if f := read(t, m, "doc://0"); f.Freshness() != "subscription" {
				t.Errorf("session %d (%s): read twice: %s, want cached under its subscription", i+1, want, f.Freshness())
			}
			if err := ls.srv.ResourceUpdated(t.Context(), &mcpsdk.ResourceUpdatedNotificationParams{URI: "doc://0"}); err != nil {
				t.Fatal(err)
			}
			synctest.Wait()
			time.Sleep(time.Second)
			if f := read(t, m, "doc://0"); f.Freshness() == "subscription" && f.At.Before(time.Now()) {
				t.Errorf("session %d (%s): after resources/updated, the copy cached at %v is still served", i+1, want, f.At)
			}
			mu.Lock()
			sessions[len(sessions)-1].Close()
			mu.Unlock()
			time.Sleep(time.Second)
		}
	})
}

// Two servers, one negotiated at 2026-07-28 and one at 2025-11-25, side by
// side: each mirror's requests carry the per-request _meta of its own era
// (the protocol version on every 2026-07-28 request, none before), each
// caches under its era's subscription and drops the copy on the server's
// update.
func TestBothErasSideBySide(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		type server struct {
			proto string
			ls    *listenServer
			m     *ctxsync.Mirror
			mu    gosync.Mutex
			meta  map[string]string // method → the _meta protocol version of its last request
		}
		var servers []*server
		for _, proto := range []string{"2026-07-28", "2025-11-25"} {
			s := &server{proto: proto, ls: newListenServer(1, "public"), meta: map[string]string{}}
			s.ls.srv.AddReceivingMiddleware(func(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
				return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
					if p, ok := req.GetParams().(interface{ GetMeta() map[string]any }); ok && p != nil {
						v, _ := p.GetMeta()["io.modelcontextprotocol/protocolVersion"].(string)
						s.mu.Lock()
						s.meta[method] = v
						s.mu.Unlock()
					}
					return next(ctx, method, req)
				}
			})
			s.m = ctxsync.New(ctxsync.Options{Server: "s", Index: newIndex(t), ContentMaxResources: noContentIndex,
				Dial: era(proto, mcptest.Dial(t, "s", s.ls.srv))})
			start(t, s.m)
			servers = append(servers, s)
		}
		for _, s := range servers {
			<-s.m.Ready()
			if got := s.m.Status().Protocol; got != s.proto {
				t.Errorf("%s server: negotiated %q", s.proto, got)
			}
			read(t, s.m, "doc://0")
			if f := read(t, s.m, "doc://0"); f.Freshness() != "subscription" {
				t.Errorf("%s server: read twice: %s, want cached under its subscription", s.proto, f.Freshness())
			}
			if err := s.ls.srv.ResourceUpdated(t.Context(), &mcpsdk.ResourceUpdatedNotificationParams{URI: "doc://0"}); err != nil {
				t.Fatal(err)
			}
			synctest.Wait()
			time.Sleep(time.Second)
			if f := read(t, s.m, "doc://0"); f.Freshness() == "subscription" && f.At.Before(time.Now()) {
				t.Errorf("%s server: the copy cached at %v outlived the update", s.proto, f.At)
			}
			want := ""
			if s.proto >= "2026-07-28" {
				want = s.proto
			}
			s.mu.Lock()
			for _, method := range []string{"resources/list", "resources/read"} {
				if got := s.meta[method]; got != want {
					t.Errorf("%s server: %s carried _meta protocolVersion %q, want %q", s.proto, method, got, want)
				}
			}
			s.mu.Unlock()
		}
	})
}

// A URI evicted (its stream cancelled) and read again at once: a go-sdk
// server drops the URI's subscription when the old stream ends, so a new
// stream opened before that would be dropped with it, silently. The update
// that follows must still reach the cached copy.
func TestResubscribeAfterEvictionIsNotLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ls := newListenServer(2, "public")
		m := ctxsync.New(ctxsync.Options{Server: "s", Index: newIndex(t), ContentMaxResources: noContentIndex, CacheBytes: 300,
			Dial: era("2026-07-28", mcptest.Dial(t, "s", ls.srv))})
		start(t, m)
		<-m.Ready()
		for range 3 {
			read(t, m, "doc://0")
			read(t, m, "doc://1") // evicts doc://0: its stream is cancelled
			read(t, m, "doc://0") // at once
			synctest.Wait()
			read(t, m, "doc://0")
		}
		synctest.Wait()
		if err := ls.srv.ResourceUpdated(t.Context(), &mcpsdk.ResourceUpdatedNotificationParams{URI: "doc://0"}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		time.Sleep(time.Second)
		if f := read(t, m, "doc://0"); f.Freshness() == "subscription" && f.At.Before(time.Now()) {
			t.Errorf("after resources/updated: the copy cached at %v is still served; its subscription was lost", f.At)
		}
	})
}

// A 2026-07-28 server that ends every subscriptions/listen stream at once
// (here with an error) gets no loop of new list_changed streams: they are
// spaced out, doubling up to 30 s apart.
func TestListenStreamsEndedAtOnceAreNotReopenedInALoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mcptest.NewServer(map[string]string{"doc://0": "zero"}, &mcpsdk.ServerOptions{
			SubscribeHandler:   func(context.Context, *mcpsdk.SubscribeRequest) error { return nil },
			UnsubscribeHandler: func(context.Context, *mcpsdk.UnsubscribeRequest) error { return nil },
		})
		var mu gosync.Mutex
		listens := 0
		srv.AddReceivingMiddleware(func(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
			return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
				if method != "subscriptions/listen" {
					return next(ctx, method, req)
				}
				mu.Lock()
				listens++
				n := listens
				mu.Unlock()
				if n > 500 { // a loop: stop answering, so the test ends
					<-ctx.Done()
					return nil, ctx.Err()
				}
				return nil, &jsonrpc.Error{Code: -32603, Message: "no streams here"}
			}
		})
		m := ctxsync.New(ctxsync.Options{Server: "s", Index: newIndex(t), ContentMaxResources: noContentIndex,
			Dial: era("2026-07-28", mcptest.Dial(t, "s", srv))})
		start(t, m)
		<-m.Ready()
		read(t, m, "doc://0")
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		mu.Lock()
		n := listens
		mu.Unlock()
		// 0.25 + 0.5 + … + 30 s, then every 30 s: about a dozen in 2 minutes.
		if n > 30 {
			t.Errorf("%d subscriptions/listen requests in 2 minutes to a server that ends each at once, want them spaced out", n)
		}
	})
}

// A server that holds each list_changed stream a while before it ends it
// is spaced out as one that ends them at once: rounds that came more than
// a second apart counted as after a quiet spell, so a server holding each
// stream for a second got a new stream and a full re-list every second.
func TestListenStreamsHeldAWhileAreNotReopenedInALoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mcptest.NewServer(map[string]string{"doc://0": "zero"}, &mcpsdk.ServerOptions{
			SubscribeHandler:   func(context.Context, *mcpsdk.SubscribeRequest) error { return nil },
			UnsubscribeHandler: func(context.Context, *mcpsdk.UnsubscribeRequest) error { return nil },
		})
		var mu gosync.Mutex
		listens, lists := 0, 0
		srv.AddReceivingMiddleware(func(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
			return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
				mu.Lock()
				switch method {
				case "subscriptions/listen":
					listens++
				case "resources/list":
					lists++
				}
				mu.Unlock()
				if method != "subscriptions/listen" {
					return next(ctx, method, req)
				}
				held, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
				defer cancel()
				return next(held, method, req)
			}
		})
		m := ctxsync.New(ctxsync.Options{Server: "s", Index: newIndex(t), ContentMaxResources: noContentIndex,
			Dial: era("2026-07-28", mcptest.Dial(t, "s", srv))})
		start(t, m)
		<-m.Ready()
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		// Each held 1.5 s, then 0.25 + 0.5 + … + 30 s apart: about ten.
		if listens > 25 || lists > 25 {
			t.Errorf("%d subscriptions/listen and %d resources/list requests in 2 minutes to a server that ends each stream after 1.5 s, want them spaced out", listens, lists)
		}
	})
}
