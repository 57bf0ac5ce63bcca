package selector

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// Value factors. Each is 1 when its annotation is absent, so a server that
// sends none is ranked by relevance alone. They are narrow on purpose:
// annotations reorder close matches, but together they move a value by at
// most about 12%, so a clearly better match is never outranked, and the
// value floor compares relevances, which they do not touch.
const (
	// PriorityWeight spreads the priority annotation p in [0, 1] (MCP
	// 2025-11-25 "Annotations") around 1: factor 1 + PriorityWeight·(p −
	// 0.5), from 0.96 for p = 0 to 1.04 for p = 1.
	PriorityWeight = 0.08
	// RecencyWeight spreads lastModified recency around 1: factor
	// 1 + RecencyWeight·(2^(−age/RecencyHalfLife) − 0.5), from 1.02 for a
	// resource modified now down to 0.98 for a very old one.
	RecencyWeight = 0.04
	// RecencyHalfLife is the age at which the recency factor is neutral.
	RecencyHalfLife = 30 * 24 * time.Hour
)

// A Value is what a candidate is worth to the request, before its size:
// Relevance × Priority × Recency. Candidates are considered in decreasing
// Value (pinned ones first), and Request.ValueFloor compares Values.
type Value struct {
	Relevance float64 // Candidate.Score over the best unpinned Score, in [0, 1]; 1 for pinned
	// Spread is where Candidate.Score lies between the weakest and the
	// best unpinned Score (0 and 1) when at least [CalibrationPool]
	// unpinned candidates are given; else, and for pinned, 1.
	Spread   float64
	Priority float64 // priority factor, 1 if absent (PriorityWeight)
	Recency  float64 // recency factor, 1 if absent (RecencyWeight)
	// Pinned is Candidate.Pinned: its Relevance is 1 by rule, not from a
	// search score, and reasons say "pinned" rather than a relevance.
	Pinned bool
}

// Total returns Relevance × Priority × Recency.
func (v Value) Total() float64 { return v.Relevance * v.Priority * v.Recency }

// String formats the value for reasons: "value 0.82 (relevance 0.91 ×
// priority 1.00 × recency 0.90)", leaving out factors that are 1;
// "value 1.00 (relevance 1 by the pin)" for a pinned candidate, whose
// relevance is not a search score.
func (v Value) String() string { return v.format(2) }

// format is String with the value itself given to prec decimals.
func (v Value) format(prec int) string {
	var b strings.Builder
	if v.Pinned {
		fmt.Fprintf(&b, "value %.*f (relevance 1 by the pin", prec, v.Total())
	} else {
		fmt.Fprintf(&b, "value %.*f (relevance %.2f", prec, v.Total(), v.Relevance)
	}
	if v.Priority != 1 {
		fmt.Fprintf(&b, " × priority %.2f", v.Priority)
	}
	if v.Recency != 1 {
		fmt.Fprintf(&b, " × recency %.2f", v.Recency)
	}
	b.WriteString(")")
	return b.String()
}

// distinctPrecision returns the fewest decimals, from 2 to 6, at which a
// and b print differently, so a reason never says "0.90 is below 0.90".
func distinctPrecision(a, b float64) int {
	p := 2
	for ; p < 6; p++ {
		if fmt.Sprintf("%.*f", p, a) != fmt.Sprintf("%.*f", p, b) {
			break
		}
	}
	return p
}

// SpreadFloor is the second floor, on a candidate's place in the spread of
// the pool's scores ([Value].Spread): a candidate whose Spread is below
// SpreadFloor times that of the best returned item is left out unread
// ([OmitLowValue]), unless the request's ValueFloor is 0. Fused scores sit
// in a narrow band (on the answers benchmark, a Go question's best match
// at 1.00 and an unrelated npm page at 0.95 of it), so ValueFloor, a
// share of the best score, cuts at random within the band; the spread
// says how a score compares with the other candidates'. 0.5 reads the
// upper half; on the answers benchmark's dev split it was best among 0.3
// to 0.9 (eval/README.md).
const SpreadFloor = 0.5

// CalibrationPool is the fewest unpinned candidates over which Spread is
// measured: fewer say too little about what a weak score is, and each then
// has Spread 1 (only ValueFloor applies). The engine's pool is never
// smaller when its servers list that many resources (one candidate per
// 200 tokens of budget, at least 10).
const CalibrationPool = 10

// A relevanceScale holds the best unpinned score and the spread's low end:
// the weakest unpinned score, or the best when there are fewer than
// CalibrationPool unpinned candidates (no spread).
type relevanceScale struct{ lo, best float64 }

// scaleOf returns the scale of the unpinned candidates' scores.
func scaleOf(ranked []Candidate) relevanceScale {
	best, lo, n := 0.0, math.Inf(1), 0
	for _, c := range ranked {
		if c.Pinned {
			continue
		}
		n++
		best = max(best, finite(c.Score))
		lo = min(lo, finite(c.Score))
	}
	if n < CalibrationPool || !(best > lo) {
		lo = best
	}
	return relevanceScale{lo: lo, best: best}
}

// valueOf returns c's value given the scale of the unpinned scores and the
// time recency is measured from (zero: recency off).
func valueOf(c Candidate, scale relevanceScale, now time.Time) Value {
	v := Value{Relevance: 1, Spread: 1, Priority: 1, Recency: 1, Pinned: c.Pinned}
	if !c.Pinned && scale.best > 0 {
		v.Relevance = min(max(finite(c.Score)/scale.best, 0), 1)
	}
	if span := scale.best - scale.lo; !c.Pinned && span > 0 {
		v.Spread = min(max((finite(c.Score)-scale.lo)/span, 0), 1)
	}
	if p := c.Priority; p > 0 && p <= 1 {
		v.Priority = 1 + PriorityWeight*(p-0.5)
	}
	if !now.IsZero() && c.LastModified != "" {
		t, err := time.Parse(time.RFC3339, c.LastModified)
		if err != nil {
			t, err = time.Parse(time.DateOnly, c.LastModified)
		}
		if err == nil {
			age := max(now.Sub(t), 0)
			v.Recency = 1 + RecencyWeight*(math.Exp2(-float64(age)/float64(RecencyHalfLife))-0.5)
		}
	}
	return v
}

// finite returns a score usable in arithmetic: NaN counts as 0 and ±Inf
// as the largest finite magnitude, so a broken score cannot turn values
// into NaN.
func finite(x float64) float64 {
	switch {
	case math.IsNaN(x):
		return 0
	case math.IsInf(x, 1):
		return math.MaxFloat64
	case math.IsInf(x, -1):
		return -math.MaxFloat64
	}
	return x
}

// PointerText is what a pointer item stands for, and what it is counted
// as: the resource's URI, then its title (or name) and description, as a
// model would be shown them, e.g.
//
//	file:///notes.md — Meeting notes: decisions of the weekly sync
func PointerText(c Candidate) string {
	s := c.URI
	name := c.Title
	if name == "" && c.Name != c.URI {
		name = c.Name
	}
	if name != "" {
		s += " — " + name
	}
	if c.Description != "" {
		if name == "" {
			s += " —"
		} else {
			s += ":"
		}
		s += " " + c.Description
	}
	return s
}
