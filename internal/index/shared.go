package index

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/philippgille/chromem-go"

	"github.com/contextd/contextd/internal/resource"
)

// Sharing an index between replicas.
//
// A replica that mirrors a server publishes what its index stores for each
// key Options.OnChange names (Export), and every other replica installs
// those records as they are (Apply), vectors included, so a vector is
// computed once, by the replica that mirrors the server, and never again by
// another for the same embedder.

// A Record is the stored state of one descriptor: what Export returns and
// Apply installs.
type Record struct {
	Desc resource.Descriptor
	// Hash is the SHA-256 (hex) of the embedder's name and the descriptor's
	// embedded text (EmbeddingText): Upsert keeps Vec while it matches.
	Hash string
	// Vec is the descriptor's unit vector.
	Vec []float32
	// Content is the indexed text, nil when none was read for the current
	// version.
	Content *RecordContent
}

// A RecordContent is the indexed text of a resource (see SetContents).
type RecordContent struct {
	Stamp string    // ContentStamp of the descriptor it was read for
	Hash  string    // SHA-256 (hex) of the embedder's name and Text
	At    time.Time // when it was indexed, or last found unchanged
	Text  string    // the indexed text (at most MaxContentBytes); "" when read with nothing to index
	// Vecs are the passages' unit vectors, one per element of
	// Passages(Text), nil where not embedded yet.
	Vecs [][]float32
}

// changed reports k to Options.OnChange.
func (ix *Index) changed(k resource.Key) {
	if ix.onChg != nil {
		ix.onChg(k)
	}
}

// Export returns the stored state of the descriptor under k, and false when
// the index does not hold k (it was deleted). The record shares its vectors
// with the index: they must not be modified.
func (ix *Index) Export(ctx context.Context, k resource.Key) (Record, bool) {
	// wmu orders this after the write that reported k, and keeps the
	// content's text and its info from different writes.
	ix.wmu.Lock()
	defer ix.wmu.Unlock()
	ix.mu.RLock()
	e, ok := ix.docs[k]
	var c contentInfo
	if ok && e.content != nil {
		c = *e.content
		c.vecs = slices.Clone(c.vecs)
	}
	ix.mu.RUnlock()
	if !ok {
		return Record{}, false
	}
	r := Record{Desc: e.desc, Hash: e.hash, Vec: e.vec}
	if e.content != nil {
		rc := &RecordContent{Stamp: c.stamp, Hash: c.hash, At: c.at}
		if c.hasWords() {
			rc.Text = ix.contentText(ctx, k)
			rc.Vecs = c.vecs
		}
		r.Content = rc
	}
	return r, true
}

// Apply installs records as they are, without embedding anything: each
// replaces what the index holds under its key, content included (a record
// without content clears it). A record whose descriptor vector is not
// Embedder.Dim() finite components is skipped, as is content whose first
// passage has no usable vector (the descriptor ranks alone); passage
// vectors that are unusable or do not match Passages(Text) are left out.
// Apply does not count text against Options.ContentBytes: the replica that
// wrote the records did. It returns how many records it installed or
// changed. Errors: ErrClosed, ctx's, or the store's.
func (ix *Index) Apply(ctx context.Context, recs ...Record) (int, error) {
	servers := make([]string, len(recs))
	for i, r := range recs {
		servers[i] = r.Desc.Server
	}
	defer ix.lockServers(servers...)()
	ix.wmu.Lock()
	defer ix.wmu.Unlock()
	dim := ix.emb.Dim()
	n := 0
	for _, r := range recs {
		if ix.isClosed() {
			return n, ErrClosed
		}
		if err := ctx.Err(); err != nil {
			return n, err
		}
		d := r.Desc
		k := d.Key()
		if d.Server == "" || d.URI == "" || r.Hash == "" || !validVector(r.Vec, dim) {
			ix.log.Warn("skipping a shared descriptor record that is not usable", "server", d.Server, "uri", d.URI)
			continue
		}
		info, text := ix.recordContent(k, r.Content)
		ix.mu.RLock()
		old, existed := ix.docs[k]
		ix.mu.RUnlock()
		if existed && old.hash == r.Hash && equalDescriptor(old.desc, d) && sameContent(old.content, info) {
			continue
		}
		id := old.id
		if !existed {
			id = ix.docID(k)
		}
		doc := chromem.Document{ID: id, Metadata: toMetadata(d, r.Hash), Embedding: r.Vec}
		if err := ix.coll.AddDocument(ctx, doc); err != nil {
			return n, fmt.Errorf("index: store %s %q: %v", d.Server, d.URI, err)
		}
		if existed && old.content != nil {
			if err := ix.ccoll.Delete(ctx, nil, nil, ix.releasePassages(k, 0)...); err != nil {
				return n, fmt.Errorf("index: delete content of %s %q: %v", d.Server, d.URI, err)
			}
		}
		if info.hasWords() {
			c := Content{Key: k, Stamp: info.stamp}
			if err := ix.ccoll.AddDocument(ctx, contentDoc(ix.passageDocID(k, 0), c, text, info.hash, info.vecs[0], info.at)); err != nil {
				return n, fmt.Errorf("index: store content of %s %q: %v", d.Server, d.URI, err)
			}
			for i, v := range info.vecs[1:] {
				if v == nil {
					continue
				}
				j := passageJob{k: k, i: i + 1, span: info.spans[i+1], stamp: info.stamp, hash: info.hash, vec: v}
				if err := ix.ccoll.AddDocument(ctx, passageDoc(ix.passageDocID(k, i+1), j)); err != nil {
					return n, fmt.Errorf("index: store passage %d of %s %q: %v", i+1, d.Server, d.URI, err)
				}
			}
		}
		ix.mu.Lock()
		ix.gen.Add(1)
		if !existed {
			ix.count[d.Server]++
		}
		if _, ok := ix.pending[k]; ok {
			delete(ix.pending, k)
			if ix.pcount[k.Server]--; ix.pcount[k.Server] == 0 {
				delete(ix.pcount, k.Server)
			}
		}
		ix.files[docFile(id)] = k
		ix.docs[k] = entry{desc: d, id: id, hash: r.Hash, vec: r.Vec, content: info}
		ix.mu.Unlock()
		ix.lexUpsert(lexDoc(d, text))
		ix.words.set(k, text)
		ix.changed(k)
		n++
	}
	return n, nil
}

// recordContent turns a record's content into what an entry holds, and the
// text to index; nil when there is none or its first passage has no usable
// vector.
func (ix *Index) recordContent(k resource.Key, rc *RecordContent) (*contentInfo, string) {
	if rc == nil {
		return nil, ""
	}
	text := cutBytes(rc.Text, MaxContentBytes)
	info := &contentInfo{stamp: rc.Stamp, at: rc.At, hash: rc.Hash, size: len(text)}
	if text == "" {
		return info, ""
	}
	spans := Passages(text)
	if len(spans) == 0 {
		return info, ""
	}
	if len(rc.Vecs) != len(spans) || !validVector(rc.Vecs[0], ix.emb.Dim()) {
		ix.log.Warn("skipping shared content whose passage vectors do not match its text", "server", k.Server, "uri", k.URI)
		return nil, ""
	}
	info.spans = spans
	info.vecs = make([][]float32, len(spans))
	for i, v := range rc.Vecs {
		if validVector(v, ix.emb.Dim()) {
			info.vecs[i] = v
		}
	}
	return info, text
}

// sameContent reports whether a and b are the same indexed content, with
// the same passages embedded.
func sameContent(a, b *contentInfo) bool {
	if a == nil || b == nil {
		return a == b
	}
	if a.stamp != b.stamp || a.hash != b.hash || !a.at.Equal(b.at) || len(a.vecs) != len(b.vecs) {
		return false
	}
	for i := range a.vecs {
		if (a.vecs[i] == nil) != (b.vecs[i] == nil) {
			return false
		}
	}
	return true
}
