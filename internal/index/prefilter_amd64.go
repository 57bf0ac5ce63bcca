//go:build !purego

package index

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// haveQSIMD reports whether the CPU (and the operating system) supports
// AVX2, which the assembly kernel of qdots needs.
var haveQSIMD = cpu.X86.HasAVX2

// qdotsAsm is qdotsGo in AVX2 assembly: for each of the n qvecs at rows
// (stride bytes apart, the int8 row's pointer at offset 0 of each), and
// each of the m queries at q (kp int16s each, kp a multiple of 32), it
// stores the row's dot product with the query at out[i*m+j]. The int8s are
// widened to int16 and multiplied in pairs into int32 lanes (VPMADDWD),
// which are summed; the sums are exact, so the result is qdotsGo's.
//
//go:noescape
func qdotsAsm(rows unsafe.Pointer, n, stride int, q *int16, m, kp int, out *int32)
