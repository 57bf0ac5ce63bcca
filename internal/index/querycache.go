package index

import (
	"context"
	"crypto/sha256"
	"sync"

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
	if c.max < 0 {
		return e.Embed(ctx, query)
	}
	key := cacheKey(query)
	c.mu.Lock()
	v, ok := c.vecs[key]
	c.mu.Unlock()
	if ok {
		return v, nil
	}
	v, err := e.Embed(ctx, query)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.vecs == nil {
		c.vecs = make(map[string][]float32, c.max)
		c.order = make([]string, 0, c.max)
	}
	if _, ok := c.vecs[key]; ok {
		return v, nil
	}
	if len(c.order) < c.max {
		c.order = append(c.order, key)
	} else {
		delete(c.vecs, c.order[c.next])
		c.order[c.next] = key
		c.next = (c.next + 1) % c.max
	}
	c.vecs[key] = v
	return v, nil
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
