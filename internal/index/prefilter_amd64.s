//go:build !purego

#include "textflag.h"

// func qdotsAsm(rows unsafe.Pointer, n, stride int, q *int16, m, kp int, out *int32)
//
// Registers: SI walks the qvecs (R8 apart), BX is a row's int8s, DX a
// query's int16s, AX the byte offset into the row, R13 the elements left,
// DI the next output. Y0 and Y1 accumulate eight int32 lanes each.
TEXT ·qdotsAsm(SB), NOSPLIT, $0-56
	MOVQ rows+0(FP), SI
	MOVQ n+8(FP), CX
	MOVQ stride+16(FP), R8
	MOVQ q+24(FP), R9
	MOVQ m+32(FP), R10
	MOVQ kp+40(FP), R11
	MOVQ out+48(FP), DI
	TESTQ CX, CX
	JZ   done
	TESTQ R10, R10
	JZ   done
	TESTQ R11, R11
	JZ   zeros

row:
	MOVQ (SI), BX
	MOVQ R9, DX
	MOVQ R10, R12

query:
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	XORQ AX, AX
	MOVQ R11, R13

inner:
	VPMOVSXBW (BX)(AX*1), Y2
	VPMOVSXBW 16(BX)(AX*1), Y3
	VPMADDWD (DX)(AX*2), Y2, Y2
	VPMADDWD 32(DX)(AX*2), Y3, Y3
	VPADDD Y2, Y0, Y0
	VPADDD Y3, Y1, Y1
	ADDQ $32, AX
	SUBQ $32, R13
	JNZ  inner

	VPADDD Y1, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDD X1, X0, X0
	VPSHUFD $0x4E, X0, X1
	VPADDD X1, X0, X0
	VPSHUFD $0xB1, X0, X1
	VPADDD X1, X0, X0
	VMOVD X0, (DI)
	ADDQ $4, DI
	LEAQ (DX)(R11*2), DX
	DECQ R12
	JNZ  query

	ADDQ R8, SI
	DECQ CX
	JNZ  row
	VZEROUPPER
	RET

zeros:
	// kp = 0: every dot product is 0.
	IMULQ R10, CX
zloop:
	MOVL $0, (DI)
	ADDQ $4, DI
	DECQ CX
	JNZ  zloop

done:
	RET
