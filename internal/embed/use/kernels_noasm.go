//go:build !amd64 || purego

package use

// haveSIMD and haveF16 are false: this build has no assembly kernel.
const (
	haveSIMD = false
	haveF16  = false
)

// gemmSIMD is never called when haveSIMD is false.
func gemmSIMD(dst []float32, ds int, x []float32, xs, rows int, w []float32, ws, cols, k int, bias []float32) {
	gemmGo(dst, ds, x, xs, rows, w, ws, cols, k, bias)
}

// gemmSIMDh is never called when haveF16 is false.
func gemmSIMDh(dst []float32, ds int, x []float32, xs, rows int, w []uint16, ws, cols, k int, bias []float32) {
	panic("use: no float16 kernel in this build")
}

// softmaxAVX is never called when haveSIMD is false.
func softmaxAVX(x *float32, n int) {
	panic("use: no softmax kernel in this build")
}

// sumF64, sqDevF64, lnApply and reluAVX are never called when haveSIMD
// is false.
func sumF64(x *float32, n int) float64 { panic("use: no layer norm kernel in this build") }
func sqDevF64(x *float32, n int, mean float32) float64 {
	panic("use: no layer norm kernel in this build")
}
func lnApply(y, x, gain, bias *float32, n int, mean, scale float32) {
	panic("use: no layer norm kernel in this build")
}
func reluAVX(x *float32, n int) { panic("use: no relu kernel in this build") }
