package index

import (
	"crypto/sha256"
	"fmt"
	"path/filepath"
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

// A passageAt names a passage: key k's i-th.
type passageAt struct {
	k resource.Key
	i int
}

// collidingPassages returns two pairs of passages of keys {s, doc://N}
// whose document IDs (passageID) get the same chromem-go file name (the
// first 4 bytes of the ID's SHA-256, in hex): two texts' first passages,
// and one text's second passage with another's first. The four keys are
// distinct.
func collidingPassages(t *testing.T) (firsts, mixed [2]passageAt) {
	t.Helper()
	seen := map[[4]byte]passageAt{}
	used := map[resource.Key]bool{}
	var haveFirsts, haveMixed bool
	for n := 0; n < 1<<21 && !(haveFirsts && haveMixed); n++ {
		k := resource.Key{Server: "s", URI: fmt.Sprintf("doc://%d", n)}
		for i := range 2 {
			h := sha256.Sum256([]byte(passageID(k, i)))
			f := [4]byte(h[:4])
			prev, ok := seen[f]
			if !ok {
				seen[f] = passageAt{k: k, i: i}
				continue
			}
			if prev.k == k || used[prev.k] || used[k] {
				continue
			}
			pair := [2]passageAt{prev, {k: k, i: i}}
			switch {
			case prev.i == 0 && i == 0 && !haveFirsts:
				firsts, haveFirsts = pair, true
			case prev.i != i && !haveMixed:
				mixed, haveMixed = pair, true
			default:
				continue
			}
			used[prev.k], used[k] = true, true
		}
	}
	if !haveFirsts || !haveMixed {
		t.Fatal("no colliding passages found")
	}
	return firsts, mixed
}

// TestPassageFileNameCollisionsKeepBoth: passages whose document IDs
// chromem-go would store in the same file (two texts' first passages, or
// one text's second and another's first) are all stored, all load back
// after a restart with nothing embedded again, and deleting one text
// leaves the other's passages on disk.
func TestPassageFileNameCollisionsKeepBoth(t *testing.T) {
	firsts, mixed := collidingPassages(t)
	dir := t.TempDir()
	ctx := t.Context()
	emb := &indextest.BagEmbedder{}
	openIx := func() *Index {
		t.Helper()
		ix, err := Open(ctx, Options{Dir: dir, Embedder: emb})
		if err != nil {
			t.Fatal(err)
		}
		return ix
	}
	words := []string{"alpha", "beta", "gamma", "delta"}
	var ds []resource.Descriptor
	var keys []resource.Key
	for _, p := range [...]passageAt{firsts[0], firsts[1], mixed[0], mixed[1]} {
		ds = append(ds, resource.Descriptor{Server: "s", URI: p.k.URI, Name: words[len(ds)]})
		keys = append(keys, p.k)
	}
	ix := openIx()
	if _, err := ix.Replace(ctx, "s", ds); err != nil {
		t.Fatal(err)
	}
	for i, d := range ds {
		// Two passages each: the first, and one whose ID is KEY\x00#1.
		if _, err := ix.SetContents(ctx, Content{Key: d.Key(), Stamp: ContentStamp(d), Text: sections(2, words[i]+" words")}); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := ix.EmbedPassages(ctx, "", 0); err != nil || n != 4 {
		t.Fatalf("EmbedPassages = %d, %v; want 4", n, err)
	}
	want := map[string]map[resource.Key][]PassageHit{}
	for _, w := range words {
		hits, err := ix.PassageHits(ctx, w+" words", keys)
		if err != nil {
			t.Fatal(err)
		}
		want[w] = hits
	}
	files := func() int {
		t.Helper()
		fs, err := filepath.Glob(filepath.Join(dir, "*", "*"+docSuffix))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, f := range fs {
			if filepath.Base(f) != metadataFile {
				n++
			}
		}
		return n
	}
	if n := files(); n != len(ds)+8 {
		t.Errorf("%d document files, want %d (4 descriptors, 8 passages)", n, len(ds)+8)
	}
	ix.Close()

	calls := emb.Calls.Load()
	ix = openIx()
	for i, k := range keys {
		if has, _ := ix.HasContent(k); !has {
			t.Errorf("%s (%s) lost its text at the restart", k.URI, words[i])
		}
		if hits := ix.Lexical(words[i], 0, Filter{}); len(hits) == 0 || hits[0].Key != k {
			t.Errorf("%s: its text is not searchable after the restart: %v", words[i], hits)
		}
	}
	if n := ix.PendingPassages(""); n != 0 {
		t.Errorf("after the restart %d passages are pending, want 0", n)
	}
	for _, w := range words {
		got, err := ix.PassageHits(ctx, w+" words", keys)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want[w], got); diff != "" {
			t.Errorf("passage hits for %q after the restart differ (-before +after):\n%s", w, diff)
		}
	}
	if n := emb.Calls.Load() - calls; n != int64(len(words)) { // the queries only
		t.Errorf("%d embeddings after the restart, want %d (the queries')", n, len(words))
	}
	// Deleting one of each pair leaves the other's passages in place.
	if err := ix.Delete(ctx, firsts[0].k, mixed[1].k); err != nil {
		t.Fatal(err)
	}
	ix.Close()
	ix = openIx()
	defer ix.Close()
	for _, k := range []resource.Key{firsts[1].k, mixed[0].k} {
		if has, _ := ix.HasContent(k); !has {
			t.Errorf("%s lost its text when the other of its pair was deleted", k.URI)
		}
	}
	if n := ix.PendingPassages(""); n != 0 || ix.ccoll.Count() != 4 {
		t.Errorf("after deleting two texts: %d passages pending, %d stored; want 0 and 4", n, ix.ccoll.Count())
	}
}
