// Package lexical ranks MCP resource descriptors for a query by the words
// they share, with field-weighted BM25 (BM25F) over an in-memory inverted
// index.
//
// It is the lexical half of contextd's hybrid ranking: dense embeddings
// find paraphrases, and this package finds the exact identifiers, file names
// and jargon ("getUserProfile", "HTTPServer", "utf8") that embeddings blur.
// The two rankings are combined with reciprocal rank fusion (package
// internal/rank).
//
// # Usage
//
//	x := lexical.New(nil) // BM25F with the default k1, b and field weights
//	x.Upsert(lexical.Doc{ID: "docs|file:///arch.md", Name: "architecture.md", ...})
//	hits := x.Search("how is the server structured", 10, nil)
//
// # Analysis
//
// [Tokenize] turns both documents and queries into terms: Unicode words,
// identifiers split at camelCase, snake_case, kebab-case, dots and slashes,
// CJK text as character bigrams, lowercase, English stop words removed,
// plurals stemmed with the S-stemmer ([Stem]). URIs are percent-decoded
// first and then tokenised like any text, so a URI's path words are
// searchable; the URI is never interpreted.
//
// # Scoring
//
// Each descriptor field (name, title, description, URI, MIME type) keeps its
// own term frequencies and length statistics. At query time they are
// combined as in BM25F (Robertson & Zaragoza 2009): each field's frequency
// is length-normalised against that field's average length, weighted
// ([FieldWeights]), and summed before BM25's saturation is applied. See
// [Index.Search] for the exact formula.
//
// # Concurrency
//
// An [Index] is safe for concurrent use; it is guarded by a sync.RWMutex so
// searches run in parallel. Results are deterministic: ties are broken by
// ID, and scores do not depend on map iteration order or on the order in
// which documents were added or deleted.
package lexical
