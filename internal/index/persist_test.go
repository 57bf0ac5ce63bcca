package index_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/gob"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/philippgille/chromem-go"

	"github.com/contextd/contextd/internal/index"
	"github.com/contextd/contextd/internal/index/indextest"
	"github.com/contextd/contextd/internal/resource"
)

// gateEmbedder blocks every text containing "slow" until gate is closed.
type gateEmbedder struct {
	indextest.BagEmbedder
	entered chan struct{}
	gate    chan struct{}
}

func (g *gateEmbedder) Embed(ctx context.Context, text string) ([]float32, error) {
	if strings.Contains(text, "slow") {
		select {
		case g.entered <- struct{}{}:
		default:
		}
		select {
		case <-g.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return g.BagEmbedder.Embed(ctx, text)
}

// One server's descriptors being embedded must not hold up another
// server's writes: each server's writes wait only for their own.
func TestEmbeddingOneServerDoesNotBlockAnother(t *testing.T) {
	g := &gateEmbedder{entered: make(chan struct{}, 1), gate: make(chan struct{})}
	ix := open(t, t.TempDir(), g)
	big := make([]resource.Descriptor, 0, 50)
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		big = append(big, resource.Descriptor{Server: "big", URI: "doc://" + n, Name: n, Description: "a slow one"})
	}
	done := make(chan error, 1)
	go func() { _, err := ix.Replace(t.Context(), "big", big); done <- err }()
	<-g.entered // big is embedding, and stays so until the gate opens

	other := make(chan error, 1)
	go func() { _, err := ix.Replace(t.Context(), "small", descs("small", "intro", "guide")); other <- err }()
	select {
	case err := <-other:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		close(g.gate)
		t.Fatal("the small server's sync waited for the big server's embedding")
	}
	// big's descriptors are listed (searchable lexically), none stored.
	if ix.Len("small") != 2 || ix.Pending("small") != 0 || ix.Len("big") != 5 || ix.Pending("big") != 5 {
		t.Errorf("while big embeds: small %d (%d pending), big %d (%d pending)", ix.Len("small"), ix.Pending("small"), ix.Len("big"), ix.Pending("big"))
	}
	close(g.gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if ix.Len("big") != 5 {
		t.Errorf("big has %d descriptors, want 5", ix.Len("big"))
	}
}

// breakDir replaces every collection directory under dir by a file, so
// that every write fails as on a full disk, and returns the function that
// puts them back.
func breakDir(t *testing.T, dir string) (restore func()) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var moved []string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if err := os.Rename(p, p+".away"); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		moved = append(moved, p)
	}
	if len(moved) == 0 {
		t.Fatal("no collection directories to break")
	}
	return func() {
		for _, p := range moved {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(p+".away", p); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// Vectors that could not be stored are kept: retrying a write that failed
// (a full disk) stores them without embedding them again.
func TestFailedStoreKeepsItsVectors(t *testing.T) {
	dir := t.TempDir()
	emb := &indextest.BagEmbedder{}
	ix := open(t, dir, emb)
	if _, err := ix.Replace(t.Context(), "s", descs("s", "seed")); err != nil { // creates the collection directories
		t.Fatal(err)
	}
	restore := breakDir(t, dir)
	ds := descs("s", "seed", "a", "b", "c", "d", "e", "f", "g")
	calls := emb.Calls.Load()
	for range 3 {
		if _, err := ix.Replace(t.Context(), "s", ds); err == nil {
			t.Fatal("Replace on a broken directory succeeded")
		}
	}
	if n := emb.Calls.Load() - calls; n != 7 {
		t.Errorf("3 failed writes embedded %d texts, want 7 (each new descriptor once)", n)
	}
	restore()
	diff, err := ix.Replace(t.Context(), "s", ds)
	if err != nil {
		t.Fatal(err)
	}
	if n := emb.Calls.Load() - calls; n != 7 || diff.Embedded != 0 || ix.Len("s") != 8 {
		t.Errorf("after the disk recovered: %d embeddings in all (want 7), %d embedded by the retry (want 0), %d stored (want 8)", n, diff.Embedded, ix.Len("s"))
	}
	// And they are on disk.
	ix.Close()
	if re := open(t, dir, emb); re.Len("s") != 8 {
		t.Errorf("reopened: %d descriptors, want 8", re.Len("s"))
	}
}

// rewriteDoc changes, on disk, the stored descriptor whose ID contains id.
func rewriteDoc(t *testing.T, dir, id string, change func(*chromem.Document)) {
	t.Helper()
	rewriteWhere(t, dir, func(d *chromem.Document) bool {
		_, content := d.Metadata["content_stamp"]
		return strings.Contains(d.ID, id) && !content
	}, change)
}

// rewriteWhere changes, on disk, the first stored document match accepts.
func rewriteWhere(t *testing.T, dir string, match func(*chromem.Document) bool, change func(*chromem.Document)) {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(dir, "*", "*.gob.gz"))
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		var d chromem.Document
		err = gob.NewDecoder(zr).Decode(&d)
		f.Close()
		if err != nil || !match(&d) {
			continue
		}
		change(&d)
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		if err := gob.NewEncoder(zw).Encode(&d); err != nil {
			t.Fatal(err)
		}
		zw.Close()
		if err := os.WriteFile(p, buf.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatal("no such stored document")
}

// A stored vector of the wrong length (which made every load fail), with
// a NaN (which loaded, and ranked its resource lexically forever) or not
// of unit length is
// dropped at load like a torn document, and embedded again by the next sync.
func TestUnusableStoredVectorsAreSalvaged(t *testing.T) {
	for name, change := range map[string]func(*chromem.Document){
		"short": func(d *chromem.Document) { d.Embedding = d.Embedding[:3] },
		"NaN":   func(d *chromem.Document) { d.Embedding[1] = float32(math.NaN()) },
		// Finite, but no vector the store writes (it normalises them):
		// it scored its resource 0.1 where it should have been 1.
		"huge": func(d *chromem.Document) {
			for i := range d.Embedding {
				d.Embedding[i] = 3e38
			}
		},
		"scaled": func(d *chromem.Document) {
			for i := range d.Embedding {
				d.Embedding[i] *= 10
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			emb := &indextest.BagEmbedder{}
			ix := open(t, dir, emb)
			ds := descs("s", "alpha", "beta", "gamma")
			if _, err := ix.Replace(t.Context(), "s", ds); err != nil {
				t.Fatal(err)
			}
			ix.Close()
			rewriteDoc(t, dir, "doc://beta", change)

			re := open(t, dir, emb)
			if re.Len("s") != 2 {
				t.Fatalf("loaded %d descriptors, want the 2 intact ones", re.Len("s"))
			}
			diff, err := re.Replace(t.Context(), "s", ds)
			if err != nil || diff.Embedded != 1 || re.Len("s") != 3 {
				t.Fatalf("next sync: %+v, %v; want beta embedded again", diff, err)
			}
			hits, err := re.Dense(t.Context(), "about beta", 3, index.Filter{})
			if err != nil || len(hits) != 3 {
				t.Fatalf("Dense = %v, %v", hits, err)
			}
			for _, h := range hits {
				if math.IsNaN(h.Score) {
					t.Errorf("%v scores NaN", h)
				}
			}
		})
	}
}

// collidingURIs returns two URIs of server s whose chromem-go file names
// (the first 4 bytes of the SHA-256 of the document ID) are the same.
func collidingURIs(t *testing.T, s string) (string, string) {
	t.Helper()
	seen := map[[4]byte]string{}
	for i := range 1 << 20 {
		u := fmt.Sprintf("doc://%d", i)
		h := sha256.Sum256([]byte(resource.Key{Server: s, URI: u}.String()))
		var k [4]byte
		copy(k[:], h[:4])
		if prev, ok := seen[k]; ok {
			return prev, u
		}
		seen[k] = u
	}
	t.Fatal("no collision found")
	return "", ""
}

// Two keys whose 32-bit file names collide are both stored, and both load
// back; a key without a collision keeps the ID (and file) older versions
// gave it, so their data directories load as they are.
func TestFileNameCollisionsKeepBothDocuments(t *testing.T) {
	a, b := collidingURIs(t, "s")
	dir := t.TempDir()
	emb := &indextest.BagEmbedder{}
	ix := open(t, dir, emb)
	ds := []resource.Descriptor{{Server: "s", URI: a, Name: "first"}, {Server: "s", URI: b, Name: "second"}, {Server: "s", URI: "doc://plain", Name: "plain"}}
	if _, err := ix.Replace(t.Context(), "s", ds); err != nil {
		t.Fatal(err)
	}
	ix.Close()
	re := open(t, dir, emb)
	if re.Len("s") != 3 {
		t.Fatalf("reopened: %d descriptors, want 3", re.Len("s"))
	}
	if diff, err := re.Replace(t.Context(), "s", ds); err != nil || diff.Embedded != 0 {
		t.Fatalf("sync after restart: %+v, %v; want nothing embedded again", diff, err)
	}
	h := sha256.Sum256([]byte(resource.Key{Server: "s", URI: "doc://plain"}.String()))
	if files, _ := filepath.Glob(filepath.Join(dir, "*", hex.EncodeToString(h[:4])+".gob.gz")); len(files) != 1 {
		t.Errorf("doc://plain is not stored under the file name of its key: %v", files)
	}
	// Deleting one of the pair leaves the other.
	if _, err := re.Replace(t.Context(), "s", ds[1:]); err != nil {
		t.Fatal(err)
	}
	re.Close()
	if again := open(t, dir, emb); again.Len("s") != 2 {
		t.Errorf("after deleting %s: %d descriptors load, want 2", a, again.Len("s"))
	}
}

// metaNamedURI is a URI of server "s" whose document ID (its key,
// "s\x00doc://zjwo5za") chromem-go would store in "00000000.gob.gz", the
// file that holds the collection's own name: the SHA-256 of the ID begins
// with four zero bytes (found by brute force, about 2^32 tries).
const metaNamedURI = "doc://zjwo5za"

// A key whose document would be written over the collection's own file is
// stored under another ID, in both collections: otherwise the next open
// found no collection name, moved the whole data directory aside and
// started empty.
func TestAnIDNamedLikeTheCollectionsOwnFileIsStoredElsewhere(t *testing.T) {
	k := resource.Key{Server: "s", URI: metaNamedURI}
	if h := sha256.Sum256([]byte(k.String())); hex.EncodeToString(h[:4]) != "00000000" {
		t.Fatalf("the key's file name is %x, not the metadata file's", h[:4])
	}
	dir := t.TempDir()
	emb := &indextest.BagEmbedder{}
	ix := open(t, dir, emb)
	ds := []resource.Descriptor{{Server: "s", URI: metaNamedURI, Name: "unlucky"}, {Server: "s", URI: "doc://plain", Name: "plain"}}
	if _, err := ix.Replace(t.Context(), "s", ds); err != nil {
		t.Fatal(err)
	}
	var cs []index.Content
	for _, d := range ds {
		cs = append(cs, index.Content{Key: d.Key(), Stamp: index.ContentStamp(d), Text: "the text of " + d.Name})
	}
	if _, err := ix.SetContents(t.Context(), cs...); err != nil {
		t.Fatal(err)
	}
	ix.Close()
	re := open(t, dir, emb)
	if n := re.Len("s"); n != 2 {
		t.Errorf("reopened: %d descriptors, want 2", n)
	}
	for _, d := range ds {
		if ok, _ := re.HasContent(d.Key()); !ok {
			t.Errorf("reopened: %s lost its text", d.URI)
		}
	}
	if aside, _ := filepath.Glob(dir + ".corrupt-*"); len(aside) > 0 {
		t.Errorf("the data directory was moved aside: %v", aside)
	}
}

// A content passage stored with a NaN is dropped at load; the resource
// keeps its descriptor and is read again by the next content pass.
func TestNaNContentPassageIsDroppedAtLoad(t *testing.T) {
	dir := t.TempDir()
	emb := &indextest.BagEmbedder{}
	ix := open(t, dir, emb)
	ds := descs("s", "alpha", "beta")
	if _, err := ix.Replace(t.Context(), "s", ds); err != nil {
		t.Fatal(err)
	}
	var cs []index.Content
	for _, d := range ds {
		cs = append(cs, index.Content{Key: d.Key(), Stamp: index.ContentStamp(d), Text: "the text of " + d.Name})
	}
	if _, err := ix.SetContents(t.Context(), cs...); err != nil {
		t.Fatal(err)
	}
	ix.Close()
	rewriteWhere(t, dir, func(d *chromem.Document) bool {
		_, content := d.Metadata["content_stamp"]
		return content && strings.Contains(d.ID, "doc://beta")
	}, func(d *chromem.Document) { d.Embedding[0] = float32(math.NaN()) })
	re := open(t, dir, emb)
	if ok, _ := re.HasContent(ds[1].Key()); ok {
		t.Error("beta's NaN passage was loaded")
	}
	if ok, _ := re.HasContent(ds[0].Key()); !ok || re.Len("s") != 2 {
		t.Errorf("alpha's content or the descriptors were lost: content %v, %d descriptors", ok, re.Len("s"))
	}
}

// One server's texts being embedded for the content index must not hold up
// another server's writes either.
func TestEmbeddingOneServersTextsDoesNotBlockAnother(t *testing.T) {
	g := &gateEmbedder{entered: make(chan struct{}, 1), gate: make(chan struct{})}
	ix := open(t, t.TempDir(), g)
	if _, err := ix.Replace(t.Context(), "big", descs("big", "manual")); err != nil {
		t.Fatal(err)
	}
	d, _ := ix.Get(resource.Key{Server: "big", URI: "doc://manual"})
	done := make(chan error, 1)
	go func() {
		_, err := ix.SetContents(t.Context(), index.Content{Key: d.Key(), Stamp: index.ContentStamp(d), Text: "a slow text to embed"})
		done <- err
	}()
	<-g.entered
	other := make(chan error, 1)
	go func() { _, err := ix.Replace(t.Context(), "small", descs("small", "intro")); other <- err }()
	select {
	case err := <-other:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		close(g.gate)
		t.Fatal("the small server's sync waited for the big server's texts to embed")
	}
	close(g.gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if ok, _ := ix.HasContent(d.Key()); !ok {
		t.Error("the big server's text was not indexed")
	}
}
