// Package embed defines how contextd turns text into vectors for semantic
// search.
//
// The index stores, next to each collection, the [Embedder.Name] that built
// it; when the configured embedder has a different name, everything is
// re-embedded, because vectors from different embedders are not comparable.
//
// # Implementations
//
// Package [github.com/contextd/contextd/internal/embed/use] is the default:
// Universal Sentence Encoder lite, ported to Go with its weights compiled
// in, so contextd works offline and needs no model server. Package
// [github.com/contextd/contextd/internal/embed/glove] is the other built-in:
// GloVe word vectors, weak on paraphrase and word order but a few
// microseconds per short text. Package
// [github.com/contextd/contextd/internal/embed/remote] calls an embedding
// server the user runs (an OpenAI-compatible API or Ollama).
//
// This package holds only the interface, so that importing it does not link
// any model data.
package embed

import "context"

// An Embedder maps text to a dense vector. Implementations must be safe for
// concurrent use.
//
// The method value e.Embed is passed directly to chromem-go as its
// EmbeddingFunc, which requires normalised vectors and divides by the norm
// without checking it for zero; hence the contract on Embed.
type Embedder interface {
	// Name is a stable identifier, e.g. "glove-6b-100d-sif-v1". It is
	// stored with the index, so it must change whenever the vectors
	// produced for some text change.
	Name() string
	// Dim is the vector length.
	Dim() int
	// Embed returns a vector of length Dim() with unit L2 norm and no NaN
	// or Inf, for any text, including the empty string.
	Embed(ctx context.Context, text string) ([]float32, error)
}

// A Batcher is an Embedder that embeds many texts at once more cheaply than
// one at a time (a model run over a batch, one HTTP request for many
// inputs). The index uses EmbedBatch when its embedder has it.
type Batcher interface {
	Embedder
	// EmbedBatch returns one vector per text, in order, each as Embed
	// would return it; on error, none.
	EmbedBatch(ctx context.Context, texts []string) ([][]float32, error)
}
