//go:build !purego

#include "textflag.h"

// func sumF64(x *float32, n int) float64
//
// Σ x[i] in float64 for n a positive multiple of 8: each float widened
// exactly, summed in eight lanes (i mod 8), the lanes added in a fixed
// order.
TEXT ·sumF64(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	SHRQ $3, CX
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1

sumloop:
	VCVTPS2PD (SI), Y2
	VCVTPS2PD 16(SI), Y3
	VADDPD Y2, Y0, Y0
	VADDPD Y3, Y1, Y1
	ADDQ $32, SI
	DECQ CX
	JNZ  sumloop

	VADDPD Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPD X1, X0, X0
	VHADDPD X0, X0, X0
	VMOVSD X0, ret+16(FP)
	VZEROUPPER
	RET

// func sqDevF64(x *float32, n int, mean float32) float64
//
// Σ float64(x[i] − mean)² for n a positive multiple of 8: the difference
// in float32, then widened and squared and summed in float64 in eight
// lanes as sumF64 does.
TEXT ·sqDevF64(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	SHRQ $3, CX
	VBROADCASTSS mean+16(FP), Y4
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1

sqloop:
	VMOVUPS (SI), Y5
	VSUBPS Y4, Y5, Y5
	VCVTPS2PD X5, Y2
	VEXTRACTF128 $1, Y5, X5
	VCVTPS2PD X5, Y3
	VMULPD Y2, Y2, Y2
	VMULPD Y3, Y3, Y3
	VADDPD Y2, Y0, Y0
	VADDPD Y3, Y1, Y1
	ADDQ $32, SI
	DECQ CX
	JNZ  sqloop

	VADDPD Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPD X1, X0, X0
	VHADDPD X0, X0, X0
	VMOVSD X0, ret+24(FP)
	VZEROUPPER
	RET

// func lnApply(y, x, gain, bias *float32, n int, mean, scale float32)
//
// y[i] = gain[i]·scale·(x[i] − mean) + bias[i] for n a positive multiple of 8, each
// step rounded to float32 in that order (no fused multiply-add), as
// layerNorm's plain-Go loop computes it.
TEXT ·lnApply(SB), NOSPLIT, $0-48
	MOVQ y+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ gain+16(FP), R8
	MOVQ bias+24(FP), R9
	MOVQ n+32(FP), CX
	SHRQ $3, CX
	VBROADCASTSS mean+40(FP), Y4
	VBROADCASTSS scale+44(FP), Y5

applyloop:
	VMULPS (R8), Y5, Y0
	VMOVUPS (SI), Y1
	VSUBPS Y4, Y1, Y1
	VMULPS Y1, Y0, Y0
	VADDPS (R9), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	ADDQ $32, SI
	ADDQ $32, R8
	ADDQ $32, R9
	DECQ CX
	JNZ  applyloop
	VZEROUPPER
	RET

// func reluAVX(x *float32, n int)
//
// x[i] = max(x[i], 0) for n a multiple of 8, a NaN kept (a −0 may stay
// −0, which no product or sum tells from +0).
TEXT ·reluAVX(SB), NOSPLIT, $0-16
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	SHRQ $5, CX
	JZ   relutail
	VXORPS Y4, Y4, Y4

reluloop:
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VMAXPS Y0, Y4, Y0
	VMAXPS Y1, Y4, Y1
	VMAXPS Y2, Y4, Y2
	VMAXPS Y3, Y4, Y3
	VMOVUPS Y0, (SI)
	VMOVUPS Y1, 32(SI)
	VMOVUPS Y2, 64(SI)
	VMOVUPS Y3, 96(SI)
	ADDQ $128, SI
	DECQ CX
	JNZ  reluloop

relutail:
	MOVQ n+8(FP), CX
	ANDQ $31, CX
	SHRQ $3, CX
	JZ   reludone
	VXORPS Y4, Y4, Y4

relu8:
	VMOVUPS (SI), Y0
	VMAXPS Y0, Y4, Y0
	VMOVUPS Y0, (SI)
	ADDQ $32, SI
	DECQ CX
	JNZ  relu8

reludone:
	VZEROUPPER
	RET
