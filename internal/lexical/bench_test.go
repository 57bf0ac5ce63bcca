package lexical

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// synthetic returns n descriptors and 64 queries drawn from a Zipf-
// distributed vocabulary of 5,000 made-up words with a fixed seed, so that
// benchmark runs are comparable. Shapes follow real MCP descriptors: a
// camelCase name, a short title, a description of 8–40 words, a path URI.
func synthetic(n int) (docs []Doc, queries []string) {
	r := rand.New(rand.NewPCG(42, 42))
	syll := []string{"ka", "lo", "mi", "ne", "ru", "ta", "vo", "si", "de", "ba", "go", "pe", "zu", "fa", "hi", "jo"}
	vocab := make([]string, 5000)
	for i := range vocab {
		var b strings.Builder
		for range 2 + r.IntN(3) {
			b.WriteString(syll[r.IntN(len(syll))])
		}
		vocab[i] = b.String()
	}
	zipf := rand.NewZipf(r, 1.1, 1, uint64(len(vocab)-1))
	word := func() string { return vocab[zipf.Uint64()] }
	words := func(k int) string {
		ws := make([]string, k)
		for i := range ws {
			ws[i] = word()
		}
		return strings.Join(ws, " ")
	}
	mimes := []string{"text/markdown", "application/json", "text/x-go", "text/plain", ""}
	docs = make([]Doc, n)
	for i := range docs {
		second := word()
		name := word() + strings.ToUpper(second[:1]) + second[1:] // camelCase
		docs[i] = Doc{
			ID:          fmt.Sprintf("srv|file:///%d", i),
			Name:        name,
			Title:       words(2 + r.IntN(4)),
			Description: words(8 + r.IntN(33)),
			URI:         "file:///" + word() + "/" + word() + "/" + name + ".md",
			MIMEType:    mimes[r.IntN(len(mimes))],
		}
	}
	queries = make([]string, 64)
	for i := range queries {
		queries[i] = words(3 + r.IntN(4))
	}
	return docs, queries
}

func BenchmarkSearch(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			docs, queries := synthetic(n)
			x := New(nil)
			x.Upsert(docs...)
			i := 0
			for b.Loop() {
				x.Search(queries[i%len(queries)], 10, nil)
				i++
			}
		})
	}
}

func BenchmarkUpsert10000(b *testing.B) {
	docs, _ := synthetic(10_000)
	for b.Loop() {
		x := New(nil)
		x.Upsert(docs...)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(docs)), "ns/doc")
}
