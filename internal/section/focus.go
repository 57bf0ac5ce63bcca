package section

import (
	"math"
	"strings"

	"github.com/contextd/contextd/internal/budget"
)

// Focus returns the run of whole lines of sec that fits in maxTokens
// (counted with c) and holds the most of the query q: each line scores the
// inverse line frequency (BM25's idf, with the section's lines as the
// collection) of the query terms it holds, and the run with the highest sum is grown, line by line on whichever
// side scores more, while it fits. Use it when a section matches the query
// but does not fit: the lines around its match are worth more than its
// head. The returned section keeps sec's heading and level, with its
// own line range and text, and its exact token count. ok is false when no
// line of the section holds a query term, or not even one such line fits.
func Focus(sec Section, q Query, c budget.Counter, maxTokens int) (Section, int, bool) {
	if len(q) == 0 || maxTokens <= 0 {
		return Section{}, 0, false
	}
	lines := strings.SplitAfter(sec.Text, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	// Inverse line frequency: a term on every line (the section's subject)
	// says little about where in it the answer is.
	terms := make([]map[string]bool, len(lines))
	df := map[string]int{}
	for k, l := range lines {
		terms[k] = map[string]bool{}
		for _, t := range sectionTerms(l) {
			if q.Has(t) && !terms[k][t] {
				terms[k][t] = true
				df[t]++
			}
		}
	}
	n := float64(len(lines))
	w := make([]float64, len(lines))
	cost := make([]int, len(lines))
	any := false
	for k, l := range lines {
		for t := range terms[k] {
			w[k] += math.Log(1 + (n-float64(df[t])+0.5)/(float64(df[t])+0.5))
		}
		any = any || w[k] > 0
		cost[k] = maxTokens + 1
		if budget.Fits(c, len(l), maxTokens) {
			cost[k] = c.Count(l)
		}
	}
	if !any {
		return Section{}, 0, false
	}
	// The best run that fits: two pointers over the lines.
	bestA, bestB, bestW := -1, -1, 0.0
	a, sumW, sumT := 0, 0.0, 0
	for b := range lines {
		sumW += w[b]
		sumT += cost[b]
		for sumT > maxTokens && a <= b {
			sumW -= w[a]
			sumT -= cost[a]
			a++
		}
		if a <= b && sumW > bestW {
			bestA, bestB, bestW = a, b, sumW
		}
	}
	if bestA < 0 {
		return Section{}, 0, false
	}
	// Grow while it fits, toward the side that holds more of the query,
	// the line before first (it usually says what follows).
	used := 0
	for k := bestA; k <= bestB; k++ {
		used += cost[k]
	}
	for {
		before, after := bestA > 0 && used+cost[bestA-1] <= maxTokens, bestB+1 < len(lines) && used+cost[bestB+1] <= maxTokens
		switch {
		case before && (!after || w[bestA-1] >= w[bestB+1]):
			bestA--
			used += cost[bestA]
			continue
		case after:
			bestB++
			used += cost[bestB]
			continue
		}
		break
	}
	// Lines counted apart may cost more together: drop end lines until the
	// run fits, the one that holds less of the query first.
	for {
		text := strings.Join(lines[bestA:bestB+1], "")
		if got := c.Count(text); got <= maxTokens {
			out := sec
			out.Start, out.End, out.Text = sec.Start+bestA, sec.Start+bestB, text
			return out, got, true
		}
		if bestA == bestB {
			return Section{}, 0, false
		}
		if w[bestA] <= w[bestB] {
			bestA++
		} else {
			bestB--
		}
	}
}
