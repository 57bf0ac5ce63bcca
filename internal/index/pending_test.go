package index_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/contextd/contextd/internal/index"
	"github.com/contextd/contextd/internal/index/indextest"
	"github.com/contextd/contextd/internal/resource"
)

// heldEmbedder embeds like BagEmbedder once open is closed; until then
// every Embed but of query waits (or fails when its context ends).
type heldEmbedder struct {
	indextest.BagEmbedder
	open  chan struct{}
	query string
	mu    sync.Mutex
	seen  []string // texts in the order Embed was called
}

func (e *heldEmbedder) Embed(ctx context.Context, text string) ([]float32, error) {
	e.mu.Lock()
	e.seen = append(e.seen, text)
	e.mu.Unlock()
	if text == e.query {
		return e.BagEmbedder.Embed(ctx, text)
	}
	select {
	case <-e.open:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return e.BagEmbedder.Embed(ctx, text)
}

func TestListedDescriptorsRankLexicallyBeforeTheirVectors(t *testing.T) {
	emb := &heldEmbedder{open: make(chan struct{}), query: "walrus"}
	ix := open(t, "", emb)
	ds := descs("s", "walrus-feeding", "otter-habitat", "kelp-forests")
	done := make(chan error, 1)
	go func() { _, err := ix.Replace(t.Context(), "s", ds); done <- err }()
	deadline := time.Now().Add(10 * time.Second)
	for ix.Pending("s") != 3 {
		if time.Now().After(deadline) {
			t.Fatalf("Pending = %d, want 3 while the vectors wait", ix.Pending("s"))
		}
		time.Sleep(time.Millisecond)
	}
	hits := ix.Lexical("walrus feeding", 10, index.Filter{})
	if len(hits) == 0 || hits[0].Key.URI != "doc://walrus-feeding" {
		t.Fatalf("Lexical before the vectors: %v, want doc://walrus-feeding first", hits)
	}
	if d, ok := ix.Get(hits[0].Key); !ok || d.Name != "walrus-feeding" {
		t.Fatalf("Get of a pending descriptor: %v %v", d, ok)
	}
	if n := ix.Len("s"); n != 3 {
		t.Fatalf("Len = %d, want 3 (pending count as listed)", n)
	}
	if dense, err := ix.Dense(t.Context(), "walrus", 10, index.Filter{}); err != nil || len(dense) != 0 {
		t.Fatalf("Dense before any vector: %v, %v; want none and no error", dense, err)
	}
	close(emb.open)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := ix.Pending("s"); n != 0 {
		t.Fatalf("Pending after Replace = %d", n)
	}
	if dense, _ := ix.Dense(t.Context(), "walrus", 10, index.Filter{}); len(dense) != 3 {
		t.Fatalf("Dense after Replace: %d hits, want 3", len(dense))
	}
}

func TestCancelledUpsertDropsItsPendingDescriptors(t *testing.T) {
	emb := &heldEmbedder{open: make(chan struct{})}
	ix := open(t, "", emb)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { _, err := ix.Upsert(ctx, descs("s", "walrus")...); done <- err }()
	for ix.Pending("s") != 1 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; err == nil {
		t.Fatal("cancelled Upsert returned nil")
	}
	if n, hits := ix.Len("s"), ix.Lexical("walrus", 10, index.Filter{}); n != 0 || len(hits) != 0 {
		t.Fatalf("after a cancelled Upsert: Len %d, Lexical %v; want nothing left", n, hits)
	}
}

func TestFocusEmbedsMatchingDescriptorsFirst(t *testing.T) {
	emb := &heldEmbedder{open: make(chan struct{})}
	close(emb.open)
	ix := open(t, "", emb)
	var ds []resource.Descriptor
	for i := range 600 {
		ds = append(ds, resource.Descriptor{Server: "s", URI: fmt.Sprintf("doc://%04d", i), Name: fmt.Sprintf("page %d", i), Description: "ordinary notes"})
	}
	ds[555].Description = "how walruses feed on clams"
	ix.SetFocus("what do walruses feed on")
	if _, err := ix.Replace(t.Context(), "s", ds); err != nil {
		t.Fatal(err)
	}
	first := -1
	for i, s := range emb.seen {
		if s == index.EmbeddingText(ds[555]) {
			first = i
		}
	}
	// Embedded in the first chunk, though listed in the third.
	if first < 0 || first >= 256 {
		t.Fatalf("the focus match was embedded %dth of %d; want in the first chunk", first, len(emb.seen))
	}
}

// A server filter that names every server with stored descriptors but
// not one whose descriptors are still pending (listed, not embedded) must
// keep the pending ones out of Lexical; naming it too lets them in.
func TestLexicalFilterKeepsPendingServersOut(t *testing.T) {
	emb := &heldEmbedder{open: make(chan struct{}), query: "walrus"}
	close(emb.open)
	ix := open(t, "", emb)
	if _, err := ix.Replace(t.Context(), "a", descs("a", "walrus-census", "seal-census")); err != nil {
		t.Fatal(err)
	}
	emb.open = make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := ix.Replace(t.Context(), "p", descs("p", "walrus-feeding", "otter-habitat"))
		done <- err
	}()
	defer func() {
		close(emb.open)
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for ix.Pending("p") != 2 {
		if time.Now().After(deadline) {
			t.Fatalf("Pending = %d, want 2 while the vectors wait", ix.Pending("p"))
		}
		time.Sleep(time.Millisecond)
	}
	servers := func(hits []index.Hit) map[string]int {
		out := map[string]int{}
		for _, h := range hits {
			out[h.Key.Server]++
		}
		return out
	}
	if got := servers(ix.Lexical("walrus", 10, index.Filter{Servers: []string{"a"}})); got["p"] != 0 || got["a"] != 1 {
		t.Fatalf("Lexical filtered to a: hits per server %v, want only a's walrus", got)
	}
	if got := servers(ix.Lexical("walrus", 10, index.Filter{Servers: []string{"a", "p"}})); got["p"] != 1 || got["a"] != 1 {
		t.Fatalf("Lexical filtered to a and p: hits per server %v, want a walrus of each", got)
	}
	if got := servers(ix.Lexical("walrus", 10, index.Filter{Servers: []string{"p"}})); got["p"] != 1 || got["a"] != 0 {
		t.Fatalf("Lexical filtered to p: hits per server %v, want only p's walrus", got)
	}
}
