package index_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/contextd/contextd/internal/embed"
	"github.com/contextd/contextd/internal/index"
	"github.com/contextd/contextd/internal/index/indextest"
	"github.com/contextd/contextd/internal/resource"
)

// namedEmbedder is a bag-of-words embedder under a chosen identity, with
// a batch path that counts the texts it embeds. flip reverses every vector:
// vectors from another "model" of the same dimension, which would score
// nonsense against the first's if the two were ever mixed.
type namedEmbedder struct {
	indextest.BagEmbedder
	name    string
	flip    bool
	texts   atomic.Int64 // texts embedded through EmbedBatch
	batches atomic.Int64
	bad     bool // EmbedBatch returns a vector of the wrong length
}

func (e *namedEmbedder) Name() string { return e.name }

func (e *namedEmbedder) Embed(ctx context.Context, text string) ([]float32, error) {
	v, err := e.BagEmbedder.Embed(ctx, text)
	if e.flip {
		for i := range v {
			v[i] = -v[i]
		}
	}
	return v, err
}

func (e *namedEmbedder) EmbedBatch(ctx context.Context, texts []string) ([][]float32, error) {
	e.batches.Add(1)
	e.texts.Add(int64(len(texts)))
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i], _ = e.Embed(ctx, t)
	}
	if e.bad {
		out[len(out)-1] = out[len(out)-1][:3]
	}
	return out, nil
}

var _ embed.Batcher = (*namedEmbedder)(nil)

func manyDescs(server string, n int) []resource.Descriptor {
	var ds []resource.Descriptor
	for i := range n {
		ds = append(ds, resource.Descriptor{Server: server, URI: fmt.Sprintf("doc://%d", i), Name: fmt.Sprint("doc", i), Description: fmt.Sprintf("about topic %d", i%17)})
	}
	return ds
}

// An embedder with EmbedBatch gets the descriptors in batches (one per
// chunk of the upsert), never one Embed call each.
func TestBatcherEmbedsInBatches(t *testing.T) {
	e := &namedEmbedder{name: "batch-a"}
	ix := open(t, "", e)
	diff, err := ix.Replace(t.Context(), "s", manyDescs("s", 600))
	if err != nil {
		t.Fatal(err)
	}
	if diff.Embedded != 600 || e.texts.Load() != 600 || e.batches.Load() != 3 || e.Calls.Load() != 600 {
		t.Errorf("embedded %d: %d texts in %d batches, %d vectors; want 600 in 3 batches", diff.Embedded, e.texts.Load(), e.batches.Load(), e.Calls.Load())
	}
	if hits, err := ix.Dense(t.Context(), "about topic 3", 5, index.Filter{}); err != nil || len(hits) != 5 {
		t.Errorf("Dense = %v, %v", hits, err)
	}
}

// A batch with one unusable vector stores none of its descriptors.
func TestBatcherBadVectorStoresNothing(t *testing.T) {
	e := &namedEmbedder{name: "batch-bad", bad: true}
	ix := open(t, "", e)
	_, err := ix.Replace(t.Context(), "s", manyDescs("s", 10))
	if err == nil || !strings.Contains(err.Error(), "3 dimensions (want 64)") {
		t.Fatalf("Replace = %v, want an error naming the vector's length", err)
	}
	if n := ix.Len("s"); n != 0 {
		t.Errorf("Len = %d after a failed batch, want 0", n)
	}
}

// The index is built by one embedder. Opening it with another (another
// name, even at the same dimension) starts empty, so no query vector of the
// new embedder is ever compared with a document vector of the old; the
// next sync embeds everything once, and a restart with the same embedder
// embeds nothing.
func TestEmbedderSwitchReembedsOnce(t *testing.T) {
	dir := t.TempDir()
	ds := manyDescs("s", 40)
	a := &namedEmbedder{name: "openai:text-embedding-3-small:d64:l2"}
	ix := open(t, dir, a)
	if d, err := ix.Replace(t.Context(), "s", ds); err != nil || d.Embedded != 40 {
		t.Fatalf("first sync: %+v, %v", d, err)
	}
	ix.Close()

	// Same identity: nothing re-embedded.
	a2 := &namedEmbedder{name: a.name}
	ix = open(t, dir, a2)
	if ix.Len("s") != 40 {
		t.Fatalf("restart: Len %d, want 40", ix.Len("s"))
	}
	if d, err := ix.Replace(t.Context(), "s", ds); err != nil || d.Embedded != 0 || a2.texts.Load() != 0 {
		t.Fatalf("restart with the same embedder: %+v, %d texts embedded, %v; want none", d, a2.texts.Load(), err)
	}
	ix.Close()

	// Another model whose name differs from the first only in characters
	// a collection name cannot hold, and whose vectors point elsewhere.
	b := &namedEmbedder{name: "openai:text-embedding-3-small/d64:l2", flip: true}
	ix = open(t, dir, b)
	if n := ix.Len("s"); n != 0 {
		t.Fatalf("after switching embedders Len = %d, want 0 (the old vectors dropped)", n)
	}
	if hits, err := ix.Dense(t.Context(), "about topic 3", 5, index.Filter{}); err != nil || len(hits) != 0 {
		t.Fatalf("Dense before the re-sync = %v, %v; want nothing (no mixed vectors)", hits, err)
	}
	if d, err := ix.Replace(t.Context(), "s", ds); err != nil || d.Embedded != 40 || b.texts.Load() != 40 {
		t.Fatalf("re-sync after the switch: %+v, %d texts, %v; want all 40 embedded once", d, b.texts.Load(), err)
	}
	hits, err := ix.Dense(t.Context(), "about topic 3", 1, index.Filter{})
	if err != nil || len(hits) != 1 || hits[0].Score < 0.5 {
		t.Fatalf("Dense after the re-sync = %v, %v; want a match scored with the new vectors", hits, err)
	}
	ix.Close()

	b2 := &namedEmbedder{name: b.name, flip: true}
	ix = open(t, dir, b2)
	if d, err := ix.Replace(t.Context(), "s", ds); err != nil || d.Embedded != 0 || b2.texts.Load() != 0 {
		t.Fatalf("second restart: %+v, %d texts, %v; want none embedded", d, b2.texts.Load(), err)
	}
	ix.Close()

	// Back to the first: its collection was dropped at the switch, so it
	// is embedded once more, not loaded stale.
	a3 := &namedEmbedder{name: a.name}
	ix = open(t, dir, a3)
	if ix.Len("s") != 0 {
		t.Fatalf("switching back: Len %d, want 0", ix.Len("s"))
	}
	if d, err := ix.Replace(t.Context(), "s", ds); err != nil || d.Embedded != 40 {
		t.Fatalf("switching back: %+v, %v", d, err)
	}
}
