package glove

import (
	"context"
	"testing"
)

// BenchmarkEmbed embeds a typical 20-word MCP tool description.
func BenchmarkEmbed(b *testing.B) {
	e, err := New()
	if err != nil {
		b.Fatal(err)
	}
	const text = "readFile: Read the complete contents of a file from the file system as text, with optional head and tail line limits."
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Embed(ctx, text); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoad measures what the first New in a process pays: decoding the
// embedded table and deriving the weights and the common direction.
func BenchmarkLoad(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := newModel(data); err != nil {
			b.Fatal(err)
		}
	}
}
