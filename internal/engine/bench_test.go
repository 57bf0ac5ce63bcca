package engine_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/engine"
	"github.com/contextd/contextd/internal/index/indextest"
	"github.com/contextd/contextd/internal/lexical"
	"github.com/contextd/contextd/internal/mcp/mcptest"
	ctxsync "github.com/contextd/contextd/internal/sync"
)

// BenchmarkSearch measures one query's ranking as Assemble does it (dense
// top-100 with chromem-go, BM25F top-100, convex fusion, and the same again
// for each clause of a compound query) over n descriptors mirrored from an
// in-memory go-sdk server, with a fixed-seed synthetic corpus: each
// resource has a 40-word body, and "/contents" cases index every body (the
// content-level index; its passages double the dense scan). The query's
// vector comes from the index's query cache after the first iteration, so
// this is the cost of ranking alone; embedding a query is
// internal/embed/use's BenchmarkEmbedQuery. The stand-in embedder gives
// 512-d unit vectors like USE-lite's, so the dense search costs what it
// does in the daemon, without embedding 10,000 descriptors first.
func BenchmarkSearch(b *testing.B) {
	words := strings.Fields(`read write file directory search query database table schema user account
		invoice payment calendar event meeting weather forecast map route image photo video audio
		document page note task project issue commit branch build test deploy server client cache
		log metric alert email message chat contact order product price stock report chart`)
	emb := indextest.RandomEmbedder{Dims: 512}
	for _, bc := range []struct {
		n        int
		query    string
		contents bool
	}{
		{1_000, "find the invoice payment report for this project", true},
		{10_000, "find the invoice payment report for this project", false},
		{10_000, "find the invoice payment report for this project", true},
		{10_000, "find the invoice payment report for this project and email it to the team", true},
	} {
		n := bc.n
		name := fmt.Sprint(n)
		if len(lexical.Clauses(bc.query)) > 0 {
			name += "/clauses"
		}
		if bc.contents {
			name += "/contents"
		}
		b.Run(name, func(b *testing.B) {
			r := rand.New(rand.NewPCG(42, 42))
			phrase := func(k int) string {
				ws := make([]string, k)
				for i := range ws {
					ws[i] = words[r.IntN(len(words))]
				}
				return strings.Join(ws, " ")
			}
			srv := mcptest.NewServer(nil, &mcpsdk.ServerOptions{PageSize: 1000})
			for i := range n {
				body := phrase(40)
				srv.AddResource(&mcpsdk.Resource{URI: fmt.Sprintf("doc://%d/%s", i, strings.ReplaceAll(phrase(2), " ", "-")),
					Name: phrase(2), Description: phrase(12), MIMEType: "text/plain"},
					func(_ context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
						return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: req.Params.URI, Text: body}}}, nil
					})
			}
			contents := -1
			if bc.contents {
				contents = n
			}
			eng := newEngineOpts(b, "", map[string]*mcpsdk.Server{"s": srv}, engine.Options{Embedder: emb,
				Mirror: func(o *ctxsync.Options) { o.ContentMaxResources = contents }})
			if got := eng.Servers()[0]; got.Resources != n || got.Contents != max(contents, 0) {
				b.Fatalf("mirrored %d descriptors and %d contents, want %d and %d", got.Resources, got.Contents, n, max(contents, 0))
			}
			req := engine.SearchRequest{Query: bc.query, Limit: 10}
			b.ResetTimer()
			for b.Loop() {
				if hits, err := eng.Search(b.Context(), req); err != nil || len(hits) != 10 {
					b.Fatal(len(hits), err)
				}
			}
		})
	}
}
