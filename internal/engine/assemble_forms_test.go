package engine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/engine"
	"github.com/contextd/contextd/internal/mcp/mcptest"
	"github.com/contextd/contextd/internal/selector"
)

// guide is a long Markdown guide whose section on retries sits deep inside.
func guide() string {
	var b strings.Builder
	b.WriteString("# Client guide\n\nHow the client talks to servers.\n\n")
	for i := range 30 {
		fmt.Fprintf(&b, "## Setting %d\n\nSetting %d changes nothing of interest here; it is filler text for the guide.\n\n", i, i)
	}
	b.WriteString("## Retries\n\nFailed calls retry with exponential backoff: the wait doubles after each failure.\n\n")
	for i := range 10 {
		fmt.Fprintf(&b, "## Appendix %d\n\nMore filler text for the guide.\n\n", i)
	}
	return b.String()
}

// Issue 5 end to end, over a real go-sdk server: a big resource comes back
// as its best sections for the task, with line ranges; annotations reach
// the value; the budget holds.
func TestAssembleReturnsBestSectionsOfABigResource(t *testing.T) {
	body := guide()
	srv := mcptest.NewServer(nil, nil)
	srv.AddResource(&mcpsdk.Resource{URI: "doc://guide", Name: "client guide retries", Title: "Client guide: retries and settings",
		MIMEType: "text/markdown", Size: int64(len(body)), Annotations: &mcpsdk.Annotations{Priority: 0.9}},
		func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
			return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: "doc://guide", MIMEType: "text/markdown", Text: body}}}, nil
		})
	eng := newEngine(t, "", map[string]*mcpsdk.Server{"s": srv}, 0)
	res, err := eng.Assemble(t.Context(), engine.AssembleRequest{Query: "how do failed calls retry with backoff", TokenBudget: 120})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Items) != 1 || res.Items[0].Form != selector.FormSections {
		t.Fatalf("items %+v omitted %+v", res.Items, res.Omitted)
	}
	it := res.Items[0]
	if res.TotalTokens > 120 {
		t.Fatalf("%d tokens over the budget of 120", res.TotalTokens)
	}
	lines := strings.SplitAfter(body, "\n")
	found := false
	for _, c := range it.Contents {
		if got := strings.Join(lines[c.StartLine-1:c.EndLine], ""); got != c.Text {
			t.Errorf("lines %d-%d: %q, want %q", c.StartLine, c.EndLine, c.Text, got)
		}
		found = found || strings.Contains(c.Text, "exponential backoff")
	}
	if !found {
		t.Errorf("the Retries section is not among %+v", it.Contents)
	}
	if !strings.Contains(it.Reason, "priority 1.03") {
		t.Errorf("reason %q does not show the priority annotation (0.9 → factor 1.03)", it.Reason)
	}
}
