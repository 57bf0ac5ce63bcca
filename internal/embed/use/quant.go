package use

import (
	"math"
)

// Integer products. A dense layer can run on int16 copies of its weights
// and of its input, each row (a weight matrix's output channel, an input
// row) with its own scale. The kernels multiply int16 values in pairs
// summed into int32 lanes (AVX2's VPMADDWD, AVX-512 VNNI's VPDPWSSD),
// sum qGroup products in each lane exactly, then convert the lane to
// float32 and add it to a float32 accumulator: the products are exact,
// and the sums round like a float kernel's.
//
// The lanes are those of 256-bit registers: within each 64 inputs, lane j
// (0–7) sums the products at the inputs i with i mod 16 = 2j or 2j+1,
// qGroup = 8 of them. An input row is scaled so that its largest
// magnitude is qMax, the whole int16 range; a weight row so that its
// largest magnitude is at most qMax and the magnitudes of every lane's 8
// weights sum to at most qGroupAbs. So no lane's sum exceeds
// qMax·qGroupAbs < 2³¹, whatever the input. For the encoder's weights
// that bound leaves a median row 19,900 levels (at least 12,700), against
// int16's 32,767; a group of 4 (two steps per conversion) would leave
// almost all of them, for about 15% more time in the kernel.

// qMax is the largest magnitude of a quantized input or weight.
const qMax = 32767

// qGroup is how many products a kernel sums in an int32 lane before
// converting it to float32: those of four 16-input steps.
const qGroup = 8

// qGroupAbs bounds the sum of the magnitudes of a quantized weight row's
// qGroup weights in any lane: qMax·qGroupAbs = 2,147,483,646 < 2³¹.
const qGroupAbs = (1<<31 - 1) / qMax

// intKernel selects integer products for the dense layers (see
// [qgemm]) where an assembly integer kernel runs: by default only in a
// build with the useint tag (intDefault). The float kernels stay the
// default until the integer vectors are accepted: though within 1 −
// cosine 2e-8 of the float kernel's, they move one query of MetaTool's
// multi split by a place (see docs/scale.md). The plain-Go integer
// kernel, about a quarter of the plain-Go float kernel's speed, is for
// tests and as the reference.
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

// quantizeWeights returns w (out rows of in floats) quantized per row,
// with in a multiple of 64: each row's scale is the smallest float32 at
// which the row's rounded values stay within ±qMax and every lane's
// qGroup of them sums to at most qGroupAbs in magnitude (see above). A row
// of zeros gets the scale 0. It reports false if w holds a NaN or an
// infinity, or if in is not a multiple of 64.
func quantizeWeights(w []float32, out, in int) (qmatrix, bool) {
	if in%64 != 0 {
		return qmatrix{}, false
	}
	m := qmatrix{q: make([]int16, out*in), scale: make([]float32, out)}
	for o := range out {
		row, q := w[o*in:(o+1)*in], m.q[o*in:(o+1)*in]
		var mx float64
		for _, v := range row {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return qmatrix{}, false
			}
			mx = max(mx, math.Abs(float64(v)))
		}
		if mx == 0 {
			continue
		}
		s := float32(max(mx/qMax, laneAbsMax(row, func(v float32) float64 { return math.Abs(float64(v)) })/(qGroupAbs-qGroup)))
		for {
			for i, v := range row {
				q[i] = int16(math.RoundToEven(float64(v) / float64(s)))
			}
			// Rounding adds at most 1/2 a level to each weight, which
			// the qGroup levels of slack above cover; check it exactly.
			if laneAbsMax(q, func(v int16) float64 { return math.Abs(float64(v)) }) <= qGroupAbs && qAbsMax(q) <= qMax {
				break
			}
			s = math.Nextafter32(s, float32(math.Inf(1)))
		}
		m.scale[o] = s
	}
	return m, true
}

// laneAbsMax returns the largest sum of abs over a lane's qGroup elements
// of row (see above), for len(row) a multiple of 64.
func laneAbsMax[T float32 | int16](row []T, abs func(T) float64) float64 {
	var worst float64
	for b := 0; b+64 <= len(row); b += 64 {
		for j := range 8 {
			var sum float64
			for u := range 4 {
				i := b + 16*u + 2*j
				sum += abs(row[i]) + abs(row[i+1])
			}
			worst = max(worst, sum)
		}
	}
	return worst
}

// qAbsMax returns the largest magnitude in q.
func qAbsMax(q []int16) int {
	var m int
	for _, v := range q {
		m = max(m, int(v), -int(v))
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

// qgemm sets dst[r*ds+c] = bias[c] + sx[r]·sw[c]·Σ_i x[r·k+i]·w[c·k+i]
// for rows r < rows and columns c < cols, where x and w are quantized
// rows (row stride k) with scales sx and sw, w's within the lane bound
// (see above). The assembly kernels sum the integer dot product in
// float32 from exact int32 lane sums, in an order of their own, so they
// differ in float32 rounding only; the plain-Go kernel sums it exactly in
// int64 and rounds once. It panics if a slice is too short.
func qgemm(dst []float32, ds int, x []int16, sx []float32, rows int, w []int16, sw []float32, cols, k int, bias []float32) {
	checkQgemm(dst, ds, x, sx, rows, w, sw, cols, k, bias)
	if qkern != qGo && k%64 == 0 && cols%4 == 0 && k > 0 {
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

// qgemmGo is [qgemm] in plain Go: each dot product exact in int64,
// rounded to float32 once. It computes 2 rows × 2 columns at a time, so
// that each element loaded serves two products.
func qgemmGo(dst []float32, ds int, x []int16, sx []float32, rows int, w []int16, sw []float32, cols, k int, bias []float32) {
	out := func(r, c int, dot int64) {
		dst[r*ds+c] = float32(float32(dot)*(sx[r]*sw[c])) + bias[c]
	}
	for r := 0; r < rows; r += 2 {
		r1 := min(r+1, rows-1) // a last odd row is computed twice
		x0, x1 := x[r*k:(r+1)*k], x[r1*k:(r1+1)*k]
		for c := 0; c < cols; c += 2 {
			c1 := min(c+1, cols-1)
			a00, a01, a10, a11 := qdotGo2x2(x0, x1, w[c*k:(c+1)*k], w[c1*k:(c1+1)*k])
			out(r, c, a00)
			out(r, c1, a01)
			out(r1, c, a10)
			out(r1, c1, a11)
		}
	}
}

// qdotGo2x2 returns the exact dot products of x0 and x1 with w0 and w1.
func qdotGo2x2(x0, x1, w0, w1 []int16) (a00, a01, a10, a11 int64) {
	x1, w0, w1 = x1[:len(x0)], w0[:len(x0)], w1[:len(x0)]
	for i, u := range x0 {
		v, p, q := int32(x1[i]), int32(w0[i]), int32(w1[i])
		a00 += int64(int32(u) * p)
		a01 += int64(int32(u) * q)
		a10 += int64(v * p)
		a11 += int64(v * q)
	}
	return
}
