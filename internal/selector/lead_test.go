package selector

import (
	"fmt"
	"strings"
	"testing"

	"github.com/contextd/contextd/internal/resource"
)

// A window cut from a long declaration comes with the declaration's line,
// and a Markdown subsection with its parent's heading, each as a one-line
// content with its line number.
func TestPickedSectionsBringTheirLeads(t *testing.T) {
	tk := realTokenizer(t)
	var code strings.Builder
	code.WriteString("package table\n\nimport \"fmt\"\n\n// entries lists every code.\nvar entries = []entry{\n")
	for i := range 120 {
		name := fmt.Sprintf("code%d", i)
		if i == 90 {
			name = "teapot"
		}
		fmt.Fprintf(&code, "\t{%d, %q},\n", i, name)
	}
	code.WriteString("}\n")
	var md strings.Builder
	md.WriteString("# Guide\n\nIntro.\n\n## Install\n\n" + prose(200) + "\n\n")
	for i := range 30 {
		fmt.Fprintf(&md, "### Platform %d\n\n%s\n\n", i, prose(50))
	}
	md.WriteString("### Teapot\n\nInstall the teapot driver first.\n\n")
	f := &fakeReads{contents: map[resource.Key][]Content{
		key("code"): {{MIMEType: "text/x-go", Text: code.String()}},
		key("md"):   {{MIMEType: "text/markdown", Text: md.String()}},
	}}
	// Budgets leave no room for the section the lead comes from.
	for _, tc := range []struct {
		uri, lead    string
		line, budget int
	}{
		{"code", "var entries = []entry{\n", 6, 400},
		{"md", "## Install\n", 5, 60},
	} {
		res, err := Select(t.Context(), Request{TokenBudget: tc.budget, Query: "teapot"}, []Candidate{{Server: "s", URI: tc.uri, Score: 1}}, f.read, tk)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Items) != 1 || res.Items[0].Form != FormSections {
			t.Fatalf("%s: %+v", tc.uri, res)
		}
		cs := res.Items[0].Contents
		i := -1
		for k, c := range cs {
			if strings.Contains(c.Text, "teapot") {
				i = k
				break
			}
		}
		if i < 1 {
			t.Fatalf("%s: no lead before the match: %+v", tc.uri, cs)
		}
		found := false
		for _, c := range cs[:i] {
			if c.Text == tc.lead && c.StartLine == tc.line && c.EndLine == tc.line {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: want line %d %q before the match, got %+v", tc.uri, tc.line, tc.lead, cs[:i])
		}
		if res.TotalTokens > tc.budget {
			t.Errorf("%s: %d tokens", tc.uri, res.TotalTokens)
		}
	}
}
