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

// A document set whose pages open with a title and a bar of links to the
// others (server-everything's docs do): the bar names every page, so it
// matched any task naming one, and a page cut to its best section came
// back as its title and the bar, which tells the reader nothing.
func TestALinkBarIsNotAPagesBestSection(t *testing.T) {
	bar := "**[Architecture](architecture.md)\n| [Project Structure](structure.md)\n| Server Features\n| [Extension Points](extension.md)**\n"
	var page strings.Builder
	page.WriteString("# Widget Server - Features\n\n" + bar + "\n")
	page.WriteString("## Storage\n\nThe widget server keeps its widgets in a write-ahead log, replayed at startup; the architecture puts the log beside the cache.\n\n")
	for i := range 8 {
		fmt.Fprintf(&page, "## Tool %d\n\n%s\n\n", i, strings.Repeat("This tool echoes what it is given and returns it unchanged. ", 10))
	}
	srv := mcptest.NewServer(nil, nil)
	addDoc(srv, &mcpsdk.Resource{URI: "doc://features.md", Name: "features.md", Title: "Widget Server - Features", MIMEType: "text/markdown"}, page.String())
	eng := newEngine(t, "", map[string]*mcpsdk.Server{"s": srv}, 0)
	res, err := eng.Assemble(t.Context(), engine.AssembleRequest{Query: "how is the widget server's architecture organised", TokenBudget: 120})
	if err != nil {
		t.Fatal(err)
	}
	it, ok := item(res, "doc://features.md")
	if !ok || it.Form != selector.FormSections {
		t.Fatalf("setup: the page should come as sections: %+v; omitted %+v", it, res.Omitted)
	}
	got := itemText(it)
	if strings.Contains(got, "](structure.md)") {
		t.Errorf("the link bar was returned as the page's best section (%s):\n%s", it.Reason, got)
	}
	if !strings.Contains(got, "write-ahead log") {
		t.Errorf("the section about the architecture is not returned (%s):\n%s", it.Reason, got)
	}
}

// A server that gives no sizes in its descriptors: once the content index
// has read a text, its size is known, and the reasons say so rather than
// "a resource of unknown size".
func TestAnIndexedTextsSizeStandsInForTheDescriptors(t *testing.T) {
	srv := mcptest.NewServer(nil, nil)
	sizeless := func(r *mcpsdk.Resource, body string) {
		srv.AddResource(r, func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
			return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: r.URI, MIMEType: r.MIMEType, Text: body}}}, nil
		})
	}
	sizeless(&mcpsdk.Resource{URI: "doc://a", Name: "cache eviction", MIMEType: "text/plain"},
		"Cache eviction: the least recently used entry goes first when the cache is full.\n")
	sizeless(&mcpsdk.Resource{URI: "doc://b", Name: "cache sizing", MIMEType: "text/plain"},
		strings.Repeat("Size the cache to the working set, measured over a day of traffic. ", 20))
	eng := newEngine(t, "", map[string]*mcpsdk.Server{"s": srv}, 0)
	zero := 0.0
	req := engine.AssembleRequest{Query: "cache eviction least recently used", TokenBudget: 2000, ValueFloor: &zero}
	res, err := eng.Assemble(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	a, ok := item(res, "doc://a")
	if !ok || a.Rank != 1 {
		t.Fatalf("setup: doc://a should rank first: %+v", res.Items)
	}
	// Leave 10 tokens after a: too few to read b for, whatever its size.
	req.TokenBudget = a.Tokens + 10
	if res, err = eng.Assemble(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	for _, o := range res.Omitted {
		if o.URI == "doc://b" {
			// 10 tokens left: the <32 rule or the sections rule applies, and
			// either names the size it judged by.
			if strings.Contains(o.Detail, "unknown size") || !strings.Contains(o.Detail, "as indexed") && !strings.Contains(o.Detail, "tokens whole") {
				t.Errorf("doc://b omitted as %s: %q; want its indexed size used", o.Reason, o.Detail)
			}
			return
		}
	}
	for _, it := range res.Items {
		if it.URI == "doc://b" {
			t.Errorf("doc://b returned as %s in 10 tokens: %q", it.Form, it.Reason)
		}
	}
}
