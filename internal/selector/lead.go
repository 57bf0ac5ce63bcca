package selector

import (
	"cmp"
	"slices"
	"strings"

	"github.com/contextd/contextd/internal/budget"
	"github.com/contextd/contextd/internal/section"
)

// A lead is a line of a text returned beside a picked section to say where
// the section sits: the heading or declaration line of the section that a
// window was cut from (a window starting at line 75 of a long array or
// function says what it is inside of), and the headings of a Markdown
// section's parents (### Linux under ## Install). It is returned as a
// content of its own line, cost counted like any content.
type lead struct {
	content int // content index
	line    int // 1-based
	text    string
	tokens  int
}

// maxLeadParents is how many Markdown parent headings a section brings.
const maxLeadParents = 2

// leadsOf returns the lines that give section j its context, nearest
// last, before any test of what is already returned.
func (st *sectioned) leadsOf(j int) []lead {
	sec := st.secs[j]
	var out []lead
	first := func(k int) string { return strings.SplitAfterN(st.secs[k].Text, "\n", 2)[0] }
	// The first window of the section j was cut from.
	k := j
	for k > 0 && st.from[k-1] == st.from[j] && st.secs[k-1].Heading == sec.Heading && st.secs[k-1].Level == sec.Level &&
		st.secs[k-1].End+1 == st.secs[k].Start && sec.Heading != "" {
		k--
	}
	if k != j {
		line, text := headLine(st.secs[k])
		out = append(out, lead{content: st.from[j], line: line, text: text})
	} else if orig, ok := st.cutFrom[j]; ok && orig.Start < sec.Start && sec.Heading != "" {
		// Cut from the middle of its section: the section's heading.
		line, text := headLine(orig)
		out = append(out, lead{content: st.from[j], line: line, text: text})
	}
	// Markdown parents: the nearest earlier headings of lower levels.
	level := st.secs[k].Level
	for p := k - 1; p >= 0 && st.from[p] == st.from[j] && level > 1 && len(out) < maxLeadParents+1; p-- {
		if l := st.secs[p].Level; l > 0 && l < level && st.secs[p].Start != 0 {
			out = append([]lead{{content: st.from[j], line: st.secs[p].Start, text: first(p)}}, out...)
			level = l
		}
	}
	return out
}

// headLine returns the line of sec that holds its heading: its first line
// (Markdown) or its declaration line, after the comments above it (code).
func headLine(sec section.Section) (int, string) {
	lines := strings.SplitAfter(sec.Text, "\n")
	for off, l := range lines {
		if sec.Heading != "" && strings.HasPrefix(strings.TrimSpace(l), sec.Heading) {
			return sec.Start + off, l
		}
	}
	return sec.Start, lines[0]
}

// covered reports whether line of content i is within a picked section or
// is already a lead.
func (st *sectioned) covered(content, line int) bool {
	for k := range st.picked {
		if st.from[k] == content && st.secs[k].Start <= line && line <= st.secs[k].End {
			return true
		}
	}
	for _, l := range st.leads {
		if l.content == content && l.line == line {
			return true
		}
	}
	return false
}

// addLeads adds the leads of picked section j that are not returned yet
// and fit in left, and returns the tokens they cost.
func (st *sectioned) addLeads(count budget.Counter, j, left int) int {
	used := 0
	for _, l := range st.leadsOf(j) {
		if st.covered(l.content, l.line) || strings.TrimSpace(l.text) == "" || !budget.Fits(count, len(l.text), left-used) {
			continue
		}
		l.tokens = count.Count(l.text)
		if l.tokens > left-used {
			continue
		}
		st.leads = append(st.leads, l)
		used += l.tokens
	}
	return used
}

// leadsFor returns the leads of content i that no picked section holds, in
// line order.
func (st *sectioned) leadsFor(i int) []lead {
	var out []lead
	for _, l := range st.leads {
		if l.content != i {
			continue
		}
		held := false
		for k := range st.picked {
			if st.from[k] == i && st.secs[k].Start <= l.line && l.line <= st.secs[k].End {
				held = true
				break
			}
		}
		if !held {
			out = append(out, l)
		}
	}
	slices.SortFunc(out, func(a, b lead) int { return cmp.Compare(a.line, b.line) })
	return out
}
