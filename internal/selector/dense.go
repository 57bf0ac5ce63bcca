package selector

import (
	"math"

	"github.com/contextd/contextd/internal/section"
)

// DenseWeight is how much a section's passage similarity counts beside its
// words: a section's score for the query is its BM25 over the best BM25
// among the sections scored together, plus DenseWeight × its dense score
// (denseOf), so a section that says what the task asks in other words can
// still be chosen.
const DenseWeight = 1.0

// denseOf scores each section of c's text by the passages that overlap it:
// the best overlapping passage's similarity, rescaled over the resource's
// passages so that its best passage is 1 and its mean is 0 (below the mean
// is 0). It returns nil when c has no passages or its sections come from
// more than one content (the passages' lines are those of one text).
func denseOf(c Candidate, secs []section.Section, from []int) []float64 {
	if len(c.Passages) == 0 || len(secs) == 0 || from[0] != from[len(from)-1] {
		return nil
	}
	best, mean := math.Inf(-1), 0.0
	for _, p := range c.Passages {
		best = max(best, p.Similarity)
		mean += p.Similarity
	}
	mean /= float64(len(c.Passages))
	if !(best > mean) {
		return nil // one passage, or all alike: no signal
	}
	out := make([]float64, len(secs))
	for j, sec := range secs {
		top := math.Inf(-1)
		for _, p := range c.Passages {
			if p.StartLine <= sec.End && sec.Start <= p.EndLine {
				top = max(top, p.Similarity)
			}
		}
		if top > mean {
			out[j] = (top - mean) / (best - mean)
		}
	}
	return out
}

// withDense returns lexical scores normalised by their best, plus
// DenseWeight × dense (nil: none). A section that scores 0 on both stays
// 0: it does not match the query.
func withDense(lexical, dense []float64) []float64 {
	top := 0.0
	for _, x := range lexical {
		top = max(top, x)
	}
	out := make([]float64, len(lexical))
	for j, x := range lexical {
		if top > 0 {
			out[j] = x / top
		}
		if dense != nil {
			out[j] += DenseWeight * dense[j]
		}
	}
	return out
}
