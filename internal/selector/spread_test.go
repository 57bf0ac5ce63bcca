package selector

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/contextd/contextd/internal/resource"
)

// guide is a long Markdown page that mentions the query's words in many
// sections without answering it: a wrong first candidate.
func guide() string {
	var b strings.Builder
	b.WriteString("# Date formatting\n\nHow dates are shown.\n\n")
	for i := range 40 {
		fmt.Fprintf(&b, "## Format %d\n\nA date in format %d shows the day and the range of a date. %s\n\n", i, i, prose(40))
	}
	return b.String()
}

// One candidate that does not fit whole cannot take the whole budget while
// candidates about as relevant wait: they get their share, and the budget
// left at the end goes to the best sections of all.
func TestOneResourceDoesNotSpendTheBudgetOthersNeed(t *testing.T) {
	tk := realTokenizer(t)
	picker := func(n int) string {
		return fmt.Sprintf("# Date picker %d\n\nThe date picker selects a range of days: pass start and end to DatePicker%d.\n", n, n)
	}
	f := &fakeReads{contents: map[resource.Key][]Content{
		key("guide"):   {{MIMEType: "text/markdown", Text: guide()}},
		key("picker1"): {{MIMEType: "text/markdown", Text: picker(1)}},
		key("picker2"): {{MIMEType: "text/markdown", Text: picker(2)}},
		key("picker3"): {{MIMEType: "text/markdown", Text: picker(3)}},
	}}
	ranked := []Candidate{
		{Server: "s", URI: "guide", Score: 1},
		{Server: "s", URI: "picker1", Score: 0.97},
		{Server: "s", URI: "picker2", Score: 0.96},
		{Server: "s", URI: "picker3", Score: 0.95},
	}
	res, err := Select(t.Context(), Request{TokenBudget: 2000, Query: "date picker for selecting a range of days", ValueFloor: 0.9}, ranked, f.read, tk)
	if err != nil {
		t.Fatal(err)
	}
	for _, uri := range []string{"picker1", "picker2", "picker3"} {
		if it, ok := withItem(res.Items, uri); !ok || it.Form != FormWhole {
			o, _ := withOmitted(res.Omitted, uri)
			t.Errorf("%s is not returned whole: item %+v, omitted %+v", uri, it, o)
		}
	}
	g, ok := withItem(res.Items, "guide")
	if !ok || g.Form != FormSections {
		t.Fatalf("guide: %+v", g)
	}
	if res.TotalTokens > 2000 || res.TotalTokens < 1800 {
		t.Errorf("%d of 2000 tokens used", res.TotalTokens)
	}
}

// Annotations reorder close matches, but a priority cannot lift the floor
// over a near-perfect match.
func TestPriorityDoesNotPushACloseMatchUnderTheFloor(t *testing.T) {
	f := &fakeReads{contents: map[resource.Key][]Content{key("exact"): {text("w")}, key("important"): {text("w w")}}}
	ranked := []Candidate{
		{Server: "s", URI: "important", Score: 1, Priority: 0.8},
		{Server: "s", URI: "exact", Score: 0.98},
	}
	res, err := Select(t.Context(), Request{TokenBudget: 2000, Query: "w", ValueFloor: 0.9}, ranked, f.read, wordCounter{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := withItem(res.Items, "exact"); !ok {
		t.Errorf("the near-perfect match was left out: %+v", res.Omitted)
	}
	// A priority of 1 does not put a clearly worse match first.
	ranked = []Candidate{{Server: "s", URI: "exact", Score: 1}, {Server: "s", URI: "important", Score: 0.8, Priority: 1}}
	values := []Value{valueOf(ranked[0], relevanceScale{best: 1}, time.Time{}), valueOf(ranked[1], relevanceScale{best: 1}, time.Time{})}
	if values[1].Total() >= values[0].Total() {
		t.Errorf("priority 1 at relevance 0.8 outranks relevance 1: %v vs %v", values[1], values[0])
	}
}

// A candidate just under the floor is read when those above it leave most
// of the budget unused; one far under it is not.
func TestBudgetLeftBuysACandidateJustUnderTheFloor(t *testing.T) {
	f := &fakeReads{contents: map[resource.Key][]Content{key("a"): {text("w w")}, key("near"): {text("w w w")}, key("far"): {text("w")}}}
	ranked := []Candidate{
		{Server: "s", URI: "a", Score: 1},
		{Server: "s", URI: "near", Score: 0.899},
		{Server: "s", URI: "far", Score: 0.5},
	}
	res, err := Select(t.Context(), Request{TokenBudget: 1200, Query: "w", ValueFloor: 0.9}, ranked, f.read, wordCounter{})
	if err != nil {
		t.Fatal(err)
	}
	it, ok := withItem(res.Items, "near")
	if !ok || !strings.Contains(it.Reason, "read because") {
		t.Errorf("near (0.899, floor 0.9) is not returned with its reason while 1,198 tokens were unused: %+v", res.Omitted)
	}
	// Its value prints as 0.90, the floor's own: the reason says by how much
	// it is under.
	if !strings.Contains(it.Reason, "under the floor (relevance 0.899 is below the floor 0.900") {
		t.Errorf("reason %q does not say how far under the floor it is", it.Reason)
	}
	if o, ok := withOmitted(res.Omitted, "far"); !ok || o.Reason != OmitLowValue || o.Read {
		t.Errorf("far (0.5) should stay unread as low_value: %+v", o)
	}
}

// Fused scores sit in a narrow band: a pool's unrelated candidates may
// score 0.95 of the best, above a floor of 0.9 × the best. The spread floor
// leaves out those in the lower half of the pool's scores, so a small
// budget is not spent on them.
func TestTheSpreadFloorLeavesOutTheLowerPartOfACompressedBand(t *testing.T) {
	f := &fakeReads{contents: map[resource.Key][]Content{}}
	var ranked []Candidate
	add := func(uri, text string, score float64) {
		f.contents[key(uri)] = []Content{{MIMEType: "text/plain", Text: text}}
		ranked = append(ranked, Candidate{Server: "s", URI: uri, Score: score})
	}
	add("answer", "the answer to the question", 1)
	add("close", "a close second to the question", 0.99)
	for i := range 10 {
		add(fmt.Sprintf("noise-%d", i), fmt.Sprintf("something else entirely, number %d", i), 0.95-0.002*float64(i))
	}
	res, err := Select(t.Context(), Request{TokenBudget: 1000, Query: "question", ValueFloor: 0.9}, ranked, f.read, wordCounter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, uri := range []string{"answer", "close"} {
		if _, ok := withItem(res.Items, uri); !ok {
			t.Errorf("%s is not returned: %+v", uri, res.Omitted)
		}
	}
	// Read to use the budget left unused, and taken back: its text holds
	// none of the query's words.
	o, ok := withOmitted(res.Omitted, "noise-0")
	if !ok || o.Reason != OmitLowValue {
		t.Errorf("noise-0 (0.95 of the best, at the bottom of the spread): %+v, items %+v", o, res.Items)
	}
	if !strings.Contains(o.Detail, "weakest to the best") || !strings.Contains(o.Detail, "none of the query's words") {
		t.Errorf("reason does not say where in the spread, and why it was read and dropped: %q", o.Detail)
	}
	if len(res.Items) != 2 || res.TotalTokens != 11 {
		t.Errorf("%d items, %d tokens, want answer and close, 11 tokens: %+v", len(res.Items), res.TotalTokens, res.Items)
	}
	// With fewer than CalibrationPool candidates there is no spread: the
	// share of the best alone decides.
	res, err = Select(t.Context(), Request{TokenBudget: 1000, Query: "question", ValueFloor: 0.9}, ranked[:3], f.read, wordCounter{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := withItem(res.Items, "noise-0"); !ok {
		t.Errorf("in a pool of 3, noise-0 at 0.95 of the best is above the floor 0.9 and fits: %+v", res.Omitted)
	}
	// A floor of 0 keeps every candidate.
	res, err = Select(t.Context(), Request{TokenBudget: 1000, Query: "question"}, ranked, f.read, wordCounter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Items) != len(ranked) {
		t.Errorf("floor 0: %d of %d returned: %+v", len(res.Items), len(ranked), res.Omitted)
	}
}

// At a small budget shared two ways, the first candidate takes its best
// section only while the second waits: the second's best section is worth
// more than the first's second best.
func TestASmallShareTakesOneSectionWhileOthersWait(t *testing.T) {
	tk := realTokenizer(t)
	var first strings.Builder
	first.WriteString("# Flags\n\n")
	for i := range 12 {
		fmt.Fprintf(&first, "## Flag option %d\n\nA flag option %d sets a default value. %s\n\n", i, i, prose(80))
	}
	second := "# Source\n\n## Define\n\nA flag name with an equals sign panics: flag name contains equals default value.\n\n## Other\n\n" + prose(400) + "\n"
	f := &fakeReads{contents: map[resource.Key][]Content{
		key("doc"): {{MIMEType: "text/markdown", Text: first.String()}},
		key("src"): {{MIMEType: "text/markdown", Text: second}},
	}}
	ranked := []Candidate{{Server: "s", URI: "doc", Score: 1}, {Server: "s", URI: "src", Score: 0.97}}
	res, err := Select(t.Context(), Request{TokenBudget: 500, Query: "flag name contains equals default value", ValueFloor: 0.9}, ranked, f.read, tk)
	if err != nil {
		t.Fatal(err)
	}
	if res.TotalTokens > 500 {
		t.Fatalf("%d tokens, over the budget of 500", res.TotalTokens)
	}
	src, ok := withItem(res.Items, "src")
	if !ok || !strings.Contains(itemText(src), "panics") {
		o, _ := withOmitted(res.Omitted, "src")
		t.Errorf("the second candidate's best section is not returned: item %+v, omitted %+v", src, o)
	}
	// Its one best section first; more of it only from what is left at the end.
	if doc, ok := withItem(res.Items, "doc"); !ok || !strings.Contains(doc.Reason, "best 1 of") {
		t.Errorf("the first candidate is not returned with its best section first: %+v, omitted %+v", doc, res.Omitted)
	}
}

// itemText joins an item's texts.
func itemText(it Item) string {
	var b strings.Builder
	for _, c := range it.Contents {
		b.WriteString(c.Text)
	}
	return b.String()
}

// The lines that place a picked section (its parent headings) count
// against its resource's share: taken beyond it, they left the next
// candidate less than it needs to be read.
func TestLeadsStayWithinTheShare(t *testing.T) {
	var first strings.Builder
	first.WriteString("# Top\n\n## Parent\n\n### Flag option\n\nflag option " + strings.Repeat("w ", 244) + "\n\n")
	for i := range 4 {
		fmt.Fprintf(&first, "### Other %d\n\n%s\n\n", i, strings.Repeat("x ", 200))
	}
	var second strings.Builder
	second.WriteString("# Source\n\n## Define\n\nflag option panics here\n\n")
	for i := range 4 {
		fmt.Fprintf(&second, "## More %d\n\n%s\n\n", i, strings.Repeat("y ", 200))
	}
	f := &fakeReads{contents: map[resource.Key][]Content{
		key("doc"): {{MIMEType: "text/markdown", Text: first.String()}},
		key("src"): {{MIMEType: "text/markdown", Text: second.String()}},
	}}
	ranked := []Candidate{
		{Server: "s", URI: "doc", Score: 1, Size: int64(first.Len())},
		{Server: "s", URI: "src", Score: 0.97, Size: int64(second.Len())},
	}
	res, err := Select(t.Context(), Request{TokenBudget: 500, Query: "flag option", ValueFloor: 0.9}, ranked, f.read, wordCounter{})
	if err != nil {
		t.Fatal(err)
	}
	doc, ok := withItem(res.Items, "doc")
	if !ok {
		t.Fatalf("doc is not returned: %+v", res.Omitted)
	}
	src, ok := withItem(res.Items, "src")
	if !ok || src.Form != FormSections || !strings.Contains(itemText(src), "panics") {
		t.Errorf("src is not returned with its best section (doc took %d tokens): %+v, omitted %+v", doc.Tokens, src, res.Omitted)
	}
}
