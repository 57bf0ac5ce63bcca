package use_test

import (
	"context"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/contextd/contextd/internal/embed"
	"github.com/contextd/contextd/internal/embed/use"
)

var _ embed.Embedder = (*use.Embedder)(nil)

func newEmbedder(t testing.TB) *use.Embedder {
	t.Helper()
	e, err := use.New()
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return e
}

func mustEmbed(t testing.TB, e *use.Embedder, text string) []float32 {
	t.Helper()
	v, err := e.Embed(context.Background(), text)
	if err != nil {
		t.Fatalf("Embed(%q): %v", text, err)
	}
	return v
}

// checkUnit fails unless v has length Dim, no NaN or Inf, and unit norm.
func checkUnit(t testing.TB, text string, v []float32) {
	t.Helper()
	if len(v) != use.Dim {
		t.Fatalf("Embed(%q): length %d, want %d", text, len(v), use.Dim)
	}
	var ss float64
	for i, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			t.Fatalf("Embed(%q)[%d] = %v", text, i, x)
		}
		ss += float64(x) * float64(x)
	}
	if math.Abs(math.Sqrt(ss)-1) > 1e-5 {
		t.Fatalf("Embed(%q): norm %v, want 1", text, math.Sqrt(ss))
	}
}

func cos(a, b []float32) float64 {
	var ab float64
	for i := range a {
		ab += float64(a[i]) * float64(b[i])
	}
	return ab
}

func TestNameDim(t *testing.T) {
	var e use.Embedder
	if e.Name() != use.Name || e.Dim() != use.Dim || use.Dim != 512 {
		t.Errorf("Name %q Dim %d", e.Name(), e.Dim())
	}
}

func TestEmbedOddInputs(t *testing.T) {
	e := newEmbedder(t)
	texts := []string{
		"", " ", "\x00", "\t\n\r", "\u0301\u0301\u0301", "\ufffd", "\xff\xfe\xfd",
		"😀", "🏳️‍🌈🏳️‍🌈", "אבג", "<s></s>", strings.Repeat("z", 5000),
		strings.Repeat("\u0301", 300), "\U0010ffff",
	}
	for _, text := range texts {
		checkUnit(t, text, mustEmbed(t, e, text))
	}
}

func TestEmbedEmptyIsTheNoTokenVector(t *testing.T) {
	e := newEmbedder(t)
	// No tokens: NFKC of "" is "", and no text normalises to "".
	a := mustEmbed(t, e, "")
	b := mustEmbed(t, e, "")
	for i := range a {
		if a[i] != b[i] {
			t.Fatal("Embed(\"\") is not deterministic")
		}
	}
	if c := cos(a, mustEmbed(t, e, " ")); c > 0.999 {
		t.Errorf("cos(\"\", \" \") = %v: a space has tokens and should differ", c)
	}
}

func TestZeroValue(t *testing.T) {
	var zero use.Embedder
	want := mustEmbed(t, newEmbedder(t), "list files")
	got := mustEmbed(t, &zero, "list files")
	if cos(want, got) != cos(want, want) {
		t.Error("the zero Embedder embeds differently from New's")
	}
}

func TestMaxTokens(t *testing.T) {
	e := newEmbedder(t)
	// "▁the" is one piece: 200 of them are past MaxTokens, so what follows
	// is never read.
	base := strings.Repeat("the ", 200)
	a := mustEmbed(t, e, base+"kubernetes cluster")
	b := mustEmbed(t, e, base+"chocolate cake")
	for i := range a {
		if a[i] != b[i] {
			t.Fatal("text past MaxTokens changed the embedding")
		}
	}
}

func TestEmbedCancelled(t *testing.T) {
	e := newEmbedder(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.Embed(ctx, "x"); err != context.Canceled {
		t.Errorf("Embed with a cancelled ctx: %v", err)
	}
	if _, err := e.EmbedBatch(ctx, []string{"x", "y"}); err != context.Canceled {
		t.Errorf("EmbedBatch with a cancelled ctx: %v", err)
	}
}

// TestSimilarity is a sanity check of the model, not of the port: a
// paraphrase is closer than an unrelated text.
func TestSimilarity(t *testing.T) {
	e := newEmbedder(t)
	q := mustEmbed(t, e, "read the contents of a file")
	para := mustEmbed(t, e, "open a file and return its text")
	other := mustEmbed(t, e, "weather forecast for tomorrow in Paris")
	if cp, co := cos(q, para), cos(q, other); !(cp > co+0.2) {
		t.Errorf("cos(paraphrase) = %.3f, cos(unrelated) = %.3f", cp, co)
	}
}

// EmbedBatch returns Embed's vectors to the bit, for a few texts (one
// stream of sub-batches, each product split across cores) and for many
// (texts handed out to workers).
func TestEmbedBatchMatchesEmbed(t *testing.T) {
	e := newEmbedder(t)
	few := []string{"", "read a file", "list_open_issues(repo)", "über straße", "🚀", "read a file"}
	many := append(slices.Repeat(few, 4), "a longer text: "+strings.Repeat("gather every invoice and payment ", 20))
	for _, texts := range [][]string{few, many} {
		got, err := e.EmbedBatch(t.Context(), texts)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(texts) {
			t.Fatalf("%d vectors for %d texts", len(got), len(texts))
		}
		for i, text := range texts {
			want := mustEmbed(t, e, text)
			for k := range want {
				if got[i][k] != want[k] {
					t.Fatalf("%d texts: EmbedBatch[%d] (%q) differs from Embed at %d: %v vs %v", len(texts), i, text, k, got[i][k], want[k])
				}
			}
		}
	}
	if v, err := e.EmbedBatch(t.Context(), nil); err != nil || len(v) != 0 {
		t.Errorf("EmbedBatch(nil) = %v, %v", v, err)
	}
}

func TestConcurrent(t *testing.T) {
	e := newEmbedder(t)
	texts := []string{"read a file", "write a file", "delete the branch", "query the database"}
	want := make([][]float32, len(texts))
	for i, text := range texts {
		want[i] = mustEmbed(t, e, text)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for k := range 3 {
				i := (g + k) % len(texts)
				v, err := e.Embed(context.Background(), texts[i])
				if err != nil {
					t.Error(err)
					return
				}
				for d := range v {
					if v[d] != want[i][d] {
						t.Errorf("goroutine %d: Embed(%q) differs from the sequential result", g, texts[i])
						return
					}
				}
			}
		})
	}
	wg.Go(func() {
		if _, err := e.EmbedBatch(context.Background(), texts); err != nil {
			t.Error(err)
		}
	})
	wg.Wait()
}

func FuzzEmbed(f *testing.F) {
	for _, s := range []string{"", " ", "read a file", "getUserProfile", "a:b://c", "Ｆｕｌｌ", "\u0301e", "😀\u200d", "\xff"} {
		f.Add(s)
	}
	e, err := use.New()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text string) {
		checkUnit(t, text, mustEmbed(t, e, text))
		if _, err := e.Tokenize(text); err != nil {
			t.Fatal(err)
		}
	})
}
