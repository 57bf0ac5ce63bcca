package glove

import (
	"context"
	_ "embed" // for the word-vector table
	"fmt"
	"hash/fnv"
	"math"
	"strings"
	"sync"

	"github.com/contextd/contextd/internal/embed/glove/internal/vecfile"
)

// Name is the value of [Embedder.Name]. The suffix is bumped whenever the
// vectors produced for some text change (data, tokenisation, weighting,
// fallback), so that stored indexes are re-embedded. TestGolden fails when
// the output changes, as a reminder.
const Name = "glove-6b-100d-sif-v1"

// Dim is the value of [Embedder.Dim].
const Dim = 100

// SIFParam is the a in the SIF weight a/(a+p(w)). Arora et al. report that
// a in [1e-4, 1e-3] works well across tasks; the larger end down-weights
// mid-frequency words less, which suits the short tool and resource
// descriptions we embed, where most words carry meaning.
const SIFParam = 1e-3

//go:embed data/glove-6b-100d.vec
var data string

// load decodes the embedded table once, on first use.
var load = sync.OnceValues(func() (*model, error) {
	return newModel(data)
})

// An Embedder embeds text as the SIF-weighted mean of GloVe word vectors.
// It is safe for concurrent use. The zero value is ready to use; [New] only
// reports a load error early.
type Embedder struct {
	m *model
}

// New returns an Embedder, loading the embedded word vectors on the first
// call in the process (20–40 ms; later calls are free). An error means the
// embedded data is corrupt, which is a build problem, not a runtime one.
func New() (*Embedder, error) {
	m, err := load()
	if err != nil {
		return nil, err
	}
	return &Embedder{m: m}, nil
}

// Name returns [Name].
func (*Embedder) Name() string { return Name }

// Dim returns [Dim].
func (*Embedder) Dim() int { return Dim }

// Embed returns the embedding of text, a unit vector of length [Dim] with
// no NaN or Inf, and the same vector every time for the same text. It returns
// an error only if ctx is done or the embedded data is corrupt.
//
// # Method
//
// The text is split into runs of letters, marks and digits; everything else
// separates words. Each run is lower-cased and looked up whole ("GitHub" →
// github); if it is not in the vocabulary it is split at case changes and
// letter/digit boundaries ("getUserProfile" → get user profile, "HTTPServer"
// → http server) and each part is looked up. Unknown words are skipped.
//
// The vector is the sum of the known words' GloVe vectors, each weighted by
// a/(a+p(w)) with a = [SIFParam] (Arora, Liang and Ma 2017, "A Simple but
// Tough-to-Beat Baseline for Sentence Embeddings"), scaled to unit length.
// The paper's weighted mean divides by the word count; that does not
// change the direction, so it is left out.
//
// The paper then removes the projection on the first principal component of
// the embeddings of the corpus at hand. That would make a text's vector
// depend on what else is indexed, so instead the projection on a fixed
// direction u is removed: u is the expected weighted word vector of text
// drawn from the vocabulary's Zipf distribution, Σ p(w)·a/(a+p(w))·v(w) over
// all words, normalised. The paper's principal component is taken without
// centring, so it is close to the mean of the sentence embeddings, and u is
// a corpus-free estimate of that mean's direction. Removing it spreads
// cosines out: on a dozen tool-like descriptions, unrelated pairs fell from
// 0.1–0.6 to about −0.15–0.3 while paraphrases stayed at 0.6–0.9. u is
// computed from the embedded data at load time, so it is as fixed as the
// data.
//
// p(w) is estimated from the word's frequency rank r by Zipf's law,
// p = 1/(r·H(V)), where V is the size of the source vocabulary (341,479
// words) and H(V) ≈ ln V + γ its harmonic number, so that the p over the
// vocabulary sum to 1. The data ships ranks, not counts, and for the ranks
// that matter to the weight (the top few thousand, where p is near a) Zipf
// is a good fit for English text. This gives "the" (rank 1) a weight of
// 0.013, a rank-100 word 0.57 and a rank-10,000 word 0.99.
//
// A text with no known word (empty, only punctuation or numbers, only
// unknown words) gets a pseudo-random unit vector seeded by the 64-bit FNV-1a
// hash of its normalised form: its lower-cased words split as above, joined
// by single spaces. Texts that normalise alike ("Kubectl" and "kubectl!")
// thus get the same vector, and all texts without any letter or digit share
// one vector.
func (e *Embedder) Embed(ctx context.Context, text string) ([]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m := e.m
	if m == nil {
		var err error
		if m, err = load(); err != nil {
			return nil, err
		}
	}
	var acc [Dim]float64
	if !m.sum(&acc, text) {
		return fallback(text), nil
	}
	m.removeCommon(&acc)
	v, ok := unit(&acc)
	if !ok {
		// A sum of real word vectors that cancels to zero (or overflows)
		// is practically impossible, but the contract is a unit vector.
		return fallback(text), nil
	}
	return v, nil
}

// A model is the decoded table plus per-word coefficients. It is immutable.
type model struct {
	t *vecfile.Table
	// coef[i] is the SIF weight of word i times its quantisation scale, so
	// that word i contributes coef[i]·codes[i] to the sum.
	coef []float64
	// common is the unit direction removed from every sum; see
	// [Embedder.Embed].
	common [Dim]float64
}

func newModel(data string) (*model, error) {
	t, err := vecfile.Decode(data)
	if err != nil {
		return nil, fmt.Errorf("glove: embedded data: %w", err)
	}
	if t.Dim != Dim {
		return nil, fmt.Errorf("glove: embedded data has dim %d, want %d", t.Dim, Dim)
	}
	if t.Vocab < len(t.Words) || t.Vocab == 0 {
		return nil, fmt.Errorf("glove: embedded data has vocabulary size %d for %d words", t.Vocab, len(t.Words))
	}
	m := &model{t: t, coef: make([]float64, len(t.Words))}
	h := harmonic(t.Vocab)
	for i, r := range t.Ranks {
		p := 1 / (float64(r) * h)
		m.coef[i] = SIFParam / (SIFParam + p) * float64(t.Scale(i))
		// Each word's expected contribution to a sum is p times its
		// weighted vector.
		m.add(&m.common, i, p)
	}
	if !normalize(&m.common) {
		return nil, fmt.Errorf("glove: embedded data has no common direction")
	}
	return m, nil
}

// harmonic approximates the n-th harmonic number (error below 1/(12n²)).
func harmonic(n int) float64 {
	const eulerGamma = 0.57721566490153286
	x := float64(n)
	return math.Log(x) + eulerGamma + 1/(2*x)
}

// sum adds the weighted vectors of the known words of text to acc and
// reports whether there was any.
func (m *model) sum(acc *[Dim]float64, text string) bool {
	var buf [64]byte
	found := false
	for run := range runs(text) {
		b := appendLower(buf[:0], run)
		if i, ok := m.t.Lookup(string(b)); ok {
			m.add(acc, i, 1)
			found = true
			continue
		}
		for p := range parts(run) {
			if len(p) == len(run) {
				break // a single part: already looked up
			}
			b = appendLower(buf[:0], p)
			if i, ok := m.t.Lookup(string(b)); ok {
				m.add(acc, i, 1)
				found = true
			}
		}
	}
	return found
}

// add adds f times the weighted vector of word i to acc.
func (m *model) add(acc *[Dim]float64, i int, f float64) {
	c, codes := f*m.coef[i], m.t.Codes(i)
	for d := range acc {
		// The explicit conversion rounds the product, which stops the
		// compiler fusing it into an FMA on some targets and keeps results
		// identical across GOARCH/GOAMD64 settings.
		acc[d] += float64(c * float64(int8(codes[d])))
	}
}

// removeCommon removes from acc its projection on m.common.
func (m *model) removeCommon(acc *[Dim]float64) {
	var dot float64
	for d, x := range acc {
		dot += float64(x * m.common[d])
	}
	for d := range acc {
		acc[d] -= float64(dot * m.common[d])
	}
}

// normalize scales v to unit L2 norm in place and reports whether v had a
// usable norm; if not, v is unchanged.
func normalize(v *[Dim]float64) bool {
	var ss float64
	for _, x := range v {
		ss += float64(x * x)
	}
	norm := math.Sqrt(ss)
	if norm == 0 || math.IsInf(norm, 0) || math.IsNaN(norm) {
		return false
	}
	for d := range v {
		v[d] /= norm
	}
	return true
}

// unit returns acc scaled to unit L2 norm as float32s, or false if acc has
// no usable norm.
func unit(acc *[Dim]float64) ([]float32, bool) {
	if !normalize(acc) {
		return nil, false
	}
	v := make([]float32, Dim)
	for d, x := range acc {
		v[d] = float32(x)
	}
	return v, true
}

// fallback returns the vector for a text without known words: Dim uniform
// values in [-1, 1) from a splitmix64 stream seeded by the FNV-1a hash of
// the normalised text, scaled to unit length.
func fallback(text string) []float32 {
	h := fnv.New64a()
	h.Write([]byte(strings.Join(tokens(text), " ")))
	state := h.Sum64()
	var acc [Dim]float64
	for d := range acc {
		state += 0x9e3779b97f4a7c15
		z := state
		z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
		z = (z ^ z>>27) * 0x94d049bb133111eb
		z ^= z >> 31
		acc[d] = float64(z>>11)/(1<<53)*2 - 1
	}
	v, ok := unit(&acc)
	if !ok {
		// 100 independent uniforms are all exactly zero with probability
		// 2^-5300; keep the contract anyway.
		v = make([]float32, Dim)
		v[0] = 1
	}
	return v
}
