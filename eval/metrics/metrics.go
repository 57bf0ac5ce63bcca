// Package metrics scores rankings against relevance judgements: hit@k,
// recall@k, reciprocal rank, nDCG@k, recall@k curves, and latency percentiles.
//
// # Inputs
//
// A ranking is a list of document ids, best first. Only the first occurrence
// of an id counts: a ranking that repeats a document gets no credit for the
// repeat, so recall never exceeds 1. A ranking shorter than k is scored as it
// is (the missing ranks hold nothing relevant), and an empty ranking scores 0
// everywhere.
//
// Judgements map a document id to a graded relevance score, as in the qrels of
// a BEIR dataset: a score above 0 is relevant, 0 or below is not. Documents
// that are not judged are not relevant.
//
// Ties in retrieval scores are the ranker's to break; [Rank] breaks them
// deterministically (higher score first, then smaller id) for rankers that
// produce scores, so the same scores always give the same numbers.
//
// # Definitions
//
// For a ranking d_1, d_2, … and judgements rel:
//
//   - hit@k is 1 if some d_i with i ≤ k is relevant, else 0.
//   - recall@k is the number of distinct relevant documents among d_1…d_k,
//     divided by the number of relevant documents in the judgements.
//   - reciprocal rank is 1/i for the smallest i with d_i relevant, or 0 when
//     no ranked document is relevant; MRR is its mean. There is no cut-off.
//   - nDCG@k is DCG@k / IDCG@k with DCG@k = Σ_{i≤k} gain(d_i) / log2(i+1),
//     gain = the graded score when it is positive and 0 otherwise, and IDCG@k
//     the DCG@k of the judged documents sorted by score, best first
//     (Järvelin & Kekäläinen, "Cumulated gain-based evaluation of IR
//     techniques", ACM TOIS 20(4), 2002). This is the linear-gain form that
//     trec_eval's ndcg_cut computes, which BEIR reports through pytrec_eval,
//     so numbers are comparable with published BEIR tables. For binary
//     judgements it equals the exponential-gain (2^rel − 1) form.
//
// A query without any relevant document scores 0 on every measure (its IDCG
// and its recall denominator are 0); it still counts in the means.
// Means are arithmetic means over queries, summed in query order.
package metrics

import (
	"cmp"
	"math"
	"slices"
)

// CurveDepth is the largest k of a recall@k curve: curves hold recall@1
// through recall@CurveDepth.
const CurveDepth = 20

// Scores holds one query's measures, or (in a [Summary]) their means.
type Scores struct {
	HitAt1    float64
	HitAt5    float64
	RecallAt5 float64
	// RecallAt10 is recall@10.
	RecallAt10 float64
	// MRR is the reciprocal rank of one query, or the mean reciprocal rank.
	MRR      float64
	NDCGAt10 float64
	// RecallCurve[k-1] is recall@k for k = 1…CurveDepth; it always has
	// CurveDepth entries.
	RecallCurve []float64
}

// Score computes every measure of [Scores] for one ranking.
func Score(ranking []string, judgements map[string]int) Scores {
	return Scores{
		HitAt1:      HitAt(ranking, judgements, 1),
		HitAt5:      HitAt(ranking, judgements, 5),
		RecallAt5:   RecallAt(ranking, judgements, 5),
		RecallAt10:  RecallAt(ranking, judgements, 10),
		MRR:         ReciprocalRank(ranking, judgements),
		NDCGAt10:    NDCGAt(ranking, judgements, 10),
		RecallCurve: RecallCurve(ranking, judgements, CurveDepth),
	}
}

// HitAt reports 1 if one of the first k documents of ranking is relevant,
// and 0 otherwise. k < 1 gives 0.
func HitAt(ranking []string, judgements map[string]int, k int) float64 {
	for _, id := range head(ranking, k) {
		if judgements[id] > 0 {
			return 1
		}
	}
	return 0
}

// RecallAt returns the fraction of the relevant documents of judgements that
// appear among the first k documents of ranking. It is 0 when nothing is
// relevant or k < 1.
func RecallAt(ranking []string, judgements map[string]int, k int) float64 {
	n := relevantCount(judgements)
	if n == 0 {
		return 0
	}
	found := 0
	seen := make(map[string]bool, min(max(k, 0), len(ranking)))
	for _, id := range head(ranking, k) {
		if judgements[id] > 0 && !seen[id] {
			found++
		}
		seen[id] = true
	}
	return float64(found) / float64(n)
}

// RecallCurve returns recall@k for k = 1…maxK, at index k-1.
func RecallCurve(ranking []string, judgements map[string]int, maxK int) []float64 {
	curve := make([]float64, max(maxK, 0))
	n := relevantCount(judgements)
	if n == 0 {
		return curve
	}
	found := 0
	seen := make(map[string]bool, min(len(curve), len(ranking)))
	for i := range curve {
		if i < len(ranking) {
			id := ranking[i]
			if judgements[id] > 0 && !seen[id] {
				found++
			}
			seen[id] = true
		}
		curve[i] = float64(found) / float64(n)
	}
	return curve
}

// ReciprocalRank returns 1/i for the rank i (counted from 1) of the first
// relevant document of ranking, or 0 if ranking holds none.
func ReciprocalRank(ranking []string, judgements map[string]int) float64 {
	for i, id := range ranking {
		if judgements[id] > 0 {
			return 1 / float64(i+1)
		}
	}
	return 0
}

// NDCGAt returns the normalised discounted cumulative gain of the first k
// documents of ranking (see the package documentation). It is 0 when nothing
// is relevant or k < 1.
func NDCGAt(ranking []string, judgements map[string]int, k int) float64 {
	var ideal []int
	for _, g := range judgements {
		if g > 0 {
			ideal = append(ideal, g)
		}
	}
	if len(ideal) == 0 || k < 1 {
		return 0
	}
	slices.SortFunc(ideal, func(a, b int) int { return cmp.Compare(b, a) })
	var idcg float64
	for i, g := range head(ideal, k) {
		idcg += float64(g) / math.Log2(float64(i+2))
	}
	var dcg float64
	seen := make(map[string]bool, min(k, len(ranking)))
	for i, id := range head(ranking, k) {
		if g := judgements[id]; g > 0 && !seen[id] {
			dcg += float64(g) / math.Log2(float64(i+2))
		}
		seen[id] = true
	}
	return dcg / idcg
}

// A Scored is a document id with a retrieval score, higher is better.
type Scored struct {
	ID    string
	Score float64
}

// Rank returns the ids of scored ordered by score, highest first. Equal
// scores are ordered by id (byte-wise, ascending) and NaN scores come last,
// so the order depends only on the values, never on the input order.
// scored is not modified.
func Rank(scored []Scored) []string {
	s := slices.Clone(scored)
	slices.SortFunc(s, func(a, b Scored) int {
		an, bn := math.IsNaN(a.Score), math.IsNaN(b.Score)
		switch {
		case an && !bn:
			return 1
		case bn && !an:
			return -1
		case !an && a.Score != b.Score:
			return cmp.Compare(b.Score, a.Score)
		}
		return cmp.Compare(a.ID, b.ID)
	})
	ids := make([]string, len(s))
	for i, d := range s {
		ids[i] = d.ID
	}
	return ids
}

func relevantCount(judgements map[string]int) int {
	n := 0
	for _, g := range judgements {
		if g > 0 {
			n++
		}
	}
	return n
}

// head returns the first k elements of s, or all of s when it is shorter.
func head[T any](s []T, k int) []T {
	return s[:min(max(k, 0), len(s))]
}
