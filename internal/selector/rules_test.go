package selector

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/contextd/contextd/internal/budget"
	"github.com/contextd/contextd/internal/resource"
	"github.com/contextd/contextd/internal/section"
)

// The tests of selection's rules for a request with a query (the engine's way).

func prose(words int) string {
	var b strings.Builder
	for i := range words {
		if i > 0 {
			b.WriteString(" ")
		}
		b.WriteString([]string{"alpha", "beta", "gamma", "delta"}[i%4])
	}
	return b.String()
}

func withItem(items []Item, uri string) (Item, bool) {
	i := slices.IndexFunc(items, func(it Item) bool { return it.URI == uri })
	if i < 0 {
		return Item{}, false
	}
	return items[i], true
}

func withOmitted(om []Omitted, uri string) (Omitted, bool) {
	i := slices.IndexFunc(om, func(o Omitted) bool { return o.URI == uri })
	if i < 0 {
		return Omitted{}, false
	}
	return om[i], true
}

// Once the budget is nearly full, the size estimate decides what is
// read. A byte bound alone would not read a 60-byte resource into 24
// tokens; the estimate (about 15 tokens) does, and verifies with the exact
// count. A resource estimated far over what is left is not read.
func TestEstimateDecidesWhatIsReadWhenNearlyFull(t *testing.T) {
	tk := realTokenizer(t)
	first := prose(70)
	small := "alpha beta gamma delta alpha beta gamma delta alpha beta gamma de"[:60]
	f := &fakeReads{contents: map[resource.Key][]Content{
		key("first"): {text(first)},
		key("small"): {text(small)},
		key("big"):   {text(prose(400))},
	}}
	ranked := []Candidate{
		{Server: "s", URI: "first", Score: 1},
		{Server: "s", URI: "big", Score: 0.99, Size: int64(len(prose(400))), MIMEType: "text/plain"},
		{Server: "s", URI: "small", Score: 0.98, Size: 60, MIMEType: "text/plain"},
	}
	req := Request{TokenBudget: tk.Count(first) + 24, Query: "alpha", Estimator: budget.NewEstimator()}
	res, err := Select(t.Context(), req, ranked, f.read, tk)
	if err != nil {
		t.Fatal(err)
	}
	if it, ok := withItem(res.Items, "small"); !ok || it.Form != FormWhole {
		t.Fatalf("the 60-byte resource estimated to fit was not returned whole: %+v %+v", res.Items, res.Omitted)
	}
	if slices.Contains(f.calls, "s big") {
		t.Errorf("the resource estimated at ~400 tokens was read into %d tokens: calls %v", 24, f.calls)
	}
}

// Exact counts teach the estimator each server's ratio.
func TestSelectTeachesTheEstimator(t *testing.T) {
	tk := realTokenizer(t)
	dense := strings.Repeat("3.14159 2.71828 1.41421 0.57721\n", 40)
	f := &fakeReads{contents: map[resource.Key][]Content{key("nums"): {{Text: dense, MIMEType: "text/plain"}}}}
	est := budget.NewEstimator()
	before := est.BytesPerToken("s", "text/plain")
	if _, err := Select(t.Context(), Request{TokenBudget: 10000, Query: "pi", Estimator: est},
		[]Candidate{{Server: "s", URI: "nums", MIMEType: "text/plain"}}, f.read, tk); err != nil {
		t.Fatal(err)
	}
	exact := float64(len(dense)) / float64(tk.Count(dense))
	after := est.BytesPerToken("s", "text/plain")
	if !(after < before && after-exact < before-exact) {
		t.Fatalf("ratio %.2f → %.2f bytes/token, exact %.2f: not learned", before, after, exact)
	}
}

// Value = relevance × priority × recency decides the order when
// the budget binds, and every candidate's reason shows its value.
func TestValueOrdersByPriorityAndRecency(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name        string
		first, next Candidate
	}{
		{"priority", Candidate{Priority: 0.1}, Candidate{Priority: 1}},
		{"recency", Candidate{LastModified: "2020-01-01T00:00:00Z"}, Candidate{LastModified: now.Add(-time.Hour).Format(time.RFC3339)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, b := tc.first, tc.next
			a.Server, a.URI, a.Score = "s", "a", 1
			b.Server, b.URI, b.Score = "s", "b", 0.97
			f := &fakeReads{contents: map[resource.Key][]Content{key("a"): {text(lines(20, 3))}, key("b"): {text(lines(20, 3))}}}
			res, err := Select(t.Context(), Request{TokenBudget: 70, Query: "w", Now: now}, []Candidate{a, b}, f.read, wordCounter{})
			if err != nil {
				t.Fatal(err)
			}
			it, ok := withItem(res.Items, "b")
			if !ok || it.Form != FormWhole || f.calls[0] != "s b" {
				t.Fatalf("rank 2 with the higher %s was not packed first: calls %v, items %+v", tc.name, f.calls, res.Items)
			}
			if !strings.Contains(it.Reason, "value ") || !strings.Contains(it.Reason, tc.name+" ") {
				t.Errorf("reason %q does not show the value and its %s factor", it.Reason, tc.name)
			}
			if res.TotalTokens > 70 {
				t.Errorf("over budget: %d", res.TotalTokens)
			}
		})
	}
}

// The value floor leaves far worse candidates unread, pinned ones
// excepted.
func TestValueFloorLeavesLowValueUnread(t *testing.T) {
	f := &fakeReads{contents: map[resource.Key][]Content{key("a"): {text("w w")}, key("b"): {text("w w")}, key("pin"): {text("w")}}}
	ranked := []Candidate{
		{Server: "s", URI: "pin", Pinned: true},
		{Server: "s", URI: "a", Score: 1},
		{Server: "s", URI: "b", Score: 0.5},
	}
	res, err := Select(t.Context(), Request{TokenBudget: 100, Query: "w", ValueFloor: 0.9}, ranked, f.read, wordCounter{})
	if err != nil {
		t.Fatal(err)
	}
	o, ok := withOmitted(res.Omitted, "b")
	if !ok || o.Reason != OmitLowValue || o.Read || !strings.Contains(o.Detail, "relevance 0.50 is below the floor 0.90 (0.90 × the best returned relevance 1.00)") {
		t.Fatalf("b: %+v", o)
	}
	if it, ok := withItem(res.Items, "pin"); !ok {
		t.Errorf("the pinned resource fell under the floor")
	} else if !strings.Contains(it.Reason, "pinned, value 1.00 (relevance 1 by the pin)") {
		t.Errorf("pinned reason %q: want its value said to be by rule, not a relevance", it.Reason)
	}
	// Just under the floor: the reason shows the digits that tell them
	// apart. (a leaves too little of the budget for fill to read it.)
	ranked[2].Score = 0.8996
	f.contents[key("a")] = []Content{text(strings.TrimSpace(strings.Repeat("w ", 90)))}
	res, err = Select(t.Context(), Request{TokenBudget: 100, Query: "w", ValueFloor: 0.9}, ranked, f.read, wordCounter{})
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := withOmitted(res.Omitted, "b"); !ok || !strings.Contains(o.Detail, "relevance 0.8996 is below the floor 0.9000 (0.90 × the best returned relevance 1.00)") {
		t.Errorf("b just under the floor: %+v", o)
	}
	if slices.Contains(f.calls, "s b") {
		t.Errorf("b was read")
	}
}

// markdownDoc has a heading section per topic, the one about retries deep
// in the file.
func markdownDoc() string {
	var b strings.Builder
	b.WriteString("# Client\n\nThe client talks to the server.\n\n")
	for i := range 12 {
		fmt.Fprintf(&b, "## Option %d\n\n%s\n\n", i, prose(60))
	}
	b.WriteString("## Retries\n\nFailed calls retry with exponential backoff, doubling the wait each time.\n\n")
	for i := range 6 {
		fmt.Fprintf(&b, "## Appendix %d\n\n%s\n\n", i, prose(60))
	}
	return b.String()
}

// A text too big for the budget gives its best sections for the
// query, with their line ranges, not its head.
func TestBigTextGivesItsBestSectionsNotItsHead(t *testing.T) {
	tk := realTokenizer(t)
	doc := markdownDoc()
	f := &fakeReads{contents: map[resource.Key][]Content{key("doc"): {{URI: "doc", MIMEType: "text/markdown", Text: doc}}}}
	res, err := Select(t.Context(), Request{TokenBudget: 60, Query: "how do retries back off"}, []Candidate{{Server: "s", URI: "doc", Score: 1, MIMEType: "text/markdown"}}, f.read, tk)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Items) != 1 || res.Items[0].Form != FormSections {
		t.Fatalf("items %+v omitted %+v", res.Items, res.Omitted)
	}
	it := res.Items[0]
	var got []string
	docLines := strings.SplitAfter(doc, "\n")
	for _, c := range it.Contents {
		if want := strings.Join(docLines[c.StartLine-1:c.EndLine], ""); c.Text != want {
			t.Errorf("content lines %d-%d do not hold that text: %q", c.StartLine, c.EndLine, c.Text)
		}
		got = append(got, c.Text)
	}
	if !strings.Contains(strings.Join(got, ""), "exponential backoff") || strings.Contains(strings.Join(got, ""), "Option 0") {
		t.Fatalf("returned %q, want the Retries section and not the head", got)
	}
	if res.TotalTokens > 60 || !strings.Contains(it.Reason, "sections for the query (lines ") {
		t.Errorf("%d tokens, reason %q", res.TotalTokens, it.Reason)
	}
}

// When no section matches, the outline; when not even that fits,
// a pointer (descriptor only, unread fields aside, counted).
func TestDegradeToOutlineThenPointer(t *testing.T) {
	tk := realTokenizer(t)
	doc := markdownDoc()
	c := Candidate{Server: "s", URI: "doc", Score: 1, MIMEType: "text/markdown", Title: "Client guide", Description: "How the client works"}
	f := &fakeReads{contents: map[resource.Key][]Content{key("doc"): {{URI: "doc", MIMEType: "text/markdown", Text: doc}}}}
	res, err := Select(t.Context(), Request{TokenBudget: 80, Query: "kubernetes"}, []Candidate{c}, f.read, tk)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Items) != 1 || res.Items[0].Form != FormOutline || !strings.HasPrefix(res.Items[0].Contents[0].Text, "L1-4 # Client\nL5-8 ## Option 0\n") {
		t.Fatalf("want an outline: %+v %+v", res.Items, res.Omitted)
	}

	plain := &fakeReads{contents: map[resource.Key][]Content{key("doc"): {{URI: "doc", MIMEType: "text/plain", Text: prose(3000)}}}}
	c.MIMEType = "text/plain"
	res, err = Select(t.Context(), Request{TokenBudget: 200, Query: "kubernetes"}, []Candidate{c}, plain.read, tk)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Items) != 1 || res.Items[0].Form != FormPointer || len(res.Items[0].Contents) != 0 ||
		res.Items[0].Tokens != tk.Count(PointerText(c)) || PointerText(c) != "doc — Client guide: How the client works" {
		t.Fatalf("want a pointer: %+v %+v", res.Items, res.Omitted)
	}
}

// A text of a MIME type that cannot be cut is kept intact: whole
// when it fits, never sectioned or trimmed.
func TestUnsupportedMIMETypeIsKeptIntact(t *testing.T) {
	tk := realTokenizer(t)
	body := strings.Repeat("record alpha beta\n", 200)
	f := &fakeReads{contents: map[resource.Key][]Content{key("x"): {{URI: "x", MIMEType: "application/x-custom", Text: body}}}}
	c := Candidate{Server: "s", URI: "x", Score: 1, MIMEType: "application/x-custom"}
	res, err := Select(t.Context(), Request{TokenBudget: 100, Query: "alpha record"}, []Candidate{c}, f.read, tk)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range res.Items {
		if len(it.Contents) > 0 {
			t.Fatalf("an application/x-custom text was cut: %+v", it)
		}
	}
	if o, ok := withOmitted(res.Omitted, "x"); ok {
		if o.Reason != OmitUnsupported {
			t.Errorf("omitted as %s: %s", o.Reason, o.Detail)
		}
	} else if len(res.Items) != 1 || res.Items[0].Form != FormPointer || !strings.Contains(res.Items[0].Reason, "kept intact") {
		t.Errorf("want an unsupported omission or a pointer saying so: %+v", res.Items)
	}
	res, err = Select(t.Context(), Request{TokenBudget: 10000, Query: "alpha"}, []Candidate{c}, f.read, tk)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Items) != 1 || res.Items[0].Form != FormWhole || res.Items[0].Contents[0].Text != body {
		t.Fatalf("it fits, so it comes whole: %+v", res.Items)
	}
}

// Budget left at the end goes to more of a sectioned resource,
// without another read.
func TestBudgetLeftTopsUpASectionedResource(t *testing.T) {
	tk := realTokenizer(t)
	doc := markdownDoc()
	f := &fakeReads{contents: map[resource.Key][]Content{key("doc"): {{URI: "doc", MIMEType: "text/markdown", Text: doc}}}}
	res, err := Select(t.Context(), Request{TokenBudget: 300, Query: "how do retries back off"}, []Candidate{{Server: "s", URI: "doc", Score: 1}}, f.read, tk)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Items) != 1 || res.Reads != 1 {
		t.Fatalf("items %+v, reads %d", res.Items, res.Reads)
	}
	it := res.Items[0]
	var starts []int
	for _, c := range it.Contents {
		starts = append(starts, c.StartLine)
	}
	all := ""
	for _, c := range it.Contents {
		all += c.Text
	}
	if !slices.IsSorted(starts) || !strings.Contains(all, "## Option 0") || !strings.Contains(all, "## Retries") || !strings.Contains(it.Reason, "more, the best left for the query among all items' sections, to use the budget left at the end, so it now holds lines ") {
		t.Fatalf("want the Retries section, then more: starts %v, reason %q", starts, it.Reason)
	}
	if res.TotalTokens > 300 || res.TotalTokens < 250 {
		t.Errorf("%d tokens of 300: the budget was not used", res.TotalTokens)
	}
}

// The value floor is a share of the best value that can be returned: a
// better candidate left out before packing (binary, for the user only, or
// unreadable) does not push the rest under the floor.
func TestValueFloorIsAnchoredOnWhatCanBeReturned(t *testing.T) {
	for _, top := range []Candidate{
		{Server: "s", URI: "top", Score: 1, MIMEType: "image/png"},
		{Server: "s", URI: "top", Score: 1, Audience: []string{"user"}},
		{Server: "s", URI: "top", Score: 1}, // its read fails
	} {
		f := &fakeReads{contents: map[resource.Key][]Content{key("a"): {text("w w")}, key("b"): {text("w w w")}}}
		res, err := Select(t.Context(), Request{TokenBudget: 100, Query: "w", ValueFloor: 0.9},
			[]Candidate{top, {Server: "s", URI: "a", Score: 0.75}, {Server: "s", URI: "b", Score: 0.5}}, f.read, wordCounter{})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := withItem(res.Items, "a"); !ok {
			t.Errorf("%+v on top: a was not returned: %+v", top, res.Omitted)
		}
		if o, ok := withOmitted(res.Omitted, "b"); !ok || o.Reason != OmitLowValue {
			t.Errorf("%+v on top: b (0.50, under the fill band below 0.9 × 0.75) should be low_value: %+v", top, res.Items)
		}
	}
}

// A resource that is never cut (a blob, or a text of a type kept
// intact) and that its size says cannot fit is not read.
func TestNeverCutResourceEstimatedTooBigIsNotRead(t *testing.T) {
	tk := realTokenizer(t)
	f := &fakeReads{contents: map[resource.Key][]Content{
		key("img"): {{URI: "img", MIMEType: "image/png", Blob: make([]byte, 1<<20), IsBlob: true}},
		key("x"):   {{URI: "x", MIMEType: "application/x-custom", Text: strings.Repeat("alpha ", 60000)}},
		key("doc"): {text("alpha beta")},
	}}
	ranked := []Candidate{
		{Server: "s", URI: "img", Score: 1, MIMEType: "image/png", Size: 1 << 20},
		{Server: "s", URI: "x", Score: 1, MIMEType: "application/x-custom", Size: 360000},
		{Server: "s", URI: "doc", Score: 1},
	}
	res, err := Select(t.Context(), Request{TokenBudget: 2000, Query: "alpha", IncludeBinary: true, Estimator: budget.NewEstimator()}, ranked, f.read, tk)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(f.calls, "s img") || slices.Contains(f.calls, "s x") {
		t.Fatalf("read what its size says cannot fit: %v", f.calls)
	}
	if _, ok := withItem(res.Items, "doc"); !ok || res.Reads != 1 {
		t.Errorf("doc not returned from 1 read: %+v, %d reads", res.Items, res.Reads)
	}
}

// A read with a text too big to cut (kept intact) and a small text that
// fits returns the small one, and says why the other is left out.
func TestMixedContentsKeepWhatFits(t *testing.T) {
	f := &fakeReads{contents: map[resource.Key][]Content{key("r"): {
		{URI: "r#big", MIMEType: "application/x-custom", Text: strings.Repeat("w ", 500)},
		{URI: "r#small", MIMEType: "text/plain", Text: "w w w"},
	}}}
	res, err := Select(t.Context(), Request{TokenBudget: 100, Query: "w"}, []Candidate{{Server: "s", URI: "r", Score: 1}}, f.read, wordCounter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Items) != 1 || len(res.Items[0].Contents) != 1 || res.Items[0].Contents[0].URI != "r#small" {
		t.Fatalf("items %+v omitted %+v", res.Items, res.Omitted)
	}
	d := res.Items[0].Dropped
	if len(d) != 1 || d[0].Reason != OmitUnsupported || !strings.Contains(d[0].Detail, "kept intact") {
		t.Errorf("dropped %+v", d)
	}
}

// Without a query too, a text of a type kept intact is never cut.
func TestUnsupportedMIMETypeIsNotCutWithoutAQuery(t *testing.T) {
	f := &fakeReads{contents: map[resource.Key][]Content{key("a"): {{URI: "a", MIMEType: "application/x-custom", Text: "one two\nthree four\n"}}}}
	res, err := Select(t.Context(), Request{TokenBudget: 2}, []Candidate{{Server: "s", URI: "a", MIMEType: "application/x-custom"}}, f.read, wordCounter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Items) != 0 {
		t.Fatalf("cut: %+v", res.Items)
	}
	if o, ok := withOmitted(res.Omitted, "a"); !ok || o.Reason != OmitUnsupported {
		t.Errorf("omitted %+v", res.Omitted)
	}
}

// A blob teaches the estimator the binary ratio, never a text one.
func TestBlobDoesNotTeachATextRatio(t *testing.T) {
	tk, est := realTokenizer(t), budget.NewEstimator()
	b := make([]byte, 64<<10)
	for i := range b {
		b[i] = byte(i * 7919)
	}
	f := &fakeReads{contents: map[resource.Key][]Content{key("img"): {{URI: "img", Blob: b, IsBlob: true}}}}
	if _, err := Select(t.Context(), Request{TokenBudget: 200000, Query: "x", IncludeBinary: true, Estimator: est}, []Candidate{cand("img")}, f.read, tk); err != nil {
		t.Fatal(err)
	}
	if r := est.BytesPerToken("s", "text/plain"); r != 4 {
		t.Errorf("prose ratio now %.2f", r)
	}
	if r := est.BytesPerToken("s", "image/png"); r == 1.05 {
		t.Errorf("binary ratio not learned")
	}
}

// A budget near the int range does not overflow the byte bound.
func TestHugeBudget(t *testing.T) {
	f := &fakeReads{contents: map[resource.Key][]Content{key("a"): {text("hello world")}}}
	res, err := Select(t.Context(), Request{TokenBudget: int(^uint(0)>>1) / 64, Query: "hello"}, []Candidate{cand("a")}, f.read, realTokenizer(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Items) != 1 || res.Items[0].Form != FormWhole {
		t.Fatalf("%+v", res)
	}
}

func TestRecencyAcceptsADateOnly(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	if v := valueOf(Candidate{LastModified: "2026-11-30"}, relevanceScale{best: 1}, now); v.Recency <= 1 {
		t.Errorf("a date-only lastModified of today: recency %v", v.Recency)
	}
	if v := valueOf(Candidate{LastModified: "last week"}, relevanceScale{best: 1}, now); v.Recency != 1 {
		t.Errorf("unparsable lastModified: recency %v, want neutral", v.Recency)
	}
}

// docWithBigMatch has a short intro, unrelated options, and one long
// section that matches, too big for the budgets below.
func docWithBigMatch() string {
	var b strings.Builder
	b.WriteString("# Client\n\nThe client talks to the server.\n\n")
	for i := range 8 {
		fmt.Fprintf(&b, "## Option %d\n\n%s\n\n", i, prose(40))
	}
	b.WriteString("## Retries\n\n")
	for i := range 30 {
		fmt.Fprintf(&b, "Retry step %d waits with exponential backoff before the next attempt.\n", i)
	}
	return b.String()
}

// When the matching section is too big, it is cut to fit; the
// head of the file is not returned in its place.
func TestBestSectionTooBigIsCutNotReplacedByTheHead(t *testing.T) {
	tk := realTokenizer(t)
	f := &fakeReads{contents: map[resource.Key][]Content{key("doc"): {{URI: "doc", MIMEType: "text/markdown", Text: docWithBigMatch()}}}}
	res, err := Select(t.Context(), Request{TokenBudget: 150, Query: "exponential backoff retries"}, []Candidate{{Server: "s", URI: "doc", Score: 1}}, f.read, tk)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Items) != 1 || res.Items[0].Form != FormSections {
		t.Fatalf("%+v %+v", res.Items, res.Omitted)
	}
	// Its parent heading may come first, as a one-line lead; the match
	// follows, and nothing of the file's head in its place.
	cs := res.Items[0].Contents
	if c := cs[0]; c.StartLine == c.EndLine && strings.HasPrefix(c.Text, "#") && len(cs) > 1 {
		cs = cs[1:]
	}
	if c := cs[0]; !strings.Contains(c.Text, "backoff") || strings.Contains(c.Text, "Option") {
		t.Fatalf("first content lines %d-%d: %q", c.StartLine, c.EndLine, c.Text)
	}
}

// Adjacent picked sections become one content when that costs no
// more, and its line range holds its text.
func TestAdjacentSectionsAreOneContent(t *testing.T) {
	tk := realTokenizer(t)
	doc := markdownDoc()
	f := &fakeReads{contents: map[resource.Key][]Content{key("doc"): {{URI: "doc", MIMEType: "text/markdown", Text: doc}}}}
	res, err := Select(t.Context(), Request{TokenBudget: 400, Query: "how do retries back off"}, []Candidate{{Server: "s", URI: "doc", Score: 1}}, f.read, tk)
	if err != nil {
		t.Fatal(err)
	}
	it := res.Items[0]
	lines := strings.SplitAfter(doc, "\n")
	sum := 0
	for _, c := range it.Contents {
		if want := strings.Join(lines[c.StartLine-1:c.EndLine], ""); c.Text != want {
			t.Errorf("lines %d-%d do not hold the text", c.StartLine, c.EndLine)
		}
		sum += c.Tokens
		if c.Tokens != tk.Count(c.Text) {
			t.Errorf("lines %d-%d: %d tokens, recount %d", c.StartLine, c.EndLine, c.Tokens, tk.Count(c.Text))
		}
	}
	if len(it.Contents) != 2 || it.Contents[0].StartLine != 1 || it.Contents[0].EndLine < 12 {
		t.Fatalf("want the opening run merged into one content and the Retries section: %+v", it.Contents)
	}
	if sum != it.Tokens || res.TotalTokens > 400 {
		t.Errorf("tokens %d, sum %d, total %d", it.Tokens, sum, res.TotalTokens)
	}
}

// A text's opening section follows its matches before later
// candidates take the budget.
func TestOpeningSectionComesBeforeLaterCandidates(t *testing.T) {
	tk := realTokenizer(t)
	doc := strings.Replace(markdownDoc(), "The client talks to the server.", "The client talks to the server. "+prose(60), 1)
	ss, _ := section.Split(doc, "text/markdown")
	var intro, retries int
	for _, s := range ss {
		switch s.Heading {
		case "Client":
			intro = tk.Count(s.Text)
		case "Retries":
			retries = tk.Count(s.Text)
		}
	}
	f := &fakeReads{contents: map[resource.Key][]Content{
		key("doc"):   {{URI: "doc", MIMEType: "text/markdown", Text: doc}},
		key("other"): {text(strings.TrimSpace(strings.Repeat("retries ", intro)))},
	}}
	res, err := Select(t.Context(), Request{TokenBudget: intro + retries, Query: "how do retries back off"},
		[]Candidate{{Server: "s", URI: "doc", Score: 1}, {Server: "s", URI: "other", Score: 0.95}}, f.read, tk)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Items) != 1 || len(res.Items[0].Contents) != 2 || res.Items[0].Contents[0].StartLine != 1 {
		t.Fatalf("want the doc's match and its opening section, and nothing else: %+v", res.Items)
	}
}

// With fewer than MinSectionRead tokens left, a candidate
// estimated not to fit whole is not read for a sliver of sections.
func TestSmallRemainderDoesNotReadABigResource(t *testing.T) {
	tk := realTokenizer(t)
	first := prose(100)
	big := strings.Repeat("alpha beta gamma delta\n", 2000)
	f := &fakeReads{contents: map[resource.Key][]Content{key("first"): {text(first)}, key("big"): {text(big)}}}
	ranked := []Candidate{{Server: "s", URI: "first", Score: 1}, {Server: "s", URI: "big", Score: 0.99, Size: int64(len(big)), MIMEType: "text/plain"}}
	res, err := Select(t.Context(), Request{TokenBudget: tk.Count(first) + MinSectionRead - 1, Query: "alpha", Estimator: budget.NewEstimator()}, ranked, f.read, tk)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(f.calls, "s big") {
		t.Fatalf("read a ~12,000-token resource for %d tokens", MinSectionRead-1)
	}
	if it, ok := withItem(res.Items, "big"); !ok || it.Form != FormPointer || !it.Unread {
		t.Errorf("want an unread pointer: %+v %+v", res.Items, res.Omitted)
	}
}

// Pointers come after the top-up and take at most MaxPointerShare of the
// budget together.
func TestPointersComeLastWithinTheirShare(t *testing.T) {
	tk := realTokenizer(t)
	doc := markdownDoc()
	contents := map[resource.Key][]Content{key("doc"): {{URI: "doc", MIMEType: "text/markdown", Text: doc}}}
	ranked := []Candidate{{Server: "s", URI: "doc", Score: 1}}
	for i := range 20 {
		u := fmt.Sprintf("p%d", i)
		contents[key(u)] = []Content{{URI: u, MIMEType: "application/x-custom", Text: strings.Repeat("w ", 5000)}}
		ranked = append(ranked, Candidate{Server: "s", URI: u, Score: 0.99, MIMEType: "application/x-custom", Size: 10000,
			Title: "a pointer", Description: "a descriptor long enough that its pointer costs a few dozen tokens of the budget, more than what is left after the top-up"})
	}
	f := &fakeReads{contents: contents}
	res, err := Select(t.Context(), Request{TokenBudget: 2000, Query: "how do retries back off", Estimator: budget.NewEstimator()}, ranked[1:], f.read, tk)
	if err != nil {
		t.Fatal(err)
	}
	pointers := 0
	for _, it := range res.Items {
		if it.Form == FormPointer {
			pointers += it.Tokens
		}
	}
	if pointers == 0 || pointers > 2000/8 {
		t.Errorf("pointers take %d tokens of 2000, want some and at most an eighth", pointers)
	}
	small := &fakeReads{contents: contents}
	res, err = Select(t.Context(), Request{TokenBudget: 300, Query: "how do retries back off", Estimator: budget.NewEstimator()}, ranked[:2], small.read, tk)
	if err != nil {
		t.Fatal(err)
	}
	if doc, _ := withItem(res.Items, "doc"); doc.Tokens < 280 {
		t.Errorf("the top-up should use the budget before a pointer: the doc got %d tokens of 300", doc.Tokens)
	}
	if _, ok := withItem(res.Items, "p0"); ok {
		t.Errorf("the pointer did not fit in what the top-up left, yet it is an item: %+v", res.Items)
	}
}

// A pinned item does not set the value floor's reference: pins have
// relevance 1 whatever their score, and a priority annotation could push
// them above every ranked candidate.
func TestPinnedDoesNotAnchorTheFloor(t *testing.T) {
	f := &fakeReads{contents: map[resource.Key][]Content{key("pin"): {text("w")}, key("a"): {text("w w")}}}
	res, err := Select(t.Context(), Request{TokenBudget: 100, Query: "w", ValueFloor: 0.9},
		[]Candidate{{Server: "s", URI: "pin", Pinned: true, Priority: 1}, {Server: "s", URI: "a", Score: 1}}, f.read, wordCounter{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := withItem(res.Items, "a"); !ok {
		t.Errorf("the best ranked candidate fell under a floor set by a pin: %+v", res.Omitted)
	}
}

// A section cut within its line is never joined to the next line.
func TestCutSectionKeepsItsLineRange(t *testing.T) {
	tk := realTokenizer(t)
	doc := "# " + prose(200) + " retries\n#\n"
	for b := 35; b < 80; b++ {
		f := &fakeReads{contents: map[resource.Key][]Content{key("doc"): {{URI: "doc", MIMEType: "text/markdown", Text: doc}}}}
		res, err := Select(t.Context(), Request{TokenBudget: b, Query: "retries"}, []Candidate{{Server: "s", URI: "doc", Score: 1}}, f.read, tk)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range res.Items {
			for _, c := range it.Contents {
				if c.StartLine > 0 && !linesHold(doc, c) {
					t.Fatalf("budget %d: lines %d-%d do not hold %q", b, c.StartLine, c.EndLine, c.Text)
				}
			}
		}
	}
}

// A best candidate that can only be a pointer anchors the value floor as
// it is deferred: the rest are not read at any value.
func TestDeferredPointerAnchorsTheFloor(t *testing.T) {
	tk := realTokenizer(t)
	big := Candidate{Server: "s", URI: "big", MIMEType: "application/x-custom", Size: 1 << 20, Score: 1}
	low := Candidate{Server: "s", URI: "low", MIMEType: "text/plain", Score: 0.1}
	f := &fakeReads{contents: map[resource.Key][]Content{
		key("big"): {{Text: strings.Repeat("x ", 1<<19)}},
		key("low"): {{Text: "query words here"}},
	}}
	res, err := Select(t.Context(), Request{TokenBudget: 1000, Query: "query", ValueFloor: 0.5, Estimator: budget.NewEstimator()}, []Candidate{big, low}, f.read, tk)
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := withOmitted(res.Omitted, "low"); !ok || o.Reason != OmitLowValue {
		t.Errorf("low (0.1 < 0.5 × 1) was not left out as low_value: items %+v", res.Items)
	}
}

// A text the top-up returns in part is no longer listed as dropped.
func TestTopUpClearsDroppedTexts(t *testing.T) {
	tk := realTokenizer(t)
	filler := strings.Repeat("lorem ipsum dolor ", 200) + "\n"
	f := &fakeReads{contents: map[resource.Key][]Content{key("doc"): {
		{URI: "doc#0", MIMEType: "text/markdown", Text: "# alpha\nalpha here\n# big0\n" + filler},
		{URI: "doc#1", MIMEType: "text/markdown", Text: "# big1\n" + filler + "# small\nsmall words\n"},
	}}}
	res, err := Select(t.Context(), Request{TokenBudget: 200, Query: "alpha"}, []Candidate{{Server: "s", URI: "doc"}}, f.read, tk)
	if err != nil {
		t.Fatal(err)
	}
	it := res.Items[0]
	returned := map[string]bool{}
	for _, ct := range it.Contents {
		returned[ct.URI] = true
	}
	if !returned["doc#1"] {
		t.Fatalf("the top-up should return a section of doc#1: %+v", it.Contents)
	}
	for _, d := range it.Dropped {
		if returned[d.URI] {
			t.Errorf("content %d both returned and dropped (%s)", d.Index, d.Reason)
		}
	}
}

// The top-up is bounded by the budget, not by a count of sections: a
// document of many small sections fills what is left.
func TestTopUpFillsTheBudgetWithManySmallSections(t *testing.T) {
	tk := realTokenizer(t)
	var b strings.Builder
	for i := range 400 {
		fmt.Fprintf(&b, "## v1.%d.0\n\n- fixed a bug in the parser\n- improved logging\n\n", i)
	}
	doc := strings.Replace(b.String(), "v1.200.0\n\n- fixed", "v1.200.0\n\n- retry backoff fixed", 1)
	f := &fakeReads{contents: map[resource.Key][]Content{key("CHANGELOG.md"): {{Text: doc}}}}
	res, err := Select(t.Context(), Request{TokenBudget: 4000, Query: "retry backoff", Estimator: budget.NewEstimator()},
		[]Candidate{{Server: "s", URI: "CHANGELOG.md", MIMEType: "text/markdown"}}, f.read, tk)
	if err != nil {
		t.Fatal(err)
	}
	if res.TotalTokens < 3900 || res.TotalTokens > 4000 {
		t.Errorf("%d of 4000 tokens used; the resource has %d", res.TotalTokens, tk.Count(doc))
	}
}

// A non-finite score cannot break the value order or the floor.
func TestNonFiniteScores(t *testing.T) {
	f := &fakeReads{contents: map[resource.Key][]Content{key("a"): {text("w")}, key("b"): {text("w w")}, key("c"): {text("w w w")}}}
	res, err := Select(t.Context(), Request{TokenBudget: 2, Query: "w", ValueFloor: 0.5},
		[]Candidate{{Server: "s", URI: "a", Score: math.Inf(1)}, {Server: "s", URI: "b", Score: math.NaN()}, {Server: "s", URI: "c", Score: 1}}, f.read, wordCounter{})
	if err != nil {
		t.Fatal(err)
	}
	if it, ok := withItem(res.Items, "a"); !ok || f.calls[0] != "s a" {
		t.Fatalf("the +Inf candidate was not first: calls %v, items %+v", f.calls, it)
	}
	for _, o := range res.Omitted {
		if o.Reason != OmitLowValue {
			t.Errorf("%s: %s, want low_value below the +Inf candidate", o.URI, o.Reason)
		}
	}
}
