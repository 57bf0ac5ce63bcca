//go:build linux

package index_test

import (
	"context"
	"testing"

	"github.com/contextd/contextd/internal/cputime"
	"github.com/contextd/contextd/internal/embed/use"
	"github.com/contextd/contextd/internal/index"
)

type oneByOne struct{ e *use.Embedder }

func (o oneByOne) Name() string { return o.e.Name() }
func (o oneByOne) Dim() int     { return o.e.Dim() }
func (o oneByOne) Embed(ctx context.Context, t string) ([]float32, error) {
	return o.e.Embed(ctx, t)
}

// BenchmarkUpsertUSE indexes 512 descriptors with USE-lite, through
// EmbedBatch (batched) and through one Embed call per descriptor on every
// core (one-by-one), reporting CPU time per descriptor.
func BenchmarkUpsertUSE(b *testing.B) {
	e, err := use.New()
	if err != nil {
		b.Fatal(err)
	}
	ds := scaleDescs("s", 512)
	for _, bc := range []struct {
		name string
		emb  interface {
			Name() string
			Dim() int
			Embed(context.Context, string) ([]float32, error)
		}
	}{{"batched", e}, {"one-by-one", oneByOne{e}}} {
		b.Run(bc.name, func(b *testing.B) {
			cpu := cputime.Used()
			for b.Loop() {
				ix, err := index.Open(b.Context(), index.Options{Embedder: bc.emb})
				if err != nil {
					b.Fatal(err)
				}
				if d, err := ix.Replace(b.Context(), "s", ds); err != nil || d.Embedded != len(ds) {
					b.Fatal(d, err)
				}
				ix.Close()
			}
			b.ReportMetric(float64((cputime.Used()-cpu).Microseconds())/1000/float64(b.N*len(ds)), "cpu-ms/desc")
		})
	}
}
