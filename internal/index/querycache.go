package index

import (
	"context"
	"sync"

	"github.com/contextd/contextd/internal/embed"
)

// DefaultQueryCache is how many query vectors Dense keeps: agents repeat
// their queries (a Search, then an Assemble of the same task), and a
// sentence encoder takes milliseconds per query.
const DefaultQueryCache = 256

// queryCache remembers the vectors of recent queries, evicting the oldest.
// Vectors are never mutated after Embed returns, so they are shared.
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
	c.mu.Lock()
	v, ok := c.vecs[query]
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
	if _, ok := c.vecs[query]; ok {
		return v, nil
	}
	if len(c.order) < c.max {
		c.order = append(c.order, query)
	} else {
		delete(c.vecs, c.order[c.next])
		c.order[c.next] = query
		c.next = (c.next + 1) % c.max
	}
	c.vecs[query] = v
	return v, nil
}
