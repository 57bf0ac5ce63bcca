//go:build !amd64 || purego

package index

import "unsafe"

// haveQSIMD is false: this build has no assembly kernel.
const haveQSIMD = false

// qdotsAsm is never called when haveQSIMD is false.
func qdotsAsm(rows unsafe.Pointer, n, stride int, q *int16, m, kp int, out *int32) {
	panic("index: no assembly kernel in this build")
}
