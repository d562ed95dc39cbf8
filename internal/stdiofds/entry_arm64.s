//go:build linux

#include "textflag.h"

// Entry: before the runtime's entry, fcntl(fd, F_GETFD) for fds 0-2; EBADF sets the fd's bit in
// closedAtStart. Only RSP (argc, argv, envp, auxv) must reach the runtime as the kernel left it.
TEXT ·Entry(SB),NOSPLIT|NOFRAME,$0
	MOVD	$0, R4
	MOVD	$0, R5
loop:
	MOVD	R5, R0
	MOVD	$1, R1 // F_GETFD
	MOVD	$0, R2
	MOVD	$25, R8 // SYS_fcntl
	SVC
	CMN	$9, R0 // -EBADF
	BNE	next
	MOVD	$1, R6
	LSL	R5, R6, R6
	ORR	R6, R4, R4
next:
	ADD	$1, R5, R5
	CMP	$3, R5
	BLT	loop
	MOVW	R4, ·closedAtStart(SB)
	MOVD	$0, R0
	B	_rt0_arm64_linux(SB)
