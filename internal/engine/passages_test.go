package engine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/engine"
	"github.com/contextd/contextd/internal/mcp/mcptest"
)

// TestDeepTextOfABigResourceIsFoundBySearch: a 300 KiB manual, declared
// with its size as a file server would, whose only mention of a topic is
// at 200 KiB, is read by the content pass, and Search finds it by that
// topic first, among short resources about other things.
func TestDeepTextOfABigResourceIsFoundBySearch(t *testing.T) {
	var b strings.Builder
	for i := 0; b.Len() < 300<<10; i++ {
		if b.Len() >= 200<<10 && !strings.Contains(b.String(), "quokka") {
			b.WriteString("## Marsupials\n\nThe quokka lives on Rottnest Island and eats leaves.\n\n")
		}
		fmt.Fprintf(&b, "## Chapter %d\n\nThe ledger records each invoice in order, with its date and amount.\n\n", i)
	}
	manual := b.String()
	if at := strings.Index(manual, "quokka"); at < 200<<10 || strings.Count(manual, "quokka") != 1 {
		t.Fatalf("quokka at %d, %d times; want once, past 200 KiB", at, strings.Count(manual, "quokka"))
	}
	srv := mcptest.NewServer(map[string]string{
		"doc://zoo":     "opening hours of the zoo",
		"doc://island":  "ferry times to the island",
		"doc://invoice": "how to pay an invoice",
	}, nil)
	srv.AddResource(&mcpsdk.Resource{URI: "doc://manual", Name: "manual", Title: "Accounting manual", MIMEType: "text/markdown", Size: int64(len(manual))},
		func(_ context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
			return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: req.Params.URI, MIMEType: "text/markdown", Text: manual}}}, nil
		})
	eng := newEngine(t, "", map[string]*mcpsdk.Server{"s": srv}, 0)
	hits, err := eng.Search(t.Context(), engine.SearchRequest{Query: "quokka", Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) == 0 || hits[0].URI != "doc://manual" {
		t.Errorf("Search quokka = %v, want doc://manual first", uris(hits))
	}
}
