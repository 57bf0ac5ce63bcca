package index_test

import (
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
