package index

import (
	"cmp"
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"

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
//
// The score of a descriptor with indexed content mixes in the similarity of
// its passage (see SetContents): (1 − w)·cos(q, descriptor) + w·cos(q,
// passage), in [−1, 1]. Once any passage is indexed, every descriptor in
// scope is scored from the vectors the index holds (shared with the
// collections), on every core: mixing can pull a descriptor high on its
// own similarity below one that is not, so the two collections' top lists
// cannot be merged exactly. Without passages the descriptors' collection
// is queried as it is.
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
		if ix.cw > 0 && ix.ccoll.Count() > 0 {
			hits = append(hits, ix.scanMixed(vec, n, s)...)
			continue
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

// sortHits orders hits by score, best first, then by key ((server, URI),
// the order of Key.String, without building the strings).
func sortHits(h []Hit) {
	slices.SortStableFunc(h, func(a, b Hit) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		}
		return cmp.Or(strings.Compare(a.Key.Server, b.Key.Server), strings.Compare(a.Key.URI, b.Key.URI))
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

// scanMixed scores every descriptor of server ("" for all) by Dense's mixed
// score from the vectors the entries share with the collections, on every
// core, and returns the n best (all when n <= 0), best first, ties by key.
func (ix *Index) scanMixed(vec []float32, n int, server string) []Hit {
	var hits []Hit
	var vecs, passages [][]float32 // parallel to hits
	ix.mu.RLock()
	for k, e := range ix.docs {
		if (server == "" || k.Server == server) && e.vec != nil {
			hits = append(hits, Hit{Key: k})
			vecs = append(vecs, e.vec)
			var p []float32
			if e.content != nil {
				p = e.content.passage
			}
			passages = append(passages, p)
		}
	}
	ix.mu.RUnlock()
	w := float32(ix.cw)
	var wg sync.WaitGroup
	parts := max(1, min(runtime.GOMAXPROCS(0), len(hits)/1024))
	for p := range parts {
		lo, hi := p*len(hits)/parts, (p+1)*len(hits)/parts
		wg.Go(func() {
			for i := lo; i < hi; i++ {
				hits[i].Score = float64(mixed(vecs[i], passages[i], vec, w))
			}
		})
	}
	wg.Wait()
	sortHits(hits)
	if n > 0 && len(hits) > n {
		hits = hits[:n]
	}
	return hits
}

// mixed is Dense's score for the unit query vector q of a descriptor's
// vector d and its passage's p (nil when none), at weight w.
func mixed(d, p, q []float32, w float32) float32 {
	s := dot(d, q)
	if p != nil {
		s = (1-w)*s + w*dot(p, q)
	}
	return s
}

// dot is the dot product of a and b over their common length, summed in
// order as chromem-go sums it, so a descriptor scores the same to the last
// bit whichever path of Dense (or Score) computes it.
func dot(a, b []float32) float32 {
	n := min(len(a), len(b))
	a, b = a[:n], b[:n]
	var s float32
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}
