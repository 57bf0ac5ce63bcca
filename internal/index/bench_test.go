package index_test

import (
	"fmt"
	"testing"

	"github.com/contextd/contextd/internal/index"
	"github.com/contextd/contextd/internal/index/indextest"
	"github.com/contextd/contextd/internal/resource"
)

// BenchmarkDense ranks 10,000 descriptors for the engine's pool of 100,
// without and with every descriptor's passage indexed (random vectors: the
// worst case for the mixed ranking, which then scores every descriptor).
func BenchmarkDense(b *testing.B) {
	for _, contents := range []bool{false, true} {
		b.Run(fmt.Sprintf("10000/contents=%v", contents), func(b *testing.B) {
			ix, err := index.Open(b.Context(), index.Options{Embedder: indextest.RandomEmbedder{Dims: 512}})
			if err != nil {
				b.Fatal(err)
			}
			defer ix.Close()
			var ds []resource.Descriptor
			for i := range 10_000 {
				ds = append(ds, resource.Descriptor{Server: "s", URI: fmt.Sprintf("doc://%d", i), Name: fmt.Sprint(i), Description: fmt.Sprintf("descriptor %d", i)})
			}
			if _, err := ix.Replace(b.Context(), "s", ds); err != nil {
				b.Fatal(err)
			}
			if contents {
				var cs []index.Content
				for _, d := range ds {
					cs = append(cs, index.Content{Key: d.Key(), Stamp: index.ContentStamp(d), Text: "text of " + d.Name})
				}
				if _, err := ix.SetContents(b.Context(), cs...); err != nil {
					b.Fatal(err)
				}
			}
			for b.Loop() {
				if hits, err := ix.Dense(b.Context(), "find the invoice", 100, index.Filter{}); err != nil || len(hits) != 100 {
					b.Fatal(len(hits), err)
				}
			}
		})
	}
}
