package use

import (
	"math"
	"runtime"
	"slices"
	"sync"
)

// simd selects the kernel of [gemm]: the assembly one (AVX2 and FMA on
// amd64) when it is true, plain Go otherwise. It starts as haveSIMD; the
// tests switch it off to check the plain-Go path, and a build with the
// purego tag has no assembly at all. The two paths round differently
// (fused multiply-adds, another summation order): on the fidelity texts
// their embeddings differ by at most 2e-6 in norm (1 − cosine about 1e-12);
// each is deterministic and gives every row the same result whatever the
// rows around it.
var simd = haveSIMD

// simdF16 lets the assembly kernel read a weight matrix's float16 copy,
// when it has one. It starts as haveF16; the tests switch it off to check
// the float32 assembly kernel on the weights too.
var simdF16 = haveF16

// tileFloats bounds the rows of x a kernel runs against a block of w
// before moving on: 64 Ki floats (256 KiB) stay in a core's L2 cache while
// the blocks of w stream past.
const tileFloats = 64 << 10

// gemm sets dst[r*ds+c] = bias[c] + Σ_{i<k} x[r*xs+i]·w[c*ws+i] for rows r
// < rows and columns c < cols, with +0 for a nil bias: the product of x
// (rows × k, row stride xs) with the transpose of w (cols × k, row stride
// ws). Strides are in floats. Every product row of a dense layer, of
// attention scores and of attention outputs is one such dot product of
// two contiguous rows. It panics if a slice is too short.
func gemm(dst []float32, ds int, x []float32, xs, rows int, w []float32, ws, cols, k int, bias []float32) {
	if simd {
		gemmSIMD(dst, ds, x, xs, rows, w, ws, cols, k, bias)
		return
	}
	gemmGo(dst, ds, x, xs, rows, w, ws, cols, k, bias)
}

// checkGemm panics unless the slices hold every element [gemm] reads or
// writes, so that no kernel touches memory outside them.
func checkGemm[W float32 | uint16](dst []float32, ds int, x []float32, xs, rows int, w []W, ws, cols, k int, bias []float32) {
	if rows == 0 || cols == 0 {
		return
	}
	if k < 0 || xs < 0 || ws < 0 || ds < 0 ||
		len(x) < (rows-1)*xs+k || len(w) < (cols-1)*ws+k ||
		len(dst) < (rows-1)*ds+cols || (bias != nil && len(bias) < cols) {
		panic("use: gemm: slice too short for its shape")
	}
}

// A matrix is a weight matrix, [out, in] row-major, in float32 and, when
// the assembly kernel can read it so, in float16 too: the data file's
// own values, which widen exactly, so the results are the same bits in
// half the bytes to stream from memory.
type matrix struct {
	f32 []float32
	f16 []uint16 // nil unless the weights are float16 and haveF16
	q   qmatrix  // int16 rows and their scales; nil for the output layer
}

// sub returns the matrix from row r on, for rows of ws elements.
func (w matrix) sub(r, ws int) matrix {
	v := matrix{f32: w.f32[r*ws:]}
	if w.f16 != nil {
		v.f16 = w.f16[r*ws:]
	}
	if w.q.q != nil {
		v.q = qmatrix{q: w.q.q[r*ws:], scale: w.q.scale[r:]}
	}
	return v
}

// linear sets out[t*len(b)+o] = b[o] + Σ_i x[t*in+i]·w[o*in+i] for the n
// rows t of x: a dense layer with its weight matrix w stored transposed,
// [out, in], so that every output is a dot product of two contiguous rows.
// sp splits the work across goroutines.
//
// With intKernel on and int16 weights, the rows of x are quantized (see
// [qgemm]) and the product is integer; a row holding a NaN or an infinity
// sends the whole product to the float kernel.
func linear(sp *splitter, out, x []float32, n, in int, w matrix, b []float32) {
	if intKernel && w.q.q != nil && n > 0 {
		sp.qx = slices.Grow(sp.qx[:0], n*in)[:n*in]
		sp.sx = slices.Grow(sp.sx[:0], n)[:n]
		if quantizeRows(sp.qx, sp.sx, x, n, in) {
			sp.qgemm(out, len(b), n, w, len(b), in, b)
			return
		}
	}
	sp.gemm(out, len(b), x, in, n, w, in, len(b), in, b)
}

// gemmMatrix is [gemm] on a weight matrix, read in float16 when the
// assembly kernel is on and the matrix has a float16 copy.
func gemmMatrix(dst []float32, ds int, x []float32, xs, rows int, w matrix, ws, cols, k int, bias []float32) {
	if simd && simdF16 && w.f16 != nil {
		gemmSIMDh(dst, ds, x, xs, rows, w.f16, ws, cols, k, bias)
		return
	}
	gemm(dst, ds, x, xs, rows, w.f32, ws, cols, k, bias)
}

// parMinWork is the smallest product, in multiply-adds, that a
// [splitter] splits: about 50 µs of one core's work, against a few µs to
// hand a part to another goroutine and wait for it.
const parMinWork = 2 << 20

// A splitter computes products with their columns split into par ranges
// (multiples of 4) computed in parallel, when a product is large enough
// to gain from it. Each result is computed exactly as [gemmMatrix]
// computes it, so the split changes no bit of the output. The parts run
// on helper goroutines that are free at the time, or on the caller's; a
// splitter keeps its parts for reuse, so splitting allocates nothing. A
// splitter is for one goroutine at a time.
type splitter struct {
	par   int
	parts []gemmPart
	wg    sync.WaitGroup
	qx    []int16   // the quantized rows of an integer product's input
	sx    []float32 // and their scales
}

// A gemmPart is the arguments of one [gemmMatrix] call, or of one [qgemm]
// call when qx is not nil.
type gemmPart struct {
	dst, x, bias []float32
	ds, xs, rows int
	w            matrix
	ws, cols, k  int
	qx           []int16
	sx           []float32
	done         *sync.WaitGroup
}

func (p *gemmPart) run() {
	if p.qx != nil {
		qgemm(p.dst, p.ds, p.qx, p.sx, p.rows, p.w.q.q, p.w.q.scale, p.cols, p.k, p.bias)
		return
	}
	gemmMatrix(p.dst, p.ds, p.x, p.xs, p.rows, p.w, p.ws, p.cols, p.k, p.bias)
}

// helperParts feeds the helper goroutines: GOMAXPROCS−1 of them, started
// on the first split and parked on this channel when idle, for the life
// of the process (starting a goroutine per part would allocate).
var (
	helpersOnce sync.Once
	helperParts = make(chan *gemmPart)
)

func startHelpers() {
	for range runtime.GOMAXPROCS(0) - 1 {
		go func() {
			for p := range helperParts {
				p.run()
				p.done.Done()
			}
		}()
	}
}

// gemm is [gemmMatrix], split across up to sp.par goroutines.
func (sp *splitter) gemm(dst []float32, ds int, x []float32, xs, rows int, w matrix, ws, cols, k int, bias []float32) {
	par := min(sp.par, cols/8)
	if par <= 1 || rows*cols*k < parMinWork {
		gemmMatrix(dst, ds, x, xs, rows, w, ws, cols, k, bias)
		return
	}
	checkGemm(dst, ds, x, xs, rows, w.f32, ws, cols, k, bias)
	sp.split(gemmPart{dst: dst, ds: ds, x: x, xs: xs, rows: rows, w: w, ws: ws, cols: cols, k: k, bias: bias})
}

// qgemm is [qgemm] of sp.qx and sp.sx (rows rows of k) with w's int16
// rows, split across up to sp.par goroutines.
func (sp *splitter) qgemm(dst []float32, ds int, rows int, w matrix, cols, k int, bias []float32) {
	par := min(sp.par, cols/8)
	if par <= 1 || rows*cols*k < parMinWork {
		qgemm(dst, ds, sp.qx, sp.sx, rows, w.q.q, w.q.scale, cols, k, bias)
		return
	}
	checkQgemm(dst, ds, sp.qx, sp.sx, rows, w.q.q, w.q.scale, cols, k, bias)
	sp.split(gemmPart{dst: dst, ds: ds, rows: rows, w: w, ws: k, cols: cols, k: k, bias: bias, qx: sp.qx, sx: sp.sx})
}

// split runs whole in parts of its columns (multiples of 4), on the
// helpers that are free and on the caller's goroutine.
func (sp *splitter) split(whole gemmPart) {
	par := min(sp.par, whole.cols/8)
	cols, ws, bias, dst, w := whole.cols, whole.ws, whole.bias, whole.dst, whole.w
	helpersOnce.Do(startHelpers)
	if len(sp.parts) < par {
		sp.parts = make([]gemmPart, par)
	}
	for p := range par {
		c0, c1 := p*cols/par/4*4, (p+1)*cols/par/4*4
		if p == par-1 {
			c1 = cols
		}
		var b []float32
		if bias != nil {
			b = bias[c0:c1]
		}
		part := &sp.parts[p]
		*part = whole
		part.dst, part.w, part.cols, part.bias, part.done = dst[c0:], w.sub(c0, ws), c1-c0, b, &sp.wg
		if p == par-1 {
			part.run()
			break
		}
		sp.wg.Add(1)
		select {
		case helperParts <- part:
		default: // no helper free: run it here
			part.run()
			sp.wg.Done()
		}
	}
	sp.wg.Wait()
	clear(sp.parts) // hold no slices between products
}

// goTileRows is how many rows of x [gemmGo] multiplies against the whole
// of w before moving on: 48 rows of the widest input (1,536 floats) are
// 288 KiB, which stays in a core's L2 cache while w streams past.
const goTileRows = 48

// gemmGo is [gemm] in plain Go. It computes a block of 2 columns × 3 rows
// at a time: six independent sums hide the latency of the float adds, and
// each loaded element of w and x is used two or three times. That runs
// about 7.4 billion multiply-adds a second per core on the dev VM, against
// 5.5 for 1 column × 4 rows (whose four sums wait on the add latency) and
// less for blocks of 8 sums (which the compiler spills to the stack). Each
// sum runs in input order in float32.
func gemmGo(dst []float32, ds int, x []float32, xs, rows int, w []float32, ws, cols, k int, bias []float32) {
	checkGemm(dst, ds, x, xs, rows, w, ws, cols, k, bias)
	xrow := func(t int) []float32 { return x[t*xs : t*xs+k] }
	for t0 := 0; t0 < rows; t0 += goTileRows {
		t1 := min(rows, t0+goTileRows)
		o := 0
		for ; o+2 <= cols; o += 2 {
			wa := w[o*ws : o*ws+k]
			wb := w[(o+1)*ws : (o+1)*ws+k]
			var ba, bb float32
			if bias != nil {
				ba, bb = bias[o], bias[o+1]
			}
			t := t0
			for ; t+3 <= t1; t += 3 {
				a0, a1, a2, b0, b1, b2 := dot2x3(wa, wb, xrow(t), xrow(t+1), xrow(t+2))
				dst[t*ds+o], dst[t*ds+o+1] = a0+ba, b0+bb
				dst[(t+1)*ds+o], dst[(t+1)*ds+o+1] = a1+ba, b1+bb
				dst[(t+2)*ds+o], dst[(t+2)*ds+o+1] = a2+ba, b2+bb
			}
			for ; t < t1; t++ {
				a0, b0 := dot2x1(wa, wb, xrow(t))
				dst[t*ds+o], dst[t*ds+o+1] = a0+ba, b0+bb
			}
		}
		for ; o < cols; o++ {
			wa := w[o*ws : o*ws+k]
			var ba float32
			if bias != nil {
				ba = bias[o]
			}
			for t := t0; t < t1; t++ {
				a0, _ := dot2x1(wa, wa, xrow(t))
				dst[t*ds+o] = a0 + ba
			}
		}
	}
}

// dot2x3 returns the dot products of wa and wb with x0, x1 and x2.
func dot2x3(wa, wb, x0, x1, x2 []float32) (a0, a1, a2, b0, b1, b2 float32) {
	// Re-slicing to len(wa) lets the compiler drop the bounds checks in
	// the loop.
	wb = wb[:len(wa)]
	x0 = x0[:len(wa)]
	x1 = x1[:len(wa)]
	x2 = x2[:len(wa)]
	for i, u := range wa {
		v := wb[i]
		y0, y1, y2 := x0[i], x1[i], x2[i]
		// float32(…) rounds each product, which keeps the compiler
		// from fusing it with the add (it may with GOAMD64=v3, and
		// differently here and in dot2x1): a row's result must not
		// depend on its place in the block.
		a0 += float32(y0 * u)
		a1 += float32(y1 * u)
		a2 += float32(y2 * u)
		b0 += float32(y0 * v)
		b1 += float32(y1 * v)
		b2 += float32(y2 * v)
	}
	return
}

// dot2x1 returns the dot products of wa and wb with x0.
func dot2x1(wa, wb, x0 []float32) (a0, b0 float32) {
	wb = wb[:len(wa)]
	x0 = x0[:len(wa)]
	for i, u := range wa {
		a0 += float32(x0[i] * u) // rounded: see dot2x3
		b0 += float32(x0[i] * wb[i])
	}
	return
}

// layerNorm sets each row y of out (n rows of width len(g)) from the same
// row x of in: y = g·(x−mean)/sqrt(var+ε) + b, with the mean and the
// (biased) variance over the row, as the graph's layer_norm nodes compute
// it: mul = g·rsqrt(var+ε); y = mul·(x−mean) + b.
func layerNorm(out, in []float32, n int, g, b []float32) {
	d := len(g)
	for t := range n {
		x := in[t*d : (t+1)*d]
		y := out[t*d : (t+1)*d]
		if simd && d%8 == 0 && d > 0 {
			mean := float32(sumF64(&x[0], d) / float64(d))
			r := float32(1 / math.Sqrt(sqDevF64(&x[0], d, mean)/float64(d)+lnEpsilon))
			lnApply(&y[0], &x[0], &g[0], &b[:d][0], d, mean, r)
			continue
		}
		var sum float64
		for _, v := range x {
			sum += float64(v)
		}
		mean := float32(sum / float64(d))
		var ss float64
		for _, v := range x {
			c := float64(v - mean)
			ss += c * c
		}
		r := float32(1 / math.Sqrt(ss/float64(d)+lnEpsilon))
		g, b := g[:d], b[:d]
		for i, v := range x {
			y[i] = g[i]*r*(v-mean) + b[i]
		}
	}
}

// relu sets every negative element of x to 0. The builtin max compiles to
// MINSS and bit operations, no branch: a comparison's branch mispredicts
// on about half of the feed-forward block's activations. It also turns −0
// into +0, which changes no sum it feeds (an accumulator starts at +0).
func relu(x []float32) {
	if simd && len(x) >= 8 {
		n := len(x) &^ 7
		reluAVX(&x[0], n)
		x = x[n:]
	}
	for i, v := range x {
		x[i] = max(v, 0)
	}
}

// add sets dst[i] += src[i].
func add(dst, src []float32) {
	src = src[:len(dst)]
	for i := range dst {
		dst[i] += src[i]
	}
}

// softmax replaces x by exp(x−max)/Σexp(x−max). With AVX2 and FMA it runs
// in float32 with a polynomial exponential (softmaxAVX), within a few
// float32 roundings of softmaxGo; attention's scores are most of the
// encoder's exponentials.
func softmax(x []float32) {
	if simd && len(x) > 0 {
		softmaxAVX(&x[0], len(x))
		return
	}
	softmaxGo(x)
}

// softmaxGo is [softmax] in plain Go, with float64 exponentials.
func softmaxGo(x []float32) {
	m := x[0]
	for _, v := range x[1:] {
		m = max(m, v)
	}
	var sum float64
	for i, v := range x {
		e := math.Exp(float64(v - m))
		x[i] = float32(e)
		sum += e
	}
	inv := float32(1 / sum)
	for i := range x {
		x[i] *= inv
	}
}
