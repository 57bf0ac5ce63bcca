package use

import (
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/contextd/contextd/internal/embed/use/internal/usefile"
)

// Dimensions of the model (see the package documentation).
const (
	embedDim = 256  // token embedding, timing signal and layer 0 attention width
	modelDim = 512  // residual stream from layer 0's output on; the output
	ffnDim   = 1536 // feed-forward hidden width
	numHeads = 4    // attention heads in both layers
)

// Numeric constants of the graph, which the converter checks against
// model.json.
var (
	lnEpsilon = float64(float32(1e-6))  // layer_norm/Cast/x
	l2Epsilon = float64(float32(1e-12)) // l2_normalize/Maximum/y
)

// A layer is one transformer layer's weights. Matrices are [out, in],
// row-major: the transpose of the graph's [in, out] kernels.
type layer struct {
	in         int       // input width: embedDim (layer 0) or modelDim (layer 1)
	ln1g, ln1b []float32 // [in] layer norm before attention
	qkvW       matrix    // [3·in, in]: queries, keys, values
	qkvB       []float32 // [3·in]
	outW       matrix    // [modelDim, in]: attention output
	outB       []float32 // [modelDim]
	resW       matrix    // [modelDim, in]: layer 0 only, projects the residual to modelDim
	resB       []float32 // [modelDim]
	ln2g, ln2b []float32 // [modelDim] layer norm before the feed-forward block
	ffn1W      matrix    // [ffnDim, modelDim]
	ffn1B      []float32 // [ffnDim]
	ffn2W      matrix    // [modelDim, ffnDim]
	ffn2B      []float32 // [modelDim]
}

// A model is the decoded data file. It is immutable.
type model struct {
	tok        *tokenizer
	emb        []float32 // [vocabulary size, embedDim]
	timing     []float32 // [embedDim/2] inverse timescales of the timing signal
	signal     []float32 // [MaxTokens, embedDim] the timing signal at each position
	layers     [2]layer
	tanhW      matrix    // [modelDim, modelDim]
	tanhB      []float32 // [modelDim]
	scratch    sync.Pool // of *scratch
	unitTanhB  []float32 // the embedding of a text with no tokens
	dtypeLabel string    // storage of the matrices in the data file: "f16" or "f32"
	qOnce      sync.Once // of quantize
}

// quantize gives the layers' matrices their int16 copies for integer
// products (14 MB; not the output layer's, which runs once per text),
// once. newModel calls it when integer products are on; until a matrix
// has its copy, [linear] uses the float kernel. It must not run while
// the model embeds.
func (m *model) quantize() {
	m.qOnce.Do(func() {
		for l := range m.layers {
			L := &m.layers[l]
			for _, w := range []struct {
				m   *matrix
				out int
				in  int
			}{
				{&L.qkvW, 3 * L.in, L.in},
				{&L.outW, modelDim, L.in},
				{&L.resW, modelDim, L.in},
				{&L.ffn1W, ffnDim, modelDim},
				{&L.ffn2W, modelDim, ffnDim},
			} {
				if w.m.f32 != nil {
					if q, ok := quantizeWeights(w.m.f32, w.out, w.in); ok {
						w.m.q = q
					}
				}
			}
		}
	})
}

func newModel(data string) (*model, error) {
	f, err := usefile.Decode(data)
	if err != nil {
		return nil, err
	}
	m := &model{}
	var errs []error
	get := func(name string, shape ...int) []float32 {
		t := f.Tensor(name)
		if t == nil {
			errs = append(errs, fmt.Errorf("no tensor %q", name))
			return nil
		}
		if !slices.Equal(t.Shape, shape) {
			errs = append(errs, fmt.Errorf("tensor %q has shape %v, want %v", name, t.Shape, shape))
			return nil
		}
		if len(shape) == 2 {
			switch t.DType {
			case usefile.F16:
				m.dtypeLabel = "f16"
			case usefile.F32:
				m.dtypeLabel = "f32"
			}
		}
		return t.Data
	}
	// A float16 copy of each matrix the data file stores in float16, for
	// the assembly kernel (rows of a multiple of 8 elements).
	getMatrix := func(name string, out, in int) matrix {
		w := matrix{f32: get(name, out, in)}
		if t := f.Tensor(name); w.f32 != nil && haveF16 && t.DType == usefile.F16 && in%8 == 0 {
			w.f16 = make([]uint16, len(w.f32))
			for i := range w.f16 {
				w.f16[i] = uint16(t.Raw[2*i]) | uint16(t.Raw[2*i+1])<<8
			}
		}
		return w
	}

	m.emb = get("embeddings", len(f.Pieces), embedDim)
	m.timing = get("timing", embedDim/2)
	for l := range m.layers {
		in := embedDim
		if l == 1 {
			in = modelDim
		}
		p := fmt.Sprintf("l%d.", l)
		m.layers[l] = layer{
			in:    in,
			ln1g:  get(p+"ln1.g", in),
			ln1b:  get(p+"ln1.b", in),
			qkvW:  getMatrix(p+"qkv.w", 3*in, in),
			qkvB:  get(p+"qkv.b", 3*in),
			outW:  getMatrix(p+"out.w", modelDim, in),
			outB:  get(p+"out.b", modelDim),
			ln2g:  get(p+"ln2.g", modelDim),
			ln2b:  get(p+"ln2.b", modelDim),
			ffn1W: getMatrix(p+"ffn1.w", ffnDim, modelDim),
			ffn1B: get(p+"ffn1.b", ffnDim),
			ffn2W: getMatrix(p+"ffn2.w", modelDim, ffnDim),
			ffn2B: get(p+"ffn2.b", modelDim),
		}
		if l == 0 {
			m.layers[l].resW = getMatrix(p+"res.w", modelDim, in)
			m.layers[l].resB = get(p+"res.b", modelDim)
		}
	}
	m.tanhW = getMatrix("tanh.w", modelDim, modelDim)
	m.tanhB = get("tanh.b", modelDim)
	if len(errs) > 0 {
		return nil, fmt.Errorf("data file: %v", errs)
	}
	if m.tok, err = newTokenizer(f.Pieces, f.Scores); err != nil {
		return nil, err
	}
	if intKernel {
		m.quantize()
	}
	m.scratch.New = func() any { return new(scratch) }

	// The timing signal at position pos: sin(pos·f_k) for the first half
	// of the row, cos(pos·f_k) for the second, rounded to float32.
	half := embedDim / 2
	m.signal = make([]float32, MaxTokens*embedDim)
	for pos := range MaxTokens {
		row := m.signal[pos*embedDim : (pos+1)*embedDim]
		for k, inv := range m.timing {
			arg := float64(float32(pos) * inv)
			row[k], row[half+k] = float32(math.Sin(arg)), float32(math.Cos(arg))
		}
	}

	// With no tokens the mean over positions is 0 (the graph divides by
	// max(length, 1)), so the output is tanh(b), normalised.
	var pooled [modelDim]float32
	m.unitTanhB = make([]float32, modelDim)
	if !m.head(m.unitTanhB, pooled[:]) {
		return nil, fmt.Errorf("data file: tanh bias has no direction")
	}
	return m, nil
}

// A scratch holds the buffers of one forward pass, reused through
// model.scratch.
type scratch struct {
	tok                        tokScratch
	ids                        []int32
	bounds                     []int
	seqs                       [][]int32
	ok                         []bool
	x, ln, qkv, ctx, h, tmp, f []float32
	scores, vt                 []float32
	pooled, head               []float32
	split                      splitter // of this pass's matrix products
}

// grow returns b resliced to n elements, reallocated if it is too small.
func grow(b []float32, n int) []float32 {
	if cap(b) < n {
		return make([]float32, n, n+n/4)
	}
	return b[:n]
}

// forward computes the embeddings of seqs, token id sequences of at most
// MaxTokens each, into out[i] (each of length modelDim). It reports
// false for a sequence whose result is not a finite unit vector, which
// leaves that out[i] unspecified; see [model.head].
//
// The sequences are stacked into one matrix for every per-token operation
// (layer norms, projections, feed-forward blocks), as the graph's GatherNd
// over non-padding positions does, and attend only within themselves.
func (m *model) forward(s *scratch, seqs [][]int32, out [][]float32) []bool {
	n := 0
	for _, q := range seqs {
		n += len(q)
	}
	s.ok = slices.Grow(s.ok[:0], len(seqs))[:len(seqs)]
	ok := s.ok
	s.x = grow(s.x, n*modelDim)
	s.ln = grow(s.ln, n*modelDim)
	s.qkv = grow(s.qkv, n*3*modelDim)
	s.ctx = grow(s.ctx, n*modelDim)
	s.h = grow(s.h, n*modelDim)
	s.tmp = grow(s.tmp, n*modelDim)
	s.f = grow(s.f, n*ffnDim)

	// Input: 2·E[id] + timing signal. The graph adds the embeddings to
	// the timing signal (AddTimingSignal/add) and then adds the
	// embeddings once more (Layer_0/add), so the token embedding counts
	// twice; this computes it in the same order.
	x := s.x[:n*embedDim]
	r := 0
	for _, q := range seqs {
		for pos, id := range q {
			e := m.emb[int(id)*embedDim : (int(id)+1)*embedDim]
			sig := m.signal[pos*embedDim : (pos+1)*embedDim]
			row := x[r*embedDim : (r+1)*embedDim]
			for k, v := range e {
				row[k] = v + (v + sig[k])
			}
			r++
		}
	}

	h := m.layer(s, &m.layers[0], seqs, n, x)
	h = m.layer(s, &m.layers[1], seqs, n, h)

	// Mean over each sequence's positions, then the tanh layer (one
	// product for all sequences) and l2 normalisation.
	s.pooled = grow(s.pooled, len(seqs)*modelDim)
	s.head = grow(s.head, len(seqs)*modelDim)
	r = 0
	for i, q := range seqs {
		var acc [modelDim]float64
		for range q {
			for k, v := range h[r*modelDim : (r+1)*modelDim] {
				acc[k] += float64(v)
			}
			r++
		}
		div := float64(max(len(q), 1))
		pooled := s.pooled[i*modelDim : (i+1)*modelDim]
		for k := range pooled {
			pooled[k] = float32(acc[k] / div)
		}
	}
	linear(&s.split, s.head, s.pooled, len(seqs), modelDim, m.tanhW, m.tanhB)
	for i := range seqs {
		copy(out[i], s.head[i*modelDim:(i+1)*modelDim])
		ok[i] = tanhNormalize(out[i])
	}
	return ok
}

// layer runs transformer layer l over the n stacked rows of x (width l.in)
// and returns its output, n rows of width modelDim, which is s.h.
//
// The layer is pre-norm: h = x' + Attention(LayerNorm(x)), then
// h + FFN(LayerNorm(h)), where x' is x itself in layer 1 and a dense
// projection of x to modelDim in layer 0 (AdjustResidualInput).
func (m *model) layer(s *scratch, l *layer, seqs [][]int32, n int, x []float32) []float32 {
	in := l.in
	ln := s.ln[:n*in]
	layerNorm(ln, x, n, l.ln1g, l.ln1b)
	qkv := s.qkv[:n*3*in]
	linear(&s.split, qkv, ln, n, in, l.qkvW, l.qkvB)
	ctx := s.ctx[:n*in]
	m.attention(s, ctx, qkv, seqs, n, in)

	h := s.tmp[:n*modelDim]
	linear(&s.split, h, ctx, n, in, l.outW, l.outB)
	if l.resW.f32 != nil {
		res := s.h[:n*modelDim]
		linear(&s.split, res, x, n, in, l.resW, l.resB)
		add(h, res)
	} else {
		add(h, x)
	}
	// Feed-forward block, into s.h (which x may be in layer 1: x is no
	// longer needed).
	ln = s.ln[:n*modelDim]
	layerNorm(ln, h, n, l.ln2g, l.ln2b)
	f := s.f[:n*ffnDim]
	linear(&s.split, f, ln, n, modelDim, l.ffn1W, l.ffn1B)
	relu(f)
	out := s.h[:n*modelDim]
	linear(&s.split, out, f, n, ffnDim, l.ffn2W, l.ffn2B)
	add(out, h)
	return out
}

// attention computes multi-head scaled dot-product attention within each
// sequence: qkv holds, for every row, the queries, keys and values (each
// of width `in`, numHeads heads of depth in/numHeads); ctx receives the
// heads' outputs side by side. Queries are scaled by 1/sqrt(depth) before
// the dot products, as the graph does (MultiheadAttention/mul); this
// scales them in place in qkv.
//
// Per sequence of T rows and per head, the scores Q·Kᵀ (T × T) and the
// outputs P·V are two calls of [gemm], the second on V transposed into
// depth × T so that its rows are contiguous.
func (m *model) attention(s *scratch, ctx, qkv []float32, seqs [][]int32, n, in int) {
	depth := in / numHeads
	scale := float32(1 / math.Sqrt(float64(depth)))
	stride := 3 * in
	for r := range n {
		q := qkv[r*stride : r*stride+in]
		for c := range q {
			q[c] *= scale
		}
	}
	r0 := 0
	for _, seq := range seqs {
		T := len(seq)
		if T == 0 {
			continue
		}
		s.scores = grow(s.scores, T*T)
		s.vt = grow(s.vt, depth*T)
		p, vt := s.scores, s.vt
		rows := qkv[r0*stride : (r0+T)*stride]
		for hd := range numHeads {
			qo, ko, vo := hd*depth, in+hd*depth, 2*in+hd*depth
			gemm(p, T, rows[qo:], stride, T, rows[ko:], stride, T, depth, nil)
			for i := range T {
				softmax(p[i*T : (i+1)*T])
			}
			for j := range T {
				for c, v := range rows[j*stride+vo : j*stride+vo+depth] {
					vt[c*T+j] = v
				}
			}
			gemm(ctx[r0*in+qo:(r0+T)*in], in, p, T, T, vt, T, depth, T, nil)
		}
		r0 += T
	}
}

// head sets out to the l2-normalised tanh(W·pooled + b) and reports whether
// it is a finite unit vector.
func (m *model) head(out, pooled []float32) bool {
	linear(&splitter{par: 1}, out, pooled, 1, modelDim, m.tanhW, m.tanhB)
	return tanhNormalize(out)
}

// tanhNormalize replaces out by tanh(out), l2-normalised, and reports whether
// the result is a finite unit vector.
func tanhNormalize(out []float32) bool {
	var ss float64
	for i, v := range out {
		t := math.Tanh(float64(v))
		out[i] = float32(t)
		ss += t * t
	}
	// The graph multiplies by rsqrt(max(Σx², 1e-12)); doing it in float64
	// keeps the result's norm within float32 rounding of 1.
	inv := 1 / math.Sqrt(max(ss, l2Epsilon))
	ss = 0
	for i, v := range out {
		out[i] = float32(float64(v) * inv)
		ss += float64(out[i]) * float64(out[i])
	}
	return !math.IsNaN(ss) && math.Abs(ss-1) < 1e-3
}
