package index_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/contextd/contextd/internal/index"
	"github.com/contextd/contextd/internal/index/indextest"
	"github.com/contextd/contextd/internal/resource"
)

func TestScoreMatchesDenseAndLexicalOnceIndexed(t *testing.T) {
	emb := &indextest.BagEmbedder{}
	ix, err := index.Open(t.Context(), index.Options{Embedder: emb})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	listed := []resource.Descriptor{
		{Server: "s", URI: "doc://guide", Name: "user guide", Description: "managing users"},
		{Server: "s", URI: "doc://billing", Name: "billing", Description: "invoices"},
	}
	if _, err := ix.Upsert(t.Context(), listed...); err != nil {
		t.Fatal(err)
	}
	d := resource.Descriptor{Server: "s", URI: "users://42/profile", Name: "profile", Title: "User profile", Description: "the profile of a user"}
	const q = "show the profile of user 42"
	dense, lex, err := ix.Score(t.Context(), q, d, index.EmbeddingText(d))
	if err != nil {
		t.Fatal(err)
	}
	calls := emb.Calls.Load()
	if _, _, err := ix.Score(t.Context(), q, d, index.EmbeddingText(d)); err != nil {
		t.Fatal(err)
	}
	if n := emb.Calls.Load() - calls; n != 0 {
		t.Errorf("second Score embedded %d texts, want 0 (query and text cached)", n)
	}
	if ix.Len("s") != 2 {
		t.Fatalf("Score indexed the descriptor: %d", ix.Len("s"))
	}
	if _, err := ix.Upsert(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	find := func(hs []index.Hit) float64 {
		for _, h := range hs {
			if h.Key == d.Key() {
				return h.Score
			}
		}
		return math.NaN()
	}
	dh, err := ix.Dense(t.Context(), q, 0, index.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if got := find(dh); math.Abs(got-dense) > 1e-6 {
		t.Errorf("dense: Score %v, Dense after indexing %v", dense, got)
	}
	if got := find(ix.Lexical(q, 0, index.Filter{})); math.Abs(got-lex) > 1e-9 {
		t.Errorf("lexical: Score %v, Lexical after indexing %v", lex, got)
	}
}

// Every path of Dense, and Score, must give a descriptor the same score to
// the last bit, on every target (CI also runs this package built with
// GOAMD64=v3, where the compiler fuses multiply-adds it may): chromem-go's
// query (no passages indexed), the exact scan (some passages indexed, this
// descriptor without one) and Score.
func TestDensePathsScoreBitForBit(t *testing.T) {
	ix, err := index.Open(t.Context(), index.Options{Embedder: indextest.RandomEmbedder{Dims: 512}})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	var ds []resource.Descriptor
	for i := range 40 {
		ds = append(ds, resource.Descriptor{Server: "s", URI: fmt.Sprintf("doc://%02d", i), Name: fmt.Sprint("doc ", i), Description: fmt.Sprint("descriptor number ", i)})
	}
	if _, err := ix.Upsert(t.Context(), ds...); err != nil {
		t.Fatal(err)
	}
	const q = "find the invoice"
	scores := func() map[resource.Key]float64 {
		hs, err := ix.Dense(t.Context(), q, 0, index.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		m := map[resource.Key]float64{}
		for _, h := range hs {
			m[h.Key] = h.Score
		}
		return m
	}
	viaChromem := scores()
	if _, err := ix.SetContents(t.Context(), index.Content{Key: ds[0].Key(), Stamp: index.ContentStamp(ds[0]), Text: "a passage"}); err != nil {
		t.Fatal(err)
	}
	viaScan := scores()
	for _, d := range ds[1:] {
		viaScore, _, err := ix.Score(t.Context(), q, d, index.EmbeddingText(d))
		if err != nil {
			t.Fatal(err)
		}
		c, s := viaChromem[d.Key()], viaScan[d.Key()]
		if math.Float64bits(c) != math.Float64bits(s) || math.Float64bits(c) != math.Float64bits(viaScore) {
			t.Errorf("%s: chromem-go path %v, scan %v, Score %v; want one score", d.URI, c, s, viaScore)
		}
	}
}
