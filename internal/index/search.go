package index

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/philippgille/chromem-go"

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
// passage), in [−1, 1]. The result is exact: the candidates are the n best
// of each of the two collections, each scored in full; when a descriptor
// outside both lists could still score above the n-th candidate (at most
// the descriptors' n-th similarity, or the mix of both lists' n-th), every
// descriptor in scope is scored.
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
		var res []chromem.Result
		for {
			res, err = ix.coll.QueryEmbedding(ctx, vec, k, where, nil)
			if err != nil {
				// A concurrent delete can shrink the collection below k.
				if k2 := ix.Len(s); k2 > 0 && k2 < k {
					k = k2
					res, err = ix.coll.QueryEmbedding(ctx, vec, k, where, nil)
				}
				if err != nil {
					return nil, fmt.Errorf("index: dense query: %v", err)
				}
			}
			if ix.cw == 0 {
				break
			}
			var exact bool
			res, exact, err = ix.mixContents(ctx, vec, k, n, where, res)
			if err != nil {
				return nil, err
			}
			if exact || k >= total {
				break
			}
			// Scoring all of them costs two full scans and no
			// per-document look-ups: cheaper than deepening step by step
			// when the scores are close together.
			k = total
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

// mixContents rescores desc, the k best descriptors for the unit query
// vector vec, with the passages of their contents, adding the resources
// whose passages are among the k best: see Dense. It returns every
// candidate, best first, and whether the first n of them are exactly the n
// best of all (n <= 0: all of them).
func (ix *Index) mixContents(ctx context.Context, vec []float32, k, n int, where map[string]string, desc []chromem.Result) ([]chromem.Result, bool, error) {
	kc := min(k, ix.ccoll.Count())
	if kc == 0 {
		return desc, true, nil
	}
	cres, err := ix.ccoll.QueryEmbedding(ctx, vec, kc, where, nil)
	if err != nil {
		// A concurrent write can shrink the collection below kc.
		if kc = min(k, ix.ccoll.Count()); kc == 0 {
			return desc, true, nil
		}
		if cres, err = ix.ccoll.QueryEmbedding(ctx, vec, kc, where, nil); err != nil {
			return nil, false, fmt.Errorf("index: dense query of contents: %v", err)
		}
	}
	// Only passages of entries that have one count: a passage left behind
	// by a failed delete must not score.
	hasPassage := func(id string) bool {
		key, ok := resource.ParseKey(id)
		if !ok {
			return false
		}
		e := ix.docs[key]
		return e.content != nil && e.content.vector
	}
	dsim := make(map[string]float32, len(desc)+len(cres))
	for _, r := range desc {
		dsim[r.ID] = r.Similarity
	}
	csim := make(map[string]float32, len(cres))
	var fill []string // listed descriptors whose passage was not among the kc best
	ix.mu.RLock()
	for _, r := range cres {
		if hasPassage(r.ID) {
			csim[r.ID] = r.Similarity
		}
	}
	for id := range dsim {
		if _, ok := csim[id]; !ok && hasPassage(id) {
			fill = append(fill, id)
		}
	}
	ix.mu.RUnlock()
	for id := range csim {
		if _, ok := dsim[id]; ok {
			continue
		}
		d, err := ix.coll.GetByID(ctx, id)
		if err != nil {
			delete(csim, id) // deleted meanwhile
			continue
		}
		dsim[id] = dot(d.Embedding, vec)
	}
	for _, id := range fill {
		if d, err := ix.ccoll.GetByID(ctx, id); err == nil {
			csim[id] = dot(d.Embedding, vec)
		}
	}
	w := float32(ix.cw)
	out := make([]chromem.Result, 0, len(dsim))
	for id, s := range dsim {
		if cs, ok := csim[id]; ok {
			s = (1-w)*s + w*cs
		}
		out = append(out, chromem.Result{ID: id, Similarity: s})
	}
	slices.SortFunc(out, func(a, b chromem.Result) int {
		switch {
		case a.Similarity > b.Similarity:
			return -1
		case a.Similarity < b.Similarity:
			return 1
		}
		return strings.Compare(a.ID, b.ID)
	})
	// A descriptor in neither list has a similarity at most the
	// descriptors' k-th; with a passage, at most the passages' kc-th too.
	if len(desc) < k {
		return out, true, nil // every descriptor in scope is a candidate
	}
	bound := desc[len(desc)-1].Similarity
	if len(cres) == kc {
		bound = max(bound, (1-w)*bound+w*cres[len(cres)-1].Similarity)
	}
	if n <= 0 || n > len(out) {
		return out, false, nil
	}
	return out, out[n-1].Similarity >= bound, nil
}

func dot(a, b []float32) float32 {
	var s float32
	for i := range min(len(a), len(b)) {
		s += a[i] * b[i]
	}
	return s
}
