package use

import (
	"context"
	"fmt"
	"testing"
)

// benchQuery is a 12-word query.
const benchQuery = "how do I list the open pull requests assigned to me today"

// benchDescriptor is a 40-word MCP tool description.
const benchDescriptor = "search_issues: Search GitHub issues and pull requests across repositories with a query " +
	"string, filtered by state, labels, milestone and assignee; returns up to one hundred results sorted by " +
	"the last update, each with its title, number, author, labels and URL."

// benchLongQuery is a multi-step agent task of about 100 tokens.
const benchLongQuery = "First find the failing integration test in the payments service from last night's CI run, " +
	"read its logs and the stack trace, then open the source file that raised the exception and the recent " +
	"commits touching it; summarise what changed, propose a minimal fix with a regression test, and draft " +
	"a pull request description that links the original issue and lists the risks for the on-call reviewer."

func benchEmbed(b *testing.B, text string) {
	e := &Embedder{m: testModel(b)}
	ids, _ := e.Tokenize(text)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Embed(ctx, text); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(ids)), "tokens")
}

// BenchmarkEmbedQuery embeds a 12-word query (13 tokens).
func BenchmarkEmbedQuery(b *testing.B) { benchEmbed(b, benchQuery) }

// BenchmarkEmbedDescriptor embeds a 40-word tool description.
func BenchmarkEmbedDescriptor(b *testing.B) { benchEmbed(b, benchDescriptor) }

// BenchmarkEmbedLongQuery embeds a multi-step task query of about 100
// tokens.
func BenchmarkEmbedLongQuery(b *testing.B) { benchEmbed(b, benchLongQuery) }

// BenchmarkEmbedBatch embeds 64 descriptors per op with EmbedBatch and
// reports texts per second over all cores.
func BenchmarkEmbedBatch(b *testing.B) {
	e := &Embedder{m: testModel(b)}
	texts := make([]string, 64)
	for i := range texts {
		texts[i] = fmt.Sprintf("%s (variant %d)", benchDescriptor, i)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.EmbedBatch(ctx, texts); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(texts)*b.N)/b.Elapsed().Seconds(), "texts/s")
}

// BenchmarkLoad measures what the first use in a process pays: decoding
// the embedded data into float32 weights and building the tokenizer.
func BenchmarkLoad(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := newModel(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTokenize tokenizes the descriptor.
func BenchmarkTokenize(b *testing.B) {
	m := testModel(b)
	var s tokScratch
	b.ReportAllocs()
	for b.Loop() {
		m.tok.encode(&s, benchDescriptor)
	}
}
