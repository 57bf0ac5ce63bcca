package index

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
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
