//go:build !purego

#include "textflag.h"

// maskTail holds eight lanes of all ones and then eight of zeros: the
// eight lanes from lane 8−r on select the first r floats of a vector.
DATA maskTail<>+0(SB)/4, $0xffffffff
DATA maskTail<>+4(SB)/4, $0xffffffff
DATA maskTail<>+8(SB)/4, $0xffffffff
DATA maskTail<>+12(SB)/4, $0xffffffff
DATA maskTail<>+16(SB)/4, $0xffffffff
DATA maskTail<>+20(SB)/4, $0xffffffff
DATA maskTail<>+24(SB)/4, $0xffffffff
DATA maskTail<>+28(SB)/4, $0xffffffff
DATA maskTail<>+32(SB)/4, $0x00000000
DATA maskTail<>+36(SB)/4, $0x00000000
DATA maskTail<>+40(SB)/4, $0x00000000
DATA maskTail<>+44(SB)/4, $0x00000000
DATA maskTail<>+48(SB)/4, $0x00000000
DATA maskTail<>+52(SB)/4, $0x00000000
DATA maskTail<>+56(SB)/4, $0x00000000
DATA maskTail<>+60(SB)/4, $0x00000000
GLOBL maskTail<>(SB), RODATA|NOPTR, $64

// func dot4x3(k int, x *float32, xs int, w *float32, ws int, dst *float32, ds int, bias *float32)
//
// Registers: SI, SI+R8, SI+2·R8 walk the three rows of x; DI, DI+R9,
// R10, R10+R9 the four rows of w (R8, R9 and R11 are strides in bytes).
// Y(3c+r) accumulates row r against row c in eight lanes; Y12–Y14 hold the
// rows of x and Y15 a row of w (or the tail mask).
TEXT ·dot4x3(SB), NOSPLIT, $0-64
	MOVQ k+0(FP), CX
	MOVQ x+8(FP), SI
	MOVQ xs+16(FP), R8
	MOVQ w+24(FP), DI
	MOVQ ws+32(FP), R9
	MOVQ dst+40(FP), DX
	MOVQ ds+48(FP), R11
	MOVQ bias+56(FP), BX
	SHLQ $2, R8
	SHLQ $2, R9
	SHLQ $2, R11
	LEAQ (DI)(R9*2), R10
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	MOVQ CX, AX
	SHRQ $3, AX
	JZ   tail

loop:
	VMOVUPS (SI), Y12
	VMOVUPS (SI)(R8*1), Y13
	VMOVUPS (SI)(R8*2), Y14
	VMOVUPS (DI), Y15
	VFMADD231PS Y15, Y12, Y0
	VFMADD231PS Y15, Y13, Y1
	VFMADD231PS Y15, Y14, Y2
	VMOVUPS (DI)(R9*1), Y15
	VFMADD231PS Y15, Y12, Y3
	VFMADD231PS Y15, Y13, Y4
	VFMADD231PS Y15, Y14, Y5
	VMOVUPS (R10), Y15
	VFMADD231PS Y15, Y12, Y6
	VFMADD231PS Y15, Y13, Y7
	VFMADD231PS Y15, Y14, Y8
	VMOVUPS (R10)(R9*1), Y15
	VFMADD231PS Y15, Y12, Y9
	VFMADD231PS Y15, Y13, Y10
	VFMADD231PS Y15, Y14, Y11
	ADDQ $32, SI
	ADDQ $32, DI
	ADDQ $32, R10
	DECQ AX
	JNZ  loop

tail:
	// The last k mod 8 floats, loaded under a mask (zeros beyond k), in
	// the same lanes as a full block.
	ANDQ $7, CX
	JZ   reduce
	LEAQ maskTail<>(SB), R12
	NEGQ CX
	ADDQ $8, CX
	LEAQ (R12)(CX*4), R12
	VMOVUPS (R12), Y15
	VMASKMOVPS (SI), Y15, Y12
	VMASKMOVPS (SI)(R8*1), Y15, Y13
	VMASKMOVPS (SI)(R8*2), Y15, Y14
	VMOVUPS (R12), Y15
	VMASKMOVPS (DI), Y15, Y15
	VFMADD231PS Y15, Y12, Y0
	VFMADD231PS Y15, Y13, Y1
	VFMADD231PS Y15, Y14, Y2
	VMOVUPS (R12), Y15
	VMASKMOVPS (DI)(R9*1), Y15, Y15
	VFMADD231PS Y15, Y12, Y3
	VFMADD231PS Y15, Y13, Y4
	VFMADD231PS Y15, Y14, Y5
	VMOVUPS (R12), Y15
	VMASKMOVPS (R10), Y15, Y15
	VFMADD231PS Y15, Y12, Y6
	VFMADD231PS Y15, Y13, Y7
	VFMADD231PS Y15, Y14, Y8
	VMOVUPS (R12), Y15
	VMASKMOVPS (R10)(R9*1), Y15, Y15
	VFMADD231PS Y15, Y12, Y9
	VFMADD231PS Y15, Y13, Y10
	VFMADD231PS Y15, Y14, Y11

reduce:
	// Each sum is ((l0+l1)+(l2+l3)) + ((l4+l5)+(l6+l7)) of its lanes,
	// then plus the bias: the same order for every row and column.
	VXORPS Y15, Y15, Y15
	TESTQ BX, BX
	JZ   store
	VMOVUPS (BX), X15

store:
	VHADDPS Y3, Y0, Y12
	VHADDPS Y9, Y6, Y13
	VHADDPS Y13, Y12, Y12
	VEXTRACTF128 $1, Y12, X13
	VADDPS X13, X12, X12
	VADDPS X15, X12, X12
	VMOVUPS X12, (DX)
	VHADDPS Y4, Y1, Y12
	VHADDPS Y10, Y7, Y13
	VHADDPS Y13, Y12, Y12
	VEXTRACTF128 $1, Y12, X13
	VADDPS X13, X12, X12
	VADDPS X15, X12, X12
	VMOVUPS X12, (DX)(R11*1)
	VHADDPS Y5, Y2, Y12
	VHADDPS Y11, Y8, Y13
	VHADDPS Y13, Y12, Y12
	VEXTRACTF128 $1, Y12, X13
	VADDPS X13, X12, X12
	VADDPS X15, X12, X12
	VMOVUPS X12, (DX)(R11*2)
	VZEROUPPER
	RET

// func dot4x3h(k int, x *float32, xs int, w *uint16, ws int, dst *float32, ds int, bias *float32)
//
// dot4x3 with w in float16, widened exactly to float32 as it is loaded
// (F16C), for k a multiple of 8: the same operations in the same order.
TEXT ·dot4x3h(SB), NOSPLIT, $0-64
	MOVQ k+0(FP), CX
	MOVQ x+8(FP), SI
	MOVQ xs+16(FP), R8
	MOVQ w+24(FP), DI
	MOVQ ws+32(FP), R9
	MOVQ dst+40(FP), DX
	MOVQ ds+48(FP), R11
	MOVQ bias+56(FP), BX
	SHLQ $2, R8
	SHLQ $1, R9
	SHLQ $2, R11
	LEAQ (DI)(R9*2), R10
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	MOVQ CX, AX
	SHRQ $3, AX
	JZ   hreduce

hloop:
	VMOVUPS (SI), Y12
	VMOVUPS (SI)(R8*1), Y13
	VMOVUPS (SI)(R8*2), Y14
	VCVTPH2PS (DI), Y15
	VFMADD231PS Y15, Y12, Y0
	VFMADD231PS Y15, Y13, Y1
	VFMADD231PS Y15, Y14, Y2
	VCVTPH2PS (DI)(R9*1), Y15
	VFMADD231PS Y15, Y12, Y3
	VFMADD231PS Y15, Y13, Y4
	VFMADD231PS Y15, Y14, Y5
	VCVTPH2PS (R10), Y15
	VFMADD231PS Y15, Y12, Y6
	VFMADD231PS Y15, Y13, Y7
	VFMADD231PS Y15, Y14, Y8
	VCVTPH2PS (R10)(R9*1), Y15
	VFMADD231PS Y15, Y12, Y9
	VFMADD231PS Y15, Y13, Y10
	VFMADD231PS Y15, Y14, Y11
	ADDQ $32, SI
	ADDQ $16, DI
	ADDQ $16, R10
	DECQ AX
	JNZ  hloop

hreduce:
	// Each sum is ((l0+l1)+(l2+l3)) + ((l4+l5)+(l6+l7)) of its lanes,
	// then plus the bias: the same order for every row and column.
	VXORPS Y15, Y15, Y15
	TESTQ BX, BX
	JZ   hstore
	VMOVUPS (BX), X15

hstore:
	VHADDPS Y3, Y0, Y12
	VHADDPS Y9, Y6, Y13
	VHADDPS Y13, Y12, Y12
	VEXTRACTF128 $1, Y12, X13
	VADDPS X13, X12, X12
	VADDPS X15, X12, X12
	VMOVUPS X12, (DX)
	VHADDPS Y4, Y1, Y12
	VHADDPS Y10, Y7, Y13
	VHADDPS Y13, Y12, Y12
	VEXTRACTF128 $1, Y12, X13
	VADDPS X13, X12, X12
	VADDPS X15, X12, X12
	VMOVUPS X12, (DX)(R11*1)
	VHADDPS Y5, Y2, Y12
	VHADDPS Y11, Y8, Y13
	VHADDPS Y13, Y12, Y12
	VEXTRACTF128 $1, Y12, X13
	VADDPS X13, X12, X12
	VADDPS X15, X12, X12
	VMOVUPS X12, (DX)(R11*2)
	VZEROUPPER
	RET

// func cpuid1ECX() uint32
TEXT ·cpuid1ECX(SB), NOSPLIT, $0-4
	MOVL $1, AX
	XORL CX, CX
	CPUID
	MOVL CX, ret+0(FP)
	RET
