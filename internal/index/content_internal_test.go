package index

import (
	"testing"

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
