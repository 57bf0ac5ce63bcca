package index

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/philippgille/chromem-go"

	"github.com/contextd/contextd/internal/index/indextest"
	"github.com/contextd/contextd/internal/resource"
)

// TestStoredPassagesFollowTheirDescriptors checks the contents collection
// itself: a passage goes when its descriptor is deleted or changes version,
// and one left behind by a crash (or stamped for another version) is
// dropped, not attached, when the index is opened again.
func TestStoredPassagesFollowTheirDescriptors(t *testing.T) {
	dir := t.TempDir()
	ctx := t.Context()
	openIx := func() *Index {
		ix, err := Open(ctx, Options{Dir: dir, Embedder: &indextest.BagEmbedder{}})
		if err != nil {
			t.Fatal(err)
		}
		return ix
	}
	ix := openIx()
	var ds []resource.Descriptor
	for _, n := range []string{"a", "b", "c"} {
		ds = append(ds, resource.Descriptor{Server: "s", URI: "doc://" + n, Name: n, Size: 10})
	}
	if _, err := ix.Replace(ctx, "s", ds); err != nil {
		t.Fatal(err)
	}
	for _, d := range ds {
		if _, err := ix.SetContents(ctx, Content{Key: d.Key(), Stamp: ContentStamp(d), Text: "text of " + d.Name}); err != nil {
			t.Fatal(err)
		}
	}
	if n := ix.ccoll.Count(); n != 3 {
		t.Fatalf("%d passages stored, want 3", n)
	}
	if err := ix.Delete(ctx, ds[0].Key()); err != nil {
		t.Fatal(err)
	}
	if n := ix.ccoll.Count(); n != 2 {
		t.Errorf("after deleting a descriptor, %d passages stored, want 2", n)
	}
	changed := ds[1]
	changed.Size = 20
	if _, err := ix.Upsert(ctx, changed); err != nil {
		t.Fatal(err)
	}
	if n := ix.ccoll.Count(); n != 1 {
		t.Errorf("after a descriptor's size changed, %d passages stored, want 1", n)
	}
	// A passage stamped for another version of c, as a crash between
	// the descriptor's write and the passage's delete would leave it.
	vec := make([]float32, (&indextest.BagEmbedder{}).Dim())
	vec[0] = 1
	stale := chromem.Document{ID: ds[2].Key().String(), Embedding: vec, Content: "old text",
		Metadata: map[string]string{mServer: "s", mURI: ds[2].URI, mStamp: "999||"}}
	if err := ix.ccoll.AddDocument(ctx, stale); err != nil {
		t.Fatal(err)
	}
	ix.Close()

	ix = openIx()
	defer ix.Close()
	if has, _ := ix.HasContent(ds[2].Key()); has {
		t.Error("a passage stamped for another version was attached on open")
	}
	if n := ix.ccoll.Count(); n != 0 {
		t.Errorf("after reopening, %d passages stored, want the stale one dropped", n)
	}
	if hits := ix.Lexical("old text", 0, Filter{}); len(hits) != 0 {
		t.Errorf("stale text searchable after reopening: %v", hits)
	}
}

// sections returns a Markdown text of n sections of about 1.5 KiB, one
// passage each.
func sections(n int, words string) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "# Part %d\n\n%s\n\n", i, strings.Repeat(words+" ", 1500/(len(words)+1)))
	}
	return b.String()
}

// TestPassagesPersistAndOldDirsLoad: passages stored and reloaded come
// back with their vectors, so nothing is embedded again; a passage that no
// longer matches its text is dropped; and a text stored as one passage (a
// data directory from before passages) loads with it as its first, the
// rest pending.
func TestPassagesPersistAndOldDirsLoad(t *testing.T) {
	dir := t.TempDir()
	ctx := t.Context()
	emb := &indextest.BagEmbedder{}
	openIx := func() *Index {
		ix, err := Open(ctx, Options{Dir: dir, Embedder: emb})
		if err != nil {
			t.Fatal(err)
		}
		return ix
	}
	ix := openIx()
	ds := []resource.Descriptor{{Server: "s", URI: "doc://a", Name: "a"}, {Server: "s", URI: "doc://b", Name: "b"}}
	if _, err := ix.Replace(ctx, "s", ds); err != nil {
		t.Fatal(err)
	}
	texts := []string{sections(5, "alpha words"), sections(3, "beta words")}
	for i, d := range ds {
		if _, err := ix.SetContents(ctx, Content{Key: d.Key(), Stamp: ContentStamp(d), Text: texts[i]}); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := ix.EmbedPassages(ctx, "", 0); err != nil || n != 4+2 {
		t.Fatalf("EmbedPassages = %d, %v; want 6", n, err)
	}
	want, err := ix.PassageHits(ctx, "alpha words", []resource.Key{ds[0].Key(), ds[1].Key()})
	if err != nil {
		t.Fatal(err)
	}
	if n := ix.ccoll.Count(); n != 8 {
		t.Errorf("%d passages stored, want 8", n)
	}
	ix.Close()

	calls := emb.Calls.Load()
	ix = openIx()
	got, err := ix.PassageHits(ctx, "alpha words", []resource.Key{ds[0].Key(), ds[1].Key()})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("passage hits after reopening differ (-before +after):\n%s", diff)
	}
	if n := ix.PendingPassages(""); n != 0 || emb.Calls.Load() != calls+1 { // the query only
		t.Errorf("after reopening, %d passages pending and %d embeddings, want 0 and the query's", n, emb.Calls.Load()-calls)
	}
	// A passage whose span no longer matches its text (another cut), and a
	// text stored as a single passage, as before passages.
	doc, err := ix.ccoll.GetByID(ctx, passageID(ds[0].Key(), 2))
	if err != nil {
		t.Fatal(err)
	}
	doc.Metadata[mSpan] = "1-2"
	if err := ix.ccoll.AddDocument(ctx, doc); err != nil {
		t.Fatal(err)
	}
	if err := ix.ccoll.Delete(ctx, nil, nil, passageID(ds[1].Key(), 1), passageID(ds[1].Key(), 2)); err != nil {
		t.Fatal(err)
	}
	ix.Close()

	ix = openIx()
	defer ix.Close()
	if n := ix.PendingPassages("s"); n != 1+2 {
		t.Errorf("after reopening, %d passages pending, want the mismatched one and the old text's two", n)
	}
	if n := ix.ccoll.Count(); n != 8-1-2 {
		t.Errorf("%d passages stored, want 5 (the mismatched one dropped)", n)
	}
	if hs, _ := ix.PassageHits(ctx, "beta words", []resource.Key{ds[1].Key()}); len(hs[ds[1].Key()]) != 1 || hs[ds[1].Key()][0].Passage != 0 {
		t.Errorf("old single passage loaded as %+v, want passage 0 only", hs[ds[1].Key()])
	}
	if n, err := ix.EmbedPassages(ctx, "", 0); err != nil || n != 3 {
		t.Errorf("EmbedPassages after reopening = %d, %v; want 3", n, err)
	}
}

// TestContentPassagesCapsVectors: Options.ContentPassages bounds the
// vectors past texts' first across servers, and the shallowest passages
// of every text get them first.
func TestContentPassagesCapsVectors(t *testing.T) {
	ctx := t.Context()
	ix, err := Open(ctx, Options{Embedder: &indextest.BagEmbedder{}, ContentPassages: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	var ds []resource.Descriptor
	for _, s := range []string{"s1", "s2"} {
		two := []resource.Descriptor{{Server: s, URI: "doc://a", Name: "a"}, {Server: s, URI: "doc://b", Name: "b"}}
		if _, err := ix.Replace(ctx, s, two); err != nil {
			t.Fatal(err)
		}
		ds = append(ds, two...)
	}
	for _, d := range ds { // 4 passages each: 12 past the first
		if _, err := ix.SetContents(ctx, Content{Key: d.Key(), Stamp: ContentStamp(d), Text: sections(4, d.Server+" "+d.URI)}); err != nil {
			t.Fatal(err)
		}
	}
	if n := ix.PendingPassages(""); n != 5 {
		t.Errorf("PendingPassages = %d, want the cap, 5", n)
	}
	if n, err := ix.EmbedPassages(ctx, "", 0); err != nil || n != 5 {
		t.Errorf("EmbedPassages = %d, %v; want the cap, 5", n, err)
	}
	if n, err := ix.EmbedPassages(ctx, "", 0); err != nil || n != 0 || ix.PendingPassages("") != 0 {
		t.Errorf("at the cap, EmbedPassages = %d, %v and %d pending; want none", n, err, ix.PendingPassages(""))
	}
	if got := ix.ccoll.Count(); got != len(ds)+5 {
		t.Errorf("%d vectors stored, want %d texts' first + 5", got, len(ds))
	}
	// Shallowest first: every text's second passage has a vector.
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	for _, d := range ds {
		if c := ix.docs[d.Key()].content; c.vecs[1] == nil {
			t.Errorf("%v: second passage not embedded", d.Key())
		}
	}
	if c := ix.docs[ds[0].Key()].content; c.vecs[2] == nil || c.vecs[3] != nil {
		t.Errorf("the fifth passage went elsewhere than the first text's third (ties by key)")
	}
}
