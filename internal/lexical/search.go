package lexical

import (
	"cmp"
	"math"
	"slices"
	"sync"
)

// Search ranks the documents that match query and returns the best n hits,
// sorted by score (descending), then ID (ascending), so equal inputs always
// give equal output. n <= 0 means all hits. Only documents with a positive
// score, that is, sharing at least one term with the query, are returned.
//
// keep, if not nil, filters the candidates: a document is returned only if
// keep(id) is true. It is called without the index lock held, so it may use
// the index, and it runs before the top n are chosen, so a filtered search
// still returns up to n hits.
//
// Search returns nil if the index is empty, nothing matches, or query has
// no terms besides stop words ("the", "what is it").
//
// # Scoring
//
// The score is BM25F in the form of Robertson & Zaragoza (2009), §3.5.
// For each query term t and document d, the field frequencies are
// length-normalised and weighted into one pseudo-frequency:
//
//	tf(t,d) = Σ_f w_f · tf_f(t,d) / (1 − b + b · len_f(d) / avglen_f)
//
// where avglen_f is the mean length of field f over all documents, and
//
//	score(d) = Σ_t idf(t) · tf(t,d) · (k1 + 1) / (tf(t,d) + k1)
//	idf(t)   = ln(1 + (N − df(t) + 0.5) / (df(t) + 0.5))
//
// with N the number of documents and df(t) the number that contain t in any
// indexed field. The +1 inside the logarithm (Lucene's form) keeps idf
// positive even for terms in more than half of the documents. Each distinct
// query term counts once, however often it is repeated (k3 = 0 in the
// paper's terms).
func (x *Index) Search(query string, n int, keep func(id string) bool) []Hit {
	terms, onlyStop := analyze(query, true)
	if len(terms) == 0 || onlyStop {
		return nil
	}
	terms = distinct(terms)

	acc := accPool.Get().(*accumulator)
	defer accPool.Put(acc)

	x.mu.RLock()
	x.score(terms, acc)
	if keep == nil {
		// Select under the lock, so that only the n winners become Hits.
		sel := newSelector(n, len(acc.touched))
		for _, s := range acc.touched {
			// A score below the worst kept cannot enter: skip it without
			// reading its ID (a cache miss at 100,000 documents).
			if sc := acc.score[s]; !sel.below(sc) {
				sel.push(Hit{ID: x.slots[s].id, Score: sc})
			}
		}
		x.mu.RUnlock()
		acc.reset()
		return sel.result()
	}
	// Copy the candidates out, so that keep runs without the lock.
	hits := make([]Hit, len(acc.touched))
	for i, s := range acc.touched {
		hits[i] = Hit{ID: x.slots[s].id, Score: acc.score[s]}
	}
	x.mu.RUnlock()
	acc.reset()
	sel := newSelector(n, len(hits))
	for _, h := range hits {
		if keep(h.ID) {
			sel.push(h)
		}
	}
	return sel.result()
}

// An accumulator holds per-slot scores during one search. It is pooled:
// at 100,000 documents it is 800 kB, too much to allocate per query.
type accumulator struct {
	score   []float64 // indexed by slot; zero except at touched
	touched []int32   // slots with a positive score, in first-touch order
}

var accPool = sync.Pool{New: func() any { return new(accumulator) }}

func (a *accumulator) reset() {
	for _, s := range a.touched {
		a.score[s] = 0
	}
	a.touched = a.touched[:0]
}

// score adds the BM25F score of every document matching terms to acc.
// The caller holds x.mu for reading; acc is reset.
func (x *Index) score(terms []string, acc *accumulator) {
	nDocs := len(x.ids)
	if nDocs == 0 {
		return
	}
	if len(acc.score) < len(x.slots) {
		acc.score = make([]float64, len(x.slots))
	}
	k1, b, w := x.p.k1, x.p.b, &x.p.weights
	N := float64(nDocs)
	var avg [numFields]float64
	for f, total := range x.totalLen {
		avg[f] = float64(total) / N
	}

	// The outer loop runs over terms in query order, so each document's
	// sum is formed in the same order on every call, whatever the order of
	// the posting lists: scores are bit-for-bit repeatable and independent
	// of the history of updates.
	for _, t := range terms {
		post := x.postings[t]
		if len(post) == 0 {
			continue
		}
		df := float64(len(post))
		idf := math.Log(1 + (N-df+0.5)/(df+0.5))
		for i := range post {
			e := &post[i]
			lens := &x.lens[e.slot]
			var tf float64
			for f := range numFields {
				if e.fr[f] == 0 {
					continue
				}
				// len_f ≥ tf_f ≥ 1, so avg[f] > 0 and the norm is > 0.
				norm := 1 - b + b*float64(lens[f])/avg[f]
				tf += w[f] * float64(e.fr[f]) / norm
			}
			// tf > 0: only fields with a positive weight are indexed.
			if acc.score[e.slot] == 0 {
				acc.touched = append(acc.touched, e.slot)
			}
			acc.score[e.slot] += idf * tf * (k1 + 1) / (tf + k1)
		}
	}
}

// distinct removes repeated terms, keeping the first occurrence.
func distinct(terms []string) []string {
	if len(terms) < 2 {
		return terms
	}
	// A long query may repeat a few terms many times: size for the
	// common case and let the map grow.
	seen := make(map[string]struct{}, min(len(terms), 64))
	out := terms[:0]
	for _, t := range terms {
		if _, dup := seen[t]; !dup {
			seen[t] = struct{}{}
			out = append(out, t)
		}
	}
	return out
}

// compareHits orders hits by score descending, then ID ascending.
func compareHits(a, b Hit) int {
	if c := cmp.Compare(b.Score, a.Score); c != 0 {
		return c
	}
	return cmp.Compare(a.ID, b.ID)
}

// A selector keeps the n best hits pushed to it, in [compareHits] order,
// in a heap whose root is the worst of them: O(m · log n) for m pushes
// instead of a full sort.
type selector struct {
	n int // 0: keep all
	h []Hit
}

// newSelector returns a selector for the n best of about m hits; n <= 0
// means all.
func newSelector(n, m int) *selector {
	if n <= 0 || n > m {
		n = 0
	}
	return &selector{n: n, h: make([]Hit, 0, cmp.Or(n, m))}
}

func (s *selector) push(c Hit) {
	switch {
	case s.n == 0 || len(s.h) < s.n-1:
		s.h = append(s.h, c)
	case len(s.h) == s.n-1:
		s.h = append(s.h, c)
		for i := s.n/2 - 1; i >= 0; i-- {
			siftDown(s.h, i)
		}
	case compareHits(c, s.h[0]) < 0:
		s.h[0] = c
		siftDown(s.h, 0)
	}
}

// below reports whether a hit scoring score would not be kept: the
// selector holds its n and score is below the worst of them.
func (s *selector) below(score float64) bool {
	return s.n > 0 && len(s.h) == s.n && score < s.h[0].Score
}

// result returns the kept hits, best first, or nil if there are none.
func (s *selector) result() []Hit {
	if len(s.h) == 0 {
		return nil
	}
	slices.SortFunc(s.h, compareHits)
	return s.h
}

// siftDown restores the heap property (every parent sorts after its
// children in compareHits order) below i.
func siftDown(h []Hit, i int) {
	for {
		worst := i
		for _, c := range [2]int{2*i + 1, 2*i + 2} {
			if c < len(h) && compareHits(h[c], h[worst]) > 0 {
				worst = c
			}
		}
		if worst == i {
			return
		}
		h[i], h[worst] = h[worst], h[i]
		i = worst
	}
}
