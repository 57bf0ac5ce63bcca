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
	values := []Value{valueOf(ranked[0], 1, time.Time{}), valueOf(ranked[1], 1, time.Time{})}
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
	if !ok || !strings.Contains(it.Reason, "under the floor, read because") {
		t.Errorf("near (0.899, floor 0.9) is not returned with its reason while 1,198 tokens were unused: %+v", res.Omitted)
	}
	if o, ok := withOmitted(res.Omitted, "far"); !ok || o.Reason != OmitLowValue || o.Read {
		t.Errorf("far (0.5) should stay unread as low_value: %+v", o)
	}
}
