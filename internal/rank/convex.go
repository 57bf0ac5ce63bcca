package rank

import (
	"fmt"
	"math"
)

// A Scored is one item of a retriever's list, with the retriever's score.
type Scored struct {
	ID    string
	Score float64
}

// A List is one retriever's answer, best first.
type List struct {
	Items []Scored
	// Floor is the lowest score the retriever can give: −1 for cosine
	// similarity, 0 for BM25.
	Floor float64
	// Cut says the retriever stopped at len(Items): an item it did not list
	// scored at most the last listed score. When false, an unlisted item
	// scored Floor (BM25 lists every document sharing a term).
	Cut bool
}

// Convex fuses two lists by a convex combination of their normalised
// scores, the TM2C2 fusion of Bruch, Gai and Ingber ("An Analysis of Fusion
// Functions for Hybrid Retrieval", ACM TOIS 42(1), 2023), which they found
// to beat reciprocal rank fusion when tuned on a little data:
//
//	score(d) = α·n_a(d) + (1−α)·n_b(d),  n(d) = (s(d) − Floor) / (max s − Floor)
//
// with max s the list's best score, so each list contributes in [0, 1]
// whatever its scale. An item missing from a list gets the list's last
// score if the list was Cut, else Floor. alpha must be in [0, 1]; an empty
// list contributes 0. The result is the union of both lists, ordered as
// FuseWeighted orders (score, then best rank, then ID); Ranks has two
// entries.
func Convex(alpha float64, a, b List) []Fused {
	if !(alpha >= 0 && alpha <= 1) {
		panic(fmt.Sprintf("rank: convex weight %v is outside [0, 1]", alpha))
	}
	return ConvexN([]float64{alpha, 1 - alpha}, a, b)
}

// ConvexN is Convex over any number of lists: score(d) = Σᵢ wᵢ·nᵢ(d), with
// weights[i] the weight of lists[i]. The weights must be finite and
// non-negative and sum to at most 1 (ConvexN panics otherwise); Ranks has
// one entry per list.
func ConvexN(weights []float64, lists ...List) []Fused {
	if len(weights) != len(lists) {
		panic(fmt.Sprintf("rank: %d convex weights for %d lists", len(weights), len(lists)))
	}
	sum := 0.0
	for _, w := range weights {
		if !(w >= 0 && w <= 1) {
			panic(fmt.Sprintf("rank: convex weight %v is outside [0, 1]", w))
		}
		sum += w
	}
	if sum > 1+1e-9 {
		panic(fmt.Sprintf("rank: convex weights sum to %v, more than 1", sum))
	}
	at := map[string]int{}
	var out []Fused
	for li, l := range lists {
		for pos, it := range l.Items {
			j, ok := at[it.ID]
			if !ok {
				j = len(out)
				at[it.ID] = j
				out = append(out, Fused{ID: it.ID, Ranks: make([]int, len(lists))})
			}
			if out[j].Ranks[li] == 0 {
				out[j].Ranks[li] = pos + 1
			}
		}
	}
	for li, l := range lists {
		w := weights[li]
		if len(l.Items) == 0 || w == 0 {
			continue
		}
		top := l.Items[0].Score
		span := top - l.Floor
		if !(span > 0) || math.IsInf(span, 0) {
			continue // every score at the floor (or garbage): no information
		}
		missing := l.Floor
		if l.Cut {
			missing = l.Items[len(l.Items)-1].Score
		}
		for i := range out {
			s := missing
			if r := out[i].Ranks[li]; r > 0 {
				s = l.Items[r-1].Score
			}
			out[i].Score += w * (s - l.Floor) / span
		}
	}
	sortFused(out)
	return out
}
