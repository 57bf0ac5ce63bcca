package index_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/contextd/contextd/internal/index"
	"github.com/contextd/contextd/internal/index/indextest"
	"github.com/contextd/contextd/internal/resource"
)

// A replica that installs another's exported records answers like it, and
// embeds nothing.
func TestExportApplyAnswersAlikeWithoutEmbedding(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	changed := map[resource.Key]int{}
	src, err := index.Open(ctx, index.Options{Embedder: &indextest.BagEmbedder{}, OnChange: func(k resource.Key) {
		mu.Lock()
		changed[k]++
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	var descs []resource.Descriptor
	for i := range 40 {
		descs = append(descs, resource.Descriptor{Server: "s", URI: fmt.Sprintf("doc://%d", i), Name: fmt.Sprintf("doc %d", i),
			Description: fmt.Sprintf("notes about topic%d and alpha", i%7)})
	}
	if _, err := src.Replace(ctx, "s", descs); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("## Heading\n\nbody of the gamma passage with words. ", 200)
	cs := []index.Content{{Key: descs[0].Key(), Stamp: index.ContentStamp(descs[0]), Text: long},
		{Key: descs[1].Key(), Stamp: index.ContentStamp(descs[1]), Text: "short beta text"}}
	if _, err := src.SetContents(ctx, cs...); err != nil {
		t.Fatal(err)
	}
	if _, err := src.EmbedPassages(ctx, "", 3); err != nil {
		t.Fatal(err)
	}
	if err := src.Delete(ctx, descs[39].Key()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if changed[descs[0].Key()] < 3 || changed[descs[39].Key()] != 2 {
		t.Errorf("OnChange calls: %d for the key with content, %d for the deleted one; want >= 3 and 2", changed[descs[0].Key()], changed[descs[39].Key()])
	}
	mu.Unlock()

	var recs []index.Record
	for _, d := range descs {
		r, ok := src.Export(ctx, d.Key())
		if ok != (d.URI != descs[39].URI) {
			t.Fatalf("Export(%s) ok = %v", d.URI, ok)
		}
		if ok {
			recs = append(recs, r)
		}
	}
	if recs[0].Content == nil || len(recs[0].Content.Vecs) < 4 || recs[0].Content.Vecs[1] == nil || recs[0].Content.Text == "" {
		t.Fatalf("exported content of %s: %+v", descs[0].URI, recs[0].Content)
	}
	emb := &indextest.BagEmbedder{}
	dst, err := index.Open(ctx, index.Options{Embedder: emb, QueryCache: -1})
	if err != nil {
		t.Fatal(err)
	}
	n, err := dst.Apply(ctx, recs...)
	if err != nil || n != len(recs) {
		t.Fatalf("Apply = %d, %v; want %d", n, err, len(recs))
	}
	if got := emb.Calls.Load(); got != 0 {
		t.Errorf("Apply embedded %d texts; want 0", got)
	}
	for _, q := range []string{"topic3 alpha", "gamma passage", "beta"} {
		a, err := src.Dense(ctx, q, 10, index.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		b, err := dst.Dense(ctx, q, 10, index.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(a, b); diff != "" {
			t.Errorf("Dense(%q) differs (-source +replica):\n%s", q, diff)
		}
		if diff := cmp.Diff(src.Lexical(q, 10, index.Filter{}), dst.Lexical(q, 10, index.Filter{})); diff != "" {
			t.Errorf("Lexical(%q) differs (-source +replica):\n%s", q, diff)
		}
	}
	if got, want := dst.PendingPassages(""), src.PendingPassages(""); got != want {
		t.Errorf("replica has %d passages pending; the source %d", got, want)
	}
	// The same records again change nothing; a record without content
	// clears it.
	if n, err := dst.Apply(ctx, recs...); err != nil || n != 0 {
		t.Errorf("Apply again = %d, %v; want 0, nil", n, err)
	}
	bare := recs[0]
	bare.Content = nil
	if n, err := dst.Apply(ctx, bare); err != nil || n != 1 {
		t.Errorf("Apply without content = %d, %v; want 1", n, err)
	}
	if has, _ := dst.HasContent(descs[0].Key()); has {
		t.Error("content kept after a record without it")
	}
	// An unusable vector is skipped, not installed.
	bad := recs[2]
	bad.Vec = bad.Vec[:3]
	bad.Desc.Description = "changed"
	if n, _ := dst.Apply(ctx, bad); n != 0 {
		t.Errorf("Apply of a short vector = %d; want 0", n)
	}
	if d, _ := dst.Get(bad.Desc.Key()); d.Description == "changed" {
		t.Error("a record with a short vector was installed")
	}
}
