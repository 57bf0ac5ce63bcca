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

	"github.com/contextd/contextd/internal/config"
	"github.com/contextd/contextd/internal/index"
	"github.com/contextd/contextd/internal/index/indextest"
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
		const n, size = 8, 2 * index.MaxContentBytes
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
		if got := ix.ContentLen("s"); got != n {
			t.Fatalf("ContentLen = %d, want %d", got, n)
		}
		if got := lexURIs(ix, "walrus"); len(got) != n {
			t.Errorf("walrus (at the start) found in %d resources, want %d", len(got), n)
		}
		if got := lexURIs(ix, "narwhal"); len(got) != 0 {
			t.Errorf("narwhal (past the indexed prefix) found in %v", got)
		}
		// The prefixes, and the transports' buffers, which grow to the
		// biggest message (about 3.5 reads' worth measured); the whole
		// reads kept would be 8 MiB more.
		if grew > n*index.MaxContentBytes+4*size {
			t.Errorf("heap grew by %d MiB after indexing %d reads of %d MiB; want the %d KiB prefixes kept, not the reads",
				grew>>20, n, size>>20, index.MaxContentBytes>>10)
		}
		runtime.KeepAlive(m)
		runtime.KeepAlive(ix)
	})
}

// TestUpdatedResourceWhoseReadFailsIsReadAgainNextPass: the server says an
// indexed resource changed, and the read for it fails. Its old text must
// not stay indexed for good: the next pass reads it again.
func TestUpdatedResourceWhoseReadFailsIsReadAgainNextPass(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu gosync.Mutex
		body, failNext := "walrus", false
		srv := subscribableServer()
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

// TestOddReadResultsAreIndexedOrRememberedOnce: reads that return blobs
// mixed with text, only blobs, no contents at all, another URI's contents,
// or text with invalid UTF-8. Text items are indexed under the URI read;
// a read with nothing to index is remembered, and none is read again by a
// later pass while its descriptor is unchanged.
func TestOddReadResultsAreIndexedOrRememberedOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mcptest.NewServer(nil, nil)
		var rc readCounter
		srv.AddReceivingMiddleware(rc.middleware())
		results := map[string][]*mcpsdk.ResourceContents{
			"doc://mixed": {
				{URI: "doc://mixed", MIMEType: "image/png", Blob: []byte("walrus in a blob")},
				{URI: "doc://mixed", Text: "walrus in text"},
				{URI: "doc://mixed", Text: "   \n\t "},
			},
			"doc://blob-only": {{URI: "doc://blob-only", MIMEType: "application/octet-stream", Blob: []byte("walrus")}},
			"doc://empty":     {},
			"doc://elsewhere": {{URI: "doc://somewhere-else", Text: "narwhal"}},
			"doc://bad-utf8":  {{URI: "doc://bad-utf8", Text: "caf\xe9 \xff\xfe dugong \xc3"}},
		}
		for uri, cs := range results {
			addHandler(srv, uri, func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
				return &mcpsdk.ReadResourceResult{Contents: cs}, nil
			})
		}
		ix := newIndex(t)
		m := ctxsync.New(ctxsync.Options{Server: "s", Index: ix, Dial: mcptest.Dial(t, "s", srv)})
		start(t, m)
		<-m.Ready()
		if got := lexURIs(ix, "walrus"); len(got) != 1 || got[0] != "doc://mixed" {
			t.Errorf("walrus in %v, want only doc://mixed (its text item; blobs are not indexed)", got)
		}
		if got := lexURIs(ix, "narwhal"); len(got) != 1 || got[0] != "doc://elsewhere" {
			t.Errorf("narwhal in %v, want doc://elsewhere, the URI read", got)
		}
		if got := lexURIs(ix, "dugong"); len(got) != 1 || got[0] != "doc://bad-utf8" {
			t.Errorf("dugong in %v, want doc://bad-utf8", got)
		}
		if _, ok := ix.Get(key("doc://somewhere-else")); ok {
			t.Error("a read result's URI became a descriptor")
		}
		for uri := range results {
			if has, _ := ix.HasContent(key(uri)); !has {
				t.Errorf("%s not remembered as read", uri)
			}
		}
		mcptest.AddText(srv, "doc://later", "later", "later") // list_changed: a re-list and a pass
		time.Sleep(time.Second)
		synctest.Wait()
		for uri := range results {
			if n := rc.get(uri); n != 1 {
				t.Errorf("%s read %d times, want once", uri, n)
			}
		}
		if n := rc.get("doc://later"); n != 1 {
			t.Errorf("new resource read %d times by the next pass, want 1", n)
		}
	})
}

// TestUpdatedStormReadsAtMostOncePerDebounce: a server that sends
// notifications/resources/updated for an indexed resource without pause.
// The content pass runs at most once per debounce window, not once per
// notification.
func TestUpdatedStormReadsAtMostOncePerDebounce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := subscribableServer()
		var rc readCounter
		srv.AddReceivingMiddleware(rc.middleware())
		addHandler(srv, "doc://busy", func(_ context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
			return textResult(req.Params.URI, "walrus"), nil
		})
		ix := newIndex(t)
		m := ctxsync.New(ctxsync.Options{Server: "s", Index: ix, Dial: legacy(mcptest.Dial(t, "s", srv))})
		start(t, m)
		<-m.Ready()
		if _, err := m.Read(t.Context(), "doc://busy"); err != nil { // subscribes
			t.Fatal(err)
		}
		reads0 := rc.get("doc://busy")
		// 1000 at once, then one every 10 ms for 10 s.
		for range 1000 {
			if err := srv.ResourceUpdated(t.Context(), &mcpsdk.ResourceUpdatedNotificationParams{URI: "doc://busy"}); err != nil {
				t.Fatal(err)
			}
		}
		for range 1000 {
			time.Sleep(10 * time.Millisecond)
			if err := srv.ResourceUpdated(t.Context(), &mcpsdk.ResourceUpdatedNotificationParams{URI: "doc://busy"}); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(time.Second)
		synctest.Wait()
		n := rc.get("doc://busy") - reads0
		if n < 1 || n > 10*4+2 {
			t.Errorf("%d reads for 2000 updates over 10 s, want between 1 and one per 250 ms debounce window", n)
		}
		if got := lexURIs(ix, "walrus"); len(got) != 1 {
			t.Errorf("after the storm: walrus in %v", got)
		}
	})
}

// TestDescriptorChangingDuringThePass: the server changes a resource while
// the pass reads it (its list entry grows and the read returns the new
// text), and adds another. The index ends with the new text under the new
// descriptor and the new resource's text, without help.
func TestDescriptorChangingDuringThePass(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mcptest.NewServer(nil, nil)
		var rc readCounter
		srv.AddReceivingMiddleware(rc.middleware())
		var once gosync.Once
		srv.AddResource(&mcpsdk.Resource{URI: "doc://racy", Name: "racy", MIMEType: "text/plain", Size: 6},
			func(_ context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
				once.Do(func() {
					// While this read is in flight: the resource grows, and
					// a new one appears (each sends list_changed).
					go func() {
						mcptest.AddText(srv, "doc://racy", "racy", "walrus narwhal")
						mcptest.AddText(srv, "doc://new", "new", "dugong")
					}()
					time.Sleep(time.Millisecond)
				})
				return textResult(req.Params.URI, "walrus narwhal"), nil
			})
		ix := newIndex(t)
		m := ctxsync.New(ctxsync.Options{Server: "s", Index: ix, Dial: mcptest.Dial(t, "s", srv)})
		start(t, m)
		<-m.Ready()
		time.Sleep(2 * time.Second)
		synctest.Wait()
		d, ok := ix.Get(key("doc://racy"))
		if !ok || d.Size != int64(len("walrus narwhal")) {
			t.Fatalf("descriptor after the re-list = %+v, %v", d, ok)
		}
		if has, _ := ix.HasContent(key("doc://racy")); !has {
			t.Error("the changed resource has no content for its new descriptor")
		}
		if got := lexURIs(ix, "narwhal"); len(got) != 1 {
			t.Errorf("narwhal in %v, want doc://racy", got)
		}
		if got := lexURIs(ix, "dugong"); len(got) != 1 {
			t.Errorf("dugong in %v, want doc://new, added during the pass", got)
		}
		if n := rc.get("doc://racy"); n != 2 {
			t.Errorf("doc://racy read %d times, want 2 (once per version)", n)
		}
	})
}

// TestStopDuringAHungPass: the mirror is stopped while every content read
// of a pass hangs. Run returns at once, and the index keeps what earlier
// passes indexed.
func TestStopDuringAHungPass(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mcptest.NewServer(map[string]string{"doc://a-ok": "walrus"}, nil)
		ix := newIndex(t)
		m := ctxsync.New(ctxsync.Options{Server: "s", Index: ix, Dial: mcptest.Dial(t, "s", srv)})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- m.Run(ctx) }()
		<-m.Ready()
		for i := range 10 {
			addHandler(srv, fmt.Sprintf("doc://b-hung-%d", i), func(ctx context.Context, _ *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
				<-ctx.Done()
				return nil, ctx.Err()
			})
		}
		time.Sleep(3 * time.Second) // re-listed; the pass waits on the hung reads
		synctest.Wait()
		if got := ix.Len("s"); got != 11 {
			t.Fatalf("%d descriptors before stopping, want 11", got)
		}
		cancel()
		t0 := time.Now()
		if err := <-done; err != nil {
			t.Errorf("Run = %v, want nil on cancellation", err)
		}
		if el := time.Since(t0); el > 100*time.Millisecond {
			t.Errorf("Run returned %v after cancellation, want at once", el)
		}
		if got := ix.Len("s"); got != 11 {
			t.Errorf("%d descriptors after stopping, want 11", got)
		}
		if got := ix.ContentLen("s"); got != 1 {
			t.Errorf("%d contents after stopping, want doc://a-ok's", got)
		}
		if got := lexURIs(ix, "walrus"); len(got) != 1 {
			t.Errorf("walrus in %v after stopping, want doc://a-ok", got)
		}
	})
}

// TestThousandsOfResourcesAreCapped: 1,500 small text resources. By
// default the pass reads them all; with ContentMaxResources 1,000 it reads
// that many, later passes read none while the cap is full, and room freed
// by removals is filled.
func TestThousandsOfResourcesAreCapped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mcptest.NewServer(nil, nil)
		for i := range 1500 {
			mcptest.AddText(srv, fmt.Sprintf("doc://r%04d", i), fmt.Sprintf("r%04d", i), fmt.Sprintf("walrus number %d", i))
		}
		ix := newIndex(t)
		m := ctxsync.New(ctxsync.Options{Server: "s", Index: ix, Dial: mcptest.Dial(t, "s", srv)})
		start(t, m)
		<-m.Ready()
		if got := ix.ContentLen("s"); got != 1500 {
			t.Fatalf("no cap: %d contents, want 1500", got)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		srv := mcptest.NewServer(nil, nil)
		var rc readCounter
		srv.AddReceivingMiddleware(rc.middleware())
		for i := range 1500 {
			mcptest.AddText(srv, fmt.Sprintf("doc://r%04d", i), fmt.Sprintf("r%04d", i), fmt.Sprintf("walrus number %d", i))
		}
		ix := newIndex(t)
		m := ctxsync.New(ctxsync.Options{Server: "s", Index: ix, Dial: mcptest.Dial(t, "s", srv), ContentMaxResources: 1000})
		start(t, m)
		<-m.Ready()
		if st := m.Status(); st.ContentWaiting != 500 || st.ContentBound != "count" {
			t.Errorf("first pass: %d waiting (%q), want 500 (\"count\")", st.ContentWaiting, st.ContentBound)
		}
		if got, n := ix.ContentLen("s"), rc.total(); got != 1000 || n != 1000 {
			t.Fatalf("first pass: %d contents from %d reads, want 1000 from 1000", got, n)
		}
		mcptest.AddText(srv, "doc://zz-extra", "extra", "extra")
		time.Sleep(time.Second)
		synctest.Wait()
		if n := rc.total(); n != 1000 {
			t.Errorf("a pass with the cap full read %d more", n-1000)
		}
		// Remove ten indexed ones: ten others are read.
		var uris []string
		for i := range 10 {
			uris = append(uris, fmt.Sprintf("doc://r%04d", i))
		}
		srv.RemoveResources(uris...)
		time.Sleep(time.Second)
		synctest.Wait()
		if got, n := ix.ContentLen("s"), rc.total(); got != 1000 || n != 1010 {
			t.Errorf("after removing 10: %d contents from %d reads, want 1000 from 1010", got, n)
		}
	})
}

// TestSessionExpiringDuringThePass: a Streamable HTTP server expires the
// session on the content pass's first read. The mirror re-initializes and
// the next session's pass indexes everything.
func TestSessionExpiringDuringThePass(t *testing.T) {
	srv := &mcptest.RawServer{Results: map[string]string{
		"initialize":     `{"protocolVersion":"2025-06-18","capabilities":{"resources":{}},"serverInfo":{"name":"raw","version":"0"}}`,
		"resources/list": `{"resources":[{"uri":"x://a","name":"a"},{"uri":"x://b","name":"b"}]}`,
		"resources/read": `{"contents":[{"uri":"x://a","mimeType":"text/plain","text":"walrus"}]}`,
	}}
	srv.ExpireOn("resources/read", 1)
	url := srv.StartHTTP(t)
	m := ctxsync.New(ctxsync.Options{Server: "web", Index: newIndex(t), Dial: func(ctx context.Context, o *mcp.Options) (*mcp.Session, error) {
		return mcp.Connect(ctx, config.Server{Name: "web", Transport: config.TransportHTTP, URL: url}, o)
	}})
	start(t, m)
	<-m.Ready()
	eventually(t, "both contents indexed on a new session", func() bool { return m.Status().Contents == 2 })
	if n := srv.Count("initialize"); n != 2 {
		t.Errorf("%d initializes, want 2 (one re-initialize after the expiry)", n)
	}
	if st := m.Status(); st.State != ctxsync.StateReady {
		t.Errorf("state %v after the expiry, want ready", st.State)
	}
}

// rawContentMirror runs a mirror of a RawServer over an in-memory pipe and
// waits for its first content pass.
func rawContentMirror(t *testing.T, srv *mcptest.RawServer) (*ctxsync.Mirror, *index.Index) {
	t.Helper()
	ix := newIndex(t)
	m := ctxsync.New(ctxsync.Options{Server: "s", Index: ix, Dial: func(ctx context.Context, o *mcp.Options) (*mcp.Session, error) {
		return mcp.ConnectTransport(ctx, "s", srv.Transport(t), o)
	}, MinBackoff: time.Hour, MaxBackoff: time.Hour})
	start(t, m)
	<-m.Ready()
	return m, ix
}

func rawList(n int) string {
	var b strings.Builder
	b.WriteString(`{"resources":[`)
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"uri":"x://r%02d","name":"r%02d"}`, i, i)
	}
	b.WriteString("]}")
	return b.String()
}

// TestMalformedReadResults: read results that do not decode (a number for
// text) fail each read at once, and a server that answers nothing else
// stops the pass like one that does not answer; invalid UTF-8 bytes and lone surrogates in
// text are replaced, and the rest of the text is indexed.
func TestMalformedReadResults(t *testing.T) {
	t.Run("undecodable", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv := &mcptest.RawServer{Results: map[string]string{
				"resources/list": rawList(40),
				"resources/read": `{"contents":[{"uri":"x://r00","text":42}]}`,
			}}
			t0 := time.Now()
			m, ix := rawContentMirror(t, srv)
			if el := time.Since(t0); el > time.Second {
				t.Errorf("Ready after %v, want at once", el)
			}
			// A server that answers only garbage trips the breaker.
			if n := srv.Count("resources/read"); n < 8 || n > 12 {
				t.Errorf("%d reads, want the pass to stop after about 8", n)
			}
			if st := m.Status(); st.State != ctxsync.StateReady || st.Resources != 40 || st.Contents != 0 {
				t.Errorf("status %v, %d resources, %d contents; want ready, 40, 0", st.State, st.Resources, st.Contents)
			}
			if got := ix.ContentLen("s"); got != 0 {
				t.Errorf("ContentLen = %d, want 0", got)
			}
		})
	})
	t.Run("bad text", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv := &mcptest.RawServer{Results: map[string]string{
				"resources/list": rawList(1),
				"resources/read": "{\"contents\":[{\"uri\":\"x://r00\",\"text\":\"walrus \\ud800 \xff\xfe caf\xe9 dugong\"}]}",
			}}
			_, ix := rawContentMirror(t, srv)
			for _, w := range []string{"walrus", "dugong"} {
				if got := lexURIs(ix, w); len(got) != 1 {
					t.Errorf("%s in %v, want x://r00", w, got)
				}
			}
		})
	})
}

// TestContentWithBlankStartSurvivesADescriptorEdit: text whose first
// kilobytes are blank (a generated file padded with spaces, say) is still
// indexed, and stays indexed when the server edits the descriptor's
// description (its content stamp, so its content, is unchanged and it is
// not read again).
func TestContentWithBlankStartSurvivesADescriptorEdit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		text := strings.Repeat(" ", 5000) + "walrus ledger"
		srv := mcptest.NewServer(nil, nil)
		var rc readCounter
		srv.AddReceivingMiddleware(rc.middleware())
		add := func(desc string) {
			srv.AddResource(&mcpsdk.Resource{URI: "doc://padded", Name: "padded", Description: desc, MIMEType: "text/plain", Size: int64(len(text))},
				func(_ context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
					return textResult(req.Params.URI, text), nil
				})
		}
		add("a padded file")
		ix := newIndex(t)
		m := ctxsync.New(ctxsync.Options{Server: "s", Index: ix, Dial: mcptest.Dial(t, "s", srv)})
		start(t, m)
		<-m.Ready()
		if got := lexURIs(ix, "walrus"); len(got) != 1 {
			t.Fatalf("walrus in %v after the first pass, want doc://padded", got)
		}
		add("a padded file, described better") // list_changed
		time.Sleep(time.Second)
		synctest.Wait()
		if d, _ := ix.Get(key("doc://padded")); d.Description != "a padded file, described better" {
			t.Fatalf("description not re-listed: %q", d.Description)
		}
		if n := rc.get("doc://padded"); n != 1 {
			t.Fatalf("read %d times, want once (its content is current)", n)
		}
		if has, _ := ix.HasContent(key("doc://padded")); !has {
			t.Fatal("content dropped by a description edit")
		}
		if got := lexURIs(ix, "walrus"); len(got) != 1 {
			t.Errorf("walrus in %v after a description edit, want doc://padded: its content is marked indexed but its words are gone", got)
		}
	})
}

// TestReadyWaitsForAFirstPassThatCompletes: a session that ends in the
// middle of the first content pass must not close Ready with part of the
// text indexed; the next session's pass does, so a one-shot command ranks
// with every text.
func TestReadyWaitsForAFirstPassThatCompletes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mcptest.NewServer(nil, nil)
		var mu gosync.Mutex
		var first *mcpsdk.ServerSession // the first session, ended by its first read
		killed := false
		for i := range 3 {
			uri := fmt.Sprintf("doc://%d", i)
			addHandler(srv, uri, func(ctx context.Context, _ *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
				mu.Lock()
				kill := !killed && first != nil
				killed = killed || kill
				ss := first
				mu.Unlock()
				if kill {
					go ss.Close()
					<-ctx.Done()
					return nil, ctx.Err()
				}
				return textResult(uri, "text of "+uri), nil
			})
		}
		dial := dialWith(t, srv, func(ss *mcpsdk.ServerSession) {
			mu.Lock()
			if first == nil {
				first = ss
			}
			mu.Unlock()
		})
		ix := newIndex(t)
		m := ctxsync.New(ctxsync.Options{Server: "s", Index: ix, Dial: dial})
		start(t, m)
		<-m.Ready()
		if got := ix.ContentLen("s"); got != 3 {
			t.Errorf("at Ready, %d texts indexed; want all 3 (the session that ended mid-pass must not count as a first pass)", got)
		}
		if st := m.Status(); st.Syncs < 2 {
			t.Errorf("%d syncs at Ready; want the second session's", st.Syncs)
		}
	})
}

// TestAResourceWhoseReadKillsTheServer: every session dies while the
// content pass reads doc://poison. Ready must still close (a second session
// cut short does not defer it again), and after two breaks with the read in
// flight the pass stops reading it, so the server stays up and the rest is
// indexed.
func TestAResourceWhoseReadKillsTheServer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mcptest.NewServer(nil, nil)
		var mu gosync.Mutex
		poisonReads, dials := 0, 0
		addHandler(srv, "doc://poison", func(ctx context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
			mu.Lock()
			poisonReads++
			mu.Unlock()
			go req.Session.Close()
			<-ctx.Done()
			return nil, ctx.Err()
		})
		for i := range 5 {
			mcptest.AddText(srv, fmt.Sprintf("doc://%d", i), "doc", fmt.Sprintf("text %d", i))
		}
		dial := countingDial(t, srv, &mu, &dials)
		ix := newIndex(t)
		m := ctxsync.New(ctxsync.Options{Server: "s", Index: ix, Dial: dial})
		start(t, m)
		select {
		case <-m.Ready():
		case <-time.After(10 * time.Minute):
			mu.Lock()
			defer mu.Unlock()
			t.Fatalf("Ready still open after 10 minutes: %d sessions, %+v", dials, m.Status())
		}
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		if poisonReads != 2 {
			t.Errorf("doc://poison read %d times in 10 minutes; want 2 (then left alone for a while)", poisonReads)
		}
		if dials > 3 {
			t.Errorf("%d sessions in 10 minutes; want the server to stay up once the poison is left alone", dials)
		}
		if got := ix.ContentLen("s"); got != 5 {
			t.Errorf("%d texts indexed; want the 5 whose reads do not kill the server (the reads in flight beside it are not blamed)", got)
		}
	})
}

// TestReadyClosesWhenEverySessionDiesInItsFirstPass: a server that dies at
// any read. The first session cut short leaves Ready to the next; the
// second closes it, rather than one-shot commands waiting out --timeout.
func TestReadyClosesWhenEverySessionDiesInItsFirstPass(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mcptest.NewServer(nil, nil)
		for i := range 6 {
			addHandler(srv, fmt.Sprintf("doc://%d", i), func(ctx context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
				go req.Session.Close()
				<-ctx.Done()
				return nil, ctx.Err()
			})
		}
		var mu gosync.Mutex
		dials := 0
		dial := mcptest.Dial(t, "s", srv)
		m := ctxsync.New(ctxsync.Options{Server: "s", Index: newIndex(t), Dial: func(ctx context.Context, o *mcp.Options) (*mcp.Session, error) {
			mu.Lock()
			dials++
			mu.Unlock()
			return dial(ctx, o)
		}})
		start(t, m)
		select {
		case <-m.Ready():
		case <-time.After(10 * time.Minute):
			t.Fatal("Ready still open after 10 minutes")
		}
		mu.Lock()
		defer mu.Unlock()
		if dials != 2 {
			t.Errorf("Ready after %d sessions; want 2 (one cut-short session is waited past, not more)", dials)
		}
	})
}

// dialWith connects to srv over in-memory transports and hands each new
// server-side session to onConnect (under no lock of its own).
func dialWith(t *testing.T, srv *mcpsdk.Server, onConnect func(*mcpsdk.ServerSession)) ctxsync.DialFunc {
	return func(ctx context.Context, opts *mcp.Options) (*mcp.Session, error) {
		ct, st := mcpsdk.NewInMemoryTransports()
		ss, err := srv.Connect(ctx, st, nil)
		if err != nil {
			return nil, err
		}
		onConnect(ss)
		t.Cleanup(func() { _ = ss.Close() })
		sess, err := mcp.ConnectTransport(ctx, "s", ct, opts)
		if err == nil {
			t.Cleanup(func() { _ = sess.Close() })
		}
		return sess, err
	}
}

// countingDial is dialWith counting the sessions in *dials, under mu.
func countingDial(t *testing.T, srv *mcpsdk.Server, mu *gosync.Mutex, dials *int) ctxsync.DialFunc {
	return dialWith(t, srv, func(*mcpsdk.ServerSession) {
		mu.Lock()
		*dials++
		mu.Unlock()
	})
}

// subscribableServer is an empty go-sdk server that accepts subscriptions.
func subscribableServer() *mcpsdk.Server {
	return mcptest.NewServer(nil, &mcpsdk.ServerOptions{
		SubscribeHandler:   func(context.Context, *mcpsdk.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcpsdk.UnsubscribeRequest) error { return nil },
	})
}

// killer is a read handler that ends its session and never answers.
func killer(count func()) mcpsdk.ResourceHandler {
	return func(ctx context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
		count()
		go req.Session.Close()
		<-ctx.Done()
		return nil, ctx.Err()
	}
}

// A resource the server says was updated, whose read now hangs until its
// deadline while the server drops the session: the server's word must not
// override the failure, or every session reads it again.
func TestAnUpdatedResourceWhoseReadHangsIsNotReadAtEverySession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := subscribableServer()
		var mu gosync.Mutex
		poisoned, poisonReads, dials := false, 0, 0
		kill := killer(func() {
			mu.Lock()
			poisonReads++
			mu.Unlock()
		})
		addHandler(srv, "doc://x", func(ctx context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
			mu.Lock()
			p := poisoned
			mu.Unlock()
			if p {
				return kill(ctx, req)
			}
			return textResult(req.Params.URI, "walrus"), nil
		})
		mcptest.AddText(srv, "doc://y", "y", "narwhal")
		ix := newIndex(t)
		m := ctxsync.New(ctxsync.Options{Server: "s", Index: ix, Dial: legacy(countingDial(t, srv, &mu, &dials))})
		start(t, m)
		<-m.Ready()
		if _, err := m.Read(t.Context(), "doc://x"); err != nil { // subscribes
			t.Fatal(err)
		}
		mu.Lock()
		poisoned = true
		mu.Unlock()
		if err := srv.ResourceUpdated(t.Context(), &mcpsdk.ResourceUpdatedNotificationParams{URI: "doc://x"}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		if poisonReads > 2 || dials > 3 {
			t.Errorf("in 10 minutes: the hanging read was sent %d times over %d sessions; want it left alone for the retry time", poisonReads, dials)
		}
		if got := lexURIs(ix, "walrus"); len(got) != 0 {
			t.Errorf("the stale text of the updated resource still ranks: %v", got)
		}
	})
}

// The blame is the resource's, not its version's: a lastModified that moves
// at every session must not make it innocent again.
func TestAKillingReadIsBlamedWhateverItsVersion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mcptest.NewServer(map[string]string{"doc://ok": "walrus"}, nil)
		var mu gosync.Mutex
		poisonReads, dials := 0, 0
		kill := killer(func() {
			mu.Lock()
			poisonReads++
			mu.Unlock()
		})
		inner := countingDial(t, srv, &mu, &dials)
		dial := func(ctx context.Context, o *mcp.Options) (*mcp.Session, error) {
			lm := time.Now().UTC().Format(time.RFC3339Nano)
			srv.AddResource(&mcpsdk.Resource{URI: "doc://log", Name: "log", MIMEType: "text/plain", Annotations: &mcpsdk.Annotations{LastModified: lm}}, kill)
			return inner(ctx, o)
		}
		m := ctxsync.New(ctxsync.Options{Server: "s", Index: newIndex(t), Dial: dial})
		start(t, m)
		<-m.Ready()
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		if poisonReads > 2 || dials > 3 {
			t.Errorf("in 10 minutes: the killing read was sent %d times over %d sessions", poisonReads, dials)
		}
	})
}

// The killing read sorted first: once the session has ended, the pass must
// not read the next suspect alone on the dead connection and blame it.
func TestNoReadIsBlamedOnADeadConnection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mcptest.NewServer(nil, nil)
		addHandler(srv, "doc://a-poison", killer(func() {}))
		for i := range 5 {
			mcptest.AddText(srv, fmt.Sprintf("doc://b-%d", i), "doc", fmt.Sprintf("text %d", i))
		}
		var mu gosync.Mutex
		dials := 0
		ix := newIndex(t)
		m := ctxsync.New(ctxsync.Options{Server: "s", Index: ix, Dial: countingDial(t, srv, &mu, &dials)})
		start(t, m)
		<-m.Ready()
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		if got := ix.ContentLen("s"); got != 5 {
			t.Errorf("%d texts indexed after 10 minutes; want the 5 that do not kill the server", got)
		}
	})
}

// slowEmbedder takes d to embed a text with "walrus" in it.
type slowEmbedder struct {
	indextest.BagEmbedder
	d time.Duration
}

func (e *slowEmbedder) Embed(ctx context.Context, text string) ([]float32, error) {
	if strings.Contains(text, "walrus") {
		select {
		case <-time.After(e.d):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return e.BagEmbedder.Embed(ctx, text)
}

// Reads answered before the session ended are indexed even when it ends
// while their texts are being embedded.
func TestAnsweredReadsAreKeptWhenTheSessionEndsDuringIndexing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mcptest.NewServer(nil, nil)
		var mu gosync.Mutex
		answered := 0
		for i := range 4 {
			addHandler(srv, fmt.Sprintf("doc://%d", i), func(_ context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
				mu.Lock()
				answered++
				if answered == 4 {
					go func() { time.Sleep(100 * time.Millisecond); req.Session.Close() }()
				}
				mu.Unlock()
				return textResult(req.Params.URI, "walrus "+req.Params.URI), nil
			})
		}
		dials := 0
		inner := mcptest.Dial(t, "s", srv)
		dial := func(ctx context.Context, o *mcp.Options) (*mcp.Session, error) {
			mu.Lock()
			dials++
			n := dials
			mu.Unlock()
			if n > 1 {
				return nil, fmt.Errorf("server gone")
			}
			return inner(ctx, o)
		}
		ix, err := index.Open(t.Context(), index.Options{Embedder: &slowEmbedder{d: time.Second}})
		if err != nil {
			t.Fatal(err)
		}
		defer ix.Close()
		m := ctxsync.New(ctxsync.Options{Server: "s", Index: ix, Dial: dial, MinBackoff: time.Hour, MaxBackoff: time.Hour})
		start(t, m)
		<-m.Ready()
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if got := ix.ContentLen("s"); got != 4 {
			t.Errorf("%d of 4 answered reads indexed", got)
		}
	})
}

// The re-read of an updated resource gets an error answer: it is read again
// on the next pass, but its old text must not rank meanwhile.
func TestStaleTextGoesWhenTheReReadFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := subscribableServer()
		var mu gosync.Mutex
		failing := false
		addHandler(srv, "doc://x", func(_ context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
			mu.Lock()
			defer mu.Unlock()
			if failing {
				return nil, fmt.Errorf("try again later")
			}
			return textResult(req.Params.URI, "walrus"), nil
		})
		ix := newIndex(t)
		m := ctxsync.New(ctxsync.Options{Server: "s", Index: ix, Dial: legacy(mcptest.Dial(t, "s", srv))})
		start(t, m)
		<-m.Ready()
		if _, err := m.Read(t.Context(), "doc://x"); err != nil { // subscribes
			t.Fatal(err)
		}
		mu.Lock()
		failing = true
		mu.Unlock()
		if err := srv.ResourceUpdated(t.Context(), &mcpsdk.ResourceUpdatedNotificationParams{URI: "doc://x"}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if got := lexURIs(ix, "walrus"); len(got) != 0 {
			t.Errorf("after an error answer to the re-read of an updated resource, its old text still ranks: %v", got)
		}
	})
}

// A cached resource whose read answers, then takes the server down: the
// re-read of the cache after a reconnect must not do that at every session.
func TestACachedResourceWhoseReadKillsTheServerIsNotReWarmedForever(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := subscribableServer()
		var mu gosync.Mutex
		armed, reads, dials := false, 0, 0
		addHandler(srv, "doc://x", func(_ context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
			mu.Lock()
			defer mu.Unlock()
			if armed {
				reads++
				go func() { time.Sleep(50 * time.Millisecond); req.Session.Close() }()
			}
			return textResult(req.Params.URI, "walrus"), nil
		})
		var first *mcpsdk.ServerSession
		inner := countingDial(t, srv, &mu, &dials)
		dial := func(ctx context.Context, o *mcp.Options) (*mcp.Session, error) {
			sess, err := inner(ctx, o)
			mu.Lock()
			if first == nil {
				for ss := range srv.Sessions() {
					first = ss
				}
			}
			mu.Unlock()
			return sess, err
		}
		m := ctxsync.New(ctxsync.Options{Server: "s", Index: newIndex(t), Dial: legacy(dial)})
		start(t, m)
		<-m.Ready()
		if _, err := m.Read(t.Context(), "doc://x"); err != nil { // cached, and subscribed
			t.Fatal(err)
		}
		mu.Lock()
		armed = true
		ss := first
		mu.Unlock()
		ss.Close() // a reconnect, which re-reads the cache
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		if reads > 1 || dials > 3 {
			t.Errorf("in 10 minutes: the killing re-read was sent %d times over %d sessions; want once", reads, dials)
		}
	})
}

// TestContinuousUpdatedStormIsThrottled: a server that says a resource
// changed every second, for good, gets content passes in a window that
// doubles up to MaxStormDelay, as a list_changed storm does; one whose
// resource changes every 5 s has each change re-read.
func TestContinuousUpdatedStormIsThrottled(t *testing.T) {
	for _, tc := range []struct {
		every    time.Duration
		min, max int
	}{{time.Second, 1, 25}, {5 * time.Second, 20, 26}} {
		synctest.Test(t, func(t *testing.T) {
			srv := subscribableServer()
			var rc readCounter
			srv.AddReceivingMiddleware(rc.middleware())
			addHandler(srv, "doc://busy", func(_ context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
				return textResult(req.Params.URI, "walrus"), nil
			})
			m := ctxsync.New(ctxsync.Options{Server: "s", Index: newIndex(t), Dial: legacy(mcptest.Dial(t, "s", srv)), MaxStormDelay: 10 * time.Second})
			start(t, m)
			<-m.Ready()
			if _, err := m.Read(t.Context(), "doc://busy"); err != nil { // subscribes
				t.Fatal(err)
			}
			reads0 := rc.get("doc://busy")
			for range int(2 * time.Minute / tc.every) {
				time.Sleep(tc.every)
				if err := srv.ResourceUpdated(t.Context(), &mcpsdk.ResourceUpdatedNotificationParams{URI: "doc://busy"}); err != nil {
					t.Fatal(err)
				}
			}
			time.Sleep(time.Second)
			synctest.Wait()
			n := rc.get("doc://busy") - reads0
			t.Logf("an update every %v for 2 minutes: %d reads", tc.every, n)
			if n < tc.min || n > tc.max {
				t.Errorf("an update every %v for 2 minutes: %d reads; want %d to %d", tc.every, n, tc.min, tc.max)
			}
		})
	}
}

// A storm of resources/updated whose passes outlast the window is spaced
// by the passes' cost: 64 texts of 8 MB took 22 s a pass, and the storm
// had them run back to back, half a core for as long as it lasted.
func TestUpdatedStormWithLongPassesIsSpacedByTheirCost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := subscribableServer()
		var rc readCounter
		srv.AddReceivingMiddleware(rc.middleware())
		addHandler(srv, "doc://slow", func(_ context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
			time.Sleep(5 * time.Second) // a long pass
			return textResult(req.Params.URI, "walrus"), nil
		})
		m := ctxsync.New(ctxsync.Options{Server: "s", Index: newIndex(t), Dial: legacy(mcptest.Dial(t, "s", srv)), MaxStormDelay: 10 * time.Second})
		start(t, m)
		<-m.Ready()
		if _, err := m.Read(t.Context(), "doc://slow"); err != nil { // subscribes
			t.Fatal(err)
		}
		reads0 := rc.get("doc://slow")
		for range 120 {
			time.Sleep(time.Second)
			if err := srv.ResourceUpdated(t.Context(), &mcpsdk.ResourceUpdatedNotificationParams{URI: "doc://slow"}); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(time.Second)
		synctest.Wait()
		// Passes of 5 s, each followed by 50 s of rest: about three, where
		// the storm's 10 s window alone gives a pass each 10 s.
		n := rc.get("doc://slow") - reads0
		t.Logf("%d reads", n)
		if n < 2 || n > 5 {
			t.Errorf("an update every second for 2 minutes, 5 s a read: %d reads; want 2 to 5", n)
		}
	})
}

// A server that says its list changed with every lastModified moved, each
// second, has the content passes those re-lists ask for spaced by their
// cost as resources/updated's are: they ran back to back.
func TestListChangedWithNewDatesIsSpacedByThePassesCost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := subscribableServer()
		var rc readCounter
		srv.AddReceivingMiddleware(rc.middleware())
		stamp := func(i int) {
			srv.AddResource(&mcpsdk.Resource{URI: "doc://slow", Name: "slow", MIMEType: "text/plain",
				Annotations: &mcpsdk.Annotations{LastModified: time.Date(2026, 1, 1, 0, 0, i, 0, time.UTC).Format(time.RFC3339)}},
				func(_ context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
					time.Sleep(5 * time.Second) // a long pass
					return textResult(req.Params.URI, "walrus"), nil
				})
		}
		stamp(0)
		m := ctxsync.New(ctxsync.Options{Server: "s", Index: newIndex(t), Dial: mcptest.Dial(t, "s", srv), MaxStormDelay: 10 * time.Second})
		start(t, m)
		<-m.Ready()
		reads0 := rc.get("doc://slow")
		for i := range 120 {
			time.Sleep(time.Second)
			stamp(i + 1) // list_changed, with a new date
		}
		time.Sleep(time.Second)
		synctest.Wait()
		n := rc.get("doc://slow") - reads0
		t.Logf("%d reads", n)
		if n < 2 || n > 5 {
			t.Errorf("a new date each second for 2 minutes, 5 s a read: %d reads; want 2 to 5", n)
		}
	})
}

// A pass of minutes is spaced by ten times its cost too, not by a few
// minutes at most: a server moving every lastModified each few seconds,
// whose texts took 6 minutes to read, had a pass each 11 minutes (half a
// core for good).
func TestLongPassesAreSpacedByTheirCost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := subscribableServer()
		var rc readCounter
		srv.AddReceivingMiddleware(rc.middleware())
		stamp := func(i int) {
			for j := range 288 {
				srv.AddResource(&mcpsdk.Resource{URI: fmt.Sprintf("doc://slow/%d", j), Name: "slow", MIMEType: "text/plain",
					Annotations: &mcpsdk.Annotations{LastModified: time.Date(2026, 1, 1, 0, 0, i, 0, time.UTC).Format(time.RFC3339)}},
					func(_ context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
						time.Sleep(5 * time.Second) // 288, 4 at once: a pass of 6 minutes
						return textResult(req.Params.URI, "walrus "+req.Params.URI), nil
					})
			}
		}
		stamp(0)
		m := ctxsync.New(ctxsync.Options{Server: "s", Index: newIndex(t), Dial: mcptest.Dial(t, "s", srv), MaxStormDelay: 10 * time.Second})
		start(t, m)
		<-m.Ready()
		reads0 := rc.total()
		for i := range 240 { // 2 hours of a new date each 30 s
			time.Sleep(30 * time.Second)
			stamp(i + 1)
		}
		synctest.Wait()
		n := rc.total() - reads0
		t.Logf("%d reads in 2 hours", n)
		// Passes of 6 minutes each an hour at most: two or three in 2
		// hours (288 reads each), where a 5-minute bound gave eleven.
		if n > 3*288 {
			t.Errorf("a new date each 30 s for 2 hours, passes of 6 minutes: %d reads; want at most %d", n, 3*288)
		}
	})
}

// A server that ends each session soon after its content pass, with
// every lastModified moved at each list, has the first pass of each new
// session spaced by the last pass's cost too: each session's came at
// once, back to back with the last (0.5 core for as long as it cycled).
func TestSessionsEndedAfterEachPassAreSpacedByThePassesCost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mcptest.NewServer(nil, nil)
		var rc readCounter
		srv.AddReceivingMiddleware(rc.middleware())
		n := 0
		stamp := func() {
			n++
			srv.AddResource(&mcpsdk.Resource{URI: "doc://slow", Name: "slow", MIMEType: "text/plain",
				Annotations: &mcpsdk.Annotations{LastModified: time.Date(2026, 1, 1, 0, 0, n, 0, time.UTC).Format(time.RFC3339)}},
				func(_ context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
					time.Sleep(10 * time.Second) // a long pass
					return textResult(req.Params.URI, "walrus"), nil
				})
		}
		stamp()
		srv.AddReceivingMiddleware(func(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
			return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
				res, err := next(ctx, method, req)
				if method == "resources/list" {
					go stamp() // a new date for the next list
				}
				return res, err
			}
		})
		inner := mcptest.Dial(t, "s", srv)
		dial := func(ctx context.Context, o *mcp.Options) (*mcp.Session, error) {
			s, err := inner(ctx, o)
			if err == nil {
				time.AfterFunc(31*time.Second, func() { s.Close() }) // past MaxBackoff: the backoff starts over
			}
			return s, err
		}
		m := ctxsync.New(ctxsync.Options{Server: "s", Index: newIndex(t), Dial: dial, MaxStormDelay: 10 * time.Second, MaxBackoff: 30 * time.Second})
		start(t, m)
		<-m.Ready()
		time.Sleep(5 * time.Minute)
		synctest.Wait()
		reads := rc.get("doc://slow")
		t.Logf("%d reads", reads)
		// Passes of 10 s, each followed by 100 s of rest: about three in
		// 5 minutes, where a pass at each session's start gives ten.
		if reads < 2 || reads > 5 {
			t.Errorf("a session each 31 s, a new date at each list, 10 s a read: %d reads in 5 minutes; want 2 to 5", reads)
		}
	})
}

// A server that ends each session before its content pass ends, with
// every lastModified moved at each list, has the passes of its sessions
// spaced by what the cut ones cost: a cut pass stored no end, so each new
// session's came at once, back to back (0.6 to 0.9 core for as long as it
// cycled; 197 reads in 10 minutes here).
func TestSessionsEndedInsideEachPassAreSpacedByThePassesCost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mcptest.NewServer(nil, nil)
		var rc readCounter
		srv.AddReceivingMiddleware(rc.middleware())
		n := 0
		stamp := func() {
			n++
			for i := range 32 {
				uri := fmt.Sprintf("doc://slow/%d", i)
				srv.AddResource(&mcpsdk.Resource{URI: uri, Name: "slow", MIMEType: "text/plain",
					Annotations: &mcpsdk.Annotations{LastModified: time.Date(2026, 1, 1, 0, 0, n, 0, time.UTC).Format(time.RFC3339)}},
					func(_ context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
						time.Sleep(5 * time.Second) // 4 at once: a pass of 40 s, longer than a session
						return textResult(req.Params.URI, "walrus "+req.Params.URI), nil
					})
			}
		}
		stamp()
		srv.AddReceivingMiddleware(func(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
			return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
				res, err := next(ctx, method, req)
				if method == "resources/list" {
					go stamp() // new dates for the next list
				}
				return res, err
			}
		})
		inner := mcptest.Dial(t, "s", srv)
		dial := func(ctx context.Context, o *mcp.Options) (*mcp.Session, error) {
			s, err := inner(ctx, o)
			if err == nil {
				time.AfterFunc(31*time.Second, func() { s.Close() }) // past MaxBackoff: the backoff starts over
			}
			return s, err
		}
		m := ctxsync.New(ctxsync.Options{Server: "s", Index: newIndex(t), Dial: dial, MaxStormDelay: 10 * time.Second, MaxBackoff: 30 * time.Second})
		start(t, m)
		<-m.Ready()
		before := rc.total()
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		reads := rc.total() - before
		t.Logf("%d reads before Ready, %d in the 10 minutes after", before, reads)
		// Cut passes of about 31 s (24 reads at most), each followed by
		// ten times that, at most 5 minutes: two in 10 minutes at most.
		if reads > 48 {
			t.Errorf("a session each 31 s cutting a 40 s pass, new dates at each list: %d reads in 10 minutes; want at most 48", reads)
		}
	})
}
