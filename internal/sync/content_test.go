package sync_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	gosync "sync"
	"testing"
	"testing/synctest"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/index"
	"github.com/contextd/contextd/internal/index/indextest"
	"github.com/contextd/contextd/internal/mcp"
	"github.com/contextd/contextd/internal/mcp/mcptest"
	"github.com/contextd/contextd/internal/resource"
	ctxsync "github.com/contextd/contextd/internal/sync"
)

func lexURIs(ix *index.Index, query string) []string {
	var out []string
	for _, h := range ix.Lexical(query, 0, index.Filter{}) {
		out = append(out, h.Key.URI)
	}
	slices.Sort(out)
	return out
}

// TestContentPassIndexesSmallTextResources checks which resources the
// content pass reads after the first sync, and that their words are then
// searchable.
func TestContentPassIndexesSmallTextResources(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mcptest.NewServer(nil, nil)
		var mu gosync.Mutex
		var read []string
		add := func(r *mcpsdk.Resource, text string) {
			srv.AddResource(r, func(_ context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
				mu.Lock()
				read = append(read, req.Params.URI)
				mu.Unlock()
				return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: req.Params.URI, MIMEType: r.MIMEType, Text: text}}}, nil
			})
		}
		add(&mcpsdk.Resource{URI: "doc://small", Name: "small", MIMEType: "text/markdown", Size: 40}, "the walrus ledger")
		add(&mcpsdk.Resource{URI: "doc://unsized", Name: "unsized"}, "walrus again")
		add(&mcpsdk.Resource{URI: "doc://big", Name: "big", MIMEType: "text/plain", Size: ctxsync.DefaultContentMaxBytes + 1}, "walrus too big")
		add(&mcpsdk.Resource{URI: "doc://picture", Name: "picture", MIMEType: "image/png", Size: 10}, "walrus")
		add(&mcpsdk.Resource{URI: "doc://for-user", Name: "for-user", MIMEType: "text/plain",
			Annotations: &mcpsdk.Annotations{Audience: []mcpsdk.Role{"user"}}}, "walrus")

		ix := newIndex(t)
		m := ctxsync.New(ctxsync.Options{Server: "s", Index: ix, Dial: mcptest.Dial(t, "s", srv)})
		start(t, m)
		<-m.Ready()
		mu.Lock()
		slices.Sort(read)
		got := slices.Clone(read)
		mu.Unlock()
		if want := []string{"doc://small", "doc://unsized"}; !slices.Equal(got, want) {
			t.Errorf("content pass read %v, want %v", got, want)
		}
		if got, want := lexURIs(ix, "walrus"), []string{"doc://small", "doc://unsized"}; !slices.Equal(got, want) {
			t.Errorf("lexical walrus = %v, want %v", got, want)
		}
		if st := m.Status(); st.Contents != 2 {
			t.Errorf("Status.Contents = %d, want 2", st.Contents)
		}

		// A new resource (AddResource notifies list_changed) is read; the
		// ones already indexed are not read again.
		add(&mcpsdk.Resource{URI: "doc://new", Name: "new"}, "fresh")
		time.Sleep(time.Second)
		synctest.Wait()
		mu.Lock()
		got = slices.Clone(read[2:])
		mu.Unlock()
		if want := []string{"doc://new"}; !slices.Equal(got, want) {
			t.Errorf("after a re-list, read %v, want %v", got, want)
		}
	})
}

// TestContentPassRespectsCapAndOptOut checks ContentMaxResources.
func TestContentPassRespectsCapAndOptOut(t *testing.T) {
	for _, tt := range []struct {
		max  int
		want int
	}{{-1, 0}, {2, 2}, {0, 3}} {
		synctest.Test(t, func(t *testing.T) {
			srv := mcptest.NewServer(map[string]string{"doc://a": "alpha", "doc://b": "beta", "doc://c": "gamma"}, nil)
			ix := newIndex(t)
			m := ctxsync.New(ctxsync.Options{Server: "s", Index: ix, Dial: mcptest.Dial(t, "s", srv), ContentMaxResources: tt.max})
			start(t, m)
			<-m.Ready()
			if got := ix.ContentLen("s"); got != tt.want {
				t.Errorf("ContentMaxResources %d: %d contents indexed, want %d", tt.max, got, tt.want)
			}
		})
	}
}

// TestPrivateResultIsNotIndexed checks that text whose read result says
// cacheScope "private" never enters the index.
func TestPrivateResultIsNotIndexed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &mcptest.RawServer{Results: map[string]string{
			"resources/list": `{"resources":[{"uri":"x://a","name":"a"}]}`,
			"resources/read": `{"contents":[{"uri":"x://a","text":"secret walrus"}],"cacheScope":"private"}`,
		}}
		ix := newIndex(t)
		m := ctxsync.New(ctxsync.Options{Server: "s", Index: ix, Dial: func(ctx context.Context, o *mcp.Options) (*mcp.Session, error) {
			return mcp.ConnectTransport(ctx, "s", srv.Transport(t), o)
		}, MinBackoff: time.Hour, MaxBackoff: time.Hour})
		start(t, m)
		<-m.Ready()
		if srv.Count("resources/read") != 1 {
			t.Fatalf("%d reads, want the content pass's 1", srv.Count("resources/read"))
		}
		if got := lexURIs(ix, "walrus"); len(got) != 0 {
			t.Errorf("private text indexed: %v", got)
		}
		if has, _ := ix.HasContent(resource.Key{Server: "s", URI: "x://a"}); !has {
			t.Error("private result not remembered as read: it would be read on every pass")
		}
	})
}

// TestUpdatedContentIsReadAgain checks that notifications/resources/updated
// for a resource with indexed content (subscribed by an earlier read)
// replaces its text in the index.
func TestUpdatedContentIsReadAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu gosync.Mutex
		body := "walrus"
		srv := subscribableServer()
		srv.AddResource(&mcpsdk.Resource{URI: "doc://live", Name: "live"},
			func(_ context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
				mu.Lock()
				defer mu.Unlock()
				return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: req.Params.URI, Text: body}}}, nil
			})
		ix := newIndex(t)
		m := ctxsync.New(ctxsync.Options{Server: "s", Index: ix, Dial: legacy(mcptest.Dial(t, "s", srv))})
		start(t, m)
		<-m.Ready()
		if got := lexURIs(ix, "walrus"); len(got) != 1 {
			t.Fatalf("first pass: walrus in %v", got)
		}
		if _, err := m.Read(t.Context(), "doc://live"); err != nil { // subscribes
			t.Fatal(err)
		}
		mu.Lock()
		body = "narwhal"
		mu.Unlock()
		if err := srv.ResourceUpdated(t.Context(), &mcpsdk.ResourceUpdatedNotificationParams{URI: "doc://live"}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second) // past the debounce window
		synctest.Wait()
		if got := lexURIs(ix, "narwhal"); len(got) != 1 {
			t.Errorf("after resources/updated: narwhal in %v, want doc://live", got)
		}
		if got := lexURIs(ix, "walrus"); len(got) != 0 {
			t.Errorf("after resources/updated: old text still indexed in %v", got)
		}
	})
}

// TestContentPassDoesNotHoldTheMirror checks that the mirror handles a
// list_changed while a content pass waits on a hung read: the new resource
// is listed (and searchable by its descriptor) long before the pass ends.
func TestContentPassDoesNotHoldTheMirror(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mcptest.NewServer(nil, nil)
		for i := range 4 {
			srv.AddResource(&mcpsdk.Resource{URI: fmt.Sprintf("doc://hung-%d", i), Name: "hung"},
				func(ctx context.Context, _ *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
					<-ctx.Done()
					return nil, ctx.Err()
				})
		}
		ix := newIndex(t)
		m := ctxsync.New(ctxsync.Options{Server: "s", Index: ix, Dial: mcptest.Dial(t, "s", srv)})
		start(t, m)
		time.Sleep(time.Second) // synced; the pass waits on four hung reads (10 s each)
		mcptest.AddText(srv, "doc://walrus", "walrus notes", "walrus")
		time.Sleep(time.Second) // the debounce window, then the re-list
		synctest.Wait()
		if _, ok := ix.Get(resource.Key{Server: "s", URI: "doc://walrus"}); !ok {
			t.Error("a resource added during a hung content pass was not listed within a second")
		}
	})
}

// TestFailedReadsAreNotRetriedEveryPass checks the content pass's memory
// of failed reads: a resource whose read fails is skipped by the next pass
// (here after a re-list) and read again once contentRetryAfter has passed;
// resources after a run of hung ones get indexed by that next pass.
func TestFailedReadsAreNotRetriedEveryPass(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mcptest.NewServer(nil, nil)
		var mu gosync.Mutex
		reads := map[string]int{}
		count := func(uri string) {
			mu.Lock()
			reads[uri]++
			mu.Unlock()
		}
		srv.AddResource(&mcpsdk.Resource{URI: "doc://denied", Name: "denied"},
			func(_ context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
				count(req.Params.URI)
				return nil, errors.New("permission denied")
			})
		for i := range 8 { // a run that ends the first pass
			srv.AddResource(&mcpsdk.Resource{URI: fmt.Sprintf("doc://hung-%d", i), Name: "hung"},
				func(ctx context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
					count(req.Params.URI)
					<-ctx.Done()
					return nil, ctx.Err()
				})
		}
		for i := range 40 {
			mcptest.AddText(srv, fmt.Sprintf("doc://ok-%02d", i), "ok", "walrus")
		}
		ix := newIndex(t)
		m := ctxsync.New(ctxsync.Options{Server: "s", Index: ix, Dial: mcptest.Dial(t, "s", srv)})
		start(t, m)
		<-m.Ready()
		first := ix.ContentLen("s")

		// A re-list and another pass, once the first pass's cost is
		// paid (ten times its length, its hung reads included: at most
		// 5 minutes).
		mcptest.AddText(srv, "doc://new", "new", "narwhal")
		time.Sleep(6 * time.Minute)
		synctest.Wait()
		mu.Lock()
		denied, hung := reads["doc://denied"], reads["doc://hung-0"]
		mu.Unlock()
		if denied != 1 || hung > 1 {
			t.Errorf("after a second pass: denied read %d times, hung-0 %d; want each at most once", denied, hung)
		}
		if got := ix.ContentLen("s"); got != 41 {
			t.Errorf("after the second pass %d contents indexed (%d after the first), want the 40 readable ones and the new one", got, first)
		}

		time.Sleep(31 * time.Minute) // past contentRetryAfter; the age refresh runs a pass
		synctest.Wait()
		mu.Lock()
		denied = reads["doc://denied"]
		mu.Unlock()
		if denied != 2 {
			t.Errorf("after the retry time: denied read %d times in all, want 2", denied)
		}
	})
}

// TestOldContentIsReadAgain checks ContentMaxAge: a server that never says
// a resource changed (no size, no lastModified, no notification) still gets
// its new text indexed once the old one is older than the maximum age.
func TestOldContentIsReadAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu gosync.Mutex
		body := "walrus"
		srv := mcptest.NewServer(nil, nil)
		srv.AddResource(&mcpsdk.Resource{URI: "doc://notes", Name: "notes"},
			func(_ context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
				mu.Lock()
				defer mu.Unlock()
				return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: req.Params.URI, Text: body}}}, nil
			})
		ix := newIndex(t)
		m := ctxsync.New(ctxsync.Options{Server: "s", Index: ix, Dial: mcptest.Dial(t, "s", srv), ContentMaxAge: 10 * time.Minute})
		start(t, m)
		<-m.Ready()
		mu.Lock()
		body = "narwhal"
		mu.Unlock()
		time.Sleep(5 * time.Minute)
		synctest.Wait()
		if got := lexURIs(ix, "walrus"); len(got) != 1 {
			t.Errorf("text re-read before it was old: walrus in %v", got)
		}
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		if got := lexURIs(ix, "narwhal"); len(got) != 1 {
			t.Errorf("after ContentMaxAge: narwhal in %v, want doc://notes", got)
		}
	})
}

// TestContentIndexOffDropsEarlierText checks that a server switched to
// index_content: false (ContentMaxResources < 0) over an index that holds
// its text from an earlier run ranks by its descriptors alone.
func TestContentIndexOffDropsEarlierText(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mcptest.NewServer(map[string]string{"doc://a": "walrus"}, nil)
		ix := newIndex(t)
		on := ctxsync.New(ctxsync.Options{Server: "s", Index: ix, Dial: mcptest.Dial(t, "s", srv)})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { defer close(done); _ = on.Run(ctx) }()
		<-on.Ready()
		cancel()
		<-done
		if got := lexURIs(ix, "walrus"); len(got) != 1 {
			t.Fatalf("with the content index on: walrus in %v", got)
		}
		off := ctxsync.New(ctxsync.Options{Server: "s", Index: ix, Dial: mcptest.Dial(t, "s", srv), ContentMaxResources: -1})
		start(t, off)
		<-off.Ready()
		synctest.Wait()
		if got := lexURIs(ix, "walrus"); len(got) != 0 || ix.ContentLen("s") != 0 {
			t.Errorf("with the content index off: walrus in %v, %d contents; want none", got, ix.ContentLen("s"))
		}
	})
}

// TestFullContentIndexStopsReadingNewTexts: once the index holds its cap of
// text across servers (index.Options.ContentBytes), the pass indexes what
// fits and later passes do not read resources whose text has no place.
func TestFullContentIndexStopsReadingNewTexts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mcptest.NewServer(nil, nil)
		var rc readCounter
		srv.AddReceivingMiddleware(rc.middleware())
		for i := range 10 {
			mcptest.AddText(srv, fmt.Sprintf("doc://%d", i), "doc", strings.Repeat("walrus ", 14)) // 98 bytes
		}
		ix, m := mirrorUnderCap(t, srv, 500)
		if got := ix.ContentLen("s"); got != 5 {
			t.Errorf("%d texts indexed under a 500-byte cap, want 5 of 98 bytes", got)
		}
		// 10 bytes of room are left: a re-list brings a pass that reads none
		// of the 98-byte texts, then one that reads a 4-byte text.
		before := rc.total()
		mcptest.AddText(srv, "doc://new", "new", strings.Repeat("narwhal ", 12))
		time.Sleep(time.Minute)
		synctest.Wait()
		if m.Status().Resources != 11 {
			t.Fatalf("the re-list did not happen: %+v", m.Status())
		}
		if n := rc.total() - before; n != 0 {
			t.Errorf("%d reads on a pass with no room for any text; want none", n)
		}
		mcptest.AddText(srv, "doc://tiny", "tiny", "tusk")
		time.Sleep(time.Minute)
		synctest.Wait()
		if n := rc.total() - before; n != 1 || rc.get("doc://tiny") != 1 || ix.ContentLen("s") != 6 {
			t.Errorf("%d reads (tiny read %d times), %d texts; want the 4-byte text read and indexed", n, rc.get("doc://tiny"), ix.ContentLen("s"))
		}
	})
}

// TestTextsWithoutADeclaredSizeLeftOutForRoomAreNotReadAgain: a server
// that declares no sizes. Texts the full index left out are remembered with
// their size, so later passes do not read them again while there is no room
// for them.
func TestTextsWithoutADeclaredSizeLeftOutForRoomAreNotReadAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mcptest.NewServer(nil, nil)
		var rc readCounter
		srv.AddReceivingMiddleware(rc.middleware())
		for i := range 10 {
			uri := fmt.Sprintf("doc://%d", i)
			addHandler(srv, uri, func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
				return textResult(uri, strings.Repeat("walrus ", 14)), nil // 98 bytes, not declared
			})
		}
		ix, _ := mirrorUnderCap(t, srv, 500)
		if got := ix.ContentLen("s"); got != 5 {
			t.Fatalf("%d texts indexed under a 500-byte cap, want 5 of 98 bytes", got)
		}
		before := rc.total()
		mcptest.AddText(srv, "doc://tiny", "tiny", "tusk") // a re-list and another pass
		time.Sleep(time.Minute)
		synctest.Wait()
		if n := rc.total() - before; n != 1 || rc.get("doc://tiny") != 1 {
			t.Errorf("%d reads on the next pass (tiny %d); want only the new 4-byte text, not the 5 left out", n, rc.get("doc://tiny"))
		}
	})
}

// mirrorUnderCap mirrors srv as "s" into an index holding at most capBytes
// of text, and waits for its first content pass.
func mirrorUnderCap(t *testing.T, srv *mcpsdk.Server, capBytes int64) (*index.Index, *ctxsync.Mirror) {
	t.Helper()
	ix, err := index.Open(t.Context(), index.Options{Embedder: &indextest.BagEmbedder{}, ContentBytes: capBytes})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	m := ctxsync.New(ctxsync.Options{Server: "s", Index: ix, Dial: mcptest.Dial(t, "s", srv)})
	start(t, m)
	<-m.Ready()
	return ix, m
}

// TestPassagesAreEmbeddedAfterThePass: a long text's first passage is
// embedded by the content pass, its others after it (before Ready with
// PassagesBeforeReady), and the mirror then holds every one.
func TestPassagesAreEmbeddedAfterThePass(t *testing.T) {
	for _, before := range []bool{false, true} {
		t.Run(fmt.Sprintf("PassagesBeforeReady=%v", before), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var b strings.Builder
				for i := range 20 {
					fmt.Fprintf(&b, "## Part %d\n\n%s\n\n", i, strings.Repeat("walrus ledger ", 100))
				}
				want := len(index.Passages(b.String()))
				srv := mcptest.NewServer(map[string]string{"doc://long": b.String()}, nil)
				ix := newIndex(t)
				m := ctxsync.New(ctxsync.Options{Server: "s", Index: ix, Dial: mcptest.Dial(t, "s", srv), PassagesBeforeReady: before})
				start(t, m)
				<-m.Ready()
				if n := ix.PendingPassages("s"); before && n != 0 {
					t.Errorf("at Ready, %d passages pending, want none", n)
				}
				synctest.Wait()
				if n := ix.PendingPassages("s"); n != 0 || want < 10 {
					t.Errorf("after the pass, %d of %d passages pending, want none", n, want)
				}
				hits, err := ix.PassageHits(t.Context(), "walrus", []resource.Key{{Server: "s", URI: "doc://long"}})
				if err != nil || len(hits[resource.Key{Server: "s", URI: "doc://long"}]) != want {
					t.Errorf("PassageHits = %v, %v; want all %d passages", len(hits), err, want)
				}
			})
		})
	}
}
