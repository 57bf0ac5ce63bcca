package selector

import (
	"context"
	"slices"
)

// Spreading the budget over the candidates that may hold what the task
// needs, rather than spending it on the first one that does not fit.
const (
	// MaxShareWays bounds how many ways the budget is shared while
	// candidates are considered: with m unpinned candidates at or above
	// the floor, one resource degraded to sections takes at most
	// 1/min(m, MaxShareWays) of the budget (never less than
	// MinSectionRead) until the others have been considered. What is left
	// at the end goes to the best sections of all of them (topUp).
	MaxShareWays = 3
	// FillBand is how far below the floor a candidate may be read when the
	// candidates at or above it leave at least FillShare of the budget
	// unused: a relevance of at least (ValueFloor − FillBand) × the best
	// returned relevance. A floor is a line through a band of close
	// scores; an answer that leaves most of its budget unused while a
	// candidate just under the line is left unread serves nobody.
	FillBand = 0.1
	// FillShare is the share of the budget that must be left for fill to
	// read candidates below the floor.
	FillShare = 0.25
)

// MinShareTokens is the smallest share worth splitting the budget into: a
// budget under twice this is not shared, since a share too small to hold a
// section's worth of text serves no candidate.
const MinShareTokens = 600

// sectionShare returns the share of the budget one degraded resource may
// take while others are considered: 1/min(m, MaxShareWays, budget /
// MinShareTokens) for the m unpinned candidates whose relevance is at
// least floor × the best.
func sectionShare(values []Value, ranked []Candidate, floor float64, budget int) float64 {
	m := 0
	for i, v := range values {
		if !ranked[i].Pinned && v.Relevance > 0 && v.Relevance >= floor {
			m++
		}
	}
	return 1 / float64(max(1, min(m, MaxShareWays, budget/MinShareTokens)))
}

// sectionCap returns the most tokens a resource's best sections may take
// of left: all of it for a pinned resource, else the budget's shareCap.
func (s *selection) sectionCap(c Candidate, left int) int {
	if c.Pinned || s.shareCap >= 1 {
		return left
	}
	return min(left, max(MinSectionRead, int(s.shareCap*float64(s.req.TokenBudget))))
}

// fill reads, in value order, the candidates left unread as low value
// whose relevance is within FillBand of the floor, while at least
// FillShare of the budget is left. Each is considered as any candidate
// (whole, sections, outline or pointer), and its reason says why it was
// read.
func (s *selection) fill(ctx context.Context) {
	if s.req.Query == "" || s.anchor == 0 || s.full != "" {
		return
	}
	lowest := (s.req.ValueFloor - FillBand) * s.anchor
	var low []Omitted
	for _, o := range s.res.Omitted {
		if o.Reason == OmitLowValue && s.values[o.Rank-1].Relevance >= lowest {
			low = append(low, o)
		}
	}
	s.filling = true
	defer func() { s.filling = false }()
	for _, o := range low {
		if ctx.Err() != nil || float64(s.remaining) < FillShare*float64(s.req.TokenBudget) {
			return
		}
		s.res.Omitted = slices.DeleteFunc(s.res.Omitted, func(x Omitted) bool { return x.Rank == o.Rank && x.Reason == OmitLowValue })
		items := len(s.res.Items)
		if err := s.consider(ctx, o.Rank, o.Candidate, s.values[o.Rank-1]); err != nil {
			return
		}
		if len(s.res.Items) > items {
			it := &s.res.Items[len(s.res.Items)-1]
			it.Reason += "; under the floor, read because the candidates above it left the budget unused"
		}
	}
}
