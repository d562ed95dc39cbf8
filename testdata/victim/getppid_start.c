// getppid_start: a program without libc or loader whose only syscalls are one getppid and exit,
// for profiler's TestCPUCacheAcrossExec (its getppid is its first syscall after the exec).
void _start(void)
{
	long r;
	__asm__ volatile("syscall" : "=a"(r) : "a"(110L) : "rcx", "r11", "memory");
	__asm__ volatile("syscall" : : "a"(60L), "D"(0L) : "rcx", "r11", "memory");
	for (;;)
		;
}
