//go:build !purego

#include "textflag.h"

// expConst holds, as float32 bits unless said otherwise: −∞, the lower
// clamp of exp's argument (ln 2⁻¹²⁶, so that 2ⁿ stays a normal number),
// log₂e, ln 2 split in a high part (exact in 9 bits) and the rest, the
// six coefficients of exp's polynomial on [−ln2/2, ln2/2] (Cephes' expf),
// 1, and the int32 127 (the float32 exponent bias).
DATA expConst<>+0(SB)/4, $0xff800000
DATA expConst<>+4(SB)/4, $0xc2aeac4f
DATA expConst<>+8(SB)/4, $0x3fb8aa3b
DATA expConst<>+12(SB)/4, $0x3f318000
DATA expConst<>+16(SB)/4, $0xb95e8083
DATA expConst<>+20(SB)/4, $0x39506967
DATA expConst<>+24(SB)/4, $0x3ab743ce
DATA expConst<>+28(SB)/4, $0x3c088908
DATA expConst<>+32(SB)/4, $0x3d2aa9c1
DATA expConst<>+36(SB)/4, $0x3e2aaaaa
DATA expConst<>+40(SB)/4, $0x3f000000
DATA expConst<>+44(SB)/4, $0x3f800000
DATA expConst<>+48(SB)/4, $127
GLOBL expConst<>(SB), RODATA|NOPTR, $52

// lanes holds the int32 lane numbers 0–7: a lane is in the tail of a row
// of n floats when n mod 8 is greater than its number.
DATA lanes<>+0(SB)/4, $0
DATA lanes<>+4(SB)/4, $1
DATA lanes<>+8(SB)/4, $2
DATA lanes<>+12(SB)/4, $3
DATA lanes<>+16(SB)/4, $4
DATA lanes<>+20(SB)/4, $5
DATA lanes<>+24(SB)/4, $6
DATA lanes<>+28(SB)/4, $7
GLOBL lanes<>(SB), RODATA|NOPTR, $32

// EXP sets Y3 to exp(Y1) in eight lanes (Y1 ≤ 0 or NaN; it is clobbered,
// as are Y2, Y4 and Y14). Y5–Y12 hold log₂e, ln 2 (high), ln 2 (rest)
// and the polynomial's first five coefficients. exp(x) = 2ⁿ·e^r with
// n = round(x·log₂e) and r = x − n·ln 2 in two steps, e^r ≈
// 1 + r + r²·p(r); arguments below ln 2⁻¹²⁶ are raised to it (their
// exp is under 1.2e−38). A NaN stays a NaN.
#define EXP \
	VBROADCASTSS expConst<>+4(SB), Y14 \
	VMAXPS       Y1, Y14, Y1           \
	VMULPS       Y5, Y1, Y2            \
	VROUNDPS     $0, Y2, Y2            \
	VFNMADD231PS Y6, Y2, Y1            \
	VFNMADD231PS Y7, Y2, Y1            \
	VMOVAPS      Y8, Y3                \
	VFMADD213PS  Y9, Y1, Y3            \
	VFMADD213PS  Y10, Y1, Y3           \
	VFMADD213PS  Y11, Y1, Y3           \
	VFMADD213PS  Y12, Y1, Y3           \
	VBROADCASTSS expConst<>+40(SB), Y14 \
	VFMADD213PS  Y14, Y1, Y3           \
	VMULPS       Y1, Y1, Y4            \
	VFMADD213PS  Y1, Y4, Y3            \
	VBROADCASTSS expConst<>+44(SB), Y14 \
	VADDPS       Y14, Y3, Y3           \
	VCVTPS2DQ    Y2, Y2                \
	VPBROADCASTD expConst<>+48(SB), Y14 \
	VPADDD       Y14, Y2, Y2           \
	VPSLLD       $23, Y2, Y2           \
	VMULPS       Y2, Y3, Y3

// func softmaxAVX(x *float32, n int)
//
// x[i] = exp(x[i] − m) / Σⱼ exp(x[j] − m) for the n ≥ 1 floats of x,
// m their largest. DI walks x; AX counts full blocks of eight, DX is n
// mod 8 and Y15 the mask of its lanes. Y0 holds m, Y13 the sums (eight
// lanes, added in a fixed order at the end).
TEXT ·softmaxAVX(SB), NOSPLIT, $0-16
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	MOVQ CX, DX
	ANDQ $7, DX
	VMOVQ DX, X15
	VPBROADCASTD X15, Y15
	VMOVDQU lanes<>(SB), Y14
	VPCMPGTD Y14, Y15, Y15

	// The largest element.
	VBROADCASTSS expConst<>+0(SB), Y0
	MOVQ SI, DI
	MOVQ CX, AX
	SHRQ $3, AX
	JZ   maxtail

maxloop:
	VMOVUPS (DI), Y1
	VMAXPS  Y1, Y0, Y0
	ADDQ    $32, DI
	DECQ    AX
	JNZ     maxloop

maxtail:
	TESTQ DX, DX
	JZ    maxreduce
	VMASKMOVPS (DI), Y15, Y1
	VBROADCASTSS expConst<>+0(SB), Y14
	VBLENDVPS Y15, Y1, Y14, Y1
	VMAXPS Y1, Y0, Y0

maxreduce:
	VEXTRACTF128 $1, Y0, X1
	VMAXPS       X1, X0, X0
	VPERMILPS    $0x4e, X0, X1
	VMAXPS       X1, X0, X0
	VPERMILPS    $0xb1, X0, X1
	VMAXPS       X1, X0, X0
	VBROADCASTSS X0, Y0

	// exp(x − m), stored, and their sum.
	VBROADCASTSS expConst<>+8(SB), Y5
	VBROADCASTSS expConst<>+12(SB), Y6
	VBROADCASTSS expConst<>+16(SB), Y7
	VBROADCASTSS expConst<>+20(SB), Y8
	VBROADCASTSS expConst<>+24(SB), Y9
	VBROADCASTSS expConst<>+28(SB), Y10
	VBROADCASTSS expConst<>+32(SB), Y11
	VBROADCASTSS expConst<>+36(SB), Y12
	VXORPS Y13, Y13, Y13
	MOVQ SI, DI
	MOVQ CX, AX
	SHRQ $3, AX
	JZ   exptail

exploop:
	VMOVUPS (DI), Y1
	VSUBPS  Y0, Y1, Y1
	EXP
	VMOVUPS Y3, (DI)
	VADDPS  Y3, Y13, Y13
	ADDQ    $32, DI
	DECQ    AX
	JNZ     exploop

exptail:
	TESTQ DX, DX
	JZ    sumreduce
	VMASKMOVPS (DI), Y15, Y1
	VSUBPS Y0, Y1, Y1
	EXP
	VANDPS Y15, Y3, Y3
	VMASKMOVPS Y3, Y15, (DI)
	VADDPS Y3, Y13, Y13

sumreduce:
	// ((l0+l4) + (l1+l5)) + ((l2+l6) + (l3+l7)), then 1/sum.
	VEXTRACTF128 $1, Y13, X1
	VADDPS       X1, X13, X13
	VHADDPS      X13, X13, X13
	VHADDPS      X13, X13, X13
	VBROADCASTSS expConst<>+44(SB), X1
	VDIVSS       X13, X1, X1
	VBROADCASTSS X1, Y1

	// Scale.
	MOVQ SI, DI
	MOVQ CX, AX
	SHRQ $3, AX
	JZ   scaletail

scaleloop:
	VMULPS  (DI), Y1, Y2
	VMOVUPS Y2, (DI)
	ADDQ    $32, DI
	DECQ    AX
	JNZ     scaleloop

scaletail:
	TESTQ DX, DX
	JZ    done
	VMASKMOVPS (DI), Y15, Y2
	VMULPS Y2, Y1, Y2
	VMASKMOVPS Y2, Y15, (DI)

done:
	VZEROUPPER
	RET
