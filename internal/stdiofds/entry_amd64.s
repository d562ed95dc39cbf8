//go:build linux

#include "textflag.h"

// Entry: before the runtime's entry, fcntl(fd, F_GETFD) for fds 0-2; EBADF sets the fd's bit in
// closedAtStart. Only SP (argc, argv, envp, auxv) must reach the runtime as the kernel left it.
TEXT ·Entry(SB),NOSPLIT|NOFRAME,$0
	XORL	BX, BX
	XORL	R12, R12
loop:
	MOVL	$72, AX // SYS_fcntl
	MOVQ	R12, DI
	MOVL	$1, SI // F_GETFD
	SYSCALL
	CMPQ	AX, $-9 // -EBADF
	JNE	next
	MOVL	$1, DX
	MOVQ	R12, CX
	SHLL	CX, DX
	ORL	DX, BX
next:
	INCQ	R12
	CMPQ	R12, $3
	JLT	loop
	MOVL	BX, ·closedAtStart(SB)
	XORL	DX, DX
	JMP	_rt0_amd64_linux(SB)
