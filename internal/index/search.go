package index

import (
	"cmp"
	"container/heap"
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
// its first and best passages (see SetContents): (1 − w)·cos(q, descriptor)
// + w·(cos(q, passage₀) + maxᵢ cos(q, passageᵢ))/2, in [−1, 1]. Once any passage is indexed, every descriptor in
// scope is scored from the vectors the index holds (shared with the
// collections), on every core: mixing can pull a descriptor high on its
// own similarity below one that is not, so the two collections' top lists
// cannot be merged exactly. Without passages the same scan scores the
// descriptors alone: it is several times faster than chromem-go's query
// (four rows at a time, no copy of each document's metadata), and scores
// exactly as the mixed path does.
func (ix *Index) Dense(ctx context.Context, query string, n int, f Filter) ([]Hit, error) {
	hits, err := ix.DenseEach(ctx, []string{query}, n, f)
	if err != nil {
		return nil, err
	}
	return hits[0], nil
}

// DenseEach returns Dense(ctx, queries[i], n, f) as its i-th list (never
// nil), for every query, reading the rows once for all of them where it
// can: the clauses of a compound task cost one pass over the int8 copies
// instead of one each. It embeds the queries not cached in one batch when
// the embedder batches, else on every core. Errors:
// ErrClosed, or the embedder's (wrapped).
func (ix *Index) DenseEach(ctx context.Context, queries []string, n int, f Filter) ([][]Hit, error) {
	if ix.isClosed() {
		return nil, ErrClosed
	}
	vecs, err := ix.qvecs.embedAll(ctx, ix.emb, queries)
	if err != nil {
		return nil, fmt.Errorf("index: embed query: %w", err)
	}
	out := make([][]Hit, len(queries))
	for i := range out {
		out[i] = []Hit{}
	}
	// A filter naming every server that has descriptors is no filter: one
	// scan of every descriptor.
	servers := []string{""}
	if len(f.Servers) > 0 && !ix.coversAll(f.Servers) {
		servers = slices.Compact(slices.Sorted(slices.Values(f.Servers))) // a server named twice is searched once
	}
	for _, s := range servers {
		if ix.stored(s) > 0 {
			for i, hits := range ix.scanMixed(vecs, n, s) {
				out[i] = append(out[i], hits...)
			}
		}
	}
	for i := range out {
		out[i] = topHits(out[i], n)
	}
	return out, nil
}

// Lexical returns up to n descriptors matching query by BM25F, best first.
// n <= 0 means all matches. Descriptors sharing no term with the query are
// not returned.
func (ix *Index) Lexical(query string, n int, f Filter) []Hit {
	lh := ix.lex.Search(query, n, ix.lexKeep(f, resource.ParseKey))
	hits := make([]Hit, 0, len(lh))
	for _, h := range lh {
		if k, ok := resource.ParseKey(h.ID); ok {
			hits = append(hits, Hit{Key: k, Score: h.Score})
		}
	}
	return hits
}

// sortHits orders hits by score, best first, then by key ((server, URI),
// the order of Key.String, without building the strings). Keys are unique,
// so the order is total and an unstable sort gives it.
func sortHits(h []Hit) {
	slices.SortFunc(h, compareHits)
}

// compareHits is sortHits' order: negative when a comes before b.
func compareHits(a, b Hit) int {
	switch {
	case a.Score > b.Score:
		return -1
	case a.Score < b.Score:
		return 1
	}
	return cmp.Or(strings.Compare(a.Key.Server, b.Key.Server), strings.Compare(a.Key.URI, b.Key.URI))
}

// topHits returns the n first of h in sortHits' order (all of h, sorted,
// when n <= 0 or n >= len(h)). It keeps the n best seen in a heap, so
// ranking 10,000 hits for a pool of 100 sorts 100, not 10,000. h's order is
// lost; the result shares its memory.
func topHits(h []Hit, n int) []Hit {
	if n <= 0 || n >= len(h) {
		sortHits(h)
		return h
	}
	best := worstFirst(h[:n])
	heap.Init(&best)
	for _, x := range h[n:] {
		if compareHits(x, best[0]) < 0 {
			best[0] = x
			heap.Fix(&best, 0)
		}
	}
	sortHits(best)
	return best
}

// worstFirst is a heap of hits whose root is the last in sortHits' order.
type worstFirst []Hit

func (w worstFirst) Len() int           { return len(w) }
func (w worstFirst) Less(i, j int) bool { return compareHits(w[i], w[j]) > 0 }
func (w worstFirst) Swap(i, j int)      { w[i], w[j] = w[j], w[i] }
func (w *worstFirst) Push(x any)        { *w = append(*w, x.(Hit)) }
func (w *worstFirst) Pop() any {
	old := *w
	x := old[len(old)-1]
	*w = old[:len(old)-1]
	return x
}

// lexKeep returns the filter for a search of a lexical index whose IDs
// parse to keys with key: nil when f keeps every server with descriptors,
// stored or pending, so that the search need not read every candidate's
// ID (at 100,000 descriptors, a cache miss each).
func (ix *Index) lexKeep(f Filter, key func(string) (resource.Key, bool)) func(string) bool {
	if len(f.Servers) == 0 || ix.coversAllListed(f.Servers) {
		return nil
	}
	return func(id string) bool {
		k, ok := key(id)
		return ok && f.keep(k)
	}
}

// coversAllListed reports whether servers include every server with
// descriptors, stored or pending.
func (ix *Index) coversAllListed(servers []string) bool {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	for _, m := range []map[string]int{ix.count, ix.pcount} {
		for s, n := range m {
			if n > 0 && !slices.Contains(servers, s) {
				return false
			}
		}
	}
	return true
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
// score for the query vector from the vectors the entries share with the
// collections, on every core, and returns the n best (all when n <= 0),
// best first, ties by key.
//
// With several query vectors it returns each one's hits, in one pass over
// the rows' int8 copies when the prefilter can serve them.
func (ix *Index) scanMixed(vecs [][]float32, n int, server string) [][]Hit {
	r := ix.rows()
	w := float32(ix.cw)
	if hits, ok := r.prefiltered(vecs, n, server, w); ok {
		return hits
	}
	out := make([][]Hit, len(vecs))
	for i, v := range vecs {
		if hits, ok := r.prefiltered([][]float32{v}, n, server, w); ok {
			out[i] = hits[0]
			continue
		}
		out[i] = r.scanAll(v, n, server, w)
	}
	return out
}

// scanAll is scanMixed without the prefilter: every row of server ("" for
// all) scored exactly with weight w.
func (r *scanRows) scanAll(vec []float32, n int, server string, w float32) []Hit {
	keys, vecs, ps, upto := r.keys, r.vecs, r.ps, r.upto
	if server != "" {
		keys, vecs, ps, upto = nil, nil, nil, nil
		for i, k := range r.keys {
			if k.Server == server {
				keys = append(keys, k)
				vecs = append(vecs, r.vecs[i])
				ps = append(ps, r.ps[firstPassage(r.upto, i):r.upto[i]]...)
				upto = append(upto, len(ps))
			}
		}
	}
	hits := make([]Hit, len(keys))
	for i, k := range keys {
		hits[i].Key = k
	}
	var wg sync.WaitGroup
	parts := max(1, min(runtime.GOMAXPROCS(0), (len(hits)+len(ps))/1024))
	for p := range parts {
		lo, hi := p*len(hits)/parts, (p+1)*len(hits)/parts
		wg.Go(func() { scoreMixed(hits[lo:hi], vecs[lo:hi], ps, upto[lo:hi], firstPassage(upto, lo), vec, w) })
	}
	wg.Wait()
	return topHits(hits, n)
}

// scanRows is what Dense scans: every descriptor that has a vector, with
// its vector and its embedded passages (ps[upto[i-1]:upto[i]] are row i's),
// in no particular order. It is built from docs when they changed since
// the last scan (gen), then shared by every scan until they change again,
// and never modified: a sync's writes cost one rebuild at the next query,
// not one walk of the whole map per query.
type scanRows struct {
	gen  uint64
	keys []resource.Key
	vecs [][]float32
	ps   [][]float32
	upto []int
	q    *quantRows // their int8 copies, for the prefilter; nil: none
}

// rows returns the current scanRows, building it if docs changed.
func (ix *Index) rows() *scanRows {
	ix.rowsMu.Lock()
	defer ix.rowsMu.Unlock()
	if r := ix.scan; r != nil && r.gen == ix.gen.Load() {
		return r
	}
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	// Writers bump gen holding mu, so gen read under the read lock
	// belongs to exactly the docs read with it.
	r := &scanRows{gen: ix.gen.Load()}
	if old := ix.scan; old != nil {
		r.keys = make([]resource.Key, 0, len(old.keys))
		r.vecs = make([][]float32, 0, len(old.vecs))
		r.upto = make([]int, 0, len(old.upto))
		r.ps = make([][]float32, 0, len(old.ps))
	}
	for k, e := range ix.docs {
		if e.vec == nil {
			continue
		}
		r.keys = append(r.keys, k)
		r.vecs = append(r.vecs, e.vec)
		if e.content != nil {
			for _, p := range e.content.vecs {
				if p != nil {
					r.ps = append(r.ps, p)
				}
			}
		}
		r.upto = append(r.upto, len(r.ps))
	}
	var old *quantRows
	if ix.scan != nil {
		old = ix.scan.q
	}
	r.quantize(old)
	ix.scan = r
	return r
}

// firstPassage is where the passages of hit lo start in ps, given upto.
func firstPassage(upto []int, lo int) int {
	if lo == 0 {
		return 0
	}
	return upto[lo-1]
}

// scoreMixed sets each hit's score to Dense's mixed score for the unit query
// vector q: dot(vecs[i], q), or (1 − w)·dot(vecs[i], q) + w·(dot(p₀, q) +
// maxⱼ dot(pⱼ, q))/2
// over the hit's passages ps[from:upto[0]], ps[upto[0]:upto[1]], … when it
// has some. It goes through dots, four rows at a time.
func scoreMixed(hits []Hit, vecs, ps [][]float32, upto []int, from int, q []float32, w float32) {
	d := make([]float32, len(vecs))
	dots(vecs, q, d)
	to := from
	if len(upto) > 0 {
		to = upto[len(upto)-1]
	}
	pd := make([]float32, to-from)
	dots(ps[from:to], q, pd)
	at := from
	for i := range hits {
		hits[i].Score = float64(d[i])
		if upto[i] == at {
			continue
		}
		first := pd[at-from]
		best := first
		for _, x := range pd[at-from+1 : upto[i]-from] {
			best = max(best, x)
		}
		at = upto[i]
		hits[i].Score = mix32(d[i], first, best, w)
	}
}

// A PassageHit is one embedded passage of a resource's indexed text, with
// its similarity to a query.
type PassageHit struct {
	// Span is where the passage is: byte offsets into the text as
	// SetContents indexed it (Content.Text cut at MaxContentBytes; for
	// internal/sync, the read's text items joined by a blank line), and the
	// 1-based lines it covers.
	Span
	// Passage is the passage's number among the text's passages
	// (Passages), 0 for the first.
	Passage int
	// Score is the cosine similarity in [−1, 1] of the query's embedding
	// and the passage's, computed as Dense does.
	Score float64
}

// PassageHits returns, for each of keys that has indexed text, its
// embedded passages ranked by similarity to query, best first (ties in
// text order). Passages not embedded yet (EmbedPassages) or past
// MaxPassages are not listed, so a text's list may be shorter than its
// passages; a key without indexed text, or unknown, is absent from the map.
// It costs one query embedding (cached, as for Dense) and one dot product
// per passage. Errors: ErrClosed, or the embedder's (wrapped).
func (ix *Index) PassageHits(ctx context.Context, query string, keys []resource.Key) (map[resource.Key][]PassageHit, error) {
	if ix.isClosed() {
		return nil, ErrClosed
	}
	q, err := ix.qvecs.embed(ctx, ix.emb, query)
	if err != nil {
		return nil, fmt.Errorf("index: embed query: %w", err)
	}
	out := map[resource.Key][]PassageHit{}
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	for _, k := range keys {
		e, ok := ix.docs[k]
		if !ok || !e.content.hasWords() {
			continue
		}
		var hs []PassageHit
		for i, v := range e.content.vecs {
			if v != nil {
				hs = append(hs, PassageHit{Span: e.content.spans[i], Passage: i, Score: float64(dot(v, q))})
			}
		}
		slices.SortStableFunc(hs, func(a, b PassageHit) int { return cmp.Compare(b.Score, a.Score) })
		out[k] = hs
	}
	return out, nil
}

// rescore returns dot(v, q) for a hit of chromem-go's query, v being the
// hit's stored vector, so that every path of Dense (and Score) scores a
// descriptor with the same arithmetic: chromem-go's own sum may be fused
// into multiply-adds on some targets (arm64, or amd64 built with
// GOAMD64=v3) where dot is not. chromem-go still chooses the top k; only a
// last-bit tie at the k-th place could differ. Without a vector it keeps
// chromem-go's similarity.
func (ix *Index) rescore(k resource.Key, v, q []float32, sim float32) float64 {
	if len(v) == 0 {
		ix.mu.RLock()
		if e, ok := ix.docs[k]; ok {
			v = e.vec
		}
		ix.mu.RUnlock()
	}
	if len(v) != len(q) {
		return float64(sim)
	}
	return float64(dot(v, q))
}

// dot is the dot product of a and b over their common length, summed in
// order, each product rounded to float32 before it is added (the explicit
// conversion keeps the compiler from fusing them into multiply-adds, which
// it does on some targets only), so a descriptor scores the same to the last
// bit whichever path of Dense (or Score) computes it, on every target.
func dot(a, b []float32) float32 {
	n := min(len(a), len(b))
	a, b = a[:n], b[:n]
	var s float32
	for i := range a {
		s += float32(a[i] * b[i])
	}
	return s
}

// dots sets out[i] to dot(vs[i], q) for every row. It sums four rows at a
// time, each still in order and unfused, so every result is dot's to the
// last bit: the
// four independent sums keep the floating-point unit busy where one sum
// waits on its own latency (about 2.5× faster on 512-dimension vectors,
// BenchmarkDense). Rows of another length than q fall back to dot.
func dots(vs [][]float32, q []float32, out []float32) {
	n := len(q)
	i := 0
	for ; i+4 <= len(vs); i += 4 {
		a, b, c, d := vs[i], vs[i+1], vs[i+2], vs[i+3]
		if len(a) != n || len(b) != n || len(c) != n || len(d) != n {
			for j := i; j < i+4; j++ {
				out[j] = dot(vs[j], q)
			}
			continue
		}
		a, b, c, d = a[:n], b[:n], c[:n], d[:n]
		var sa, sb, sc, sd float32
		for k, x := range q {
			sa += float32(a[k] * x)
			sb += float32(b[k] * x)
			sc += float32(c[k] * x)
			sd += float32(d[k] * x)
		}
		out[i], out[i+1], out[i+2], out[i+3] = sa, sb, sc, sd
	}
	for ; i < len(vs); i++ {
		out[i] = dot(vs[i], q)
	}
}
