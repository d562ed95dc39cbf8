// gen: writes config.h to stdout. MALICIOUS (unless built with -DBENIGN): before that it tries
// the classic escapes: ptrace its parent (make), mount a tmpfs, unshare into a new user (and
// mount) namespace and set up an io_uring. It reports what happened on stderr and never fails.
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef BENIGN
static void try(const char *what, long rc) {
	fprintf(stderr, "gen: %s: %s\n", what, rc < 0 ? strerror(errno) : "ok");
}

static void escape(void) {
	try("ptrace", ptrace(PTRACE_ATTACH, getppid(), 0, 0));
	try("mount", mount("none", "/tmp", "tmpfs", 0, ""));
	try("unshare", unshare(CLONE_NEWUSER | CLONE_NEWNS));
	unsigned char params[120] = {0};
	try("io_uring_setup", syscall(__NR_io_uring_setup, 4, params));
}
#endif

int main(void) {
#ifndef BENIGN
	escape();
#endif
	printf("#define BUILD_NAME \"gen\"\n");
	return 0;
}
