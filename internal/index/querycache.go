package index

import (
	"context"
	"crypto/sha256"
	"fmt"
	"runtime"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/contextd/contextd/internal/embed"
)

// DefaultQueryCache is how many query vectors Dense keeps: agents repeat
// their queries (a Search, then an Assemble of the same task), and a
// sentence encoder takes milliseconds per query.
const DefaultQueryCache = 256

// queryCache remembers the vectors of recent queries, evicting the oldest.
// Vectors are never mutated after Embed returns, so they are shared. A
// query longer than maxCacheKey is keyed by its SHA-256, so that the cache
// holds at most max short keys whatever the queries' length (256 queries of
// 1 MiB, as large as gRPC lets one be, held 256 MiB).
type queryCache struct {
	max   int // entries; < 0 disables
	mu    sync.Mutex
	vecs  map[string][]float32
	order []string // ring of keys, oldest at next
	next  int
}

func (c *queryCache) embed(ctx context.Context, e embed.Embedder, query string) ([]float32, error) {
	if v, ok := c.get(query); ok {
		return v, nil
	}
	v, err := e.Embed(ctx, query)
	if err != nil {
		return nil, err
	}
	c.put(query, v)
	return v, nil
}

// embedAll returns the vectors of queries, in order, from the cache or
// else embedded: with one EmbedBatch for those missing when e is an
// embed.Batcher and more than one is missing (a query and its clauses:
// USE-lite then reads its weights once for all), else with Embed, on
// every core.
func (c *queryCache) embedAll(ctx context.Context, e embed.Embedder, queries []string) ([][]float32, error) {
	out := make([][]float32, len(queries))
	var miss []int
	for i, q := range queries {
		if v, ok := c.get(q); ok {
			out[i] = v
		} else {
			miss = append(miss, i)
		}
	}
	if b, ok := e.(embed.Batcher); ok && len(miss) > 1 {
		texts := make([]string, len(miss))
		for j, i := range miss {
			texts[j] = queries[i]
		}
		vs, err := b.EmbedBatch(ctx, texts)
		if err != nil {
			return nil, err
		}
		if len(vs) != len(texts) {
			return nil, fmt.Errorf("embedder returned %d vectors for %d queries", len(vs), len(texts))
		}
		for j, i := range miss {
			out[i] = vs[j]
			c.put(queries[i], vs[j])
		}
		return out, nil
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(runtime.GOMAXPROCS(0))
	for _, i := range miss {
		g.Go(func() error {
			v, err := c.embed(gctx, e, queries[i])
			out[i] = v
			return err
		})
	}
	return out, g.Wait()
}

// get returns query's cached vector, if any.
func (c *queryCache) get(query string) ([]float32, bool) {
	if c.max < 0 {
		return nil, false
	}
	key := cacheKey(query)
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.vecs[key]
	return v, ok
}

// put caches v as query's vector.
func (c *queryCache) put(query string, v []float32) {
	if c.max < 0 {
		return
	}
	key := cacheKey(query)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.vecs == nil {
		c.vecs = make(map[string][]float32, c.max)
		c.order = make([]string, 0, c.max)
	}
	if _, ok := c.vecs[key]; ok {
		return
	}
	if len(c.order) < c.max {
		c.order = append(c.order, key)
	} else {
		delete(c.vecs, c.order[c.next])
		c.order[c.next] = key
		c.next = (c.next + 1) % c.max
	}
	c.vecs[key] = v
}

// maxCacheKey is the longest query that is its own cache key.
const maxCacheKey = 256

// cacheKey is "q" and query when short, else "h" and its SHA-256: no
// query can pass for another.
func cacheKey(query string) string {
	if len(query) <= maxCacheKey {
		return "q" + query
	}
	h := sha256.Sum256([]byte(query))
	return "h" + string(h[:])
}
