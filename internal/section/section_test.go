package section

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/contextd/contextd/internal/budget"
)

func headings(ss []Section) []string {
	var out []string
	for _, s := range ss {
		out = append(out, fmt.Sprintf("%d-%d %q", s.Start, s.End, s.Heading))
	}
	return out
}

// cover checks that sections cover every line of text once, in order, and
// that their texts concatenate back to it.
func cover(t *testing.T, text string, ss []Section) {
	t.Helper()
	var b strings.Builder
	next := 1
	for _, s := range ss {
		if s.Start != next || s.End < s.Start {
			t.Fatalf("section %d-%d does not follow line %d: %v", s.Start, s.End, next-1, headings(ss))
		}
		if got := strings.Count(s.Text, "\n") + 1 - boolInt(strings.HasSuffix(s.Text, "\n")); got != s.End-s.Start+1 {
			t.Fatalf("section %d-%d holds %d lines", s.Start, s.End, got)
		}
		next = s.End + 1
		b.WriteString(s.Text)
	}
	if b.String() != text {
		t.Fatalf("sections do not reassemble the text")
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestSplitMarkdownByHeadingsIgnoringFences(t *testing.T) {
	text := "intro line\n\n# Title\n\nbody\n\n## Install\n\n```sh\n# not a heading\ngo install\n```\n\n## Usage ##\n\nrun it\n#hashtag is not a heading\n"
	ss, kind := Split(text, "text/markdown; charset=utf-8")
	if kind != Markdown {
		t.Fatalf("kind = %v, want markdown", kind)
	}
	cover(t, text, ss)
	got := headings(ss)
	want := []string{`1-2 ""`, `3-6 "Title"`, `7-13 "Install"`, `14-17 "Usage"`}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("sections = %v, want %v", got, want)
	}
	if ss[2].Level != 2 || ss[1].Level != 1 || ss[0].Level != 0 {
		t.Fatalf("levels = %d %d %d", ss[0].Level, ss[1].Level, ss[2].Level)
	}
}

func TestSplitSniffsMarkdownOnlyWithoutASpecificType(t *testing.T) {
	text := "# A\n\none\n\n# B\n\ntwo\n"
	if _, kind := Split(text, ""); kind != Markdown {
		t.Errorf("untyped text with two headings: kind %v, want markdown", kind)
	}
	if _, kind := Split(text, "text/plain"); kind != Markdown {
		t.Errorf("text/plain with two headings: kind %v, want markdown", kind)
	}
	if _, kind := Split(text, "text/csv"); kind != Paragraphs {
		t.Errorf("text/csv: kind %v, want paragraphs", kind)
	}
	if _, kind := Split("# only one\n\ntext\n", ""); kind != Paragraphs {
		t.Errorf("one heading is not enough to call it markdown: kind %v", kind)
	}
}

func TestSplitCodeByTopLevelDeclarationsWithTheirComments(t *testing.T) {
	text := `package p

import "fmt"

// Hello greets.
// It prints.
func Hello() {
	fmt.Println("hi")

	fmt.Println("still inside")
}

type T struct {
	A int
}

def python_style():
    return 1
`
	ss, kind := Split(text, "text/x-go")
	if kind != Code {
		t.Fatalf("kind = %v, want code", kind)
	}
	cover(t, text, ss)
	got := headings(ss)
	want := []string{`1-2 "package p"`, `3-4 "import \"fmt\""`, `5-12 "func Hello() {"`, `13-16 "type T struct {"`, `17-18 "def python_style():"`}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("sections = %v\nwant       %v", got, want)
	}
}

func TestSplitCutsLongSectionsIntoWindowsKeepingTheHeading(t *testing.T) {
	var b strings.Builder
	b.WriteString("# Big\n")
	for i := range 150 {
		fmt.Fprintf(&b, "line %d\n", i)
		if i%10 == 9 {
			b.WriteString("\n")
		}
	}
	b.WriteString("# Next\nend\n")
	text := b.String()
	ss, _ := Split(text, "text/markdown")
	cover(t, text, ss)
	if len(ss) < 4 {
		t.Fatalf("a 166-line section was not cut: %v", headings(ss))
	}
	for _, s := range ss[:len(ss)-1] {
		if s.Heading != "Big" || s.End-s.Start+1 > MaxLines {
			t.Errorf("window %d-%d heading %q", s.Start, s.End, s.Heading)
		}
	}
	if o := Outline(ss); o != "L1-166 # Big\nL167-168 # Next\n" {
		t.Errorf("outline lists windows once with the whole range:\n%s", o)
	}
}

func TestSplitParagraphsMergedIntoRuns(t *testing.T) {
	var b strings.Builder
	for i := range 30 {
		fmt.Fprintf(&b, "paragraph %d first line\nsecond line\n\n", i)
	}
	text := b.String()
	ss, kind := Split(text, "text/plain")
	if kind != Paragraphs {
		t.Fatalf("kind %v", kind)
	}
	cover(t, text, ss)
	if len(ss) < 2 || len(ss) > 4 {
		t.Fatalf("90 lines of 3-line paragraphs should make 2–4 runs, got %v", headings(ss))
	}
	if Outline(ss) != "" {
		t.Errorf("paragraph runs have no outline")
	}
}

func TestSplitEdgeCases(t *testing.T) {
	if ss, _ := Split("", "text/markdown"); ss != nil {
		t.Errorf("empty text: %v", ss)
	}
	for _, text := range []string{"no newline at end", "\n\n\n", "a\r\nb\r\n\r\n# h\r\nc", strings.Repeat("x", 10000)} {
		for _, mt := range []string{"", "text/markdown", "text/x-python"} {
			ss, _ := Split(text, mt)
			cover(t, text, ss)
		}
	}
}

func TestScoreFavoursTheSectionAboutTheQuery(t *testing.T) {
	text := "# Overview\n\nPackage time measures and displays time.\n\n" +
		"## func Now\n\nNow returns the current local time.\n\n" +
		"## func ParseDuration\n\nParseDuration parses a duration string such as \"300ms\" or \"1.5h\".\n\n" +
		"## func Sleep\n\nSleep pauses the current goroutine for a duration.\n"
	ss, _ := Split(text, "text/markdown")
	scores := Score(ss, NewQuery("how do I parse a duration string like 1h30m"))
	best := 0
	for i := range scores {
		if scores[i] > scores[best] {
			best = i
		}
	}
	if ss[best].Heading != "func ParseDuration" {
		t.Fatalf("best section %q (scores %v)", ss[best].Heading, scores)
	}
	if scores[0] != 0 {
		t.Errorf("the overview shares no query term but scores %v", scores[0])
	}
}

func TestBestPicksTopSectionsThatFitInTextOrder(t *testing.T) {
	tok, err := budget.NewTokenizer("cl100k_base")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("# Intro\n\n" + strings.Repeat("general words about nothing. ", 40) + "\n\n")
	b.WriteString("## Retry\n\nretry with exponential backoff and jitter.\n\n")
	b.WriteString("## Filler\n\n" + strings.Repeat("more filler text here. ", 60) + "\n\n")
	b.WriteString("## Backoff\n\nthe backoff doubles after each retry.\n")
	ss, _ := Split(b.String(), "text/markdown")
	scores := Score(ss, NewQuery("exponential backoff retry"))
	picks := Best(ss, scores, tok, 40)
	if len(picks) != 2 || picks[0].Heading != "Retry" || picks[1].Heading != "Backoff" {
		t.Fatalf("picks = %+v", picks)
	}
	total := 0
	for _, p := range picks {
		if p.Tokens != tok.Count(p.Text) {
			t.Errorf("%q: Tokens %d, exact %d", p.Heading, p.Tokens, tok.Count(p.Text))
		}
		total += p.Tokens
	}
	if total > 40 {
		t.Fatalf("picks cost %d > 40", total)
	}
	if got := Best(ss, scores, tok, 12); len(got) != 1 || got[0].Heading != "Retry" {
		t.Errorf("with 12 tokens only the best matching section fits: %+v", got)
	}
	if got := Best(ss, Score(ss, NewQuery("kubernetes")), tok, 1000); got != nil {
		t.Errorf("no section matches, yet picked %+v", got)
	}
}

func TestInlineCodeIsNotAFence(t *testing.T) {
	ss, _ := Split("# a\n``` x ```\n# yes\ntext\n# b\ntext\n", "text/markdown")
	if len(ss) != 3 {
		t.Fatalf("a line of inline code hid the headings after it: %v", headings(ss))
	}
}

func TestBareHeadingRunsOnIntoTheNextSection(t *testing.T) {
	text := "# Guide\nIntro.\n\n## Routes\n\n### With changing geometry\n\n#### Example\nCode here.\n## Stops\nText.\n"
	ss, _ := Split(text, "text/markdown")
	if diff := cmp.Diff([]string{"1-3 Guide", "4-9 Routes", "10-11 Stops"}, spans(ss)); diff != "" {
		t.Errorf("sections (-want +got):\n%s", diff)
	}
	for _, s := range ss {
		if strings.TrimSpace(strings.Join(strings.Split(s.Text, "\n")[1:], "")) == "" {
			t.Errorf("section %d-%d is a bare heading: %q", s.Start, s.End, s.Text)
		}
	}
}

func spans(ss []Section) []string {
	var out []string
	for _, s := range ss {
		out = append(out, fmt.Sprintf("%d-%d %s", s.Start, s.End, s.Heading))
	}
	return out
}

func TestBestNeverPicksBlankSections(t *testing.T) {
	tok, err := budget.NewTokenizer("cl100k_base")
	if err != nil {
		t.Fatal(err)
	}
	ss := []Section{{Start: 1, End: 3, Text: "\n\n\n"}, {Start: 4, End: 4, Text: "retry\n"}}
	if got := Best(ss, []float64{1, 1}, tok, 100); len(got) != 1 || got[0].Start != 4 {
		t.Fatalf("picks %+v", got)
	}
}

// A window cut from a long section weighs its heading as the section's
// first window does, though the heading line is not in its text.
func TestWindowsWeighTheirHeadingAlike(t *testing.T) {
	first := Score([]Section{{Heading: "Retries", Level: 1, Text: "# Retries\nfiller\n"}}, NewQuery("retries"))
	later := Score([]Section{{Heading: "Retries", Level: 1, Text: "filler\n"}}, NewQuery("retries"))
	if first[0] == 0 || later[0] != first[0] {
		t.Errorf("a later window scores %v for its heading's word, the first %v", later[0], first[0])
	}
}
