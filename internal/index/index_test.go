package index_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/contextd/contextd/internal/embed"
	"github.com/contextd/contextd/internal/index"
	"github.com/contextd/contextd/internal/index/indextest"
	"github.com/contextd/contextd/internal/resource"
)

func descs(server string, names ...string) []resource.Descriptor {
	var out []resource.Descriptor
	for _, n := range names {
		out = append(out, resource.Descriptor{Server: server, URI: "doc://" + n, Name: n, Description: "about " + n, MIMEType: "text/plain"})
	}
	return out
}

func open(t *testing.T, dir string, e embed.Embedder) *index.Index {
	t.Helper()
	ix, err := index.Open(t.Context(), index.Options{Dir: dir, Embedder: e})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	return ix
}

func TestReplaceAppliesDiff(t *testing.T) {
	ix := open(t, "", &indextest.BagEmbedder{})
	ctx := t.Context()
	if _, err := ix.Replace(ctx, "a", descs("a", "alpha", "beta", "gamma")); err != nil {
		t.Fatal(err)
	}
	if _, err := ix.Replace(ctx, "b", descs("b", "alpha")); err != nil {
		t.Fatal(err)
	}
	next := descs("a", "beta", "gamma", "delta")
	next[0].Description = "changed"
	diff, err := ix.Replace(ctx, "a", next)
	if err != nil {
		t.Fatal(err)
	}
	if want := (index.Diff{Added: 1, Updated: 1, Removed: 1, Unchanged: 1, Embedded: 2}); diff != want {
		t.Errorf("diff = %+v, want %+v", diff, want)
	}
	var got []string
	for _, d := range ix.Descriptors("") {
		got = append(got, d.Server+" "+d.Name)
	}
	want := []string{"a beta", "a delta", "a gamma", "b alpha"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("descriptors (-want +got):\n%s", d)
	}
	if ix.Len("a") != 3 || ix.Len("b") != 1 || ix.Len("") != 4 {
		t.Errorf("Len a=%d b=%d all=%d, want 3 1 4", ix.Len("a"), ix.Len("b"), ix.Len(""))
	}
}

func TestSameURIOnTwoServersIsTwoResources(t *testing.T) {
	ix := open(t, "", &indextest.BagEmbedder{})
	d := resource.Descriptor{URI: "file:///README.md", Name: "README"}
	a, b := d, d
	a.Server, b.Server = "a", "b"
	if _, err := ix.Upsert(t.Context(), a, b); err != nil {
		t.Fatal(err)
	}
	hits, err := ix.Dense(t.Context(), "readme", 10, index.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 2 || hits[0].Key == hits[1].Key {
		t.Fatalf("hits = %+v, want two distinct keys", hits)
	}
	hits, _ = ix.Dense(t.Context(), "readme", 10, index.Filter{Servers: []string{"b"}})
	if len(hits) != 1 || hits[0].Key.Server != "b" {
		t.Errorf("filtered hits = %+v, want only server b", hits)
	}
	lh := ix.Lexical("readme", 10, index.Filter{Servers: []string{"a"}})
	if len(lh) != 1 || lh[0].Key.Server != "a" {
		t.Errorf("lexical filtered hits = %+v, want only server a", lh)
	}
	// Naming every server (and one without descriptors) is the same as no filter.
	hits, _ = ix.Dense(t.Context(), "readme", 10, index.Filter{Servers: []string{"a", "b", "empty"}})
	if len(hits) != 2 {
		t.Errorf("hits for every server = %+v, want both", hits)
	}
	// A server not named stays out even when the others are all named.
	c := d
	c.Server = "c"
	if _, err := ix.Upsert(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	hits, _ = ix.Dense(t.Context(), "readme", 10, index.Filter{Servers: []string{"a", "b"}})
	if len(hits) != 2 || hits[0].Key.Server == "c" || hits[1].Key.Server == "c" {
		t.Errorf("hits for a and b = %+v, want server c left out", hits)
	}
	// A server named twice is searched once: no hit comes back twice.
	hits, _ = ix.Dense(t.Context(), "readme", 10, index.Filter{Servers: []string{"a", "a"}})
	if len(hits) != 1 || hits[0].Key.Server != "a" {
		t.Errorf("hits for a, a = %+v, want server a's one", hits)
	}
}

func TestDenseAndLexicalRankTheMatchFirst(t *testing.T) {
	ix := open(t, "", &indextest.BagEmbedder{})
	if _, err := ix.Upsert(t.Context(), descs("s", "weather", "architecture", "billing", "calendar")...); err != nil {
		t.Fatal(err)
	}
	dh, err := ix.Dense(t.Context(), "architecture overview", 2, index.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(dh) != 2 || dh[0].Key.URI != "doc://architecture" {
		t.Errorf("dense = %+v, want doc://architecture first of 2", dh)
	}
	lh := ix.Lexical("architecture overview", 0, index.Filter{})
	if len(lh) != 1 || lh[0].Key.URI != "doc://architecture" {
		t.Errorf("lexical = %+v, want only doc://architecture", lh)
	}
}

func TestReopenDoesNotReembed(t *testing.T) {
	dir := t.TempDir()
	e1 := &indextest.BagEmbedder{}
	ix := open(t, dir, e1)
	if _, err := ix.Replace(t.Context(), "s", descs("s", "one", "two", "three")); err != nil {
		t.Fatal(err)
	}
	ix.Close()

	e2 := &indextest.BagEmbedder{}
	ix2 := open(t, dir, e2)
	if ix2.Len("s") != 3 {
		t.Fatalf("after reopen Len = %d, want 3", ix2.Len("s"))
	}
	d, ok := ix2.Get(resource.Key{Server: "s", URI: "doc://two"})
	if !ok || d.Description != "about two" || d.MIMEType != "text/plain" {
		t.Errorf("Get after reopen = %+v, %v", d, ok)
	}
	next := descs("s", "one", "two", "three")
	next[2].Size = 42 // a field outside the embedded text
	diff, err := ix2.Replace(t.Context(), "s", next)
	if err != nil {
		t.Fatal(err)
	}
	if diff.Embedded != 0 || diff.Updated != 1 || e2.Calls.Load() != 0 {
		t.Errorf("diff=%+v embed calls=%d; want nothing re-embedded", diff, e2.Calls.Load())
	}
	if got := ix2.Lexical("two", 1, index.Filter{}); len(got) != 1 {
		t.Errorf("lexical index not rebuilt on reopen: %+v", got)
	}
}

// tear overwrites the files under dir that match keep with a cut-short gzip
// stream, as a crash in the middle of chromem-go's in-place write leaves them.
func tear(t *testing.T, dir string, keep func(name string) bool) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(p string, de os.DirEntry, err error) error {
		if err == nil && !de.IsDir() && keep(de.Name()) {
			n++
			return os.WriteFile(p, []byte{0x1f, 0x8b, 0}, 0o644)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestTornDocumentCostsOnlyThatDocument(t *testing.T) {
	dir := t.TempDir()
	ix := open(t, dir, &indextest.BagEmbedder{})
	if _, err := ix.Upsert(t.Context(), descs("s", "one", "two", "three")...); err != nil {
		t.Fatal(err)
	}
	ix.Close()
	first := true
	if n := tear(t, dir, func(name string) bool {
		if first && strings.HasSuffix(name, ".gob.gz") && name != "00000000.gob.gz" {
			first = false
			return true
		}
		return false
	}); n != 1 {
		t.Fatalf("tore %d files, want 1", n)
	}
	ix2 := open(t, dir, &indextest.BagEmbedder{})
	if ix2.Len("s") != 2 {
		t.Errorf("Len = %d after one torn document, want the other 2 kept", ix2.Len("s"))
	}
	if m, _ := filepath.Glob(dir + ".corrupt-*"); len(m) != 0 {
		t.Errorf("index moved aside for one torn document: %v", m)
	}
}

func TestUnreadableIndexIsMovedAsideAndOldCopiesPruned(t *testing.T) {
	dir := t.TempDir()
	for round := range 5 {
		ix := open(t, dir, &indextest.BagEmbedder{})
		if round > 0 && ix.Len("") != 0 {
			t.Errorf("round %d: Len = %d after a corrupt load, want a fresh index", round, ix.Len(""))
		}
		if _, err := ix.Upsert(t.Context(), descs("s", "one")...); err != nil {
			t.Fatal(err)
		}
		ix.Close()
		// The collection's own metadata cannot be salvaged document by document.
		// Two collections: descriptors and contents.
		if n := tear(t, dir, func(name string) bool { return name == "00000000.gob.gz" }); n != 2 {
			t.Fatalf("tore %d metadata files, want 2", n)
		}
	}
	ix := open(t, dir, &indextest.BagEmbedder{})
	if ix.Len("") != 0 {
		t.Errorf("Len = %d, want 0", ix.Len(""))
	}
	if m, _ := filepath.Glob(dir + ".corrupt-*"); len(m) != 3 {
		t.Errorf("%d moved-aside copies kept, want the newest 3: %v", len(m), m)
	}
}

func TestConcurrentWritesAndQueries(t *testing.T) {
	ix := open(t, t.TempDir(), &indextest.BagEmbedder{})
	ctx := t.Context()
	var wg sync.WaitGroup
	for _, server := range []string{"a", "b", "c"} {
		wg.Go(func() {
			for i := range 20 {
				names := []string{"alpha", "beta", "gamma", "delta"}[:1+i%4]
				if _, err := ix.Replace(ctx, server, descs(server, names...)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Go(func() {
		for range 50 {
			if _, err := ix.Dense(ctx, "alpha beta", 5, index.Filter{}); err != nil {
				t.Error(err)
				return
			}
			ix.Lexical("gamma", 5, index.Filter{})
		}
	})
	wg.Wait()
	// Each server's last Replace had 4 descriptors (i = 19).
	for _, s := range []string{"a", "b", "c"} {
		if n := ix.Len(s); n != 4 {
			t.Errorf("server %s: Len = %d, want 4", s, n)
		}
	}
	if got := len(ix.Lexical("alpha beta gamma delta", 0, index.Filter{})); got != 12 {
		t.Errorf("lexical index holds %d matching docs, want 12 (no orphans, none missing)", got)
	}
	if hits, err := ix.Dense(ctx, "alpha", 0, index.Filter{}); err != nil || len(hits) != 12 {
		t.Errorf("dense index holds %d docs (%v), want 12", len(hits), err)
	}
}

func TestDenseEmbedsARepeatedQueryOnce(t *testing.T) {
	emb := &countingEmbedder{BagEmbedder: &indextest.BagEmbedder{}}
	ix, err := index.Open(t.Context(), index.Options{Embedder: emb})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	if _, err := ix.Upsert(t.Context(), resource.Descriptor{Server: "s", URI: "x://a", Name: "alpha"}); err != nil {
		t.Fatal(err)
	}
	before := emb.n.Load()
	for range 3 {
		if _, err := ix.Dense(t.Context(), "alpha notes", 5, index.Filter{}); err != nil {
			t.Fatal(err)
		}
	}
	if n := emb.n.Load() - before; n != 1 {
		t.Errorf("three identical queries embedded %d times, want 1", n)
	}
}

type countingEmbedder struct {
	*indextest.BagEmbedder
	n atomic.Int32
}

func (c *countingEmbedder) Embed(ctx context.Context, text string) ([]float32, error) {
	c.n.Add(1)
	return c.BagEmbedder.Embed(ctx, text)
}

// An upsert cut short (a shutdown, an embedder error) keeps the chunks it
// finished, so the next sync embeds only the rest.
func TestInterruptedUpsertKeepsFinishedChunks(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	emb := &cancellingEmbedder{BagEmbedder: &indextest.BagEmbedder{}, after: 300, cancel: cancel}
	ix, err := index.Open(t.Context(), index.Options{Embedder: emb})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	var descs []resource.Descriptor
	for i := range 600 {
		descs = append(descs, resource.Descriptor{Server: "s", URI: fmt.Sprintf("x://%d", i), Name: fmt.Sprintf("doc %d", i)})
	}
	if _, err := ix.Replace(ctx, "s", descs); err == nil {
		t.Fatal("Replace succeeded although its context was cancelled midway")
	}
	if n := ix.Len("s"); n < 256 || n >= 600 {
		t.Fatalf("after the interruption the index holds %d descriptors, want the finished chunk(s) (256..599)", n)
	}
	before := emb.Calls.Load()
	d, err := ix.Replace(t.Context(), "s", descs)
	if err != nil {
		t.Fatal(err)
	}
	if n := ix.Len("s"); n != 600 {
		t.Fatalf("after the retry: %d descriptors, want 600", n)
	}
	if got := emb.Calls.Load() - before; int(got) != d.Embedded || d.Embedded > 600-256 {
		t.Errorf("the retry embedded %d (diff says %d), want only what the first attempt did not store", got, d.Embedded)
	}
}

type cancellingEmbedder struct {
	*indextest.BagEmbedder
	after  int64
	cancel func()
}

func (c *cancellingEmbedder) Embed(ctx context.Context, text string) ([]float32, error) {
	if c.Calls.Load()+1 == c.after {
		c.cancel()
	}
	return c.BagEmbedder.Embed(ctx, text)
}
