//go:build !amd64 || purego

package use

// haveSIMD is false: this build has no assembly kernel.
const haveSIMD = false

// gemmSIMD is never called when haveSIMD is false.
func gemmSIMD(dst []float32, ds int, x []float32, xs, rows int, w []float32, ws, cols, k int, bias []float32) {
	gemmGo(dst, ds, x, xs, rows, w, ws, cols, k, bias)
}
