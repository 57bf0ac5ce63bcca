//go:build !amd64 || purego

package use

// bestQKernel is plain Go: this build has no assembly kernel.
const bestQKernel = qGo

// qgemmSIMD is never called when qkern is qGo.
func qgemmSIMD(dst []float32, ds int, x []int16, sx []float32, rows int, w []int16, sw []float32, cols, k int, bias []float32) {
	qgemmGo(dst, ds, x, sx, rows, w, sw, cols, k, bias)
}

func qmaxbits(x *float32, n int) uint32 { panic("use: no assembly kernel in this build") }

func qround(q *int16, x *float32, n int, inv float32) { panic("use: no assembly kernel in this build") }
