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

// fnvSource is a Go file whose answer (the 64-bit offset basis) sits in a
// small const block among many functions that mention the hash.
func fnvSource() string {
	var b strings.Builder
	b.WriteString("package fnv\n\n")
	for i := range 12 {
		fmt.Fprintf(&b, "// Sum%d returns the FNV hash of data, variant %d, as the package's other hashes do.\nfunc Sum%d(data []byte) uint64 {\n\tvar h uint64\n\tfor _, c := range data {\n\t\th ^= uint64(c)\n\t\th *= prime\n\t}\n\treturn h\n}\n\n", i, i, i)
	}
	b.WriteString("// The 64-bit offset basis every FNV hash starts from.\nconst offsetBasis = 14695981039346656037\n\n")
	for i := range 12 {
		fmt.Fprintf(&b, "// Write%d adds data to the FNV hash state, variant %d.\nfunc Write%d(h *uint64, data []byte) {\n\tfor _, c := range data {\n\t\t*h ^= uint64(c)\n\t}\n}\n\n", i, i, i)
	}
	return b.String()
}

// At 500 tokens the budget is shared two ways, one section each. A first
// resource that fits whole (about 400 tokens) no longer comes whole and
// leaves the second, which holds the answer, too little to be read: it is
// cut to its best section like a text that does not fit.
func TestAWholeTextDoesNotTakeASmallSharedBudget(t *testing.T) {
	var page strings.Builder
	page.WriteString("# FNV hash\n\nThe FNV hash package.\n\n")
	for i := range 8 {
		fmt.Fprintf(&page, "## The FNV hash, part %d\n\nThe 64-bit FNV hash of part %d mixes each byte into the hash and multiplies by the prime; the hash starts from a fixed value.\n\n", i, i)
	}
	srv := mcptest.NewServer(nil, nil)
	addDoc(srv, &mcpsdk.Resource{URI: "doc://fnv", Name: "fnv", Title: "FNV hash", Description: "The 64-bit FNV hash and its offset basis",
		MIMEType: "text/markdown"}, page.String())
	addDoc(srv, &mcpsdk.Resource{URI: "file:///fnv.go", Name: "fnv.go", Title: "fnv.go", Description: "FNV hash source: the 64-bit offset basis",
		MIMEType: "text/x-go"}, fnvSource())
	eng := newEngine(t, "", map[string]*mcpsdk.Server{"s": srv}, 0)
	res, err := eng.Assemble(t.Context(), engine.AssembleRequest{Query: "what is the 64-bit offset basis the FNV hash starts from", TokenBudget: 500})
	if err != nil {
		t.Fatal(err)
	}
	if res.TotalTokens > 500 {
		t.Fatalf("%d tokens, over the budget of 500", res.TotalTokens)
	}
	doc, ok := item(res, "doc://fnv")
	if !ok || doc.Rank != 1 {
		t.Fatalf("setup: the FNV page should rank first: %+v; omitted %+v", res.Items, res.Omitted)
	}
	src, ok := item(res, "file:///fnv.go")
	if !ok || src.Form != selector.FormSections || !strings.Contains(itemText(src), "14695981039346656037") {
		t.Errorf("fnv.go does not come with its offset basis (the page took %d tokens as %s): %+v; omitted %+v", doc.Tokens, doc.Form, src, res.Omitted)
	}
}

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

// Budget left once every candidate above the floors was served goes to
// their next best sections before a candidate under the floor is read to
// fill it: the first page's second section, which holds the answer, beats
// a whole page the floor had left out.
func TestTheBudgetLeftGoesToTheBestFirst(t *testing.T) {
	var client strings.Builder
	client.WriteString("# Upload client\n\nFiles move to the store.\n\n")
	client.WriteString("## Retry budget\n\nThe upload client retry budget is set per request.\n\n")
	client.WriteString("## Retry limit\n\nThe retry budget of the upload client allows 7 retries per part; after the last one the part is marked as failed, and the upload goes on with the next part while any is left.\n\n")
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
	addDoc(srv, &mcpsdk.Resource{URI: "doc://notes", Name: "notes", Title: "Upload client release notes",
		Description: "What changed in the upload client retry budget", MIMEType: "text/markdown"},
		"# Notes\n\n"+strings.Repeat("A release changed how the upload client sends files and how it reports an error. ", 12)+"\n")
	eng := newEngine(t, "", map[string]*mcpsdk.Server{"s": srv}, 0)
	res, err := eng.Assemble(t.Context(), engine.AssembleRequest{Query: "retry budget of the upload client", TokenBudget: 500})
	if err != nil {
		t.Fatal(err)
	}
	if res.TotalTokens > 500 {
		t.Fatalf("%d tokens, over the budget of 500", res.TotalTokens)
	}
	client1, ok := item(res, "doc://client")
	if !ok || !strings.Contains(itemText(client1), "7 retries per part") {
		t.Errorf("the client page's second section is not returned: %+v; items %+v", client1, res.Items)
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
