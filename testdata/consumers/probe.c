// probe: what the export consumer tests run in runc, crun, bwrap and sysprof enforce. Each
// argument is an action; each prints "ACTION: ok" or "ACTION: ERRNO" (the errno's name), so
// that a test can compare consumers line by line.
//
//   ok       what a learn run sees: an AF_UNIX socket, ioctl TCGETS, a fork (clone without
//            namespace flags)
//   ok-inet  ok, plus an AF_INET socket (no connect)
//   clone-ns clone(CLONE_NEWUSER)      tiocsti  ioctl(/dev/null, TIOCSTI)
//   tiocsti-hi ioctl with TIOCSTI|1<<32  inet  socket(AF_INET)
//   mptcp    socket(AF_INET, SOCK_STREAM, IPPROTO_MPTCP)   mptcp-hi  protocol|1<<32
//   int80    the i386 getpid through int 0x80
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

static void result(const char *what, long rc)
{
	if (rc < 0)
		printf("%s: %s\n", what, strerrorname_np(errno));
	else
		printf("%s: ok\n", what);
	fflush(stdout);
}

static long sock(long domain, long type, long proto)
{
	long fd = syscall(SYS_socket, domain, type, proto);
	if (fd >= 0)
		close(fd);
	return fd;
}

static long fork_wait(unsigned long flags)
{
	long pid = syscall(SYS_clone, flags | SIGCHLD, 0, 0, 0, 0);
	if (pid == 0)
		_exit(0);
	if (pid > 0)
		waitpid(pid, NULL, 0);
	return pid;
}

static long int80_getpid(void)
{
	long ret;
	__asm__ volatile("int $0x80" : "=a"(ret) : "a"(20) : "memory");
	if (ret < 0) {
		errno = -ret;
		return -1;
	}
	return ret;
}

int main(int argc, char **argv)
{
	int null = open("/dev/null", O_RDONLY);
	char c = 'x';
	struct termios t;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "ok") || !strcmp(a, "ok-inet")) {
			sock(AF_UNIX, SOCK_STREAM, 0);
			ioctl(null, TCGETS, &t); // ENOTTY: what counts is that the call is made
			if (!strcmp(a, "ok-inet"))
				sock(AF_INET, SOCK_STREAM, 0);
			result(a, fork_wait(0));
		} else if (!strcmp(a, "clone-ns")) {
			result(a, fork_wait(CLONE_NEWUSER));
		} else if (!strcmp(a, "tiocsti")) {
			result(a, syscall(SYS_ioctl, null, (unsigned long)TIOCSTI, &c));
		} else if (!strcmp(a, "tiocsti-hi")) {
			result(a, syscall(SYS_ioctl, null, (1UL << 32) | TIOCSTI, &c));
		} else if (!strcmp(a, "inet")) {
			result(a, sock(AF_INET, SOCK_STREAM, 0));
		} else if (!strcmp(a, "mptcp")) {
			result(a, sock(AF_INET, SOCK_STREAM, 262));
		} else if (!strcmp(a, "mptcp-hi")) {
			result(a, sock(AF_INET, SOCK_STREAM, (1L << 32) | 262));
		} else if (!strcmp(a, "int80")) {
			result(a, int80_getpid());
		} else {
			fprintf(stderr, "probe: unknown action %s\n", a);
			return 100;
		}
	}
	return 0;
}
