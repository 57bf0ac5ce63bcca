package index

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/contextd/contextd/internal/resource"
)

// A Hit is one retrieved descriptor with its score in one retrieval list.
type Hit struct {
	Key   resource.Key
	Score float64 // cosine similarity (dense) or BM25F score (lexical)
}

// A Filter restricts retrieval. The zero Filter keeps everything.
type Filter struct {
	Servers []string // keep only these servers; empty keeps all
}

func (f Filter) keep(k resource.Key) bool {
	return len(f.Servers) == 0 || slices.Contains(f.Servers, k.Server)
}

// Dense returns up to n descriptors most similar to query by cosine
// similarity of embeddings, best first (ties by key). n <= 0 means all.
func (ix *Index) Dense(ctx context.Context, query string, n int, f Filter) ([]Hit, error) {
	if ix.isClosed() {
		return nil, ErrClosed
	}
	vec, err := ix.qvecs.embed(ctx, ix.emb, query)
	if err != nil {
		return nil, fmt.Errorf("index: embed query: %w", err)
	}
	var hits []Hit
	// chromem-go filters by exact metadata match only, so a multi-server
	// filter is one query per server.
	// A filter naming every server that has descriptors is no filter: one
	// unfiltered scan is much cheaper than a metadata match per document.
	servers := []string{""}
	if len(f.Servers) > 0 && !ix.coversAll(f.Servers) {
		servers = f.Servers
	}
	for _, s := range servers {
		total := ix.Len(s)
		if total == 0 {
			continue
		}
		k := total
		if n > 0 && n < k {
			k = n
		}
		var where map[string]string
		if s != "" {
			where = map[string]string{mServer: s}
		}
		res, err := ix.coll.QueryEmbedding(ctx, vec, k, where, nil)
		if err != nil {
			// A concurrent delete can shrink the collection below k.
			if k2 := ix.Len(s); k2 > 0 && k2 < k {
				res, err = ix.coll.QueryEmbedding(ctx, vec, k2, where, nil)
			}
			if err != nil {
				return nil, fmt.Errorf("index: dense query: %v", err)
			}
		}
		for _, r := range res {
			key, ok := resource.ParseKey(r.ID)
			if ok {
				hits = append(hits, Hit{Key: key, Score: float64(r.Similarity)})
			}
		}
	}
	sortHits(hits)
	if n > 0 && len(hits) > n {
		hits = hits[:n]
	}
	return hits, nil
}

// Lexical returns up to n descriptors matching query by BM25F, best first.
// n <= 0 means all matches. Descriptors sharing no term with the query are
// not returned.
func (ix *Index) Lexical(query string, n int, f Filter) []Hit {
	lh := ix.lex.Search(query, n, func(id string) bool {
		k, ok := resource.ParseKey(id)
		return ok && f.keep(k)
	})
	hits := make([]Hit, 0, len(lh))
	for _, h := range lh {
		if k, ok := resource.ParseKey(h.ID); ok {
			hits = append(hits, Hit{Key: k, Score: h.Score})
		}
	}
	return hits
}

func sortHits(h []Hit) {
	slices.SortStableFunc(h, func(a, b Hit) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		}
		return strings.Compare(a.Key.String(), b.Key.String())
	})
}

// coversAll reports whether servers include every server with descriptors.
func (ix *Index) coversAll(servers []string) bool {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	for s, n := range ix.count {
		if n > 0 && !slices.Contains(servers, s) {
			return false
		}
	}
	return true
}
