package sync_test

// Hostile and broken servers against the content pass (content.go).

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	gosync "sync"
	"testing"
	"testing/synctest"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/mcp"
	"github.com/contextd/contextd/internal/mcp/mcptest"
	"github.com/contextd/contextd/internal/resource"
	ctxsync "github.com/contextd/contextd/internal/sync"
)

// readCounter counts resources/read per URI on a go-sdk server.
type readCounter struct {
	mu gosync.Mutex
	n  map[string]int
}

func (c *readCounter) middleware() mcpsdk.Middleware {
	return func(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
		return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
			if rr, ok := req.(*mcpsdk.ReadResourceRequest); ok {
				c.mu.Lock()
				if c.n == nil {
					c.n = map[string]int{}
				}
				c.n[rr.Params.URI]++
				c.mu.Unlock()
			}
			return next(ctx, method, req)
		}
	}
}

func (c *readCounter) get(uri string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[uri]
}

func (c *readCounter) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, v := range c.n {
		n += v
	}
	return n
}

func key(uri string) resource.Key { return resource.Key{Server: "s", URI: uri} }

func addHandler(srv *mcpsdk.Server, uri string, h mcpsdk.ResourceHandler) {
	srv.AddResource(&mcpsdk.Resource{URI: uri, Name: strings.TrimPrefix(uri, "doc://")}, h)
}

func textResult(uri, text string) *mcpsdk.ReadResourceResult {
	return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: uri, Text: text}}}
}

// TestHungReadsDelayReadyBoundedlyAndBlockNothingElse: a server that lists
// fine but never answers a read. The first content pass must give up after
// the documented run of failures (not read a whole chunk of 32 at 10 s per
// read: 80 s, past the one-shot CLI's default --timeout of 60 s), and
// meanwhile the mirror serves searches and other reads.
func TestHungReadsDelayReadyBoundedlyAndBlockNothingElse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mcptest.NewServer(nil, nil)
		var rc readCounter
		srv.AddReceivingMiddleware(rc.middleware())
		for i := range 60 {
			addHandler(srv, fmt.Sprintf("doc://hung-%02d", i), func(ctx context.Context, _ *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
				<-ctx.Done()
				return nil, ctx.Err()
			})
		}
		// Not content-read (declared too big), but readable on demand.
		srv.AddResource(&mcpsdk.Resource{URI: "zz://walrus", Name: "walrus", Size: 1 << 20},
			func(_ context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
				return textResult(req.Params.URI, "walrus"), nil
			})
		ix := newIndex(t)
		m := ctxsync.New(ctxsync.Options{Server: "s", Index: ix, Dial: mcptest.Dial(t, "s", srv)})
		t0 := time.Now()
		start(t, m)

		// While the pass hangs: the descriptors are searchable and the state
		// says the sync went through; another resource reads at once.
		time.Sleep(5 * time.Second)
		select {
		case <-m.Ready():
			t.Fatal("Ready before any read could time out")
		default:
		}
		if st := m.Status(); st.State != ctxsync.StateReady || st.Resources != 61 {
			t.Errorf("during the content pass: state %v, %d resources; want ready, 61", st.State, st.Resources)
		}
		if got := lexURIs(ix, "walrus"); len(got) != 1 {
			t.Errorf("search during the content pass = %v, want zz://walrus", got)
		}
		r0 := time.Now()
		cs, err := m.Read(t.Context(), "zz://walrus")
		if err != nil || len(cs) != 1 || time.Since(r0) > time.Second {
			t.Errorf("read during the content pass = %v, %v after %v", cs, err, time.Since(r0))
		}

		<-m.Ready()
		waited := time.Since(t0)
		// 8 failures in a row, 4 in flight at 10 s each: 20 s.
		if waited > 25*time.Second {
			t.Errorf("Ready after %v with every read hanging; want the pass to stop after 8 failed reads (~20 s)", waited)
		}
		if n := rc.total() - rc.get("zz://walrus"); n > 12 {
			t.Errorf("%d reads sent to a server that answers none; want the pass to stop after about 8", n)
		}
		if got := ix.ContentLen("s"); got != 0 {
			t.Errorf("ContentLen = %d, want 0", got)
		}
	})
}

// TestFailingResourcesDoNotStarveTheRest: a live server that answers an
// error for its first 40 resources (say, permission denied) and text for the
// rest. Every readable resource gets its content indexed in the first pass:
// the breaker is for a server that stopped answering, not for one that
// answers errors.
func TestFailingResourcesDoNotStarveTheRest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mcptest.NewServer(nil, nil)
		var rc readCounter
		srv.AddReceivingMiddleware(rc.middleware())
		for i := range 40 {
			addHandler(srv, fmt.Sprintf("doc://a-denied-%02d", i), func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
				return nil, fmt.Errorf("permission denied")
			})
		}
		for i := range 5 {
			addHandler(srv, fmt.Sprintf("doc://b-open-%d", i), func(_ context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
				return textResult(req.Params.URI, "walrus"), nil
			})
		}
		ix := newIndex(t)
		m := ctxsync.New(ctxsync.Options{Server: "s", Index: ix, Dial: mcptest.Dial(t, "s", srv)})
		start(t, m)
		<-m.Ready()
		if got := lexURIs(ix, "walrus"); len(got) != 5 {
			t.Errorf("content indexed for %v, want the 5 readable resources behind the 40 failing ones", got)
		}
	})
}

// TestUnreadableListedResourceDoesNotLoopRelists: a server keeps listing a
// resource whose read says -32002 (or -32602, which many servers answer for
// an unknown URI). The content pass evicts it; that must not start a cycle
// of re-list (re-adding it), read, evict, re-list... while nothing changes.
func TestUnreadableListedResourceDoesNotLoopRelists(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mcptest.NewServer(map[string]string{"doc://kept": "kept text"}, nil)
		var rec mcptest.Recorder
		srv.AddReceivingMiddleware(rec.Middleware())
		addHandler(srv, "doc://gone", func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
			return nil, mcpsdk.ResourceNotFoundError("doc://gone")
		})
		ix := newIndex(t)
		m := ctxsync.New(ctxsync.Options{Server: "s", Index: ix, Dial: mcptest.Dial(t, "s", srv)})
		start(t, m)
		<-m.Ready()
		synctest.Wait()
		lists0, reads0 := rec.Count("resources/list"), rec.Count("resources/read")
		time.Sleep(5 * time.Minute)
		synctest.Wait()
		if n := rec.Count("resources/list") - lists0; n > 1 {
			t.Errorf("%d re-lists in 5 idle minutes after a not-found in the content pass; want at most 1", n)
		}
		if n := rec.Count("resources/read") - reads0; n > 1 {
			t.Errorf("%d more reads of the unreadable resource in 5 idle minutes; want at most 1", n)
		}
		if _, ok := ix.Get(key("doc://gone")); ok {
			t.Error("unreadable resource still ranked")
		}
		if has, _ := ix.HasContent(key("doc://kept")); !has {
			t.Error("doc://kept lost its content")
		}
	})
}

func heapAlloc() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestHugeUndeclaredTextIsCutAndNotRetained: resources without a declared
// size whose reads return MBs of text. The index keeps the first
// index.MaxContentBytes of each, searchable, and not the whole read (a
// prefix sharing the read's memory would keep all of it alive).
func TestHugeUndeclaredTextIsCutAndNotRetained(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n, size = 10, 1 << 20
		srv := mcptest.NewServer(nil, nil)
		for i := range n {
			addHandler(srv, fmt.Sprintf("doc://huge-%02d", i), func(_ context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
				// "narwhal" only past the indexed prefix.
				text := "walrus " + strings.Repeat("ledger ", size/7) + " narwhal"
				return textResult(req.Params.URI, text), nil
			})
		}
		ix := newIndex(t)
		before := heapAlloc()
		m := ctxsync.New(ctxsync.Options{Server: "s", Index: ix, Dial: mcptest.Dial(t, "s", srv)})
		start(t, m)
		<-m.Ready()
		synctest.Wait()
		grew := int64(heapAlloc()) - int64(before)
		t.Logf("grew %d KiB", grew>>10)
		if got := ix.ContentLen("s"); got != n {
			t.Fatalf("ContentLen = %d, want %d", got, n)
		}
		if got := lexURIs(ix, "walrus"); len(got) != n {
			t.Errorf("walrus (at the start) found in %d resources, want %d", len(got), n)
		}
		if got := lexURIs(ix, "narwhal"); len(got) != 0 {
			t.Errorf("narwhal (past the indexed prefix) found in %v", got)
		}
		if grew > 8<<20 {
			t.Errorf("heap grew by %d MiB after indexing %d reads of %d MiB; want the %d KiB prefixes kept, not the reads",
				grew>>20, n, size>>20, 64)
		}
		runtime.KeepAlive(m)
		runtime.KeepAlive(ix)
	})
}

// rawContentMirror runs a mirror of a RawServer over an in-memory pipe.
func rawContentMirror(t *testing.T, srv *mcptest.RawServer) (*ctxsync.Mirror, func() []string) {
	t.Helper()
	ix := newIndex(t)
	m := ctxsync.New(ctxsync.Options{Server: "s", Index: ix, Dial: func(ctx context.Context, o *mcp.Options) (*mcp.Session, error) {
		return mcp.ConnectTransport(ctx, "s", srv.Transport(t), o)
	}, MinBackoff: time.Hour, MaxBackoff: time.Hour})
	start(t, m)
	<-m.Ready()
	return m, func() []string { return lexURIs(ix, "walrus") }
}

// TestUpdatedResourceWhoseReadFailsIsReadAgainNextPass: the server says an
// indexed resource changed, and the read for it fails. Its old text must
// not stay indexed for good: the next pass reads it again.
func TestUpdatedResourceWhoseReadFailsIsReadAgainNextPass(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu gosync.Mutex
		body, failNext := "walrus", false
		srv := mcptest.NewServer(nil, &mcpsdk.ServerOptions{
			SubscribeHandler:   func(context.Context, *mcpsdk.SubscribeRequest) error { return nil },
			UnsubscribeHandler: func(context.Context, *mcpsdk.UnsubscribeRequest) error { return nil },
		})
		addHandler(srv, "doc://live", func(_ context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
			mu.Lock()
			defer mu.Unlock()
			if failNext {
				failNext = false
				return nil, fmt.Errorf("try again later")
			}
			return textResult(req.Params.URI, body), nil
		})
		ix := newIndex(t)
		m := ctxsync.New(ctxsync.Options{Server: "s", Index: ix, Dial: legacy(mcptest.Dial(t, "s", srv))})
		start(t, m)
		<-m.Ready()
		if _, err := m.Read(t.Context(), "doc://live"); err != nil { // subscribes
			t.Fatal(err)
		}
		mu.Lock()
		body, failNext = "narwhal", true
		mu.Unlock()
		if err := srv.ResourceUpdated(t.Context(), &mcpsdk.ResourceUpdatedNotificationParams{URI: "doc://live"}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second) // the pass for the update runs, and its read fails
		synctest.Wait()
		mu.Lock()
		failed := !failNext
		mu.Unlock()
		if !failed {
			t.Fatal("no read after resources/updated")
		}
		// Any later pass (here after a re-list) must read it again.
		mcptest.AddText(srv, "doc://other", "other", "unrelated")
		time.Sleep(time.Second)
		synctest.Wait()
		if got := lexURIs(ix, "narwhal"); len(got) != 1 {
			t.Errorf("after a failed re-read and a later pass: narwhal in %v, want doc://live", got)
		}
		if got := lexURIs(ix, "walrus"); len(got) != 0 {
			t.Errorf("old text still indexed in %v", got)
		}
	})
}
