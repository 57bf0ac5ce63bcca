package index

import (
	"context"
	"fmt"

	"github.com/contextd/contextd/internal/resource"
)

// DefaultTextCache is how many embedded texts of descriptors scored by
// Score (and never indexed) the index remembers, oldest evicted first.
const DefaultTextCache = 1024

// Score returns the scores Dense and Lexical would give d for query if d
// were indexed, without indexing it: dense is the cosine similarity in
// [−1, 1] of the query's embedding and denseText's (EmbeddingText of a
// descriptor, or any text standing for it; its vector is cached by text),
// lex the BM25F score of d's fields with d counted in the collection
// statistics (lexical.Index.ScoreDoc). contextd scores resources expanded
// from templates with it, so they rank alongside the listed ones.
//
// Errors: ErrClosed, or the embedder's (wrapped).
func (ix *Index) Score(ctx context.Context, query string, d resource.Descriptor, denseText string) (dense, lex float64, err error) {
	if ix.isClosed() {
		return 0, 0, ErrClosed
	}
	qv, err := ix.qvecs.embed(ctx, ix.emb, query)
	if err != nil {
		return 0, 0, fmt.Errorf("index: embed query: %w", err)
	}
	dv, err := ix.texts.embed(ctx, ix.emb, denseText)
	if err != nil {
		return 0, 0, fmt.Errorf("index: embed %q: %w", d.URI, err)
	}
	if len(qv) != len(dv) {
		return 0, 0, fmt.Errorf("index: embedder returned vectors of %d and %d dimensions", len(qv), len(dv))
	}
	// Both vectors are unit length, so the dot product is the cosine, and
	// dot computes it as Dense does.
	return float64(dot(qv, dv)), ix.lex.ScoreDoc(query, lexDoc(d, "")), nil
}
