//go:build linux

package index_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/contextd/contextd/internal/index"
	"github.com/contextd/contextd/internal/index/indextest"
	"github.com/contextd/contextd/internal/mcp"
	"github.com/contextd/contextd/internal/resource"
)

// uniqueWords returns text of about n bytes made of distinct 8-hex-digit
// words, numbered from *next: the worst case for an inverted index, where
// every word is a new term.
func uniqueWords(next *int, n int, sep string) string {
	var sb strings.Builder
	sb.Grow(n + 9)
	for sb.Len()+9 <= n {
		fmt.Fprintf(&sb, "%08x%s", *next, sep)
		*next++
	}
	return sb.String()
}

// hostileDescs returns n descriptors whose every field is at the list
// walk's cap (mcp.MaxURIBytes, MaxNameBytes, MaxDescriptionBytes) and made
// of words no other descriptor has.
func hostileDescs(server string, n int) []resource.Descriptor {
	next := 0
	ds := make([]resource.Descriptor, n)
	for i := range ds {
		ds[i] = resource.Descriptor{Server: server,
			URI:         "x://h/" + uniqueWords(&next, mcp.MaxURIBytes-16, "/"),
			Name:        uniqueWords(&next, mcp.MaxNameBytes, " "),
			Title:       uniqueWords(&next, mcp.MaxNameBytes, " "),
			Description: uniqueWords(&next, mcp.MaxDescriptionBytes, " "),
		}
	}
	return ds
}

// BenchmarkHostileServer measures the live heap a server costs when it
// lists descriptors, or serves texts, made of words no other resource
// has: every word is a new term of the lexical indexes. One op is the
// whole load; run with -benchtime=1x, one sub-benchmark per process, and
// compare heap-MiB (live heap after a collection, the index included)
// with lex-MiB and words-MiB (what the server's terms are charged in the
// BM25F and passage indexes: ServerLexicalBytes and
// ServerPassageWordsBytes bound them).
//
//   - descriptors: descriptors at every field's cap (about 10 KB of
//     distinct words each), as many as one list walk keeps
//     (mcp.DefaultMaxResourceBytes: 6,675).
//   - small-descriptors: 100,000 descriptors (the count cap) of 671
//     bytes of distinct words each (the text cap).
//   - texts: 197 descriptors whose texts are 340 KB of distinct words each
//     (64 MiB, a server's default content_bytes_per_server).
func BenchmarkHostileServer(b *testing.B) {
	b.Run("descriptors", func(b *testing.B) {
		n := mcp.DefaultMaxResourceBytes / hostileDescs("evil", 1)[0].TextBytes()
		ds := hostileDescs("evil", n)
		for b.Loop() {
			ix := hostileIndex(b, ds)
			ds = nil // the index holds them
			hostileStats(b, ix)
		}
	})
	b.Run("small-descriptors", func(b *testing.B) {
		n := mcp.DefaultMaxResources
		per := mcp.DefaultMaxResourceBytes / n // 671 bytes
		next := 0
		ds := make([]resource.Descriptor, n)
		for i := range ds {
			ds[i] = resource.Descriptor{Server: "evil", URI: fmt.Sprintf("x://s/%d", i),
				Name: uniqueWords(&next, 64, " "), Description: uniqueWords(&next, per-80, " ")}
		}
		for b.Loop() {
			ix := hostileIndex(b, ds)
			ds = nil // the index holds them
			hostileStats(b, ix)
		}
	})
	b.Run("texts", func(b *testing.B) {
		const n, size = 197, 340_000
		ds := make([]resource.Descriptor, n)
		for i := range ds {
			ds[i] = resource.Descriptor{Server: "evil", URI: fmt.Sprintf("x://t/%d", i), Name: fmt.Sprintf("t%d", i)}
		}
		for b.Loop() {
			ix := hostileIndex(b, ds)
			next := 0
			for _, d := range ds {
				c := index.Content{Key: d.Key(), Stamp: index.ContentStamp(d), Text: uniqueWords(&next, size, " ")}
				if _, err := ix.SetContents(b.Context(), c); err != nil {
					b.Fatal(err)
				}
			}
			hostileStats(b, ix)
		}
	})
}

// hostileIndex returns a new in-memory index holding ds as server "evil".
func hostileIndex(b *testing.B, ds []resource.Descriptor) *index.Index {
	ix, err := index.Open(b.Context(), index.Options{Embedder: indextest.RandomEmbedder{Dims: 512}})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := ix.Replace(b.Context(), "evil", ds); err != nil {
		b.Fatal(err)
	}
	return ix
}

// hostileStats reports memStats and lexStats of ix, then closes it.
func hostileStats(b *testing.B, ix *index.Index) {
	memStats(b)
	lexStats(b, ix)
	runtime.KeepAlive(ix)
	ix.Close()
}

// lexStats reports what the hostile server's terms are charged in the
// BM25F and passage indexes (lex-MiB, words-MiB): the estimate the bounds
// apply to, to compare with heap-MiB.
func lexStats(b *testing.B, ix *index.Index) {
	d, p := ix.LexicalBytes("evil")
	b.ReportMetric(float64(d)/(1<<20), "lex-MiB")
	b.ReportMetric(float64(p)/(1<<20), "words-MiB")
}
