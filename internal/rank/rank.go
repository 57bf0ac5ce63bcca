// Package rank combines several rankings of the same items into one with
// reciprocal rank fusion (RRF).
//
// contextd ranks resource descriptors with more than one method (BM25 over
// the descriptor fields, dense embeddings). Their scores live on different
// scales, so instead of mixing scores, RRF uses only each item's position:
//
//	score(d) = Σ_i w_i / (k + rank_i(d))
//
// summed over the input lists i that contain d, with rank_i(d) the 1-based
// position of d in list i (Cormack, Clarke & Büttcher, "Reciprocal Rank
// Fusion outperforms Condorcet and individual rank learning methods",
// SIGIR 2009). The constant k damps the advantage of the very first ranks;
// the paper found k = 60 to work well across collections, and a k ≤ 0
// passed to [Fuse] means that value. Plain RRF has every weight w_i = 1;
// [FuseWeighted] lets a caller trust one ranker more than another.
// [Convex] fuses two lists by their normalised scores instead, and
// [Diversify] re-orders the head of a fused ranking so that it serves each
// aspect (clause) of a compound query.
//
// # Determinism
//
// Output order is fully determined by the input: by score (descending),
// then by the best single rank the item has in any list (ascending), then
// by ID (ascending). Each item's contributions are summed in a canonical
// order, so items whose ranks are permutations of each other across lists
// get bit-identical scores and fall through to the tie-breakers, rather
// than being ordered by floating-point rounding.
package rank

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// DefaultK is the RRF constant recommended by Cormack et al. (2009).
const DefaultK = 60

// A Fused is one item of a fused ranking.
type Fused struct {
	ID    string
	Score float64
	// Ranks[i] is the 1-based rank of ID in the i-th input list, or 0 if
	// the list does not contain it. len(Ranks) is the number of lists.
	Ranks []int
}

// Fuse merges ranked lists of IDs, best first, with reciprocal rank fusion
// and returns every ID that occurs in any list, best first; see the package
// documentation for the formula and the order. k ≤ 0 (or NaN) means
// [DefaultK].
//
// An ID's rank in a list is its 1-based position. If a list holds an ID
// more than once, only the first occurrence counts; later ones are ignored
// but still occupy their positions, so the other IDs keep the ranks the
// ranker gave them. Empty or nil lists contribute nothing. Fuse returns nil
// if all lists are empty.
func Fuse(k float64, lists ...[]string) []Fused {
	return FuseWeighted(k, nil, lists...)
}

// FuseWeighted is [Fuse] with a weight per list: an ID at rank r in list i
// contributes weights[i] / (k + r). nil weights means 1 for every list.
// A zero weight makes a list's ranks count for nothing in the score, but its
// IDs are still returned (with their Ranks), so the result is always the
// union of the lists.
//
// FuseWeighted panics if weights is not nil and its length differs from
// the number of lists, or if a weight is negative, NaN or infinite: these
// are programming errors.
func FuseWeighted(k float64, weights []float64, lists ...[]string) []Fused {
	if !(k > 0) {
		k = DefaultK
	}
	if weights != nil && len(weights) != len(lists) {
		panic(fmt.Sprintf("rank: %d weights for %d lists", len(weights), len(lists)))
	}
	for i, w := range weights {
		if !(w >= 0) || math.IsInf(w, 1) {
			panic(fmt.Sprintf("rank: invalid weight %v for list %d", w, i))
		}
	}

	total := 0
	for _, l := range lists {
		total += len(l)
	}
	if total == 0 {
		return nil
	}
	at := make(map[string]int, total) // ID → index in out
	out := make([]Fused, 0, total)
	for li, list := range lists {
		for pos, id := range list {
			j, ok := at[id]
			if !ok {
				j = len(out)
				at[id] = j
				out = append(out, Fused{ID: id, Ranks: make([]int, len(lists))})
			}
			if out[j].Ranks[li] == 0 {
				out[j].Ranks[li] = pos + 1
			}
		}
	}

	terms := make([]float64, 0, len(lists))
	for i := range out {
		terms = terms[:0]
		for li, r := range out[i].Ranks {
			if r == 0 {
				continue
			}
			w := 1.0
			if weights != nil {
				w = weights[li]
			}
			terms = append(terms, w/(k+float64(r)))
		}
		// Sum in ascending order: the result depends only on the multiset
		// of contributions (and small terms first lose less precision).
		slices.Sort(terms)
		var s float64
		for _, t := range terms {
			s += t
		}
		out[i].Score = s
	}

	sortFused(out)
	return out
}

// sortFused orders a fused ranking: by score (descending), then by the best
// single rank (ascending), then by ID.
func sortFused(out []Fused) {
	slices.SortFunc(out, func(a, b Fused) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		if c := cmp.Compare(bestRank(a.Ranks), bestRank(b.Ranks)); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
}

// bestRank returns the smallest non-zero rank.
func bestRank(ranks []int) int {
	best := math.MaxInt
	for _, r := range ranks {
		if r > 0 && r < best {
			best = r
		}
	}
	return best
}
