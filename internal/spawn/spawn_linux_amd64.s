#include "textflag.h"

// func rawSpawn(ca *cloneArgs, size uintptr, ops *op, n uintptr, res *result) (pid uintptr, errno uintptr)
//
// The child shares the parent's memory (CLONE_VM), and without CLONE_VFORK runs beside the
// parent's thread, whose goroutine stack it starts on and which may move: it uses registers
// only (R12: the next op, R13: ops left, BX: res, all on the heap), never the stack, and calls
// nothing; each op is {nr, a0..a5, ignore} (64 bytes).
TEXT ·rawSpawn(SB),NOSPLIT|NOFRAME,$0-56
	MOVQ	ca+0(FP), DI
	MOVQ	size+8(FP), SI
	MOVQ	ops+16(FP), R12
	MOVQ	n+24(FP), R13
	MOVQ	res+32(FP), BX
	MOVQ	$435, AX	// SYS_clone3
	SYSCALL
	CMPQ	AX, $0
	JEQ	child
	CMPQ	AX, $-4095
	JCS	parent
	NEGQ	AX
	MOVQ	$0, pid+40(FP)
	MOVQ	AX, errno+48(FP)
	RET
parent:
	MOVQ	AX, pid+40(FP)
	MOVQ	$0, errno+48(FP)
	RET
child:
	TESTQ	R13, R13
	JEQ	exit
	MOVQ	0(R12), AX
	MOVQ	8(R12), DI
	MOVQ	16(R12), SI
	MOVQ	24(R12), DX
	MOVQ	32(R12), R10
	MOVQ	40(R12), R8
	MOVQ	48(R12), R9
	SYSCALL
	CMPQ	AX, $-4095
	JCS	next
	MOVQ	56(R12), CX
	TESTQ	CX, CX
	JNE	next
	NEGQ	AX
	MOVQ	AX, 0(BX)	// res.errno
	MOVQ	R13, 8(BX)	// res.left
	JMP	exit
next:
	ADDQ	$64, R12
	DECQ	R13
	JMP	child
exit:
	MOVQ	$127, DI
	MOVQ	$231, AX	// SYS_exit_group
	SYSCALL
	INT	$3
