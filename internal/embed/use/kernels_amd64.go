//go:build !purego

package use

import "golang.org/x/sys/cpu"

// haveSIMD reports whether the CPU (and the operating system) supports
// AVX2 and FMA, which the assembly kernels need.
var haveSIMD = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// haveF16 reports whether the CPU can also widen float16 to float32
// (F16C, CPUID.1:ECX bit 29), for the kernel on float16 weights.
var haveF16 = haveSIMD && cpuid1ECX()&(1<<29) != 0

func cpuid1ECX() uint32

// dot4x3 sets dst[r*ds+c] = bias[c] + Σ_{i<k} x[r*xs+i]·w[c*ws+i] for
// the 3 rows r and 4 columns c (bias nil: +0). Strides are in elements; a
// stride of 0 repeats a row. Each sum accumulates eight lanes with fused
// multiply-adds in input order (lane i mod 8), the last k mod 8 floats
// under a mask, then adds the lanes pairwise; so a result does not depend
// on which row or column of the block it is in.
//
//go:noescape
func dot4x3(k int, x *float32, xs int, w *float32, ws int, dst *float32, ds int, bias *float32)

// dot4x3h is dot4x3 with w in float16 (IEEE 754 binary16), for k a
// multiple of 8. Widening is exact, so it returns the same bits as
// dot4x3 on w widened to float32, reading half the bytes.
//
//go:noescape
func dot4x3h(k int, x *float32, xs int, w *uint16, ws int, dst *float32, ds int, bias *float32)

// softmaxAVX is [softmax] on the n ≥ 1 floats at x, in float32: exp is
// Cephes' expf polynomial after range reduction (within 2 ulp), the sum
// is eight lanes added in a fixed order. A NaN in x makes every result
// NaN, as in softmaxGo.
//
//go:noescape
func softmaxAVX(x *float32, n int)

// sumF64 returns Σ x[i] over the n floats at x (n a positive multiple of
// 8), in float64, summed in eight lanes.
//
//go:noescape
func sumF64(x *float32, n int) float64

// sqDevF64 returns Σ float64(x[i]−mean)² over the n floats at x (n a
// positive multiple of 8), summed as sumF64 sums.
//
//go:noescape
func sqDevF64(x *float32, n int, mean float32) float64

// lnApply sets y[i] = gain[i]·scale·(x[i]−mean) + bias[i] for the n floats at each
// pointer (n a positive multiple of 8), rounding as plain Go does.
//
//go:noescape
func lnApply(y, x, gain, bias *float32, n int, mean, scale float32)

// reluAVX is [relu] on the n floats at x (n a multiple of 8).
//
//go:noescape
func reluAVX(x *float32, n int)

// gemmSIMD is [gemm] on the assembly kernel.
func gemmSIMD(dst []float32, ds int, x []float32, xs, rows int, w []float32, ws, cols, k int, bias []float32) {
	checkGemm(dst, ds, x, xs, rows, w, ws, cols, k, bias)
	if k == 0 {
		gemmGo(dst, ds, x, xs, rows, w, ws, cols, k, bias)
		return
	}
	gemmBlocks(dst, ds, x, xs, rows, w, ws, cols, k, bias)
}

// gemmSIMDh is [gemm] with w in float16, on the assembly kernel. k must
// be a multiple of 8.
func gemmSIMDh(dst []float32, ds int, x []float32, xs, rows int, w []uint16, ws, cols, k int, bias []float32) {
	checkGemm(dst, ds, x, xs, rows, w, ws, cols, k, bias)
	if k%8 != 0 {
		panic("use: gemm: float16 weights need a multiple of 8 inputs")
	}
	if k == 0 {
		for r := range rows {
			for c := range cols {
				dst[r*ds+c] = 0
				if bias != nil {
					dst[r*ds+c] = bias[c] + 0
				}
			}
		}
		return
	}
	gemmBlocks(dst, ds, x, xs, rows, w, ws, cols, k, bias)
}

// kern4x3 calls the kernel for W: a direct call, so that the compiler
// knows the kernel keeps no pointer (go:noescape) and the buffers of
// gemmBlocks stay on the stack.
func kern4x3[W float32 | uint16](k int, x *float32, xs int, w *W, ws int, dst *float32, ds int, bias *float32) {
	switch w := any(w).(type) {
	case *float32:
		dot4x3(k, x, xs, w, ws, dst, ds, bias)
	case *uint16:
		dot4x3h(k, x, xs, w, ws, dst, ds, bias)
	}
}

// gemmBlocks runs a product, already checked, through the kernel in blocks of 3
// rows × 4 columns: rows in tiles that stay in cache while each block of 4
// columns of w (at most 24 KiB) is used for every row of the tile.
// Leftover rows and columns run through the same kernel with a stride of
// 0, so every result is computed the same way.
func gemmBlocks[W float32 | uint16](dst []float32, ds int, x []float32, xs, rows int, w []W, ws, cols, k int, bias []float32) {
	if rows == 0 || cols == 0 {
		return
	}
	var b4 [4]float32
	var buf [12]float32
	tile := max(3, tileFloats/k/3*3)
	for r0 := 0; r0 < rows; r0 += tile {
		r1 := min(rows, r0+tile)
		c := 0
		for ; c+4 <= cols; c += 4 {
			wp := &w[c*ws]
			var bp *float32
			if bias != nil {
				bp = &bias[c]
			}
			r := r0
			for ; r+3 <= r1; r += 3 {
				kern4x3(k, &x[r*xs], xs, wp, ws, &dst[r*ds+c], ds, bp)
			}
			for ; r < r1; r++ {
				kern4x3(k, &x[r*xs], 0, wp, ws, &dst[r*ds+c], 0, bp)
			}
		}
		// Leftover columns, one at a time as four copies, into a buffer.
		for ; c < cols; c++ {
			b4 = [4]float32{}
			if bias != nil {
				b4 = [4]float32{bias[c], bias[c], bias[c], bias[c]}
			}
			r := r0
			for ; r+3 <= r1; r += 3 {
				kern4x3(k, &x[r*xs], xs, &w[c*ws], 0, &buf[0], 4, &b4[0])
				dst[r*ds+c], dst[(r+1)*ds+c], dst[(r+2)*ds+c] = buf[0], buf[4], buf[8]
			}
			for ; r < r1; r++ {
				kern4x3(k, &x[r*xs], 0, &w[c*ws], 0, &buf[0], 4, &b4[0])
				dst[r*ds+c] = buf[0]
			}
		}
	}
}
