//go:build !purego

package use

import "golang.org/x/sys/cpu"

// bestQKernel is the fastest integer kernel the CPU has: VNNI needs
// AVX-512 F, VL and VNNI (and the operating system's support for
// AVX-512 state, which package cpu checks).
var bestQKernel = func() qKernel {
	switch {
	case cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL && cpu.X86.HasAVX512VNNI:
		return qVNNI
	case cpu.X86.HasAVX2:
		return qAVX2
	}
	return qGo
}()

// qdot2x2 sets dst[r*ds+c] for 2 rows r of x and 2 columns c of w as
// [qgemm] does, for k a positive multiple of 64 (w's rows are k apart;
// x's xs, 0 to repeat a row). AVX2.
//
//go:noescape
func qdot2x2(k int, x *int16, xs int, w *int16, dst *float32, ds int, sw *float32, bias *float32, s0, s1 float32)

// qdot4x3v is qdot2x2 for 3 rows and 4 columns, with AVX-512 VNNI.
//
//go:noescape
func qdot4x3v(k int, x *int16, xs int, w *int16, dst *float32, ds int, sw *float32, bias *float32, s0, s1, s2 float32)

// qgemmSIMD is [qgemm] on the assembly kernel qkern, for k a positive
// multiple of 64 and cols a multiple of 4; the slices are checked.
func qgemmSIMD(dst []float32, ds int, x []int16, sx []float32, rows int, w []int16, sw []float32, cols, k int, bias []float32) {
	rstep, cstep := 2, 2
	if qkern == qVNNI {
		rstep, cstep = 3, 4
	}
	tile := max(rstep, (128<<10)/(2*k)/rstep*rstep)
	for r0 := 0; r0 < rows; r0 += tile {
		r1 := min(rows, r0+tile)
		for c := 0; c < cols; c += cstep {
			wp, swp, bp := &w[c*k], &sw[c], &bias[c]
			r := r0
			if rstep == 3 {
				for ; r+3 <= r1; r += 3 {
					qdot4x3v(k, &x[r*k], k, wp, &dst[r*ds+c], ds, swp, bp, sx[r], sx[r+1], sx[r+2])
				}
				for ; r < r1; r++ {
					qdot4x3v(k, &x[r*k], 0, wp, &dst[r*ds+c], 0, swp, bp, sx[r], sx[r], sx[r])
				}
				continue
			}
			for ; r+2 <= r1; r += 2 {
				qdot2x2(k, &x[r*k], k, wp, &dst[r*ds+c], ds, swp, bp, sx[r], sx[r+1])
			}
			if r < r1 {
				qdot2x2(k, &x[r*k], 0, wp, &dst[r*ds+c], 0, swp, bp, sx[r], sx[r])
			}
		}
	}
}

// qmaxbits returns the largest of max|x[i]|'s bit patterns for the n
// floats at x (n a positive multiple of 8): a NaN's or an infinity's is
// above every finite magnitude's. AVX2.
//
//go:noescape
func qmaxbits(x *float32, n int) uint32

// qround sets the n int16 at q to the floats at x times inv, rounded to
// the nearest integer (ties to even) and clamped to ±qMax, for n a
// positive multiple of 8. AVX2.
//
//go:noescape
func qround(q *int16, x *float32, n int, inv float32)
