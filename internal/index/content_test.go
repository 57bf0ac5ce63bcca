package index_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/contextd/contextd/internal/index"
	"github.com/contextd/contextd/internal/index/indextest"
	"github.com/contextd/contextd/internal/resource"
)

func cosine(t *testing.T, e *indextest.BagEmbedder, a, b string) float64 {
	t.Helper()
	va, _ := e.Embed(t.Context(), a)
	vb, _ := e.Embed(t.Context(), b)
	var s float64
	for i := range va {
		s += float64(va[i]) * float64(vb[i])
	}
	return s
}

func denseScore(t *testing.T, ix *index.Index, query string, k resource.Key) (float64, bool) {
	t.Helper()
	hits, err := ix.Dense(t.Context(), query, 0, index.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hits {
		if h.Key == k {
			return h.Score, true
		}
	}
	return 0, false
}

func lexKeys(ix *index.Index, query string) []string {
	var out []string
	for _, h := range ix.Lexical(query, 0, index.Filter{}) {
		out = append(out, h.Key.URI)
	}
	return out
}

// TestContentIsSearchedBothWays checks the content-level index: a word
// only in a resource's text finds it lexically, and its dense score is the
// documented mix of descriptor and passage similarities.
func TestContentIsSearchedBothWays(t *testing.T) {
	emb := &indextest.BagEmbedder{}
	ix, err := index.Open(t.Context(), index.Options{Embedder: emb, ContentWeight: 0.4})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	ds := descs("s", "alpha", "beta")
	if _, err := ix.Replace(t.Context(), "s", ds); err != nil {
		t.Fatal(err)
	}
	const text = "The reconciliation ledger for quarterly invoices."
	const query = "quarterly invoices ledger"
	if got := lexKeys(ix, query); len(got) != 0 {
		t.Fatalf("lexical matched before any content: %v", got)
	}
	before, _ := denseScore(t, ix, query, ds[0].Key())
	n, err := ix.SetContents(t.Context(), index.Content{Key: ds[0].Key(), Stamp: index.ContentStamp(ds[0]), Text: text})
	if err != nil || n != 1 {
		t.Fatalf("SetContents = %d, %v; want 1 passage embedded", n, err)
	}
	if got := lexKeys(ix, query); len(got) != 1 || got[0] != ds[0].URI {
		t.Errorf("lexical = %v, want only %s", got, ds[0].URI)
	}
	got, ok := denseScore(t, ix, query, ds[0].Key())
	want := 0.6*cosine(t, emb, index.EmbeddingText(ds[0]), query) + 0.4*cosine(t, emb, text, query)
	if !ok || math.Abs(got-want) > 1e-5 {
		t.Errorf("dense score = %v (listed %v), want 0.6·cos(descriptor) + 0.4·cos(passage) = %v", got, ok, want)
	}
	if !(got > before) {
		t.Errorf("dense score %v did not rise from %v with matching content", got, before)
	}
	// The other resource has no content: its score is its descriptor's.
	other, _ := denseScore(t, ix, query, ds[1].Key())
	if w := cosine(t, emb, index.EmbeddingText(ds[1]), query); math.Abs(other-w) > 1e-5 {
		t.Errorf("score without content = %v, want cos(descriptor) = %v", other, w)
	}
	if has, at := ix.HasContent(ds[0].Key()); !has || at.IsZero() {
		t.Errorf("HasContent = %v, %v", has, at)
	}
	if ix.ContentLen("s") != 1 || ix.ContentLen("") != 1 {
		t.Errorf("ContentLen = %d, %d; want 1", ix.ContentLen("s"), ix.ContentLen(""))
	}
}

// TestContentFollowsItsDescriptorVersion checks that content belongs to one
// version of a descriptor: a new size drops it, a new description keeps it,
// and a read stamped with an old version is ignored.
func TestContentFollowsItsDescriptorVersion(t *testing.T) {
	ix := open(t, "", &indextest.BagEmbedder{})
	ctx := t.Context()
	ds := descs("s", "alpha")
	d := ds[0]
	if _, err := ix.Replace(ctx, "s", ds); err != nil {
		t.Fatal(err)
	}
	stamp := index.ContentStamp(d)
	if _, err := ix.SetContents(ctx, index.Content{Key: d.Key(), Stamp: stamp, Text: "zebra crossing"}); err != nil {
		t.Fatal(err)
	}

	d.Description = "reworded"
	if _, err := ix.Replace(ctx, "s", []resource.Descriptor{d}); err != nil {
		t.Fatal(err)
	}
	if has, _ := ix.HasContent(d.Key()); !has || len(lexKeys(ix, "zebra")) != 1 {
		t.Errorf("a new description dropped the content (has %v, lexical %v)", has, lexKeys(ix, "zebra"))
	}

	d.Size = 4096
	if _, err := ix.Replace(ctx, "s", []resource.Descriptor{d}); err != nil {
		t.Fatal(err)
	}
	if has, _ := ix.HasContent(d.Key()); has || len(lexKeys(ix, "zebra")) != 0 {
		t.Errorf("a new size kept the content (has %v, lexical %v)", has, lexKeys(ix, "zebra"))
	}

	// A read that started before the change carries the old stamp.
	if _, err := ix.SetContents(ctx, index.Content{Key: d.Key(), Stamp: stamp, Text: "zebra crossing"}); err != nil {
		t.Fatal(err)
	}
	if has, _ := ix.HasContent(d.Key()); has {
		t.Error("content stamped with an old version was indexed")
	}
	// Unknown keys are skipped, not errors.
	if n, err := ix.SetContents(ctx, index.Content{Key: resource.Key{Server: "s", URI: "doc://nope"}, Text: "x"}); n != 0 || err != nil {
		t.Errorf("SetContents(unknown) = %d, %v", n, err)
	}
	// Empty text is remembered as read, with nothing to embed.
	if n, err := ix.SetContents(ctx, index.Content{Key: d.Key(), Stamp: index.ContentStamp(d)}); n != 0 || err != nil {
		t.Errorf("SetContents(empty) = %d, %v", n, err)
	}
	if has, _ := ix.HasContent(d.Key()); !has {
		t.Error("empty content not remembered")
	}
}

// TestContentPersistsAndIsDeletedWithItsDescriptor reopens a directory.
func TestContentPersistsAndIsDeletedWithItsDescriptor(t *testing.T) {
	dir := t.TempDir()
	ctx := t.Context()
	ds := descs("s", "alpha", "beta")
	ix := open(t, dir, &indextest.BagEmbedder{})
	if _, err := ix.Replace(ctx, "s", ds); err != nil {
		t.Fatal(err)
	}
	for _, d := range ds {
		if _, err := ix.SetContents(ctx, index.Content{Key: d.Key(), Stamp: index.ContentStamp(d), Text: "walrus " + d.Name}); err != nil {
			t.Fatal(err)
		}
	}
	ix.Close()

	emb := &indextest.BagEmbedder{}
	ix = open(t, dir, emb)
	if got := lexKeys(ix, "walrus"); len(got) != 2 {
		t.Errorf("after reopening, lexical content matches %v, want both", got)
	}
	if emb.Calls.Load() != 0 {
		t.Errorf("reopening embedded %d texts, want none", emb.Calls.Load())
	}
	if err := ix.Delete(ctx, ds[0].Key()); err != nil {
		t.Fatal(err)
	}
	if got := lexKeys(ix, "walrus"); len(got) != 1 || got[0] != ds[1].URI {
		t.Errorf("after delete, lexical = %v", got)
	}
	ix.Close()

	ix = open(t, dir, &indextest.BagEmbedder{})
	if ix.ContentLen("") != 1 {
		t.Errorf("ContentLen after delete and reopen = %d, want 1", ix.ContentLen(""))
	}
}

// TestPassages checks how texts are cut into passages: every word in
// exactly one passage (up to MaxPassages), none longer than PassageBytes,
// cuts at white space and runes, sections opening passages, and line
// numbers that point at the passage.
func TestPassages(t *testing.T) {
	if got := index.Passages(" \n\t\n "); got != nil {
		t.Errorf("Passages of white space = %v, want none", got)
	}
	check := func(name, text string) []index.Span {
		t.Helper()
		spans := index.Passages(text)
		var words []string
		at := 0
		for i, sp := range spans {
			p := text[sp.Start:sp.End]
			if len(p) > index.PassageBytes || p != strings.TrimSpace(p) || p == "" || !utf8.ValidString(p) || sp.Start < at {
				t.Fatalf("%s: passage %d [%d, %d) is %d bytes, %q…%q", name, i, sp.Start, sp.End, len(p), p[:min(len(p), 8)], p[max(0, len(p)-8):])
			}
			if line := strings.Count(text[:sp.Start], "\n") + 1; sp.Line != line || sp.EndLine != line+strings.Count(p, "\n") {
				t.Errorf("%s: passage %d on lines %d–%d, want %d–%d", name, i, sp.Line, sp.EndLine, line, line+strings.Count(p, "\n"))
			}
			words = append(words, strings.Fields(p)...)
			at = sp.End
		}
		if len(spans) < index.MaxPassages {
			if diff := cmp.Diff(strings.Join(strings.Fields(text), ""), strings.Join(words, "")); diff != "" {
				t.Errorf("%s: words of the passages differ from the text's (-want +got):\n%s", name, diff)
			}
		}
		return spans
	}
	// One long line of words: cut at spaces, never inside a word.
	check("words", strings.Repeat("alpha beta ", index.PassageBytes/4))
	// Just over one passage: two halves, not a passage and a scrap.
	if sp := check("halves", strings.Repeat("gamma ", (index.PassageBytes+60)/6)); len(sp) != 2 || sp[1].End-sp[1].Start < index.PassageBytes/4 {
		t.Errorf("a text of %d bytes cut into %+v, want two about equal passages", index.PassageBytes+60, sp)
	}
	// No spaces at all: cut at runes.
	check("unspaced", strings.Repeat("語", index.PassageBytes))
	// Markdown sections of about 1.2 KiB: each opens a passage.
	var md strings.Builder
	for i := range 8 {
		fmt.Fprintf(&md, "## Section %d\n\n", i)
		for range 6 {
			md.WriteString(strings.Repeat("lorem ipsum dolor ", 10) + "\n\n")
		}
	}
	spans := check("markdown", md.String())
	if len(spans) != 8 {
		t.Errorf("%d passages of 8 sections, want 8", len(spans))
	}
	for i, sp := range spans {
		if want := fmt.Sprintf("## Section %d", i); !strings.HasPrefix(md.String()[sp.Start:], want) || !sp.Heading {
			t.Errorf("passage %d starts %q (heading %v), want %q", i, md.String()[sp.Start:sp.Start+14], sp.Heading, want)
		}
	}
	// Too many passages: the first, then the sections, then the rest.
	var big strings.Builder
	for range 40 { // paragraphs of 1.5 KiB: one passage each
		big.WriteString(strings.Repeat("intro words here\n", 90) + "\n")
	}
	for i := range index.MaxPassages / 2 {
		fmt.Fprintf(&big, "# Part %d\n%s\n", i, strings.Repeat("filler text ", index.PassageBytes/16)) // one each
	}
	spans = check("long", big.String())
	headings := 0
	for _, sp := range spans {
		if sp.Heading {
			headings++
		}
	}
	if len(spans) != index.MaxPassages || spans[0].Start != 0 || headings != index.MaxPassages/2 {
		t.Errorf("%d passages (want %d), first at %d, %d at headings (want all %d)", len(spans), index.MaxPassages, spans[0].Start, headings, index.MaxPassages/2)
	}
}

// TestDenseWithContentsIsExact checks that the n best by mixed score are
// the first n of the full ranking, for every n: a descriptor whose own
// similarity is low can rise into the head on its passage's, and one high
// on its descriptor can fall out on a passage that does not match.
func TestDenseWithContentsIsExact(t *testing.T) {
	ix := open(t, "", &indextest.BagEmbedder{})
	ctx := t.Context()
	words := strings.Fields("alpha beta gamma delta ledger invoice weather radar stock price recipe dinner music playlist map route")
	var ds []resource.Descriptor
	for i := range 120 {
		d := resource.Descriptor{Server: "s", URI: fmt.Sprintf("doc://%d", i), Name: words[i%len(words)],
			Description: words[(i*7)%len(words)] + " " + words[(i*11+3)%len(words)], MIMEType: "text/plain"}
		ds = append(ds, d)
	}
	if _, err := ix.Replace(ctx, "s", ds); err != nil {
		t.Fatal(err)
	}
	for i, d := range ds {
		if i%2 == 0 {
			text := words[(i*5+1)%len(words)] + " " + words[(i*13+2)%len(words)] + " " + words[(i*3)%len(words)]
			if _, err := ix.SetContents(ctx, index.Content{Key: d.Key(), Stamp: index.ContentStamp(d), Text: text}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, q := range []string{"ledger invoice", "weather radar map", "music playlist dinner", "stock"} {
		all, err := ix.Dense(ctx, q, 0, index.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		if len(all) != len(ds) {
			t.Fatalf("Dense(%q, all) = %d hits, want %d", q, len(all), len(ds))
		}
		for _, n := range []int{1, 3, 10, 40} {
			head, err := ix.Dense(ctx, q, n, index.Filter{})
			if err != nil {
				t.Fatal(err)
			}
			for i := range n {
				if head[i].Score != all[i].Score {
					t.Errorf("Dense(%q, %d)[%d] = %s %.4f, want %s %.4f (the full ranking's)", q, n, i, head[i].Key.URI, head[i].Score, all[i].Key.URI, all[i].Score)
					break
				}
			}
		}
	}
}

// TestSameTextOnlyRenews checks that indexing the same text again embeds
// nothing and renews the time HasContent reports, and that a changed text
// is embedded.
func TestSameTextOnlyRenews(t *testing.T) {
	emb := &indextest.BagEmbedder{}
	ix := open(t, "", emb)
	ctx := t.Context()
	d := descs("s", "alpha")[0]
	if _, err := ix.Replace(ctx, "s", []resource.Descriptor{d}); err != nil {
		t.Fatal(err)
	}
	set := func(text string) int {
		t.Helper()
		n, err := ix.SetContents(ctx, index.Content{Key: d.Key(), Stamp: index.ContentStamp(d), Text: text})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := set("walrus notes"); n != 1 {
		t.Fatalf("first text: %d embedded, want 1", n)
	}
	_, first := ix.HasContent(d.Key())
	time.Sleep(10 * time.Millisecond)
	if n := set("walrus notes"); n != 0 {
		t.Errorf("the same text again: %d embedded, want 0", n)
	}
	if _, again := ix.HasContent(d.Key()); !again.After(first) {
		t.Errorf("the same text again: indexed at %v, not after %v", again, first)
	}
	if n := set("narwhal notes"); n != 1 || len(lexKeys(ix, "narwhal")) != 1 {
		t.Errorf("a new text: %d embedded, lexical %v", n, lexKeys(ix, "narwhal"))
	}
}

// TestRenewedTimeIsStored checks that renewing the same text persists the
// new time, so a restart does not find every text old.
func TestRenewedTimeIsStored(t *testing.T) {
	dir := t.TempDir()
	ctx := t.Context()
	d := descs("s", "alpha")[0]
	ix := open(t, dir, &indextest.BagEmbedder{})
	if _, err := ix.Replace(ctx, "s", []resource.Descriptor{d}); err != nil {
		t.Fatal(err)
	}
	c := index.Content{Key: d.Key(), Stamp: index.ContentStamp(d), Text: "walrus notes"}
	if _, err := ix.SetContents(ctx, c); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)
	if _, err := ix.SetContents(ctx, c); err != nil {
		t.Fatal(err)
	}
	_, renewed := ix.HasContent(d.Key())
	ix.Close()
	ix = open(t, dir, &indextest.BagEmbedder{})
	if _, at := ix.HasContent(d.Key()); !at.Equal(renewed) {
		t.Errorf("after reopening, indexed at %v, want the renewed time %v", at, renewed)
	}
}

// TestContentBytesCapsTextAcrossServers: past Options.ContentBytes, new
// texts are left out with ErrContentFull (the rest of the call is stored),
// a text may still be replaced by one no longer, and the count survives a
// restart.
func TestContentBytesCapsTextAcrossServers(t *testing.T) {
	dir := t.TempDir()
	openCapped := func() *index.Index {
		ix, err := index.Open(t.Context(), index.Options{Dir: dir, Embedder: &indextest.BagEmbedder{}, ContentBytes: 100})
		if err != nil {
			t.Fatal(err)
		}
		return ix
	}
	ix := openCapped()
	ds := append(descs("a", "one", "two"), descs("b", "three")...)
	if _, err := ix.Upsert(t.Context(), ds...); err != nil {
		t.Fatal(err)
	}
	text := func(d resource.Descriptor, word string, n int) index.Content {
		return index.Content{Key: d.Key(), Stamp: index.ContentStamp(d), Text: strings.Repeat(word+" ", n/(len(word)+1))}
	}
	_, err := ix.SetContents(t.Context(), text(ds[0], "alpha", 42), text(ds[2], "gamma", 42), text(ds[1], "beta", 40))
	if !errors.Is(err, index.ErrContentFull) {
		t.Fatalf("err = %v, want ErrContentFull for the third 40-byte text over a 100-byte cap", err)
	}
	if got := lexKeys(ix, "gamma"); len(got) != 1 {
		t.Errorf("the text before the cap was not stored: %v", got)
	}
	if got := lexKeys(ix, "beta"); len(got) != 0 {
		t.Errorf("the text past the cap was indexed: %v", got)
	}
	if got := ix.ContentRoom(); got != 100-84 {
		t.Errorf("ContentRoom = %d, want 16", got)
	}
	// Full, but a text may shrink, and the room it frees takes a new one.
	if _, err := ix.SetContents(t.Context(), text(ds[0], "delta", 12), text(ds[1], "beta", 40)); err != nil {
		t.Fatalf("replacing with a shorter text, then adding one that fits: %v", err)
	}
	if got := lexKeys(ix, "beta"); len(got) != 1 {
		t.Errorf("beta after room was freed: %v", got)
	}
	// A new text that does not fit is left out, and the old one goes too:
	// the resource was read again because it changed.
	_, err = ix.SetContents(t.Context(), text(ds[2], "epsilon", 80))
	var full *index.ContentFullError
	if !errors.As(err, &full) || !errors.Is(err, index.ErrContentFull) || len(full.Left) != 1 || full.Left[ds[2].Key()] != 80 {
		t.Fatalf("growing past the cap: err = %v, want a ContentFullError naming %s (80 bytes)", err, ds[2].URI)
	}
	if got := lexKeys(ix, "gamma"); len(got) != 0 {
		t.Errorf("the stale text stayed when its replacement did not fit: %v", got)
	}
	if has, _ := ix.HasContent(ds[2].Key()); has || ix.ContentRoom() != 100-52 {
		t.Errorf("after the stale text went: HasContent %v, ContentRoom %d; want false, 48", has, ix.ContentRoom())
	}
	room := ix.ContentRoom()
	ix.Close()
	ix = openCapped()
	defer ix.Close()
	if got := ix.ContentRoom(); got != room {
		t.Errorf("ContentRoom after reopening = %d, want %d", got, room)
	}
	unc, err := index.Open(t.Context(), index.Options{Embedder: &indextest.BagEmbedder{}, ContentBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer unc.Close()
	if got := unc.ContentRoom(); got != math.MaxInt64 {
		t.Errorf("ContentRoom without a cap = %d", got)
	}
}

// TestFirstIndexedOutlivesChangesAndRestarts checks that FirstIndexed
// tells when a descriptor first came, kept across a new version of it and
// a restart, and anew once it was removed and came back.
func TestFirstIndexedOutlivesChangesAndRestarts(t *testing.T) {
	dir := t.TempDir()
	ctx := t.Context()
	d := descs("s", "alpha")[0]
	ix := open(t, dir, &indextest.BagEmbedder{})
	if _, ok := ix.FirstIndexed(d.Key()); ok {
		t.Fatal("FirstIndexed of what is not indexed: ok")
	}
	if _, err := ix.Replace(ctx, "s", []resource.Descriptor{d}); err != nil {
		t.Fatal(err)
	}
	first, ok := ix.FirstIndexed(d.Key())
	if !ok {
		t.Fatal("FirstIndexed after Replace: not ok")
	}
	time.Sleep(10 * time.Millisecond)
	d.Description = "a new version"
	if _, err := ix.Replace(ctx, "s", []resource.Descriptor{d}); err != nil {
		t.Fatal(err)
	}
	ix.Close()
	ix = open(t, dir, &indextest.BagEmbedder{})
	if got, ok := ix.FirstIndexed(d.Key()); !ok || !got.Equal(first) {
		t.Errorf("after a new version and a restart: FirstIndexed = %v, %v; want %v", got, ok, first)
	}
	if _, err := ix.Replace(ctx, "s", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := ix.Replace(ctx, "s", []resource.Descriptor{d}); err != nil {
		t.Fatal(err)
	}
	if got, ok := ix.FirstIndexed(d.Key()); !ok || !got.After(first) {
		t.Errorf("removed and back: FirstIndexed = %v, %v; want after %v", got, ok, first)
	}
}
