//go:build !purego

#include "textflag.h"

// func qdot4x2(k int, x *int16, xs int, w *int16, dst *float32, ds int, sw *float32, bias *float32, s0, s1 float32)
//
// Two rows of x (SI, SI+R8) against four rows of w (DI, DI+R9, R10,
// R10+R9; the rows of w are k apart), for k a positive multiple of 16.
// Y(2c+r) sums row r against row c in eight int32 lanes (VPMADDWD then
// VPADDD) over a block of at most 256 elements; each block's lanes are
// added up (exact: a block's sum fits in int32), converted to float32 and
// added to X12 (row 0) or X13 (row 1). Then dst = acc·(s_r·sw[c]) +
// bias[c].
TEXT ·qdot4x2(SB), NOSPLIT, $0-72
	MOVQ k+0(FP), CX
	MOVQ x+8(FP), SI
	MOVQ xs+16(FP), R8
	MOVQ w+24(FP), DI
	MOVQ dst+32(FP), DX
	MOVQ ds+40(FP), R11
	SHLQ $1, R8
	MOVQ CX, R9
	SHLQ $1, R9
	SHLQ $2, R11
	LEAQ (DI)(R9*2), R10
	MOVQ $256, AX
	VXORPS X12, X12, X12
	VXORPS X13, X13, X13

qblock:
	MOVQ CX, BX
	CMPQ BX, AX
	CMOVQGT AX, BX
	SUBQ BX, CX
	SHRQ $4, BX
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	VPXOR Y4, Y4, Y4
	VPXOR Y5, Y5, Y5
	VPXOR Y6, Y6, Y6
	VPXOR Y7, Y7, Y7

qloop:
	VMOVDQU (SI), Y8
	VMOVDQU (SI)(R8*1), Y9
	VMOVDQU (DI), Y10
	VPMADDWD Y10, Y8, Y11
	VPADDD Y11, Y0, Y0
	VPMADDWD Y10, Y9, Y11
	VPADDD Y11, Y1, Y1
	VMOVDQU (DI)(R9*1), Y10
	VPMADDWD Y10, Y8, Y11
	VPADDD Y11, Y2, Y2
	VPMADDWD Y10, Y9, Y11
	VPADDD Y11, Y3, Y3
	VMOVDQU (R10), Y10
	VPMADDWD Y10, Y8, Y11
	VPADDD Y11, Y4, Y4
	VPMADDWD Y10, Y9, Y11
	VPADDD Y11, Y5, Y5
	VMOVDQU (R10)(R9*1), Y10
	VPMADDWD Y10, Y8, Y11
	VPADDD Y11, Y6, Y6
	VPMADDWD Y10, Y9, Y11
	VPADDD Y11, Y7, Y7
	ADDQ $32, SI
	ADDQ $32, DI
	ADDQ $32, R10
	DECQ BX
	JNZ  qloop

	VPHADDD Y2, Y0, Y14
	VPHADDD Y6, Y4, Y15
	VPHADDD Y15, Y14, Y14
	VEXTRACTI128 $1, Y14, X15
	VPADDD X15, X14, X14
	VCVTDQ2PS X14, X14
	VADDPS X14, X12, X12
	VPHADDD Y3, Y1, Y14
	VPHADDD Y7, Y5, Y15
	VPHADDD Y15, Y14, Y14
	VEXTRACTI128 $1, Y14, X15
	VPADDD X15, X14, X14
	VCVTDQ2PS X14, X14
	VADDPS X14, X13, X13
	TESTQ CX, CX
	JNZ  qblock

	// dst = acc·(s_r·sw) + bias, each rounded.
	MOVQ sw+48(FP), AX
	MOVQ bias+56(FP), BX
	VMOVUPS (AX), X14
	VBROADCASTSS s0+64(FP), X15
	VMULPS X14, X15, X15
	VMULPS X15, X12, X12
	VADDPS (BX), X12, X12
	VMOVUPS X12, (DX)
	VBROADCASTSS s1+68(FP), X15
	VMULPS X14, X15, X15
	VMULPS X15, X13, X13
	VADDPS (BX), X13, X13
	VMOVUPS X13, (DX)(R11*1)
	VZEROUPPER
	RET

// func qdot4x3v(k int, x *int16, xs int, w *int16, dst *float32, ds int, sw *float32, bias *float32, s0, s1, s2 float32)
//
// qdot4x2 for three rows of x (SI, SI+R8, SI+2·R8) with AVX-512 VNNI:
// VPDPWSSD multiplies and adds in one instruction, into Y(3c+r); the
// float32 sums are in X16–X18 (EVEX). The same exact block sums, so the
// same bits.
TEXT ·qdot4x3v(SB), NOSPLIT, $0-76
	MOVQ k+0(FP), CX
	MOVQ x+8(FP), SI
	MOVQ xs+16(FP), R8
	MOVQ w+24(FP), DI
	MOVQ dst+32(FP), DX
	MOVQ ds+40(FP), R11
	SHLQ $1, R8
	MOVQ CX, R9
	SHLQ $1, R9
	SHLQ $2, R11
	LEAQ (DI)(R9*2), R10
	MOVQ $256, AX
	VXORPS X16, X16, X16
	VXORPS X17, X17, X17
	VXORPS X18, X18, X18

vblock:
	MOVQ CX, BX
	CMPQ BX, AX
	CMOVQGT AX, BX
	SUBQ BX, CX
	SHRQ $4, BX
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	VPXOR Y4, Y4, Y4
	VPXOR Y5, Y5, Y5
	VPXOR Y6, Y6, Y6
	VPXOR Y7, Y7, Y7
	VPXOR Y8, Y8, Y8
	VPXOR Y9, Y9, Y9
	VPXOR Y10, Y10, Y10
	VPXOR Y11, Y11, Y11

vloop:
	VMOVDQU (SI), Y12
	VMOVDQU (SI)(R8*1), Y13
	VMOVDQU (SI)(R8*2), Y14
	VMOVDQU (DI), Y15
	VPDPWSSD Y15, Y12, Y0
	VPDPWSSD Y15, Y13, Y1
	VPDPWSSD Y15, Y14, Y2
	VMOVDQU (DI)(R9*1), Y15
	VPDPWSSD Y15, Y12, Y3
	VPDPWSSD Y15, Y13, Y4
	VPDPWSSD Y15, Y14, Y5
	VMOVDQU (R10), Y15
	VPDPWSSD Y15, Y12, Y6
	VPDPWSSD Y15, Y13, Y7
	VPDPWSSD Y15, Y14, Y8
	VMOVDQU (R10)(R9*1), Y15
	VPDPWSSD Y15, Y12, Y9
	VPDPWSSD Y15, Y13, Y10
	VPDPWSSD Y15, Y14, Y11
	ADDQ $32, SI
	ADDQ $32, DI
	ADDQ $32, R10
	DECQ BX
	JNZ  vloop

	VPHADDD Y3, Y0, Y12
	VPHADDD Y9, Y6, Y13
	VPHADDD Y13, Y12, Y12
	VEXTRACTI128 $1, Y12, X13
	VPADDD X13, X12, X12
	VCVTDQ2PS X12, X12
	VADDPS X12, X16, X16
	VPHADDD Y4, Y1, Y12
	VPHADDD Y10, Y7, Y13
	VPHADDD Y13, Y12, Y12
	VEXTRACTI128 $1, Y12, X13
	VPADDD X13, X12, X12
	VCVTDQ2PS X12, X12
	VADDPS X12, X17, X17
	VPHADDD Y5, Y2, Y12
	VPHADDD Y11, Y8, Y13
	VPHADDD Y13, Y12, Y12
	VEXTRACTI128 $1, Y12, X13
	VPADDD X13, X12, X12
	VCVTDQ2PS X12, X12
	VADDPS X12, X18, X18
	TESTQ CX, CX
	JNZ  vblock

	MOVQ sw+48(FP), AX
	MOVQ bias+56(FP), BX
	VMOVUPS (AX), X14
	VMOVUPS (BX), X15
	VBROADCASTSS s0+64(FP), X12
	VMULPS X14, X12, X12
	VMULPS X12, X16, X16
	VADDPS X15, X16, X16
	VMOVUPS X16, (DX)
	VBROADCASTSS s1+68(FP), X12
	VMULPS X14, X12, X12
	VMULPS X12, X17, X17
	VADDPS X15, X17, X17
	VMOVUPS X17, (DX)(R11*1)
	VBROADCASTSS s2+72(FP), X12
	VMULPS X14, X12, X12
	VMULPS X12, X18, X18
	VADDPS X15, X18, X18
	VMOVUPS X18, (DX)(R11*2)
	VZEROUPPER
	RET

// func qmaxbits(x *float32, n int) uint32
//
// The largest of the n floats' magnitudes, as bits (n a positive multiple
// of 8): the sign bits cleared, each is a non-negative int32 whose order
// is the magnitudes' (a NaN's or an infinity's is the largest). AVX2.
TEXT ·qmaxbits(SB), NOSPLIT, $0-20
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	SHRQ $3, CX
	MOVL $0x7fffffff, AX
	VMOVD AX, X1
	VPBROADCASTD X1, Y1
	VPXOR Y0, Y0, Y0

mloop:
	VPAND (SI), Y1, Y2
	VPMAXSD Y2, Y0, Y0
	ADDQ $32, SI
	DECQ CX
	JNZ  mloop
	VEXTRACTI128 $1, Y0, X2
	VPMAXSD X2, X0, X0
	VPSHUFD $0x4e, X0, X2
	VPMAXSD X2, X0, X0
	VPSHUFD $0xb1, X0, X2
	VPMAXSD X2, X0, X0
	VMOVD X0, AX
	MOVL AX, ret+16(FP)
	VZEROUPPER
	RET

// func qround(q *int16, x *float32, n int, inv float32)
//
// q[i] = x[i]·inv rounded to the nearest integer, ties to even (the
// default rounding of VCVTPS2DQ), clamped to ±2895, for n a positive
// multiple of 8. AVX2.
TEXT ·qround(SB), NOSPLIT, $0-28
	MOVQ q+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	VBROADCASTSS inv+24(FP), Y1
	MOVL $2895, AX
	VMOVD AX, X2
	VPBROADCASTD X2, Y2
	MOVL $-2895, AX
	VMOVD AX, X3
	VPBROADCASTD X3, Y3

rloop:
	VMULPS (SI), Y1, Y0
	VCVTPS2DQ Y0, Y0
	VPMINSD Y2, Y0, Y0
	VPMAXSD Y3, Y0, Y0
	VEXTRACTI128 $1, Y0, X4
	VPACKSSDW X4, X0, X0
	VMOVDQU X0, (DI)
	ADDQ $32, SI
	ADDQ $16, DI
	DECQ CX
	JNZ  rloop
	VZEROUPPER
	RET
