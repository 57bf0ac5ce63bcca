package selector

import (
	"math"

	"github.com/contextd/contextd/internal/section"
)

// DenseFallback is what a section's passage similarity counts for when
// no section of its resource shares a word with the query: a resource the
// task describes in other words still gives the section its passages
// point at, rather than an outline. Where words match, they decide: on
// the answers benchmark's dev split, adding passage similarity to the
// words' score chose worse sections at every weight tried (answer-bearing
// at 2,000 tokens 0.494 with words alone, 0.469 at weight 0.3, 0.370 at
// 1), since a sentence encoder's similarity of a 2 KiB passage to a short
// question says less than the question's rare words do.
const DenseFallback = 0.5

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

// withDense returns lexical scores normalised by their best; when none is
// above 0 (no section shares a word with the query), DenseFallback ×
// dense instead (nil: none, all 0).
func withDense(lexical, dense []float64) []float64 {
	top := 0.0
	for _, x := range lexical {
		top = max(top, x)
	}
	out := make([]float64, len(lexical))
	for j, x := range lexical {
		switch {
		case top > 0:
			out[j] = x / top
		case dense != nil:
			out[j] = DenseFallback * dense[j]
		}
	}
	return out
}
