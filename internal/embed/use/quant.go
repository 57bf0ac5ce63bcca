package use

import (
	"math"
)

// Integer products. A dense layer can run on int16 copies of its weights
// and of its input: each weight row (output channel) is scaled so that its
// largest magnitude is qMax and rounded; each input row is scaled and
// rounded the same way when the layer runs. The dot products of the
// rounded values are exact integers, so every kernel (plain Go, AVX2's
// VPMADDWD, AVX-512 VNNI's VPDPWSSD) gives the same bits, whatever its
// summation order; only the scaling back to float32 rounds, the same way
// in each.

// qMax is the largest magnitude of a quantized weight or input: with it,
// qBlock products of two quantized values sum to at most
// qBlock·qMax² = 2,145,542,400 < 2³¹, so a block's sum is exact in int32.
const qMax = 2895

// qBlock is how many products a kernel sums in int32 before converting
// the sum to float32 and adding it to the previous blocks' (in order). It
// is a multiple of 16, the kernels' step.
const qBlock = 256

// intKernel selects integer products for the dense layers (see
// [qgemm]) where an assembly integer kernel runs: by default only in a
// build with the useint tag (intDefault). The float kernels stay the
// default until the integer vectors are accepted: they move a ranking
// measure by one query in 497 on MetaTool's multi split (see
// docs/scale.md). The plain-Go integer kernel, about a quarter of the
// plain-Go float kernel's speed, is for tests and as the reference.
// The tests and benchmarks switch it to compare the paths.
var intKernel = intDefault && bestQKernel != qGo

// A qKernel is a choice of integer kernel.
type qKernel int

const (
	qGo   qKernel = iota // plain Go
	qAVX2                // VPMADDWD on AVX2
	qVNNI                // VPDPWSSD on AVX-512 VNNI
)

// qkern is the integer kernel in use: the fastest the CPU has. The tests
// switch it to check every kernel.
var qkern = bestQKernel

// A qmatrix is a weight matrix [out, in] in int16, each row scaled by its
// own factor: w[o*in+i] ≈ q[o*in+i]·scale[o].
type qmatrix struct {
	q     []int16
	scale []float32
}

// quantizeWeights returns w (out rows of in floats) quantized per row.
// A row of zeros gets the scale 0.
func quantizeWeights(w []float32, out, in int) qmatrix {
	m := qmatrix{q: make([]int16, out*in), scale: make([]float32, out)}
	for o := range out {
		m.scale[o] = quantizeRow(m.q[o*in:(o+1)*in], w[o*in:(o+1)*in])
	}
	return m
}

// quantizeRow sets q[i] = round(x[i]·(qMax/max|x|)), ties to even, with
// the product rounded to float32 first, and returns the scale max|x|/qMax
// that takes q back to x: 0 for a row of zeros, NaN when x holds a NaN or
// an infinity (q is then unspecified).
func quantizeRow(q []int16, x []float32) float32 {
	q = q[:len(x)]
	if qkern != qGo && len(x)%8 == 0 && len(x) > 0 {
		m := math.Float32frombits(qmaxbits(&x[0], len(x)))
		if !(m <= math.MaxFloat32) {
			return float32(math.NaN())
		}
		if m == 0 {
			clear(q)
			return 0
		}
		qround(&q[0], &x[0], len(x), qMax/m)
		return m / qMax
	}
	var mb uint32
	for _, v := range x {
		mb = max(mb, math.Float32bits(v)&^(1<<31))
	}
	m := math.Float32frombits(mb)
	if !(m <= math.MaxFloat32) {
		return float32(math.NaN())
	}
	if m == 0 {
		clear(q)
		return 0
	}
	inv := qMax / m
	for i, v := range x {
		r := math.RoundToEven(float64(v * inv))
		q[i] = int16(min(max(r, -qMax), qMax))
	}
	return m / qMax
}

// quantizeRows quantizes the n rows of x (k floats each) into q and their
// scales into scale, and reports false if a row holds a NaN or an
// infinity.
func quantizeRows(q []int16, scale []float32, x []float32, n, k int) bool {
	for r := range n {
		s := quantizeRow(q[r*k:(r+1)*k], x[r*k:(r+1)*k])
		if s != s {
			return false
		}
		scale[r] = s
	}
	return true
}

// qgemm sets dst[r*ds+c] = bias[c] + Σ_i x[r·k+i]·w[c·k+i] for rows r <
// rows and columns c < cols, where x and w are quantized rows (row
// stride k) with scales sx and sw: the integer products summed exactly in
// blocks of qBlock, each block converted to float32 and added in order
// (acc), then dst = acc·(sx[r]·sw[c]) + bias[c], each operation rounded to
// float32. It panics if a slice is too short.
func qgemm(dst []float32, ds int, x []int16, sx []float32, rows int, w []int16, sw []float32, cols, k int, bias []float32) {
	checkQgemm(dst, ds, x, sx, rows, w, sw, cols, k, bias)
	if qkern != qGo && k%16 == 0 && cols%4 == 0 && k > 0 {
		qgemmSIMD(dst, ds, x, sx, rows, w, sw, cols, k, bias)
		return
	}
	qgemmGo(dst, ds, x, sx, rows, w, sw, cols, k, bias)
}

func checkQgemm(dst []float32, ds int, x []int16, sx []float32, rows int, w []int16, sw []float32, cols, k int, bias []float32) {
	if rows == 0 || cols == 0 {
		return
	}
	if k < 0 || ds < 0 || len(x) < rows*k || len(sx) < rows || len(w) < cols*k || len(sw) < cols ||
		len(dst) < (rows-1)*ds+cols || len(bias) < cols {
		panic("use: qgemm: slice too short for its shape")
	}
}

// qgemmGo is [qgemm] in plain Go, two columns at a time.
func qgemmGo(dst []float32, ds int, x []int16, sx []float32, rows int, w []int16, sw []float32, cols, k int, bias []float32) {
	for r := range rows {
		xr := x[r*k : (r+1)*k]
		for c := range cols {
			wc := w[c*k : (c+1)*k]
			var acc float32
			for b0 := 0; b0 < k; b0 += qBlock {
				b1 := min(k, b0+qBlock)
				acc += float32(qdot(xr[b0:b1], wc[b0:b1]))
			}
			s := sx[r] * sw[c]
			dst[r*ds+c] = float32(acc*s) + bias[c]
		}
	}
}

// qdot returns Σ a[i]·b[i], for at most qBlock elements of magnitude at
// most qMax (so the sum is exact in int32).
func qdot(a, b []int16) int32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 int32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += int32(a[i]) * int32(b[i])
		s1 += int32(a[i+1]) * int32(b[i+1])
		s2 += int32(a[i+2]) * int32(b[i+2])
		s3 += int32(a[i+3]) * int32(b[i+3])
	}
	for ; i < len(a); i++ {
		s0 += int32(a[i]) * int32(b[i])
	}
	return s0 + s1 + s2 + s3
}
