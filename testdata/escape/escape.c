// escape: a victim for sysprof's enforcer tests. Each argument is one action; for each the
// program prints "ACTION: ok" or "ACTION: ERRNONAME" (and some print what they saw), then goes
// on with the next. It makes exactly the syscall an escape would make, nothing cleverer.
// "fork" runs the next action in a child; "linger" leaves a child behind; "daemon=FIFO" leaves
// a setsid, double-forked daemon behind holding FIFO open; "pause" waits for a signal.
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <sys/un.h>
#include <unistd.h>

#ifndef IPPROTO_MPTCP
#define IPPROTO_MPTCP 262
#endif
#define X32_BIT 0x40000000

static void result(const char *what, long rc) {
	if (rc < 0) {
		const char *n = strerrorname_np(errno);
		printf("%s: %s\n", what, n ? n : "E?");
	} else {
		printf("%s: ok\n", what);
	}
	fflush(stdout);
}

// i386 getpid through the 32-bit entry point.
static long int80_getpid(void) {
	long ret;
	__asm__ volatile("int $0x80" : "=a"(ret) : "a"(20) : "memory");
	if (ret < 0 && ret > -4096) {
		errno = -ret;
		return -1;
	}
	return ret;
}

// An i386 mapping through the 32-bit entry point: mmap2 (192) with its six arguments in
// registers, or the old mmap (90) with one pointer to them (below 4 GiB: MAP_32BIT).
static long int80_mmap(int old, unsigned prot, unsigned flags) {
	long ret;
	if (old) {
		unsigned *a = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
		if (a == MAP_FAILED)
			return -1;
		unsigned args[6] = {0, 4096, prot, flags, (unsigned)-1, 0};
		memcpy(a, args, sizeof args);
		__asm__ volatile("int $0x80" : "=a"(ret) : "a"(90), "b"((unsigned)(uintptr_t)a) : "memory");
	} else {
		// ebp is the sixth argument (the page offset): 0, saved around the call.
		__asm__ volatile("push %%rbp\n\txor %%ebp, %%ebp\n\tint $0x80\n\tpop %%rbp"
				 : "=a"(ret)
				 : "a"(192), "b"(0), "c"(4096), "d"(prot), "S"(flags), "D"(-1)
				 : "memory");
	}
	if (ret < 0 && ret > -4096) {
		errno = -ret;
		return -1;
	}
	return 0;
}

int main(int argc, char **argv) {
	int in_child = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "fork")) {
			// The next action runs in a child process; the parent waits for it.
			fflush(stdout);
			pid_t pid = fork();
			if (pid == 0) {
				in_child = 1;
				continue;
			}
			waitpid(pid, NULL, 0);
			i++;
			continue;
		}
		if (!strcmp(a, "linger")) {
			// Leave a child behind that outlives this process.
			if (fork() == 0) {
				for (;;) pause();
			}
			continue;
		}
		if (!strncmp(a, "daemon=", 7)) {
			// A daemon as a hostile tool makes one: fork, setsid, fork again, the middle
			// process exits. The daemon opens the FIFO named by the argument for writing (the
			// test sees EOF only once it is gone) and waits forever.
			int p[2];
			char c;
			if (pipe(p) < 0) { result("daemon", -1); continue; }
			fflush(stdout);
			pid_t mid = fork();
			if (mid == 0) {
				setsid();
				if (fork() == 0) {
					int fd = open(a + 7, O_WRONLY);
					write(p[1], fd < 0 ? "e" : "o", 1);
					for (;;) pause();
				}
				_exit(0);
			}
			close(p[1]);
			ssize_t n = read(p[0], &c, 1);
			waitpid(mid, NULL, 0);
			if (n == 1 && c == 'o') printf("daemon: ok\n");
			else printf("daemon: no FIFO\n");
			fflush(stdout);
			continue;
		}
		if (!strcmp(a, "pause")) {
			printf("paused\n");
			fflush(stdout);
			pause();
			continue;
		}
		char *arg = strchr(a, '=');
		char name[64];
		snprintf(name, sizeof name, "%.*s", arg ? (int)(arg - a) : (int)strlen(a), a);
		if (arg) arg++;
		errno = 0;
		if (!strcmp(name, "ok")) {
			printf("ok\n");
			fflush(stdout);
		} else if (!strcmp(name, "ptrace")) {
			result(name, ptrace(PTRACE_ATTACH, atoi(arg), 0, 0));
		} else if (!strcmp(name, "vmread")) {
			char buf[8], *remote = (char *)0x400000;
			struct iovec l = {buf, sizeof buf}, r = {remote, sizeof buf};
			result(name, process_vm_readv(atoi(arg), &l, 1, &r, 1, 0));
		} else if (!strcmp(name, "unshare-user")) {
			result(name, unshare(CLONE_NEWUSER));
		} else if (!strcmp(name, "setns")) {
			int fd = open("/proc/self/ns/uts", O_RDONLY);
			result(name, setns(fd, CLONE_NEWUTS));
		} else if (!strcmp(name, "mount")) {
			result(name, mount("none", "/tmp", "tmpfs", 0, NULL));
		} else if (!strcmp(name, "bpf")) {
			char attr[128] = {0};
			result(name, syscall(SYS_bpf, 0, attr, sizeof attr));
		} else if (!strcmp(name, "keyctl")) {
			result(name, syscall(SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */, -3, 0));
		} else if (!strcmp(name, "perf")) {
			struct perf_event_attr pe = {.type = PERF_TYPE_SOFTWARE, .size = sizeof pe, .config = PERF_COUNT_SW_CPU_CLOCK};
			result(name, syscall(SYS_perf_event_open, &pe, 0, -1, -1, 0));
		} else if (!strcmp(name, "iouring")) {
			char params[120] = {0};
			result(name, syscall(SYS_io_uring_setup, 1, params));
		} else if (!strcmp(name, "int80")) {
			result(name, int80_getpid());
		} else if (!strcmp(name, "int80-mmap2-exec") || !strcmp(name, "int80-mmap-exec") || !strcmp(name, "int80-mmap2-rw")) {
			int exec = strstr(name, "exec") != NULL;
			result(name, int80_mmap(!strcmp(name, "int80-mmap-exec"), PROT_READ | PROT_WRITE | (exec ? PROT_EXEC : 0),
					       MAP_PRIVATE | MAP_ANONYMOUS));
		} else if (!strcmp(name, "x32")) {
			result(name, syscall(X32_BIT | 39 /* getpid */));
		} else if (!strcmp(name, "clone-newns")) {
			long pid = syscall(SYS_clone, CLONE_NEWNS | SIGCHLD, 0, 0, 0, 0);
			if (pid == 0) _exit(0);
			if (pid > 0) waitpid(pid, NULL, 0);
			result(name, pid);
		} else if (!strcmp(name, "mptcp")) {
			result(name, socket(AF_INET, SOCK_STREAM, IPPROTO_MPTCP));
		} else if (!strcmp(name, "tcp")) {
			result(name, socket(AF_INET, SOCK_STREAM, 0));
		} else if (!strcmp(name, "sysinfo")) {
			char buf[256];
			result(name, syscall(SYS_sysinfo, buf));
		} else if (!strcmp(name, "tiocsti")) {
			char c = 'x';
			result(name, ioctl(0, TIOCSTI, &c));
		} else if (!strcmp(name, "fds")) {
			DIR *d = opendir("/proc/self/fd");
			if (!d) { result(name, -1); continue; }
			printf("fds:");
			struct dirent *e;
			while ((e = readdir(d))) {
				if (e->d_name[0] == '.' || atoi(e->d_name) == dirfd(d)) continue;
				printf(" %s", e->d_name);
			}
			printf("\n");
			rewinddir(d);
			printf("fdlinks:");
			while ((e = readdir(d))) {
				char path[300], target[256] = "?";
				if (e->d_name[0] == '.' || atoi(e->d_name) == dirfd(d)) continue;
				snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
				ssize_t n = readlink(path, target, sizeof target - 1);
				if (n >= 0) target[n] = 0;
				printf(" %s=%s", e->d_name, target);
			}
			printf("\n");
			fflush(stdout);
			closedir(d);
		} else if (!strcmp(name, "sid")) {
			printf("sid: %ld\n", (long)getsid(0));
			fflush(stdout);
		} else if (!strcmp(name, "exit")) {
			exit(atoi(arg));
		} else if (!strcmp(name, "kill-self")) {
			fflush(stdout);
			kill(getpid(), atoi(arg));
			pause();
		} else if (!strcmp(name, "read")) {
			int fd = open(arg, O_RDONLY);
			result(name, fd);
		} else if (!strcmp(name, "getenv")) {
			printf("getenv %s: %s\n", arg, getenv(arg) ? "set" : "unset");
			fflush(stdout);
		} else if (!strcmp(name, "cat")) {
			// Prints what the file holds (its first line, up to 200 bytes), or the errno.
			char buf[201] = {0};
			int fd = open(arg, O_RDONLY);
			if (fd < 0 || read(fd, buf, 200) < 0) { result(name, -1); continue; }
			buf[strcspn(buf, "\n")] = 0;
			printf("cat: [%s]\n", buf);
			fflush(stdout);
		} else if (!strcmp(name, "wait")) {
			// Says so, then waits for a line on stdin (the test's go-ahead).
			char c;
			printf("waiting\n");
			fflush(stdout);
			while (read(0, &c, 1) == 1 && c != '\n') {}
		} else if (!strcmp(name, "readlink")) {
			char target[256];
			ssize_t n = readlink(arg, target, sizeof target - 1);
			if (n < 0) { result(name, -1); continue; }
			target[n] = 0;
			printf("readlink: %s\n", target);
			fflush(stdout);
		} else if (!strcmp(name, "rewrite")) {
			// Write a file's own content back (harmless on a sysctl, should it get through).
			char buf[512];
			int fd = open(arg, O_RDONLY);
			if (fd < 0) { result(name, -1); continue; }
			ssize_t n = read(fd, buf, sizeof buf);
			close(fd);
			if (n <= 0) { result(name, -1); continue; }
			fd = open(arg, O_WRONLY);
			result(name, fd < 0 ? -1 : write(fd, buf, n));
		} else if (!strcmp(name, "write")) {
			int fd = open(arg, O_WRONLY | O_CREAT | O_TRUNC, 0644);
			if (fd >= 0) result(name, write(fd, "x", 1));
			else result(name, -1);
		} else if (!strcmp(name, "symlink-read")) {
			// arg: TARGET,LINK — make a symlink in a writable dir, then read through it
			char *comma = strchr(arg, ',');
			*comma = 0;
			unlink(comma + 1);
			if (symlink(arg, comma + 1) < 0) { result("symlink", -1); continue; }
			result(name, open(comma + 1, O_RDONLY));
		} else if (!strcmp(name, "hardlink-read")) {
			char *comma = strchr(arg, ',');
			*comma = 0;
			unlink(comma + 1);
			if (link(arg, comma + 1) < 0) { result(name, -1); continue; }
			result(name, open(comma + 1, O_RDONLY));
		} else if (!strcmp(name, "connect")) {
			// arg: 127.0.0.1:PORT
			char *colon = strrchr(arg, ':');
			*colon = 0;
			struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(atoi(colon + 1))};
			inet_pton(AF_INET, arg, &sa.sin_addr);
			int fd = socket(AF_INET, SOCK_STREAM, 0);
			result(name, fd < 0 ? -1 : connect(fd, (struct sockaddr *)&sa, sizeof sa));
		} else if (!strcmp(name, "udp") || !strcmp(name, "mptcp-connect") || !strcmp(name, "connect6")) {
			// udp=127.0.0.1:PORT sends one datagram with sendto; mptcp-connect=127.0.0.1:PORT
			// connects an MPTCP socket; connect6=PORT connects TCP to [::1]:PORT.
			struct sockaddr_storage ss = {0};
			socklen_t len;
			int fd;
			if (!strcmp(name, "connect6")) {
				struct sockaddr_in6 *sa = (struct sockaddr_in6 *)&ss;
				sa->sin6_family = AF_INET6;
				sa->sin6_port = htons(atoi(arg));
				sa->sin6_addr = in6addr_loopback;
				len = sizeof *sa;
				fd = socket(AF_INET6, SOCK_STREAM, 0);
			} else {
				char *colon = strrchr(arg, ':');
				*colon = 0;
				struct sockaddr_in *sa = (struct sockaddr_in *)&ss;
				sa->sin_family = AF_INET;
				sa->sin_port = htons(atoi(colon + 1));
				inet_pton(AF_INET, arg, &sa->sin_addr);
				len = sizeof *sa;
				fd = !strcmp(name, "udp") ? socket(AF_INET, SOCK_DGRAM, 0) : socket(AF_INET, SOCK_STREAM, IPPROTO_MPTCP);
			}
			if (fd < 0) { result(name, -1); continue; }
			if (!strcmp(name, "udp")) result(name, sendto(fd, "x", 1, 0, (struct sockaddr *)&ss, len));
			else result(name, connect(fd, (struct sockaddr *)&ss, len));
		} else if (!strcmp(name, "connect-unix")) {
			struct sockaddr_un sa = {.sun_family = AF_UNIX};
			socklen_t len;
			if (arg[0] == '@') {
				strncpy(sa.sun_path + 1, arg + 1, sizeof sa.sun_path - 2);
				len = offsetof(struct sockaddr_un, sun_path) + 1 + strlen(arg + 1);
			} else {
				strncpy(sa.sun_path, arg, sizeof sa.sun_path - 1);
				len = sizeof sa;
			}
			int fd = socket(AF_UNIX, SOCK_STREAM, 0);
			result(name, fd < 0 ? -1 : connect(fd, (struct sockaddr *)&sa, len));
		} else if (!strcmp(name, "exec")) {
			fflush(stdout);
			char *args[] = {arg, NULL};
			execv(arg, args);
			result(name, -1);
		} else if (!strcmp(name, "kill")) {
			result(name, kill(atoi(arg), 0));
		} else {
			printf("%s: unknown action\n", name);
			return 2;
		}
		if (in_child) _exit(0);
	}
	return 0;
}
