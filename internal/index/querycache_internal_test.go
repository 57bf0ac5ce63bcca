package index

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/contextd/contextd/internal/index/indextest"
)

type constEmbedder struct{ n *int }

func (constEmbedder) Name() string { return "const" }
func (constEmbedder) Dim() int     { return 4 }
func (e constEmbedder) Embed(context.Context, string) ([]float32, error) {
	*e.n++
	return []float32{1, 0, 0, 0}, nil
}

// The query cache keeps 256 entries; keyed by the whole query it held 256
// queries of 1 MiB (as large as gRPC takes) for good: 256 MiB a caller
// with the token could pin with 256 requests.
func TestQueryCacheDoesNotHoldLongQueries(t *testing.T) {
	c := &queryCache{max: DefaultQueryCache}
	n := 0
	emb := constEmbedder{&n}
	base := strings.Repeat("x", 1<<20)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range DefaultQueryCache {
		q := fmt.Sprintf("%d %s", i, base)
		if _, err := c.embed(t.Context(), emb, q); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 16<<20 {
		t.Errorf("%d cached queries of 1 MiB hold %d MiB", DefaultQueryCache, grew>>20)
	}
	runtime.KeepAlive(c)
	// Still a cache: the same long query is answered from it.
	was := n
	if _, err := c.embed(t.Context(), emb, fmt.Sprintf("%d %s", DefaultQueryCache-1, base)); err != nil {
		t.Fatal(err)
	}
	if n != was {
		t.Error("a long query is embedded again, not found in the cache")
	}
}

// batchCounter is a batching embedder that records each call.
type batchCounter struct {
	indextest.RandomEmbedder
	embeds  []string
	batches [][]string
}

func (e *batchCounter) Embed(ctx context.Context, text string) ([]float32, error) {
	e.embeds = append(e.embeds, text)
	return e.RandomEmbedder.Embed(ctx, text)
}

func (e *batchCounter) EmbedBatch(ctx context.Context, texts []string) ([][]float32, error) {
	e.batches = append(e.batches, slices.Clone(texts))
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i], _ = e.RandomEmbedder.Embed(ctx, t)
	}
	return out, nil
}

// embedAll embeds only the queries not cached, in one batch when the
// embedder batches, and returns each query's own vector in order.
func TestQueryCacheEmbedAllBatchesMisses(t *testing.T) {
	e := &batchCounter{RandomEmbedder: indextest.RandomEmbedder{Dims: 8}}
	c := &queryCache{max: DefaultQueryCache}
	if _, err := c.embed(t.Context(), e, "cached"); err != nil {
		t.Fatal(err)
	}
	qs := []string{"a task", "cached", "first clause", "second clause"}
	got, err := c.embedAll(t.Context(), e, qs)
	if err != nil {
		t.Fatal(err)
	}
	if want := [][]string{{"a task", "first clause", "second clause"}}; !slices.EqualFunc(e.batches, want, slices.Equal) || len(e.embeds) != 1 {
		t.Fatalf("batches %q and embeds %q, want one batch of the three misses after the one embed", e.batches, e.embeds)
	}
	for i, q := range qs {
		want, _ := e.RandomEmbedder.Embed(t.Context(), q)
		if !slices.Equal(got[i], want) {
			t.Fatalf("query %d (%q): not its vector", i, q)
		}
	}
	// Now all cached: nothing embedded.
	if _, err := c.embedAll(t.Context(), e, qs); err != nil || len(e.batches) != 1 || len(e.embeds) != 1 {
		t.Fatalf("all cached: %v, %d batches, %d embeds", err, len(e.batches), len(e.embeds))
	}
	// A single miss goes through Embed.
	if _, err := c.embedAll(t.Context(), e, []string{"cached", "new"}); err != nil || len(e.batches) != 1 || len(e.embeds) != 2 {
		t.Fatalf("one miss: %v, %d batches, %d embeds", err, len(e.batches), len(e.embeds))
	}
}
