package engine_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/embed/glove"
	"github.com/contextd/contextd/internal/engine"
	"github.com/contextd/contextd/internal/mcp/mcptest"
)

// BenchmarkSearch measures one query's ranking as Assemble does it (embed the
// query, dense top-100 with chromem-go, BM25F top-100, reciprocal rank
// fusion) over n descriptors mirrored from an in-memory go-sdk server, with
// the built-in GloVe embedder and a fixed-seed synthetic corpus.
func BenchmarkSearch(b *testing.B) {
	words := strings.Fields(`read write file directory search query database table schema user account
		invoice payment calendar event meeting weather forecast map route image photo video audio
		document page note task project issue commit branch build test deploy server client cache
		log metric alert email message chat contact order product price stock report chart`)
	emb, err := glove.New()
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{1_000, 10_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
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
				srv.AddResource(&mcpsdk.Resource{URI: fmt.Sprintf("doc://%d/%s", i, strings.ReplaceAll(phrase(2), " ", "-")),
					Name: phrase(2), Description: phrase(12), MIMEType: "text/plain"}, nil)
			}
			eng := newEngineOpts(b, "", map[string]*mcpsdk.Server{"s": srv}, engine.Options{Embedder: emb})
			if got := eng.Servers()[0].Resources; got != n {
				b.Fatalf("mirrored %d descriptors, want %d", got, n)
			}
			req := engine.SearchRequest{Query: "find the invoice payment report for this project", Limit: 10}
			b.ResetTimer()
			for b.Loop() {
				if hits, err := eng.Search(b.Context(), req); err != nil || len(hits) != 10 {
					b.Fatal(len(hits), err)
				}
			}
		})
	}
}
