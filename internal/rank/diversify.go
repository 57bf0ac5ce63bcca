package rank

import (
	"fmt"
	"math"
	"slices"
)

// Diversify re-orders the head of a ranking so that it covers each aspect
// of a query with several needs ("the stock price of Apple and the latest
// news about it"), by explicit query aspect diversification: xQuAD, from
// Santos, Macdonald and Ounis, "Exploiting Query Reformulations for Web
// Search Result Diversification" (WWW 2010), §3, eq. 2–4.
//
// ranked is the ranking for the whole query, best first; aspects holds one
// ranking per aspect (sub-query), best first. Diversify fills the first k
// positions greedily from the first depth items of ranked, each time taking
// the item d that maximises
//
//	(1−λ)·P(d|q) + λ·Σ_a P(a|q)·P(d|a)·Π_{s ∈ S} (1 − P(s|a))
//
// where S is the items already placed, P(a|q) = 1/len(aspects), and the
// relevance estimates come from the scores by a softmax-like transform
// with temperature tau (the paper leaves the estimator open):
//
//	P(d|q) = exp((score(d) − top score) / tau), and P(d|a) likewise in
//	aspect a's list (0 for an item missing from it),
//
// so an item scoring tau below the best counts e⁻¹ as much. The product
// term is how much of aspect a is still uncovered: once an item that
// serves a well is placed, more items serving only a gain little. Ties
// keep ranked's order. The remaining items follow in ranked's order.
//
// An item placed above items that outscored it takes the highest score
// among the items after it, so scores stay non-increasing along the
// result: a consumer that orders or thresholds by score (the selector's
// value order and value floor) keeps the diversified order rather than
// undoing it. ranked must be sorted by score, best first.
//
// lambda must be in [0, 1] and tau positive. With lambda 0, no aspects,
// k ≤ 0 or depth < 2, Diversify returns ranked as it is; otherwise it
// returns a new slice holding the same items.
func Diversify(ranked []Fused, aspects [][]Fused, lambda, tau float64, k, depth int) []Fused {
	if !(lambda >= 0 && lambda <= 1) {
		panic(fmt.Sprintf("rank: diversification weight %v is outside [0, 1]", lambda))
	}
	if !(tau > 0) || math.IsInf(tau, 0) {
		panic(fmt.Sprintf("rank: diversification temperature %v is not positive", tau))
	}
	depth = min(depth, len(ranked))
	k = min(k, depth)
	if lambda == 0 || len(aspects) == 0 || k <= 0 || depth < 2 {
		return ranked
	}
	top := ranked[0].Score
	cands := make([]int, depth) // indexes into ranked, in ranked's order
	pq := make([]float64, depth)
	for i := range depth {
		cands[i] = i
		pq[i] = math.Exp((ranked[i].Score - top) / tau)
	}
	// pa[a][i] is P(ranked[i] | aspect a) for the candidates.
	pa := make([][]float64, len(aspects))
	at := make(map[string]int, depth)
	for i := range depth {
		at[ranked[i].ID] = i
	}
	for a, l := range aspects {
		pa[a] = make([]float64, depth)
		if len(l) == 0 {
			continue
		}
		for _, it := range l {
			if i, ok := at[it.ID]; ok && pa[a][i] == 0 {
				pa[a][i] = math.Exp((it.Score - l[0].Score) / tau)
			}
		}
	}
	uncovered := make([]float64, len(aspects))
	for a := range uncovered {
		uncovered[a] = 1
	}
	w := 1 / float64(len(aspects))
	out := make([]Fused, 0, len(ranked))
	for range k {
		best, bestScore := -1, math.Inf(-1)
		for j, i := range cands {
			var div float64
			for a := range aspects {
				div += w * pa[a][i] * uncovered[a]
			}
			if s := (1-lambda)*pq[i] + lambda*div; s > bestScore {
				best, bestScore = j, s
			}
		}
		i := cands[best]
		cands = slices.Delete(cands, best, best+1)
		out = append(out, ranked[i])
		for a := range aspects {
			uncovered[a] *= 1 - pa[a][i]
		}
	}
	for _, i := range cands {
		out = append(out, ranked[i])
	}
	out = append(out, ranked[depth:]...)
	for i := k - 1; i >= 0; i-- {
		if i+1 < len(out) && out[i+1].Score > out[i].Score {
			out[i].Score = out[i+1].Score
		}
	}
	return out
}
