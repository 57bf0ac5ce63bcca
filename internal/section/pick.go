package section

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/contextd/contextd/internal/budget"
)

// BM25 parameters for scoring sections (Robertson and Zaragoza 2009,
// "The Probabilistic Relevance Framework: BM25 and Beyond", §3).
const (
	k1 = 1.2
	b  = 0.75
	// headingWeight counts each heading term this many times: a heading
	// names what its section is about.
	headingWeight = 3
)

// Score returns each section's BM25 score for the query q, with the
// sections of one text as the collection (so a term found in every section
// counts for little) and the heading's terms counted [headingWeight] times.
// Terms are lexical.Tokenize's, a term of letters then digits also as
// its two parts (offset64: offset, 64). A Markdown section's link targets
// and navigation lines do not count (see scoringText), and one that is
// only headings and navigation scores 0. A section that shares no term
// with the query scores 0.
func Score(sections []Section, q Query) []float64 {
	scores := make([]float64, len(sections))
	if len(q) == 0 || len(sections) == 0 {
		return scores
	}
	tfs := make([]map[string]int, len(sections))
	lens := make([]int, len(sections))
	df := map[string]int{}
	total := 0
	empty := make([]bool, len(sections))
	for i, s := range sections {
		tf := map[string]int{}
		text, body := scoringText(s)
		empty[i] = !body
		for _, t := range sectionTerms(text) {
			tf[t]++
			lens[i]++
		}
		// The heading line is in Text once already, except in the windows
		// after the first of a long section.
		extra := headingWeight - 1
		if first, _, _ := strings.Cut(s.Text, "\n"); s.Heading != "" && !strings.Contains(first, s.Heading) {
			extra = headingWeight
		}
		for _, t := range sectionTerms(s.Heading) {
			tf[t] += extra
			lens[i] += extra
		}
		for t := range tf {
			df[t]++
		}
		tfs[i] = tf
		total += lens[i]
	}
	n := float64(len(sections))
	avg := max(float64(total)/n, 1)
	var buf []string
	for i := range sections {
		if empty[i] {
			continue
		}
		// The query's terms the section holds, in the query's (sorted)
		// order, so that the sum is formed in the same order either way:
		// found from the side with fewer terms, since a query may have
		// 100,000 and each of hundreds of sections a few dozen.
		held := q
		if len(tfs[i]) < len(q) {
			buf = buf[:0]
			for t := range tfs[i] {
				if q.Has(t) {
					buf = append(buf, t)
				}
			}
			slices.Sort(buf)
			held = buf
		}
		for _, t := range held {
			f := float64(tfs[i][t])
			if f == 0 {
				continue
			}
			idf := math.Log(1 + (n-float64(df[t])+0.5)/(float64(df[t])+0.5))
			scores[i] += idf * f * (k1 + 1) / (f + k1*(1-b+b*float64(lens[i])/avg))
		}
	}
	return scores
}

// A Pick is a section chosen to be returned, with its exact token count.
type Pick struct {
	Section
	Index  int // position in the sections given to Best
	Tokens int
}

// maxMisses bounds how many sections that do not fit Best counts for one
// text: a section that fits takes at least one token, so the sections
// counted are bounded by the budget plus maxMisses.
const maxMisses = 64

// Best returns the sections with the highest scores (ties: earlier first)
// whose texts, each counted exactly with c, fit together in maxTokens, in
// text order. Sections that score 0 or hold nothing to read ([Informative]) are never
// picked, so it returns nil
// when no section shares a term with the query. Once [maxMisses]
// counted sections have not fit, Best stops.
func Best(sections []Section, scores []float64, c budget.Counter, maxTokens int) []Pick {
	order := make([]int, 0, len(sections))
	for i := range sections {
		if scores[i] > 0 && Informative(sections[i]) {
			order = append(order, i)
		}
	}
	slices.SortStableFunc(order, func(x, y int) int { return cmp.Compare(scores[y], scores[x]) })
	var picks []Pick
	left := maxTokens
	for k, misses := 0, 0; k < len(order) && misses < maxMisses && left > 0; k++ {
		s := sections[order[k]]
		if !budget.Fits(c, len(s.Text), left) {
			continue // proven without counting
		}
		n := c.Count(s.Text)
		if n > left {
			misses++
			continue
		}
		picks = append(picks, Pick{Section: s, Index: order[k], Tokens: n})
		left -= n
	}
	slices.SortFunc(picks, func(x, y Pick) int { return cmp.Compare(x.Start, y.Start) })
	return picks
}

// Outline returns a table of contents of the sections that have headings,
// one line each, "L12-40 ## Heading" for Markdown or "L12-40 func F()" for
// code; "" if none has one. Windows of one section are listed once, with
// the whole range.
func Outline(sections []Section) string {
	var b strings.Builder
	for i := 0; i < len(sections); i++ {
		s := sections[i]
		if s.Heading == "" {
			continue
		}
		end := s.End
		for i+1 < len(sections) && sections[i+1].Heading == s.Heading && sections[i+1].Level == s.Level && sections[i+1].Start == end+1 {
			i++
			end = sections[i].End
		}
		mark := ""
		if s.Level > 0 {
			mark = strings.Repeat("#", s.Level) + " "
		}
		fmt.Fprintf(&b, "L%d-%d %s%s\n", s.Start, end, mark, s.Heading)
	}
	return b.String()
}
