package use

import (
	"context"
	_ "embed" // for the model data
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
)

// Name is the value of [Embedder.Name]: the model, the port's version and
// the storage of the weights (float16). It changes whenever the vectors
// produced for some text change (data, tokenisation, the operations
// computed), so that stored indexes are re-embedded. It does not change
// with the kernel the CPU selects (see the package documentation's
// Speed): the kernels differ only in float32 rounding, and each keeps a
// cosine of at least 0.9999993 to the reference.
const Name = "use-lite-v1-f16"

// Dim is the value of [Embedder.Dim].
const Dim = modelDim

// MaxTokens is how many tokens of a text the model reads: the graph drops
// every token at a position of 128 or more (ClipToMaxLength), so a text's
// embedding depends only on its first 128 pieces, roughly its first 80 to
// 100 English words.
const MaxTokens = 128

//go:embed data/use-lite-f16.bin
var data string

// load decodes the embedded model once, on first use.
var load = sync.OnceValues(func() (*model, error) {
	m, err := newModel(data)
	if err != nil {
		return nil, fmt.Errorf("use: embedded data: %w", err)
	}
	return m, nil
})

// An Embedder embeds text with Universal Sentence Encoder lite. It is safe
// for concurrent use. The zero value is ready to use; [New] only reports a
// load error early.
type Embedder struct {
	m *model
}

// New returns an Embedder, decoding the embedded weights on the first call
// in the process (tens of milliseconds; later calls are free). An error
// means the embedded data is corrupt, which is a build problem, not a
// runtime one.
func New() (*Embedder, error) {
	m, err := load()
	if err != nil {
		return nil, err
	}
	return &Embedder{m: m}, nil
}

func (e *Embedder) model() (*model, error) {
	if e.m != nil {
		return e.m, nil
	}
	return load()
}

// Name returns [Name].
func (*Embedder) Name() string { return Name }

// Dim returns [Dim].
func (*Embedder) Dim() int { return Dim }

// Embed returns the embedding of text: a unit vector of length [Dim] with no
// NaN or Inf, the same every time for the same text. It returns an error only
// if ctx is done or the embedded data is corrupt.
//
// Only the first [MaxTokens] tokens of text count, but the whole text is
// tokenized, as the reference does: the best segmentation of a prefix can
// depend on what follows, and a run of unknown symbols of any length is one
// token. The cost is linear in the text's length after the first 128
// tokens. The empty string (the only text with no tokens) gets the model's
// output for an empty input: the mean over no positions is zero, leaving
// tanh of the output layer's bias, normalised. (The Node reference throws
// on it.)
func (e *Embedder) Embed(ctx context.Context, text string) ([]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m, err := e.model()
	if err != nil {
		return nil, err
	}
	out := make([]float32, Dim)
	m.embed([]string{text}, [][]float32{out}, batchTokens, runtime.GOMAXPROCS(0))
	return out, nil
}

// batchTokens bounds how many tokens [Embedder.EmbedBatch] runs through
// the network at once: enough to amortise streaming the weights from
// memory, small enough that the activations stay in cache (about 10 MB).
const batchTokens = 1024

// EmbedBatch returns the embeddings of texts, each exactly as [Embedder.Embed]
// returns it. It is faster per text than calling Embed in a loop: texts are
// run through the network together, so each weight is read once for
// many tokens, and the batch is shared among GOMAXPROCS goroutines. It
// checks ctx between sub-batches and returns ctx's error if it is done.
func (e *Embedder) EmbedBatch(ctx context.Context, texts []string) ([][]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m, err := e.model()
	if err != nil {
		return nil, err
	}
	out := make([][]float32, len(texts))
	flat := make([]float32, len(texts)*Dim)
	for i := range out {
		out[i] = flat[i*Dim : (i+1)*Dim : (i+1)*Dim]
	}
	procs := runtime.GOMAXPROCS(0)
	workers := min(procs, len(texts))
	if workers <= 1 {
		return out, m.embedChunks(ctx, texts, out, batchTokens, procs)
	}
	if groups := balance(texts, workers); groups != nil {
		// A few texts (a task and its clauses) in as many groups as
		// workers, of about the same length: each group is one sub-batch
		// run on one core, so the weights are read once per group, and
		// every step (attention, layer norms, the products) runs on all
		// cores at once, with no hand-off between them.
		errs := make([]error, len(groups))
		var wg sync.WaitGroup
		for g, idx := range groups {
			gt := make([]string, len(idx))
			gout := make([][]float32, len(idx))
			for j, i := range idx {
				gt[j], gout[j] = texts[i], out[i]
			}
			run := func() { errs[g] = m.embedChunks(ctx, gt, gout, batchTokens, 1) }
			if g == len(groups)-1 {
				run()
			} else {
				wg.Go(run)
			}
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	if len(texts) < smallBatch*workers {
		// Few texts of unequal length (a long task and a short
		// clause): one stream of sub-batches, each product split across
		// every core, so the weights are read once per sub-batch rather
		// than once per text.
		return out, m.embedChunks(ctx, texts, out, batchTokens, procs)
	}
	// Each worker takes the next few texts until none are left, so that
	// a worker given longer texts does not hold up the others.
	grab := max(1, min(maxGrab, len(texts)/(4*workers)))
	var next atomic.Int64
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for {
				lo := int(next.Add(int64(grab))) - grab
				if lo >= len(texts) {
					return
				}
				hi := min(len(texts), lo+grab)
				if err := m.embedChunks(ctx, texts[lo:hi], out[lo:hi], batchTokens, 1); err != nil {
					errs[w] = err
					return
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// balanceBytes bounds the texts [balance] groups, in bytes: about
// batchTokens tokens (English runs about 4 to 5 bytes a token), so that
// each group is one sub-batch.
const balanceBytes = 4 * batchTokens

// balance splits a few texts, of at most balanceBytes in all, into n
// groups (indices into texts) of about the same length in bytes, by
// longest first into the lightest group, and returns them; or nil when
// the texts are too many, too long, or cannot be split so that the
// heaviest group holds at most balanceSlack of an even share (one long
// text and a short one), where splitting each product across the cores
// is faster.
func balance(texts []string, n int) [][]int {
	total := 0
	for _, t := range texts {
		total += len(t)
	}
	if n < 2 || len(texts) < n || total > balanceBytes {
		return nil
	}
	order := make([]int, len(texts))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return len(texts[b]) - len(texts[a]) })
	groups := make([][]int, n)
	load := make([]int, n)
	for _, i := range order {
		g := 0
		for j := range load {
			if load[j] < load[g] {
				g = j
			}
		}
		groups[g] = append(groups[g], i)
		load[g] += len(texts[i])
	}
	if float64(slices.Max(load)*n) > balanceSlack*float64(total) {
		return nil
	}
	return groups
}

// balanceSlack is how much heavier than an even share [balance] lets
// its heaviest group be: a group on one core against a product split
// across them all, which costs about a third more CPU time in hand-offs
// and halves the wall time at best.
const balanceSlack = 1.3

// smallBatch is the fewest texts per worker for which [Embedder.EmbedBatch]
// hands texts to workers: below it each worker would take one text at a
// time, reading the weights once per text.
const smallBatch = 4

// maxGrab bounds how many texts an [Embedder.EmbedBatch] worker takes at a
// time: 16 tool descriptions are about 1,000 tokens, one full sub-batch.
const maxGrab = 16

// embedChunks embeds texts into out in sub-batches of at most limit tokens
// (or one text), checking ctx before each, with the matrix products of
// each split across par goroutines.
func (m *model) embedChunks(ctx context.Context, texts []string, out [][]float32, limit, par int) error {
	for len(texts) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := m.embed(texts, out, limit, par)
		texts, out = texts[n:], out[n:]
	}
	return nil
}

// maxPooledSymbols bounds the tokenizer buffers kept for reuse.
const maxPooledSymbols = 1 << 16

// embed embeds a prefix of texts, at least one text and as many more as fit
// in limit tokens, into out, and returns how many it embedded. Large
// matrix products are split across par goroutines.
func (m *model) embed(texts []string, out [][]float32, limit, par int) int {
	s := m.scratch.Get().(*scratch)
	s.split.par = par
	defer func() {
		// The tokenizer's buffers grow with the longest text (16 bytes
		// a symbol); do not keep a huge text's alive in the pool.
		if cap(s.tok.symbols) > maxPooledSymbols {
			s.tok = tokScratch{}
		}
		m.scratch.Put(s)
	}()
	s.ids = s.ids[:0]
	s.bounds = s.bounds[:0]
	total := 0
	k := 0
	for ; k < len(texts); k++ {
		ids := m.tok.encode(&s.tok, texts[k])
		ids = ids[:min(len(ids), MaxTokens)]
		if k > 0 && total+len(ids) > limit {
			break
		}
		total += len(ids)
		s.ids = append(s.ids, ids...)
		s.bounds = append(s.bounds, len(s.ids))
	}
	s.seqs = s.seqs[:0]
	start := 0
	for _, end := range s.bounds {
		s.seqs = append(s.seqs, s.ids[start:end:end])
		start = end
	}
	seqs := s.seqs
	ok := m.forward(s, seqs, out[:k])
	for i, good := range ok {
		if !good {
			// Not reachable with finite weights (the output is a
			// normalised tanh), but the contract is a unit vector.
			copy(out[i], m.unitTanhB)
		}
	}
	return k
}
