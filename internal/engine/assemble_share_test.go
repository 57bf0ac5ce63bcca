package engine_test

import (
	"fmt"
	"strings"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/engine"
	"github.com/contextd/contextd/internal/mcp/mcptest"
	"github.com/contextd/contextd/internal/selector"
)

// A resource's share of a small budget holds its best section, not its
// overview too: the tokens the overview took are what the third
// candidate, which holds the answer, needed.
func TestASmallShareSpendsNothingOnTheOverview(t *testing.T) {
	var client strings.Builder
	client.WriteString("# Upload client\n\n" + strings.Repeat("This page describes how files move from the desk to the store, in order. ", 14) + "\n\n")
	client.WriteString("## Retry budget\n\nThe upload client retry budget is set per request.\n\n")
	for i := range 10 {
		fmt.Fprintf(&client, "## Upload client part %d\n\nThe upload client sends part %d. %s\n\n", i, i, strings.Repeat("Parts move in order and each is checked. ", 12))
	}
	var guide strings.Builder
	guide.WriteString("# Upload guide\n\nHow to upload.\n\n## Retry budget of the upload client\n\n")
	guide.WriteString(strings.Repeat("The upload client spends its retry budget on failed parts; a retry waits for the part before it. ", 12) + "\n\n")
	for i := range 10 {
		fmt.Fprintf(&guide, "## Step %d\n\n%s\n\n", i, strings.Repeat("Pick the files and press send. ", 20))
	}
	srv := mcptest.NewServer(nil, nil)
	addDoc(srv, &mcpsdk.Resource{URI: "doc://client", Name: "upload client", Title: "Upload client: retry budget",
		Description: "The retry budget of the upload client", MIMEType: "text/markdown"}, client.String())
	addDoc(srv, &mcpsdk.Resource{URI: "doc://guide", Name: "upload guide", Title: "Upload guide: retry budget",
		Description: "Retry budget of the upload client, a guide", MIMEType: "text/markdown"}, guide.String())
	addDoc(srv, &mcpsdk.Resource{URI: "doc://faq", Name: "faq", Title: "Upload client FAQ",
		Description: "Questions about the upload client", MIMEType: "text/markdown"},
		"# FAQ\n\nHow many times does the upload client try again? It defaults to 7 retries.\n\n"+
			"The client waits twice as long before each try, and a part that fails every try stops the whole upload with an error naming it.\n")
	eng := newEngine(t, "", map[string]*mcpsdk.Server{"s": srv}, 0)
	res, err := eng.Assemble(t.Context(), engine.AssembleRequest{Query: "retry budget of the upload client", TokenBudget: 500})
	if err != nil {
		t.Fatal(err)
	}
	if res.TotalTokens > 500 {
		t.Fatalf("%d tokens, over the budget of 500", res.TotalTokens)
	}
	for _, uri := range []string{"doc://client", "doc://guide"} {
		if it, ok := item(res, uri); !ok || it.Rank > 2 || it.Form != selector.FormSections {
			t.Fatalf("setup: %s should rank first or second and come as sections: %+v; omitted %+v", uri, it, res.Omitted)
		}
	}
	client1, _ := item(res, "doc://client")
	if faq, ok := item(res, "doc://faq"); !ok || !strings.Contains(itemText(faq), "defaults to 7 retries") {
		t.Errorf("the FAQ's answer is not returned (the client page took %d tokens, %s): %+v; omitted %+v", client1.Tokens, client1.Reason, faq, res.Omitted)
	}
}

// A Go file's answer in a const block that names it only as an identifier
// of letters and digits (offset64) is found by a task's "64-bit offset":
// the identifier's parts score too.
func TestAConstNamedWithDigitsIsFound(t *testing.T) {
	var src strings.Builder
	src.WriteString("package fnv\n\nconst (\n\toffset32 = 2166136261\n\toffset64 = 14695981039346656037\n\tprime32  = 16777619\n\tprime64  = 1099511628211\n)\n\n")
	for i := range 12 {
		fmt.Fprintf(&src, "// Sum%d returns the FNV hash of data, variant %d; every FNV hash starts from its basis.\nfunc Sum%d(data []byte) uint64 {\n\tvar h uint64\n\tfor _, c := range data {\n\t\th ^= uint64(c)\n\t}\n\treturn h\n}\n\n", i, i, i)
	}
	srv := mcptest.NewServer(nil, nil)
	addDoc(srv, &mcpsdk.Resource{URI: "file:///fnv.go", Name: "fnv.go", Title: "fnv.go", MIMEType: "text/x-go"}, src.String())
	eng := newEngine(t, "", map[string]*mcpsdk.Server{"s": srv}, 0)
	res, err := eng.Assemble(t.Context(), engine.AssembleRequest{Query: "what is the 64-bit offset basis the FNV hash starts from", TokenBudget: 300})
	if err != nil {
		t.Fatal(err)
	}
	it, ok := item(res, "file:///fnv.go")
	if !ok || it.Form != selector.FormSections {
		t.Fatalf("setup: fnv.go should come as sections: %+v; omitted %+v", it, res.Omitted)
	}
	if !strings.Contains(itemText(it), "offset64 = 14695981039346656037") {
		t.Errorf("the const block is not returned: %s", it.Reason)
	}
}

// itemText joins an item's texts.
func itemText(it selector.Item) string {
	var b strings.Builder
	for _, c := range it.Contents {
		b.WriteString(c.Text)
	}
	return b.String()
}
