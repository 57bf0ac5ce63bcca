// Package indextest provides a deterministic embedder for tests of packages
// that need an index but not a real language model.
package indextest

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"unicode"
)

// BagEmbedder hashes the words of a text into Dim buckets and normalises the
// result to unit length. Calls counts Embed calls.
type BagEmbedder struct{ Calls atomic.Int64 }

// Name implements index.Embedder.
func (*BagEmbedder) Name() string { return "bag-test" }

// Dim implements index.Embedder.
func (*BagEmbedder) Dim() int { return 64 }

// Embed implements index.Embedder: a unit vector, never the zero vector.
func (e *BagEmbedder) Embed(_ context.Context, text string) ([]float32, error) {
	e.Calls.Add(1)
	v := make([]float32, 64)
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	for _, w := range words {
		h := fnv.New32a()
		h.Write([]byte(w))
		v[h.Sum32()%63]++
	}
	v[63] = 0.01
	var n float64
	for _, x := range v {
		n += float64(x * x)
	}
	for i := range v {
		v[i] = float32(float64(v[i]) / math.Sqrt(n))
	}
	return v, nil
}

// RandomEmbedder maps each text to a fixed pseudo-random unit vector of
// length Dims (Gaussian coordinates, normalised): the shape of a sentence
// encoder's output without its cost, for benchmarks.
type RandomEmbedder struct{ Dims int }

// Name implements index.Embedder.
func (e RandomEmbedder) Name() string { return fmt.Sprintf("random-%d", e.Dims) }

// Dim implements index.Embedder.
func (e RandomEmbedder) Dim() int { return e.Dims }

// Embed implements index.Embedder.
func (e RandomEmbedder) Embed(_ context.Context, text string) ([]float32, error) {
	h := fnv.New64a()
	h.Write([]byte(text))
	r := rand.New(rand.NewPCG(h.Sum64(), 1))
	v := make([]float32, e.Dims)
	var n float64
	for i := range v {
		v[i] = float32(r.NormFloat64())
		n += float64(v[i]) * float64(v[i])
	}
	for i := range v {
		v[i] /= float32(math.Sqrt(n))
	}
	return v, nil
}
