package glove_test

import (
	"context"
	"encoding/json"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/contextd/contextd/internal/embed"
	"github.com/contextd/contextd/internal/embed/glove"
)

var update = flag.Bool("update", false, "rewrite testdata/golden.json")

var _ embed.Embedder = (*glove.Embedder)(nil)

func newEmbedder(t testing.TB) *glove.Embedder {
	t.Helper()
	e, err := glove.New()
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return e
}

func mustEmbed(t testing.TB, e *glove.Embedder, text string) []float32 {
	t.Helper()
	v, err := e.Embed(context.Background(), text)
	if err != nil {
		t.Fatalf("Embed(%q): %v", text, err)
	}
	return v
}

func cosine(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

// checkUnit fails unless v is a finite vector of length glove.Dim with unit
// norm to within chromem-go's tolerance (1e-6, computed the same way).
func checkUnit(t testing.TB, text string, v []float32) {
	t.Helper()
	if len(v) != glove.Dim {
		t.Fatalf("Embed(%q): len %d, want %d", text, len(v), glove.Dim)
	}
	var ss float64
	for i, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			t.Fatalf("Embed(%q)[%d] = %v", text, i, x)
		}
		ss += float64(x) * float64(x)
	}
	if n := math.Sqrt(ss); math.Abs(n-1) >= 1e-6 {
		t.Fatalf("Embed(%q): norm %v, want 1", text, n)
	}
}

var texts = []string{
	"read a file from disk",
	"Read the complete contents of a file from the file system. Handles various text encodings.",
	"getUserProfile",
	"the",
	"",
	"   ",
	"?!",
	"12345 67",
	"kubernetes grpc",
	"ÜberCool naïve 東京",
	"x\xff\xfey",
}

func TestEmbedUnitAndDeterministic(t *testing.T) {
	e := newEmbedder(t)
	var zero glove.Embedder // the zero value must behave the same
	for _, text := range texts {
		v := mustEmbed(t, e, text)
		checkUnit(t, text, v)
		if diff := cmp.Diff(v, mustEmbed(t, e, text)); diff != "" {
			t.Errorf("Embed(%q) differs between calls (-first +second):\n%s", text, diff)
		}
		if diff := cmp.Diff(v, mustEmbed(t, &zero, text)); diff != "" {
			t.Errorf("Embed(%q) differs for the zero Embedder (-New +zero):\n%s", text, diff)
		}
	}
}

func TestNameAndDim(t *testing.T) {
	e := newEmbedder(t)
	if e.Name() != glove.Name || e.Name() == "" {
		t.Errorf("Name() = %q, want %q", e.Name(), glove.Name)
	}
	if e.Dim() != 100 {
		t.Errorf("Dim() = %d, want 100", e.Dim())
	}
}

func TestRelatedCloserThanUnrelated(t *testing.T) {
	tests := []struct{ anchor, related, unrelated string }{
		{"read a file from disk", "open file contents", "weather forecast for tomorrow"},
		{"get the weather forecast for a city", "will it rain tomorrow", "read a file from disk"},
		{"search the web for pages matching a query", "find websites about a topic", "send a message to a colleague"},
		{"delete a row from a database table", "remove records with sql", "take a photo of the sunset"},
		{"list the commits of a git branch", "show the history of a repository", "book a flight to paris"},
		{"car", "automobile", "banana"},
		{"getUserProfile", "fetch the account details of a user", "compress an image"},
	}
	e := newEmbedder(t)
	for _, tt := range tests {
		a := mustEmbed(t, e, tt.anchor)
		rel, unrel := cosine(a, mustEmbed(t, e, tt.related)), cosine(a, mustEmbed(t, e, tt.unrelated))
		// A margin, so that a near-tie does not count as success.
		t.Logf("%q: related %.3f, unrelated %.3f", tt.anchor, rel, unrel)
		if rel < unrel+0.15 {
			t.Errorf("%q: cosine to related %q = %.3f, to unrelated %q = %.3f; want related ahead by 0.15",
				tt.anchor, tt.related, rel, tt.unrelated, unrel)
		}
	}
}

func TestIdentifiersSplit(t *testing.T) {
	e := newEmbedder(t)
	same := [][2]string{
		{"getUserProfile", "get user profile"},
		{"read_file", "read file"},
		{"list-dir-entries", "list dir entries"},
		{"docs/architecture.md", "docs architecture md"},
		{"HTTPServer", "http server"},
		{"GitHub", "github"}, // the whole run is a known word, so it is not split
	}
	for _, p := range same {
		if c := cosine(mustEmbed(t, e, p[0]), mustEmbed(t, e, p[1])); c < 1-1e-6 {
			t.Errorf("cosine(%q, %q) = %v, want 1", p[0], p[1], c)
		}
	}
	if c := cosine(mustEmbed(t, e, "GitHub"), mustEmbed(t, e, "git hub")); c > 0.99 {
		t.Errorf("cosine(GitHub, git hub) = %v: GitHub was split although github is a known word", c)
	}
}

func TestNoKnownWords(t *testing.T) {
	e := newEmbedder(t)
	// Texts without any letter or digit share one vector, texts that
	// normalise alike share one, and different unknown words differ.
	same := [][2]string{
		{"", "?!"},
		{"   ", "--- / ---"},
		{"Kubectl", "kubectl!"},
		{"zzqx_blorp", "zzqx blorp"},
	}
	for _, p := range same {
		if c := cosine(mustEmbed(t, e, p[0]), mustEmbed(t, e, p[1])); c < 1-1e-6 {
			t.Errorf("cosine(%q, %q) = %v, want 1", p[0], p[1], c)
		}
	}
	for _, p := range [][2]string{{"kubectl", "helmfile"}, {"", "kubectl"}, {"12345", "67890"}} {
		if c := cosine(mustEmbed(t, e, p[0]), mustEmbed(t, e, p[1])); c > 0.5 {
			t.Errorf("cosine(%q, %q) = %v, want unrelated (< 0.5)", p[0], p[1], c)
		}
	}
	// An unknown word next to a known one is ignored.
	if c := cosine(mustEmbed(t, e, "kubectl file"), mustEmbed(t, e, "file")); c < 1-1e-6 {
		t.Errorf("cosine(kubectl file, file) = %v, want 1", c)
	}
}

func TestEmbedCanceled(t *testing.T) {
	e := newEmbedder(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := e.Embed(ctx, "read a file"); err != context.Canceled {
		t.Errorf("Embed with a canceled context: err = %v, want context.Canceled", err)
	}
}

func TestEmbedConcurrent(t *testing.T) {
	e := newEmbedder(t)
	want := make([][]float32, len(texts))
	for i, text := range texts {
		want[i] = mustEmbed(t, e, text)
	}
	var wg sync.WaitGroup
	got := make([][][]float32, 8)
	for g := range got {
		wg.Go(func() {
			got[g] = make([][]float32, len(texts))
			for i, text := range texts {
				got[g][i], _ = e.Embed(context.Background(), text)
			}
		})
	}
	wg.Wait()
	for g := range got {
		if diff := cmp.Diff(want, got[g]); diff != "" {
			t.Errorf("goroutine %d mismatch (-sequential +concurrent):\n%s", g, diff)
		}
	}
}

// TestGolden pins the output. If it fails because the embedding changed on
// purpose, bump the suffix of glove.Name (stored indexes must be rebuilt)
// and run go test -run TestGolden -update.
func TestGolden(t *testing.T) {
	e := newEmbedder(t)
	// Keys are quoted Go strings: JSON cannot hold invalid UTF-8.
	got := map[string][]float32{"name: " + glove.Name: nil}
	for _, text := range texts {
		got[strconv.Quote(text)] = mustEmbed(t, e, text)
	}
	path := filepath.Join("testdata", "golden.json")
	if *update {
		b, err := json.MarshalIndent(got, "", "\t")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var want map[string][]float32
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	// The tolerance absorbs last-bit differences across platforms (math.Log
	// is assembly on some); any real change moves components by far more.
	if diff := cmp.Diff(want, got, cmpopts.EquateApprox(0, 1e-6)); diff != "" {
		t.Errorf("embeddings changed (-golden +got); bump glove.Name and run with -update:\n%s", diff)
	}
}

func FuzzEmbed(f *testing.F) {
	for _, text := range texts {
		f.Add(text)
	}
	f.Add("getUserProfile(docs/read_file.md) → HTTPServer")
	e := newEmbedder(f)
	f.Fuzz(func(t *testing.T, text string) {
		v := mustEmbed(t, e, text)
		checkUnit(t, text, v)
		if diff := cmp.Diff(v, mustEmbed(t, e, text)); diff != "" {
			t.Fatalf("Embed(%q) not deterministic (-first +second):\n%s", text, diff)
		}
	})
}
