package selector

import (
	"fmt"
	"strings"
	"testing"

	"github.com/contextd/contextd/internal/resource"
)

// A task worded unlike the text: no section shares a word with it, but the
// content index's passages say where it is answered, and that section is
// returned rather than an outline or the text's head.
func TestPassagesChooseTheSectionTheWordsMiss(t *testing.T) {
	tk := realTokenizer(t)
	var b strings.Builder
	b.WriteString("# Manual\n\nIntro.\n\n")
	for i := range 20 {
		body := prose(80)
		if i == 14 {
			body = "A deferred call runs when the surrounding function returns, in last-in first-out order."
		}
		fmt.Fprintf(&b, "## Part %d\n\n%s\n\n", i, body)
	}
	doc := b.String()
	lines := strings.SplitAfter(doc, "\n")
	at := 0
	for i, l := range lines {
		if strings.Contains(l, "deferred call") {
			at = i + 1
		}
	}
	var passages []Passage
	for start := 1; start <= len(lines); start += 8 {
		sim := 0.1
		if at >= start && at < start+8 {
			sim = 0.6
		}
		passages = append(passages, Passage{StartLine: start, EndLine: min(start+7, len(lines)), Similarity: sim})
	}
	f := &fakeReads{contents: map[resource.Key][]Content{key("doc"): {{MIMEType: "text/markdown", Text: doc}}}}
	c := Candidate{Server: "s", URI: "doc", Score: 1, Passages: passages}
	res, err := Select(t.Context(), Request{TokenBudget: 150, Query: "sequence of postponed invocations when leaving a routine"}, []Candidate{c}, f.read, tk)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Items) != 1 || res.Items[0].Form != FormSections {
		t.Fatalf("%+v %+v", res.Items, res.Omitted)
	}
	found := false
	for _, ct := range res.Items[0].Contents {
		found = found || strings.Contains(ct.Text, "last-in first-out")
	}
	if !found {
		t.Errorf("the section the passages point at is not returned: %+v", res.Items[0].Contents)
	}
}
