package sync_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
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

// addDoc adds a resource whose text is size bytes of its name repeated, with
// the size declared.
func addDoc(srv *mcpsdk.Server, uri string, size int, ann *mcpsdk.Annotations) {
	text := strings.Repeat(strings.TrimPrefix(uri, "doc://")+" ", size)[:size]
	srv.AddResource(&mcpsdk.Resource{URI: uri, Name: uri, MIMEType: "text/plain", Size: int64(size), Annotations: ann},
		func(_ context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
			return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: text}}}, nil
		})
}

// indexed returns the URIs of s's resources with text indexed, sorted.
func indexed(ix *index.Index) []string {
	var out []string
	for _, d := range ix.Descriptors("s") {
		if ix.ContentSize(d.Key()) > 0 {
			out = append(out, d.URI)
		}
	}
	slices.Sort(out)
	return out
}

// TestContentByteBoundChoosesByUsefulness checks that a server's byte bound
// keeps the most useful texts (priority, then recency), not the first
// URIs, and that Status says what waits and why.
func TestContentByteBoundChoosesByUsefulness(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mcptest.NewServer(nil, nil)
		addDoc(srv, "doc://a", 1000, &mcpsdk.Annotations{Priority: 0.1})
		addDoc(srv, "doc://b", 1000, &mcpsdk.Annotations{Priority: 0.9, LastModified: "2026-01-01T00:00:00Z"})
		addDoc(srv, "doc://c", 1000, &mcpsdk.Annotations{Priority: 0.9, LastModified: "2026-06-01T00:00:00Z"})
		addDoc(srv, "doc://d", 1000, nil)
		addDoc(srv, "doc://e", 1000, &mcpsdk.Annotations{Priority: 0.3})
		ix := newIndex(t)
		m := ctxsync.New(ctxsync.Options{Server: "s", Index: ix, Dial: mcptest.Dial(t, "s", srv), ContentBytes: 2500})
		start(t, m)
		<-m.Ready()
		if got, want := indexed(ix), []string{"doc://b", "doc://c"}; !slices.Equal(got, want) {
			t.Errorf("indexed %v, want %v (the highest priority)", got, want)
		}
		st := m.Status()
		if st.ContentWaiting != 3 || st.ContentBound != "bytes" || st.ContentBytes != 2000 || st.ContentMaxBytes != 2500 {
			t.Errorf("Status: waiting %d (%q), %d of %d bytes; want 3 (\"bytes\"), 2000 of 2500", st.ContentWaiting, st.ContentBound, st.ContentBytes, st.ContentMaxBytes)
		}
	})
}

// TestQueryHitsAreIndexedFirst checks that what queries hit outranks
// annotations when the bound is reached.
func TestQueryHitsAreIndexedFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mcptest.NewServer(nil, nil)
		addDoc(srv, "doc://a", 1000, &mcpsdk.Annotations{Priority: 1})
		addDoc(srv, "doc://z", 1000, &mcpsdk.Annotations{Priority: 0.1})
		ix := newIndex(t)
		ix.NoteHits(resource.Key{Server: "s", URI: "doc://z"})
		m := ctxsync.New(ctxsync.Options{Server: "s", Index: ix, Dial: mcptest.Dial(t, "s", srv), ContentBytes: 1500})
		start(t, m)
		<-m.Ready()
		if got, want := indexed(ix), []string{"doc://z"}; !slices.Equal(got, want) {
			t.Errorf("indexed %v, want %v (the one queries hit)", got, want)
		}
	})
}

// TestEditedOrReAddedResourceKeepsItsPlace checks that a resource whose
// text was indexed is indexed again after an edit, or after it is removed
// and listed again, ahead of a more useful resource that waits.
func TestEditedOrReAddedResourceKeepsItsPlace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mcptest.NewServer(nil, nil)
		addDoc(srv, "doc://b", 1000, &mcpsdk.Annotations{Priority: 0.8})
		addDoc(srv, "doc://c", 1000, &mcpsdk.Annotations{Priority: 0.8})
		addDoc(srv, "doc://d", 1000, &mcpsdk.Annotations{Priority: 0.1})
		ix := newIndex(t)
		m := ctxsync.New(ctxsync.Options{Server: "s", Index: ix, Dial: mcptest.Dial(t, "s", srv), ContentBytes: 2500})
		start(t, m)
		<-m.Ready()
		if got, want := indexed(ix), []string{"doc://b", "doc://c"}; !slices.Equal(got, want) {
			t.Fatalf("indexed %v, want %v", got, want)
		}
		// b is edited (its size changes) as a more useful resource that
		// would fit in b's room comes.
		addDoc(srv, "doc://b", 900, &mcpsdk.Annotations{Priority: 0.8})
		addDoc(srv, "doc://top", 1400, &mcpsdk.Annotations{Priority: 1})
		time.Sleep(time.Minute)
		synctest.Wait()
		if got, want := indexed(ix), []string{"doc://b", "doc://c"}; !slices.Equal(got, want) {
			t.Errorf("after b's edit: indexed %v, want %v (b keeps its place)", got, want)
		}
		if st := m.Status(); st.ContentWaiting != 2 || st.ContentBound != "bytes" {
			t.Errorf("after b's edit: %d waiting (%q), want 2 (\"bytes\")", st.ContentWaiting, st.ContentBound)
		}
		// c is removed: its room goes to the most useful waiting resource.
		srv.RemoveResources("doc://c")
		time.Sleep(time.Minute)
		synctest.Wait()
		if got, want := indexed(ix), []string{"doc://b", "doc://top"}; !slices.Equal(got, want) {
			t.Fatalf("after c's removal: indexed %v, want %v", got, want)
		}
		// c is listed again beside a more useful resource: c goes in (the
		// bound is passed by what c held), the other waits.
		addDoc(srv, "doc://c", 1000, &mcpsdk.Annotations{Priority: 0.8})
		addDoc(srv, "doc://top2", 500, &mcpsdk.Annotations{Priority: 1})
		time.Sleep(time.Minute)
		synctest.Wait()
		if got, want := indexed(ix), []string{"doc://b", "doc://c", "doc://top"}; !slices.Equal(got, want) {
			t.Errorf("after c came back: indexed %v, want %v (top2 waiting)", got, want)
		}
	})
}

// TestContentPassTimeBound checks that a pass stops reading new resources
// when it runs out of time, says so, and that the next pass goes on.
func TestContentPassTimeBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mcptest.NewServer(nil, nil)
		for i := range 40 {
			uri := fmt.Sprintf("doc://%02d", i)
			srv.AddResource(&mcpsdk.Resource{URI: uri, Name: uri, MIMEType: "text/plain"},
				func(_ context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
					time.Sleep(time.Second)
					return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: req.Params.URI, Text: "text of " + req.Params.URI}}}, nil
				})
		}
		ix := newIndex(t)
		m := ctxsync.New(ctxsync.Options{Server: "s", Index: ix, Dial: mcptest.Dial(t, "s", srv), ContentPassTime: 2 * time.Second})
		start(t, m)
		<-m.Ready()
		st := m.Status()
		if st.Contents != 32 || st.ContentWaiting != 8 || st.ContentBound != "time" {
			t.Errorf("after the first pass: %d texts, %d waiting (%q); want 32, 8 (\"time\")", st.Contents, st.ContentWaiting, st.ContentBound)
		}
		time.Sleep(2 * ctxsync.DefaultContentMaxAge / 4)
		synctest.Wait()
		if st := m.Status(); st.Contents != 40 || st.ContentWaiting != 0 {
			t.Errorf("after the next pass: %d texts, %d waiting; want 40, 0", st.Contents, st.ContentWaiting)
		}
	})
}

// focusEmbedder embeds like BagEmbedder, but texts without "walrus" wait
// until open is closed.
type focusEmbedder struct {
	indextest.BagEmbedder
	open chan struct{}
}

func (e *focusEmbedder) Embed(ctx context.Context, text string) ([]float32, error) {
	if !strings.Contains(text, "walrus") {
		select {
		case <-e.open:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return e.BagEmbedder.Embed(ctx, text)
}

// TestFocusQueryIsAnswerableBeforeTheWholeList checks that with a focus
// query the resources it matches are embedded and their text indexed
// while the rest of a big list still waits for its vectors, which rank
// lexically meanwhile.
func TestFocusQueryIsAnswerableBeforeTheWholeList(t *testing.T) {
	srv := mcptest.NewServer(nil, nil)
	for i := range 600 {
		uri := fmt.Sprintf("doc://%03d", i)
		srv.AddResource(&mcpsdk.Resource{URI: uri, Name: fmt.Sprintf("notes %d", i), Description: "ordinary notes", MIMEType: "text/plain"},
			func(_ context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
				return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: req.Params.URI, Text: "plain text"}}}, nil
			})
	}
	srv.AddResource(&mcpsdk.Resource{URI: "doc://walrus", Name: "walrus feeding", Description: "what walrus herds eat", MIMEType: "text/plain"},
		func(_ context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
			return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: req.Params.URI, Text: "walrus herds eat clams"}}}, nil
		})
	emb := &focusEmbedder{open: make(chan struct{})}
	ix, err := index.Open(t.Context(), index.Options{Embedder: emb})
	if err != nil {
		t.Fatal(err)
	}
	ix.SetFocus("what do walrus herds eat")
	m := ctxsync.New(ctxsync.Options{Server: "s", Index: ix, Dial: mcptest.Dial(t, "s", srv)})
	start(t, m)
	defer close(emb.open)
	select {
	case <-m.Answerable():
	case <-time.After(30 * time.Second):
		t.Fatal("not answerable while the rest of the list waits for its vectors")
	}
	// Answerable comes once the rest of the list is pending.
	if has, _ := ix.HasContent(resource.Key{Server: "s", URI: "doc://walrus"}); !has {
		t.Error("the focus query's match has no text indexed")
	}
	if n := ix.Pending("s"); n == 0 {
		t.Error("nothing pending: the whole list was embedded first")
	}
	if hits := ix.Lexical("ordinary notes", 5, index.Filter{}); len(hits) == 0 {
		t.Error("pending descriptors are not searchable lexically")
	}
	if st := m.Status(); st.DescriptorsPending == 0 {
		t.Errorf("Status.DescriptorsPending = 0 while descriptors wait")
	}
}

// A replica that does not own a server takes its templates from the shared
// store as they are: a peer that wrote a million of them made every request
// of every replica parse a million templates (the list walk keeps 1,000).
func TestSharedTemplatesAreCappedAsAListWalk(t *testing.T) {
	m := ctxsync.New(ctxsync.Options{Server: "s", Index: newIndex(t), Owner: func() bool { return false },
		Dial: func(context.Context, *mcp.Options) (*mcp.Session, error) { return nil, errors.New("unused") }})
	tpls := make([]resource.Template, 5000)
	for i := range tpls {
		tpls[i] = resource.Template{Server: "s", URITemplate: fmt.Sprintf("x://t%d/{id}", i), Name: "t"}
	}
	m.SetShared(tpls, time.Now())
	if got := len(m.Templates()); got != mcp.DefaultMaxTemplates {
		t.Errorf("%d templates kept from the store, want %d", got, mcp.DefaultMaxTemplates)
	}
}

// TestEditsThatGrowCannotPassTheBound checks that resources whose text was
// indexed, edited to grow, take what they grew by from the server's room:
// twenty 100-byte texts edited to 50 KB stay within a 2,500-byte bound.
func TestEditsThatGrowCannotPassTheBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mcptest.NewServer(nil, nil)
		for i := range 20 {
			addDoc(srv, fmt.Sprintf("doc://r%02d", i), 100, nil)
		}
		ix := newIndex(t)
		m := ctxsync.New(ctxsync.Options{Server: "s", Index: ix, Dial: mcptest.Dial(t, "s", srv), ContentBytes: 2500})
		start(t, m)
		<-m.Ready()
		if got := len(indexed(ix)); got != 20 {
			t.Fatalf("%d texts indexed, want all 20", got)
		}
		for i := range 20 {
			addDoc(srv, fmt.Sprintf("doc://r%02d", i), 50_000, nil)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if got := ix.ServerContentBytes("s"); got > 2500 {
			t.Errorf("%d bytes of text indexed after the edits, over the 2,500-byte bound", got)
		}
		if st := m.Status(); st.ContentBound != "bytes" {
			t.Errorf("Status bound %q, want \"bytes\"", st.ContentBound)
		}
	})
}
