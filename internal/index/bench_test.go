package index_test

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/contextd/contextd/internal/index"
	"github.com/contextd/contextd/internal/resource"
)

// randomEmbedder maps each text to a fixed pseudo-random 512-d unit vector:
// the shape of USE-lite's output without its cost.
type randomEmbedder struct{}

func (randomEmbedder) Name() string { return "random-512" }
func (randomEmbedder) Dim() int     { return 512 }
func (randomEmbedder) Embed(_ context.Context, text string) ([]float32, error) {
	h := fnv.New64a()
	h.Write([]byte(text))
	r := rand.New(rand.NewPCG(h.Sum64(), 1))
	v := make([]float32, 512)
	var n float64
	for i := range v {
		v[i] = float32(r.NormFloat64())
		n += float64(v[i]) * float64(v[i])
	}
	for i := range v {
		v[i] /= float32(math.Sqrt(n))
	}
	return v, nil
}

// BenchmarkDense ranks 10,000 descriptors for the engine's pool of 100,
// without and with every descriptor's passage indexed (random vectors: the
// worst case for the mixed ranking, which then scores every descriptor).
func BenchmarkDense(b *testing.B) {
	for _, contents := range []bool{false, true} {
		b.Run(fmt.Sprintf("10000/contents=%v", contents), func(b *testing.B) {
			ix, err := index.Open(b.Context(), index.Options{Embedder: randomEmbedder{}})
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
