package index_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/contextd/contextd/internal/index"
	"github.com/contextd/contextd/internal/index/indextest"
	"github.com/contextd/contextd/internal/resource"
)

// longText returns a Markdown text of sections of about 1.5 KiB of filler
// ("lorem ipsum …", one passage each) whose section at is about topic,
// and the byte offset where topic's section starts.
func longText(sections, at int, topic string) (string, int) {
	var b strings.Builder
	off := 0
	for i := range sections {
		words := "lorem ipsum dolor sit "
		if i == at {
			off = b.Len()
			words = topic + " "
		}
		fmt.Fprintf(&b, "## Section %d\n\n", i)
		for range 8 {
			b.WriteString(strings.Repeat(words, 170/len(words)) + "\n")
		}
		b.WriteString("\n")
	}
	return b.String(), off
}

// TestDeepPassageIsFoundDensely: a long text whose only passage about a
// topic lies past 64 KiB ranks first for it once its passages are
// embedded (EmbedPassages), and PassageHits points at that passage.
func TestDeepPassageIsFoundDensely(t *testing.T) {
	ctx := t.Context()
	ix := open(t, "", &indextest.BagEmbedder{})
	ds := descs("s", "manual", "other", "third")
	if _, err := ix.Replace(ctx, "s", ds); err != nil {
		t.Fatal(err)
	}
	const topic = "walrus tusks ivory"
	text, off := longText(62, 55, topic)
	if off < 64<<10 {
		t.Fatalf("the topic is at %d, not past 64 KiB", off)
	}
	cs := []index.Content{
		{Key: ds[0].Key(), Stamp: index.ContentStamp(ds[0]), Text: text},
		{Key: ds[1].Key(), Stamp: index.ContentStamp(ds[1]), Text: "walrus colonies on the arctic shore"},
		{Key: ds[2].Key(), Stamp: index.ContentStamp(ds[2]), Text: "lorem ipsum dolor sit"},
	}
	if n, err := ix.SetContents(ctx, cs...); err != nil || n != 3 {
		t.Fatalf("SetContents = %d, %v; want 3 first passages embedded", n, err)
	}
	first := func() resource.Key {
		t.Helper()
		hits, err := ix.Dense(ctx, topic, 1, index.Filter{})
		if err != nil || len(hits) != 1 {
			t.Fatal(hits, err)
		}
		return hits[0].Key
	}
	if got := first(); got != ds[1].Key() {
		t.Errorf("with first passages only, %q ranks %s first, want %s (the manual's topic is not embedded yet)", topic, got.URI, ds[1].URI)
	}
	pending := ix.PendingPassages("s")
	if want := len(index.Passages(text)) - 1; pending != want {
		t.Errorf("PendingPassages = %d, want %d", pending, want)
	}
	if n, err := ix.EmbedPassages(ctx, "s", 0); err != nil || n != pending {
		t.Fatalf("EmbedPassages = %d, %v; want %d", n, err, pending)
	}
	if got := ix.PendingPassages(""); got != 0 {
		t.Errorf("PendingPassages after EmbedPassages = %d", got)
	}
	if got := first(); got != ds[0].Key() {
		t.Errorf("with every passage, %q ranks %s first, want %s", topic, got.URI, ds[0].URI)
	}
	hits, err := ix.PassageHits(ctx, topic, []resource.Key{ds[0].Key(), ds[2].Key(), {Server: "s", URI: "doc://unknown"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 2 || len(hits[ds[2].Key()]) != 1 {
		t.Errorf("PassageHits covers %d keys (want the 2 with text), %d passages of the short text (want 1)", len(hits), len(hits[ds[2].Key()]))
	}
	h := hits[ds[0].Key()]
	if len(h) != len(index.Passages(text)) {
		t.Fatalf("%d passage hits for the manual, want all %d", len(h), len(index.Passages(text)))
	}
	best := h[0]
	if best.Start != off || !strings.Contains(text[best.Start:best.End], topic) || best.Line != strings.Count(text[:off], "\n")+1 {
		t.Errorf("best passage %+v, want the one at byte %d (line %d) about %q", best, off, strings.Count(text[:off], "\n")+1, topic)
	}
	for i := 1; i < len(h); i++ {
		if h[i].Score > h[i-1].Score {
			t.Fatalf("passage hits not best first at %d: %v > %v", i, h[i].Score, h[i-1].Score)
		}
	}
	// The dense score is the documented mix with the first and the best
	// passage.
	var opening float64
	for _, p := range h {
		if p.Passage == 0 {
			opening = p.Score
		}
	}
	got, _ := denseScore(t, ix, topic, ds[0].Key())
	want := 0.5*cosine(t, &indextest.BagEmbedder{}, index.EmbeddingText(ds[0]), topic) + 0.5*(opening+best.Score)/2
	if d := got - want; d > 1e-5 || d < -1e-5 {
		t.Errorf("dense score %v, want 0.5·cos(descriptor) + 0.5·(first + best passage)/2 = %v", got, want)
	}
}

// TestDeepTermIsFoundLexically: a word only at 200 KiB of a text is
// searchable, and a term cap scaled to the text's length keeps a long
// text of distinct words searchable to its end.
func TestDeepTermIsFoundLexically(t *testing.T) {
	ctx := t.Context()
	ix := open(t, "", &indextest.BagEmbedder{})
	ds := descs("s", "manual", "other")
	if _, err := ix.Replace(ctx, "s", ds); err != nil {
		t.Fatal(err)
	}
	// About 45 bytes of text per distinct term: more terms than a fixed
	// cap of lexical.MaxContentTerms, fewer than the scaled one.
	var b strings.Builder
	for i := 0; b.Len() < 200<<10; i++ {
		fmt.Fprintf(&b, "entry%d is listed in the catalogue with care.\n", i)
	}
	b.WriteString("The quokkasaurus appears once, here.\n")
	text := b.String()
	if _, err := ix.SetContents(ctx, index.Content{Key: ds[0].Key(), Stamp: index.ContentStamp(ds[0]), Text: text}); err != nil {
		t.Fatal(err)
	}
	if got := lexKeys(ix, "quokkasaurus"); !cmp.Equal(got, []string{ds[0].URI}) {
		t.Errorf("lexical quokkasaurus = %v, want %s", got, ds[0].URI)
	}
	if got := lexKeys(ix, "entry4000"); !cmp.Equal(got, []string{ds[0].URI}) {
		t.Errorf("lexical entry4000 (distinct term number ~4,000) = %v, want %s", got, ds[0].URI)
	}
}
