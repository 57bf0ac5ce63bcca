package selector

import (
	"context"
	"slices"

	"github.com/contextd/contextd/internal/lexical"
	"github.com/contextd/contextd/internal/section"
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
// budget under twice this is not shared, since a share too small to hold
// the lines around a match serves no candidate.
const MinShareTokens = 250

// OneSectionShare is the share under which a resource degraded to
// sections takes only its best one (or the lines of it around its match,
// if it does not fit) while other candidates at or above the floor wait:
// a share this small holds about one section, and at a small budget the
// best section of the next candidate serves more often than the second
// best of the first. The budget left at the end goes to the best sections
// of all of them (topUp).
const OneSectionShare = 600

// sectionShare returns the share of the budget one degraded resource may
// take while others are considered: 1/min(m, MaxShareWays, budget /
// MinShareTokens) for the m unpinned candidates whose relevance is at
// least floor × the best and, with a floor above 0, whose Spread is at
// least SpreadFloor.
func sectionShare(values []Value, ranked []Candidate, floor float64, budget int) float64 {
	m := 0
	for i, v := range values {
		if !ranked[i].Pinned && v.Relevance > 0 && v.Relevance >= floor && (floor == 0 || v.Spread >= SpreadFloor) {
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
	return min(left, max(s.minSectionRead(), int(s.shareCap*float64(s.req.TokenBudget))))
}

// minSectionRead returns the fewest tokens left for which a candidate
// estimated not to fit whole is still read for its sections:
// MinSectionRead, or the share when the budget is shared in smaller ones,
// so that a share taken leaves the next candidate what it needs.
func (s *selection) minSectionRead() int {
	if s.shareCap >= 1 {
		return MinSectionRead
	}
	return min(MinSectionRead, int(s.shareCap*float64(s.req.TokenBudget)))
}

// oneSection reports whether c, degraded to sections, takes only its best
// one while others wait: the share is under OneSectionShare tokens and c
// is not pinned.
func (s *selection) oneSection(c Candidate) bool {
	return !c.Pinned && s.shareCap < 1 && s.shareCap*float64(s.req.TokenBudget) < OneSectionShare
}

// fill reads, in value order, the candidates left unread as low value
// whose relevance is within FillBand of the floor, while at least
// FillShare of the budget is left. Each is considered as any candidate
// (whole, sections, outline or pointer), and its reason says why it was
// read; one that would come whole but holds no word of the query is taken
// back (the floors said its score was weak, and its text does not say
// otherwise).
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
			if it.Form == FormWhole && !holdsQueryTerm(it.Contents, s.query) {
				// Under the floor, only its words could justify it.
				s.drop(len(s.res.Items) - 1)
				s.omit(o.Rank, o.Candidate, s.values[o.Rank-1], OmitLowValue,
					o.Detail+"; read because the candidates above the floor left the budget unused, but its text holds none of the query's words", true)
				continue
			}
			// The detail says by how much (its value, printed to two
			// decimals, may equal the floor's).
			it.Reason += "; under the floor (" + o.Detail + "), read because the candidates above it left the budget unused"
		}
	}
}

// holdsQueryTerm reports whether any text of contents holds a term of q
// (as sections are scored by).
func holdsQueryTerm(contents []ItemContent, q section.Query) bool {
	for _, c := range contents {
		if c.IsBlob {
			continue
		}
		for _, t := range lexical.Tokenize(c.Text) {
			if q.Has(t) {
				return true
			}
		}
	}
	return false
}

// queryTermsIn returns how many distinct terms of q the texts hold.
func queryTermsIn(q section.Query, texts ...string) int {
	seen := map[string]bool{}
	for _, text := range texts {
		for _, t := range lexical.Tokenize(text) {
			if q.Has(t) {
				seen[t] = true
			}
		}
	}
	return len(seen)
}

// bearsOut reports whether the text returned for it holds at least half
// as many of q's terms as its descriptor (name, title, description, URI),
// and at least one: whether the text confirms the rank its descriptor
// earned it. A server can name every word of a task in its descriptors
// and answer a read with a page naming one (a login page, lorem ipsum).
func bearsOut(it Item, q section.Query) bool {
	var texts []string
	for _, c := range it.Contents {
		if !c.IsBlob {
			texts = append(texts, c.Text)
		}
	}
	got := queryTermsIn(q, texts...)
	return got >= 1 && 2*got > queryTermsIn(q, it.Name, it.Title, it.Description, it.URI)
}

// drop takes back the last item added, i, with its tokens and content
// fingerprint; it must not be an item returned as sections.
func (s *selection) drop(i int) {
	it := s.res.Items[i]
	s.remaining += it.Tokens
	s.res.TotalTokens -= it.Tokens
	s.res.Items = slices.Delete(s.res.Items, i, i+1)
	s.fps = slices.DeleteFunc(s.fps, func(p packed) bool { return p.rank == it.Rank })
}
