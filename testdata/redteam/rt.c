// rt: the red team's probe for e2e/redteam_test.go. Each argument is one action; for each it
// prints "ACTION: ok" or "ACTION: ERRNONAME" (some print what they saw) and goes on. "benign"
// is the ordinary work a learn run sees: it reads and writes files, runs sh, asks its limits,
// signals itself, asks the terminal's size. The attacks make the same kinds of call with
// hostile arguments, or calls the benign run never made.
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <dirent.h>
#include <linux/io_uring.h>
#include <linux/perf_event.h>
#include <mqueue.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fanotify.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/klog.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/xattr.h>
#include <sys/swap.h>
#include <sys/un.h>
#include <arpa/inet.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

// unescape decodes \xHH and \n in s (in place): names and lines a shell cannot pass as is.
static char *unescape(char *s) {
	char *o = s;
	for (char *c = s; *c; c++) {
		if (c[0] == '\\' && c[1] == 'x' && c[2] && c[3]) {
			char hex[3] = {c[2], c[3], 0};
			*o++ = (char)strtol(hex, NULL, 16);
			c += 3;
		} else if (c[0] == '\\' && c[1] == 'n') {
			*o++ = '\n';
			c++;
		} else {
			*o++ = *c;
		}
	}
	*o = 0;
	return s;
}

static void result(const char *what, long rc) {
	if (rc < 0) {
		const char *n = strerrorname_np(errno);
		printf("%s: %s\n", what, n ? n : "E?");
	} else {
		printf("%s: ok\n", what);
	}
	fflush(stdout);
}

static void *thread_main(void *arg) { return arg; }

// patchme is what selfmem overwrites through /proc/self/mem.
__attribute__((noinline)) static int patchme(void) { return 0; }

// park is locked by main before threads start: thread_park waits on it (a futex) until the
// process exits.
static pthread_mutex_t park = PTHREAD_MUTEX_INITIALIZER;

static void *thread_park(void *arg) {
	pthread_mutex_lock(&park);
	return arg;
}

// benign is what the learn run does.
static void benign(void) {
	char buf[64];
	int fd = open("in.txt", O_RDONLY);
	if (fd >= 0) { (void)!read(fd, buf, sizeof buf); close(fd); }
	fd = open("out.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd >= 0) { (void)!write(fd, "out\n", 4); close(fd); }
	struct rlimit rl;
	getrlimit(RLIMIT_NOFILE, &rl);
	kill(getpid(), 0);
	struct winsize ws;
	ioctl(2, TIOCGWINSZ, &ws);
	pid_t pid = fork();
	if (pid == 0) {
		execl("/bin/sh", "sh", "-c", "true", (char *)NULL);
		_exit(127);
	}
	if (pid > 0) waitpid(pid, NULL, 0);
	printf("benign: ok\n");
	fflush(stdout);
}

int main(int argc, char **argv) {
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		char *arg = strchr(a, '=');
		char name[64];
		snprintf(name, sizeof name, "%.*s", arg ? (int)(arg - a) : (int)strlen(a), a);
		if (arg) arg++;
		errno = 0;
		if (!strcmp(name, "benign")) {
			benign();
		} else if (!strcmp(name, "procmem")) {
			// The init stage's (or a sibling's) memory, for writing.
			char p[64];
			snprintf(p, sizeof p, "/proc/%s/mem", arg);
			result(name, open(p, O_RDWR));
		} else if (!strcmp(name, "pidfd-getfd")) {
			int pfd = syscall(SYS_pidfd_open, atoi(arg), 0);
			if (pfd < 0) { result(name, -1); continue; }
			long got = -1;
			for (int fd = 0; fd < 16 && got < 0; fd++) got = syscall(SYS_pidfd_getfd, pfd, fd, 0);
			result(name, got);
		} else if (!strcmp(name, "vmwrite")) {
			char buf[8] = {0}, *remote = (char *)0x400000;
			struct iovec l = {buf, sizeof buf}, r = {remote, sizeof buf};
			result(name, process_vm_writev(atoi(arg), &l, 1, &r, 1, 0));
		} else if (!strcmp(name, "ptrace")) {
			result(name, ptrace(PTRACE_ATTACH, atoi(arg), 0, 0));
		} else if (!strcmp(name, "kill")) {
			// kill=PID,SIG
			char *comma = strchr(arg, ',');
			result(name, kill(atoi(arg), comma ? atoi(comma + 1) : 0));
		} else if (!strcmp(name, "prlimit-init")) {
			// Lower (or raise) the init stage's limits from inside.
			struct rlimit rl = {0, 0};
			result(name, prlimit(1, RLIMIT_NOFILE, &rl, NULL));
		} else if (!strcmp(name, "prlimit-read")) {
			// Read another process's limits (prlimit-read=PID).
			struct rlimit rl;
			result(name, prlimit(atoi(arg), RLIMIT_NOFILE, NULL, &rl));
		} else if (!strcmp(name, "prlimit-self")) {
			// The caller's own limits by its pid, as a tool may: not an attack, it must work.
			struct rlimit rl;
			result(name, prlimit(getpid(), RLIMIT_NOFILE, NULL, &rl));
		} else if (!strcmp(name, "raise")) {
			// Raise a hard limit: nofile or nproc or core.
			int res = !strcmp(arg, "nproc") ? RLIMIT_NPROC : !strcmp(arg, "core") ? RLIMIT_CORE : !strcmp(arg, "data") ? RLIMIT_DATA : RLIMIT_NOFILE;
			struct rlimit rl;
			getrlimit(res, &rl);
			rl.rlim_cur = rl.rlim_max = RLIM_INFINITY;
			result(name, setrlimit(res, &rl));
		} else if (!strcmp(name, "rlimits")) {
			struct rlimit rl;
			int res[] = {RLIMIT_NPROC, RLIMIT_DATA, RLIMIT_NOFILE, RLIMIT_CORE, RLIMIT_FSIZE, RLIMIT_SIGPENDING, RLIMIT_MSGQUEUE};
			const char *n[] = {"nproc", "data", "nofile", "core", "fsize", "sigpending", "msgqueue"};
			for (int k = 0; k < 7; k++) {
				getrlimit(res[k], &rl);
				printf("rlimit %s: %llu %llu\n", n[k], (unsigned long long)rl.rlim_cur, (unsigned long long)rl.rlim_max);
			}
			fflush(stdout);
		} else if (!strcmp(name, "personality")) {
			// READ_IMPLIES_EXEC: a readable anonymous mapping becomes executable without
			// PROT_EXEC in any argument seccomp sees.
			long rc = personality(READ_IMPLIES_EXEC);
			if (rc < 0 || !(personality(0xffffffff) & READ_IMPLIES_EXEC)) { result(name, -1); continue; }
			unsigned char *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (m == MAP_FAILED) { result(name, -1); continue; }
			m[0] = 0xb8; m[1] = 42; m[2] = 0; m[3] = 0; m[4] = 0; m[5] = 0xc3; // mov eax,42; ret
			int (*f)(void) = (int (*)(void))m;
			printf("personality: ran code, %d\n", f());
			fflush(stdout);
		} else if (!strcmp(name, "personality-exec")) {
			// READ_IMPLIES_EXEC survives execve: set it, then run arg (which maps RW memory).
			if (personality(READ_IMPLIES_EXEC) < 0) { result(name, -1); continue; }
			fflush(stdout);
			execl(arg, arg, "anon-rx", (char *)NULL);
			result(name, -1);
		} else if (!strcmp(name, "anon-rx")) {
			// A plain PROT_READ|PROT_WRITE anonymous mapping: executable only if the
			// personality makes it so.
			unsigned char *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (m == MAP_FAILED) { result(name, -1); continue; }
			FILE *maps = fopen("/proc/self/maps", "r");
			char line[256], want[32];
			snprintf(want, sizeof want, "%lx-", (unsigned long)m);
			int exec = 0;
			while (maps && fgets(line, sizeof line, maps))
				if (!strncmp(line, want, strlen(want)) && line[strlen(want) + 8 + 2] == 'x') exec = 1;
			printf("anon-rx: %s\n", exec ? "executable" : "not executable");
			fflush(stdout);
		} else if (!strcmp(name, "userfaultfd")) {
			result(name, syscall(SYS_userfaultfd, 0));
		} else if (!strcmp(name, "bpf")) {
			char attr[128] = {0};
			result(name, syscall(SYS_bpf, 0, attr, sizeof attr));
		} else if (!strcmp(name, "perf")) {
			struct perf_event_attr pe = {.type = PERF_TYPE_SOFTWARE, .size = sizeof pe, .config = PERF_COUNT_SW_CPU_CLOCK};
			result(name, syscall(SYS_perf_event_open, &pe, 0, -1, -1, 0));
		} else if (!strcmp(name, "add_key")) {
			result(name, syscall(SYS_add_key, "user", "rt", "x", 1, -3 /* session */));
		} else if (!strcmp(name, "keyctl")) {
			result(name, syscall(SYS_keyctl, 0, -3, 0));
		} else if (!strcmp(name, "clone3-userns")) {
			struct { uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls; } ca = {.flags = CLONE_NEWUSER, .exit_signal = SIGCHLD};
			long pid = syscall(SYS_clone3, &ca, sizeof ca);
			if (pid == 0) _exit(0);
			if (pid > 0) waitpid(pid, NULL, 0);
			result(name, pid);
		} else if (!strcmp(name, "thread")) {
			// Not an attack: glibc 2.34+ tries clone3 first, then clone on ENOSYS.
			pthread_t th;
			int e = pthread_create(&th, NULL, thread_main, NULL);
			if (e == 0) pthread_join(th, NULL);
			errno = e;
			result(name, e ? -1 : 0);
		} else if (!strcmp(name, "open_tree")) {
			result(name, syscall(SYS_open_tree, AT_FDCWD, "/", 1 /* OPEN_TREE_CLONE */ | AT_RECURSIVE));
		} else if (!strcmp(name, "fsopen")) {
			result(name, syscall(SYS_fsopen, "tmpfs", 0));
		} else if (!strcmp(name, "tiocsti")) {
			char c = 'x';
			result(name, ioctl(atoi(arg), TIOCSTI, &c));
		} else if (!strcmp(name, "tioclinux")) {
			char sub = 6; // TIOCL_GETSHIFTSTATE-ish: harmless
			result(name, ioctl(atoi(arg), TIOCLINUX, &sub));
		} else if (!strcmp(name, "inotify")) {
			int fd = inotify_init1(0);
			result(name, fd < 0 ? -1 : inotify_add_watch(fd, arg, IN_ALL_EVENTS));
		} else if (!strcmp(name, "sched")) {
			struct sched_param sp = {.sched_priority = 1};
			result(name, sched_setscheduler(0, SCHED_FIFO, &sp));
		} else if (!strcmp(name, "nice")) {
			result(name, setpriority(PRIO_PROCESS, 0, -5));
		} else if (!strcmp(name, "fds")) {
			// fd exhaustion: open as many as the limit lets us, say how many.
			int n = 0;
			while (open("/dev/null", O_RDONLY) >= 0) n++;
			printf("fds: %d (%s)\n", n, strerrorname_np(errno));
			fflush(stdout);
		} else if (!strcmp(name, "link")) {
			// link=TARGET,NAME: a hard link to a host file.
			char *comma = strchr(arg, ',');
			*comma = 0;
			unlink(comma + 1);
			result(name, link(arg, comma + 1));
		} else if (!strcmp(name, "symlink")) {
			char *comma = strchr(arg, ',');
			*comma = 0;
			unlink(comma + 1);
			result(name, symlink(arg, comma + 1));
		} else if (!strcmp(name, "abstract")) {
			struct sockaddr_un sa = {.sun_family = AF_UNIX};
			strncpy(sa.sun_path + 1, arg, sizeof sa.sun_path - 2);
			int fd = socket(AF_UNIX, SOCK_STREAM, 0);
			result(name, fd < 0 ? -1 : connect(fd, (struct sockaddr *)&sa, offsetof(struct sockaddr_un, sun_path) + 1 + strlen(arg)));
		} else if (!strcmp(name, "core")) {
			// Dump core where the kernel's core_pattern says.
			struct rlimit rl = {RLIM_INFINITY, RLIM_INFINITY};
			setrlimit(RLIMIT_CORE, &rl);
			fflush(stdout);
			abort();
		} else if (!strcmp(name, "read")) {
			char buf[64];
			int fd = open(arg, O_RDONLY);
			long n = fd < 0 ? -1 : read(fd, buf, sizeof buf);
			if (n > 0) printf("read: ok, %ld bytes\n", n);
			else if (n == 0) printf("read: empty\n");
			else result(name, -1);
			fflush(stdout);
		} else if (!strcmp(name, "write")) {
			int fd = open(arg, O_WRONLY | O_CREAT | O_APPEND, 0644);
			result(name, fd < 0 ? -1 : write(fd, "x\n", 2));
		} else if (!strcmp(name, "exec")) {
			fflush(stdout);
			pid_t pid = fork();
			if (pid == 0) {
				execl(arg, arg, (char *)NULL);
				_exit(errno == EACCES ? 13 : errno == ENOENT ? 2 : errno == EPERM ? 1 : 99);
			}
			int st = 0;
			waitpid(pid, &st, 0);
			printf("exec: %s\n", WIFEXITED(st) && WEXITSTATUS(st) == 13 ? "EACCES" : WIFEXITED(st) && WEXITSTATUS(st) == 1 ? "EPERM" : WIFEXITED(st) && WEXITSTATUS(st) == 2 ? "ENOENT" : "ran");
			fflush(stdout);
		} else if (!strcmp(name, "unshare")) {
			// unshare=FLAGS (hex): a new user namespace gives back every capability inside it.
			result(name, unshare((int)strtoul(arg, NULL, 16)));
		} else if (!strcmp(name, "setns")) {
			// setns=PATH: join the namespace of another process (the init stage's, the host's).
			int fd = open(arg, O_RDONLY);
			result(name, fd < 0 ? -1 : setns(fd, 0));
		} else if (!strcmp(name, "io_uring")) {
			// An io_uring's IORING_OP_OPENAT/CONNECT never pass seccomp's argument checks.
			struct io_uring_params p = {0};
			result(name, syscall(SYS_io_uring_setup, 4, &p));
		} else if (!strcmp(name, "request_key")) {
			result(name, syscall(SYS_request_key, "user", "rt", NULL, -3 /* session */));
		} else if (!strcmp(name, "mount")) {
			// mount=DIR: a tmpfs over DIR (hide or replace what the sandbox shows).
			result(name, mount("tmpfs", arg, "tmpfs", 0, NULL));
		} else if (!strcmp(name, "umount")) {
			// umount=DIR: take away a cover (a hidden secret) or a read-only bind (a protected path).
			result(name, umount2(arg, MNT_DETACH));
		} else if (!strcmp(name, "move_mount")) {
			result(name, syscall(SYS_move_mount, AT_FDCWD, arg, AT_FDCWD, "/", 0));
		} else if (!strcmp(name, "pivot_root")) {
			result(name, syscall(SYS_pivot_root, arg, arg));
		} else if (!strcmp(name, "fanotify")) {
			// Watch the host's files (a mount or the whole filesystem) for opens.
			int fd = fanotify_init(FAN_CLASS_NOTIF, O_RDONLY);
			result(name, fd < 0 ? -1 : fanotify_mark(fd, FAN_MARK_ADD | FAN_MARK_FILESYSTEM, FAN_OPEN, AT_FDCWD, arg));
		} else if (!strcmp(name, "shmget")) {
			// shmget=KEY (hex): attach to a SysV shared memory segment of the host.
			int id = shmget((key_t)strtoul(arg, NULL, 16), 0, 0);
			result(name, id < 0 ? -1 : (shmat(id, NULL, SHM_RDONLY) == (void *)-1 ? -1 : 0));
		} else if (!strcmp(name, "mq_open")) {
			// mq_open=NAME: a POSIX message queue of the host.
			result(name, mq_open(arg, O_RDWR));
		} else if (!strcmp(name, "unix")) {
			// unix=PATH: connect to a host daemon's socket by path (docker, an ssh agent, D-Bus).
			struct sockaddr_un sa = {.sun_family = AF_UNIX};
			strncpy(sa.sun_path, arg, sizeof sa.sun_path - 1);
			int fd = socket(AF_UNIX, SOCK_STREAM, 0);
			result(name, fd < 0 ? -1 : connect(fd, (struct sockaddr *)&sa, sizeof sa));
		} else if (!strcmp(name, "syslog")) {
			char buf[256];
			result(name, klogctl(3 /* SYSLOG_ACTION_READ_ALL */, buf, sizeof buf));
		} else if (!strcmp(name, "finit_module")) {
			result(name, syscall(SYS_finit_module, 0, "", 0));
		} else if (!strcmp(name, "iopl")) {
			result(name, syscall(SYS_iopl, 3));
		} else if (!strcmp(name, "mknod")) {
			// mknod=NAME: /dev/mem's device (1,1) in a writable directory.
			unlink(arg);
			result(name, mknod(arg, S_IFCHR | 0666, makedev(1, 1)));
		} else if (!strcmp(name, "environ")) {
			// environ=PID: another process's environment (the init stage's: what sysprof passed it).
			char p[64], buf[256];
			snprintf(p, sizeof p, "/proc/%s/environ", arg);
			int fd = open(p, O_RDONLY);
			result(name, fd < 0 ? -1 : read(fd, buf, sizeof buf));
		} else if (!strcmp(name, "fdleak")) {
			// Every fd above stdio the command inherited: a seccomp listener, a pidfd, a socket of
			// sysprof's would each be a way out. Asked with fcntl (listing /proc/self/fd may be
			// refused); prints "fdleak: none" or each fd with its file type.
			int n = 0;
			printf("fdleak:");
			for (int fd = 3; fd < 1024; fd++) {
				struct stat st;
				if (fcntl(fd, F_GETFD) < 0 || fstat(fd, &st) < 0) continue;
				printf(" %d=%o", fd, st.st_mode & S_IFMT);
				n++;
			}
			printf("%s\n", n ? "" : " none");
			fflush(stdout);
		} else if (!strcmp(name, "threads")) {
			// Start threads until the kernel refuses one, say how many (held by the pids limit).
			int n = 0;
			pthread_t th;
			pthread_attr_t at;
			pthread_attr_init(&at);
			pthread_attr_setstacksize(&at, 65536);
			pthread_mutex_lock(&park);
			while (n < 100000 && pthread_create(&th, &at, thread_park, NULL) == 0) n++;
			printf("threads: %d\n", n);
			fflush(stdout);
		} else if (!strcmp(name, "tty")) {
			// The controlling terminal by name: TIOCSTI/TIOCLINUX through /dev/tty.
			result(name, open("/dev/tty", O_RDWR));
		} else if (!strcmp(name, "procs")) {
			// How many processes this one sees (host processes would each be a target).
			DIR *d = opendir("/proc");
			struct dirent *e;
			int n = 0;
			while (d && (e = readdir(d))) if (e->d_name[0] >= '0' && e->d_name[0] <= '9') n++;
			printf("procs: %d\n", n);
			fflush(stdout);
		} else if (!strcmp(name, "rename")) {
			// rename=FROM,TO: replace a file (a protected one) by rename.
			char *comma = strchr(arg, ',');
			*comma = 0;
			result(name, rename(arg, comma + 1));
		} else if (!strcmp(name, "put")) {
			// put=PATH: write a file, its directories made first (a hook, an editor task, a config
			// another tool runs later).
			char dir[4096];
			snprintf(dir, sizeof dir, "%s", arg);
			for (char *c = dir + 1; (c = strchr(c, '/')); c++) {
				*c = 0;
				mkdir(dir, 0755);
				*c = '/';
			}
			int fd = open(arg, O_WRONLY | O_CREAT | O_APPEND, 0644);
			result(name, fd < 0 ? -1 : write(fd, "x\n", 2));
		} else if (!strcmp(name, "flood")) {
			// flood=ioctl,N or flood=create,N: N denials, each distinct (an ioctl request, a file
			// name in a read-only tree), to push a later attack out of the record.
			char *comma = strchr(arg, ',');
			int n = comma ? atoi(comma + 1) : 0, refused = 0;
			for (int k = 0; k < n; k++) {
				if (!strncmp(arg, "ioctl", 5)) {
					refused += ioctl(0, 0xab000000u | (unsigned)k, 0) < 0;
				} else {
					char p[64];
					snprintf(p, sizeof p, "/usr/lib/sysprof-flood-%d", k);
					int fd = open(p, O_WRONLY | O_CREAT, 0644);
					refused += fd < 0;
					if (fd >= 0) close(fd);
				}
			}
			printf("flood: %d of %d refused\n", refused, n);
			fflush(stdout);
		} else if (!strcmp(name, "xattr")) {
			// xattr=PATH,NAME: set an extended attribute on a file (security.* and trusted.* label
			// or trust it for the host; user.* is metadata a later tool may obey).
			char *comma = strchr(arg, ',');
			*comma = 0;
			result(name, setxattr(arg, comma + 1, "rt", 2, 0));
		} else if (!strcmp(name, "utime")) {
			// utime=PATH: back-date a protected file (make a planted change look old to make,
			// rsync or a reviewer).
			struct timespec ts[2] = {{0, 0}, {0, 0}};
			result(name, utimensat(AT_FDCWD, arg, ts, 0));
		} else if (!strcmp(name, "chmod")) {
			// chmod=PATH: make a protected file (a hook) executable.
			result(name, chmod(arg, 0755));
		} else if (!strcmp(name, "tmplink")) {
			// tmplink=DIR,NAME: an unnamed file (O_TMPFILE) in a writable DIR, written, then given
			// NAME (a hook) by linkat through /proc/self/fd: no open of NAME ever happens.
			char *comma = strchr(arg, ',');
			*comma = 0;
			int fd = open(arg, O_TMPFILE | O_WRONLY, 0755);
			if (fd < 0) {
				result(name, -1);
			} else {
				char p[64];
				(void)!write(fd, "#!/bin/sh\n", 10);
				snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
				result(name, linkat(AT_FDCWD, p, AT_FDCWD, comma + 1, AT_SYMLINK_FOLLOW));
				close(fd);
			}
		} else if (!strcmp(name, "renamex")) {
			// renamex=A,B: swap two names (RENAME_EXCHANGE): a protected file for one of the run's.
			char *comma = strchr(arg, ',');
			*comma = 0;
			result(name, syscall(SYS_renameat2, AT_FDCWD, arg, AT_FDCWD, comma + 1, 2 /* RENAME_EXCHANGE */));
		} else if (!strcmp(name, "handle")) {
			// handle=PATH: open a file by its handle ("shocker"): a handle names an inode on the
			// host's file system, whatever this mount namespace shows.
			struct { struct file_handle h; unsigned char b[128]; } fh = {.h.handle_bytes = 128};
			int mnt = -1;
			long rc = syscall(SYS_name_to_handle_at, AT_FDCWD, arg, &fh.h, &mnt, 0);
			if (rc == 0) rc = syscall(SYS_open_by_handle_at, AT_FDCWD, &fh.h, O_RDONLY);
			result(name, rc);
		} else if (!strcmp(name, "vhangup")) {
			// Hang up the user's terminal (the shell sysprof was started from).
			result(name, syscall(SYS_vhangup));
		} else if (!strcmp(name, "chroot")) {
			result(name, chroot(arg));
		} else if (!strcmp(name, "acct")) {
			// acct=PATH: the kernel appends a record of every exiting process on the host.
			result(name, acct(arg));
		} else if (!strcmp(name, "swapon")) {
			result(name, swapon(arg, 0));
		} else if (!strcmp(name, "udp")) {
			// udp=IPv4:PORT: one datagram by sendto, no connect (a DNS query straight to the host's
			// resolver, past the stub; a beacon to any address).
			char host[64];
			snprintf(host, sizeof host, "%s", arg);
			char *colon = strrchr(host, ':');
			*colon = 0;
			struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(atoi(colon + 1))};
			inet_pton(AF_INET, host, &sa.sin_addr);
			int fd = socket(AF_INET, SOCK_DGRAM, 0);
			result(name, fd < 0 ? -1 : sendto(fd, "rt", 2, 0, (struct sockaddr *)&sa, sizeof sa));
		} else if (!strcmp(name, "udpmsg")) {
			// udpmsg=IPv4:PORT: the same by sendmsg.
			char host[64];
			snprintf(host, sizeof host, "%s", arg);
			char *colon = strrchr(host, ':');
			*colon = 0;
			struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(atoi(colon + 1))};
			inet_pton(AF_INET, host, &sa.sin_addr);
			struct iovec iov = {.iov_base = "rt", .iov_len = 2};
			struct msghdr mh = {.msg_name = &sa, .msg_namelen = sizeof sa, .msg_iov = &iov, .msg_iovlen = 1};
			int fd = socket(AF_INET, SOCK_DGRAM, 0);
			result(name, fd < 0 ? -1 : sendmsg(fd, &mh, 0));
		} else if (!strcmp(name, "sigflood")) {
			// sigflood=N: queue up to N real-time signals to itself with sigqueue, blocked (each
			// pending one is counted against the user's RLIMIT_SIGPENDING, the host user's too),
			// and say how many.
			sigset_t set;
			sigemptyset(&set);
			sigaddset(&set, SIGRTMIN);
			sigprocmask(SIG_BLOCK, &set, NULL);
			int n = atoi(arg), k = 0;
			while (k < n && sigqueue(getpid(), SIGRTMIN, (union sigval){0}) == 0) k++;
			printf("sigflood: %d queued\n", k);
			fflush(stdout);
		} else if (!strcmp(name, "say")) {
			// Print arg (unescaped) to stderr as the command's own output: a forged report
			// line, terminal controls.
			fprintf(stderr, "%s\n", unescape(arg));
		} else if (!strcmp(name, "create")) {
			// Create a file by a name (unescaped) a shell cannot pass.
			int fd = open(unescape(arg), O_WRONLY | O_CREAT | O_TRUNC, 0644);
			result(name, fd < 0 ? -1 : write(fd, "x", 1));
		} else if (!strcmp(name, "selfmem")) {
			// Patch this program's own code through /proc/self/mem (FOLL_FORCE writes through a
			// read-only executable mapping: injected code runs with no mprotect or mmap call).
			int fd = open("/proc/self/mem", O_RDWR);
			if (fd < 0) { result(name, -1); continue; }
			unsigned char code[] = {0xb8, 42, 0, 0, 0, 0xc3}; // mov eax,42; ret
			long rc = pwrite(fd, code, sizeof code, (off_t)(uintptr_t)patchme);
			if (rc < 0) { result(name, -1); continue; }
			printf("selfmem: ran patched code, %d\n", patchme());
			fflush(stdout);
		} else if (!strcmp(name, "childmem")) {
			// childmem=PROG: a child runs PROG (a learned program: its exec rights, its network
			// rules by binary) stopped on a pipe; the parent opens its memory to patch it.
			int p[2];
			if (pipe(p) < 0) { result(name, -1); continue; }
			fflush(stdout);
			pid_t pid = fork();
			if (pid == 0) {
				dup2(p[0], 0);
				close(p[1]);
				execl(arg, arg, "-c", "read x", (char *)NULL);
				_exit(127);
			}
			close(p[0]);
			usleep(200000);
			char path[64];
			snprintf(path, sizeof path, "/proc/%d/mem", pid);
			int fd = open(path, O_RDWR);
			long rc = fd;
			if (fd >= 0) {
				unsigned char b = 0xcc;
				rc = pwrite(fd, &b, 1, 0x1000);
				if (rc < 0 && errno == EIO) rc = 0; // opened for writing: the hole is the open
			}
			result(name, rc);
			close(p[1]);
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
		} else if (!strcmp(name, "execveat") || !strcmp(name, "fexecve")) {
			// execveat=PATH: run PATH through an fd of it opened for reading (execveat with
			// AT_EMPTY_PATH); fexecve=PATH: through an O_PATH fd. Landlock and noexec must see
			// it as they see execve(PATH).
			int fd = open(arg, !strcmp(name, "fexecve") ? O_PATH : O_RDONLY);
			if (fd < 0) { result(name, -1); continue; }
			fflush(stdout);
			pid_t pid = fork();
			if (pid == 0) {
				char *av[] = {arg, NULL}, *ev[] = {NULL};
				syscall(SYS_execveat, fd, "", av, ev, AT_EMPTY_PATH);
				_exit(errno == EACCES ? 13 : errno == ENOENT ? 2 : errno == EPERM ? 1 : 99);
			}
			int st = 0;
			waitpid(pid, &st, 0);
			close(fd);
			printf("%s: %s\n", name, WIFEXITED(st) && WEXITSTATUS(st) == 13 ? "EACCES" : WIFEXITED(st) && WEXITSTATUS(st) == 1 ? "EPERM" : WIFEXITED(st) && WEXITSTATUS(st) == 2 ? "ENOENT" : "ran");
			fflush(stdout);
		} else if (!strcmp(name, "shocker")) {
			// open_by_handle_at with a forged handle (no name_to_handle_at): inode 2, the root of
			// an ext4 file system, generation 0: the host's root directory, whatever the mounts show.
			struct { struct file_handle h; uint32_t ino, gen; } fh = {.h = {.handle_bytes = 8, .handle_type = 1}, .ino = 2, .gen = 0};
			result(name, syscall(SYS_open_by_handle_at, AT_FDCWD, &fh.h, O_RDONLY | O_DIRECTORY));
		} else if (!strcmp(name, "reopen")) {
			// reopen=FD: open an inherited read-only descriptor again for writing through its
			// /proc/self/fd link (the file the user redirected into the command).
			char p[64];
			snprintf(p, sizeof p, "/proc/self/fd/%s", arg);
			int fd = open(p, O_WRONLY | O_APPEND);
			result(name, fd < 0 ? -1 : write(fd, "x\n", 2));
		} else if (!strcmp(name, "script")) {
			// script=PATH,INTERP: write a script for INTERP (a learned interpreter) and run it.
			char *comma = strchr(arg, ',');
			*comma = 0;
			int fd = open(arg, O_WRONLY | O_CREAT | O_TRUNC, 0755);
			if (fd < 0) { result(name, -1); continue; }
			dprintf(fd, "#!%s\nexit 0\n", comma + 1);
			close(fd);
			fflush(stdout);
			pid_t pid = fork();
			if (pid == 0) {
				execl(arg, arg, (char *)NULL);
				_exit(errno == EACCES ? 13 : errno == ENOENT ? 2 : errno == EPERM ? 1 : 99);
			}
			int st = 0;
			waitpid(pid, &st, 0);
			printf("script: %s\n", WIFEXITED(st) && WEXITSTATUS(st) == 13 ? "EACCES" : WIFEXITED(st) && WEXITSTATUS(st) == 1 ? "EPERM" : WIFEXITED(st) && WEXITSTATUS(st) == 2 ? "ENOENT" : WIFEXITED(st) && WEXITSTATUS(st) == 0 ? "ran" : "failed");
			fflush(stdout);
		} else if (!strcmp(name, "deep")) {
			// deep=N: N nested directories of 200-character names, each made and entered by
			// descriptor (the whole path is far past PATH_MAX), and a file with a newline and an
			// escape in its name at the bottom: what the changeset reads and prints back.
			char comp[201];
			memset(comp, 'd', 200);
			comp[200] = 0;
			int dir = open(".", O_RDONLY | O_DIRECTORY), n = atoi(arg), k = 0;
			for (; dir >= 0 && k < n; k++) {
				comp[0] = 'a' + k % 26;
				if (mkdirat(dir, comp, 0755) < 0 && errno != EEXIST) break;
				int next = openat(dir, comp, O_RDONLY | O_DIRECTORY);
				close(dir);
				dir = next;
			}
			if (dir < 0 || k < n) { result(name, -1); continue; }
			int fd = openat(dir, "bottom\n\x1b[2Kx", O_WRONLY | O_CREAT | O_TRUNC, 0644);
			result(name, fd < 0 ? -1 : write(fd, "deep\n", 5));
		} else if (!strcmp(name, "initthreads")) {
			// initthreads=SIG: SIG to every thread id below this process's own (the init stage's
			// threads, started before the command) by tkill, which names a thread, not pid 1.
			int sent = 0, refused = 0;
			for (int tid = 1; tid < getpid(); tid++) {
				if (syscall(SYS_tkill, tid, atoi(arg)) == 0) sent++;
				else if (errno == EPERM) refused++;
			}
			printf("initthreads: %d sent, %d refused\n", sent, refused);
			fflush(stdout);
		} else if (!strcmp(name, "pgkill")) {
			// pgkill=SIG: SIG to this process's group (kill(0)), itself ignoring SIG: whoever else
			// is in the group (the init stage, when the command is started in its group) gets it.
			signal(atoi(arg), SIG_IGN);
			result(name, kill(0, atoi(arg)));
		} else if (!strcmp(name, "dnsq")) {
			// dnsq=NAME: one DNS query (type A) for NAME (unescaped: a label may hold any byte, ESC
			// and newlines too) to the first nameserver of /etc/resolv.conf; prints the rcode.
			char *qn = unescape(arg), ns[64] = "", line[256];
			FILE *rc = fopen("/etc/resolv.conf", "r");
			while (rc && fgets(line, sizeof line, rc))
				if (sscanf(line, "nameserver %63s", ns) == 1) break;
			unsigned char q[512] = {0x12, 0x34, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0};
			size_t n = 12;
			for (char *l = qn; *l && n < 400;) {
				char *dot = strchr(l, '.');
				size_t len = dot ? (size_t)(dot - l) : strlen(l);
				q[n++] = (unsigned char)len;
				memcpy(q + n, l, len);
				n += len;
				l += len + (dot ? 1 : 0);
			}
			q[n++] = 0;
			q[n++] = 0; q[n++] = 1; q[n++] = 0; q[n++] = 1;
			struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(53)};
			inet_pton(AF_INET, ns, &sa.sin_addr);
			int fd = socket(AF_INET, SOCK_DGRAM, 0);
			struct timeval tv = {2, 0};
			setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
			if (fd < 0 || sendto(fd, q, n, 0, (struct sockaddr *)&sa, sizeof sa) < 0) { result(name, -1); continue; }
			unsigned char a[512];
			long got = recv(fd, a, sizeof a, 0);
			if (got < 4) { result(name, -1); continue; }
			printf("dnsq: rcode %d\n", a[3] & 0xf);
			fflush(stdout);
		} else if (!strcmp(name, "plantkey")) {
			// plantkey=DESC,DATA (on the host, before `then`): a session keyring of this
			// process's own, holding a user key DESC (a secret another program of the user keeps
			// in the kernel: a Kerberos ticket, an ecryptfs or NFS key).
			char *comma = strchr(arg, ',');
			if (!comma) { result(name, -1); continue; }
			*comma = 0;
			long kr = syscall(SYS_keyctl, 1 /* KEYCTL_JOIN_SESSION_KEYRING */, "sysprof-rt6");
			result(name, kr < 0 ? -1 : syscall(SYS_add_key, "user", arg, comma + 1, strlen(comma + 1), -3 /* session */));
		} else if (!strcmp(name, "then")) {
			// then PROG ARGS...: exec the rest of the command line (after plantkey).
			fflush(stdout);
			execvp(argv[i + 1], argv + i + 1);
			result(name, -1);
			return 127;
		} else if (!strcmp(name, "joinkey")) {
			// joinkey=NAME: join the session keyring called NAME (the host's, by its name).
			result(name, syscall(SYS_keyctl, 1 /* KEYCTL_JOIN_SESSION_KEYRING */, arg));
		} else if (!strcmp(name, "sesskey")) {
			// sesskey=DESC: find a user key DESC through the session keyring this process
			// possesses and read it ("sesskey: read DATA": the host's keyring reached).
			long id = syscall(SYS_keyctl, 10 /* KEYCTL_SEARCH */, -3 /* session */, "user", arg, 0);
			char buf[256] = {0};
			long n = id < 0 ? -1 : syscall(SYS_keyctl, 11 /* KEYCTL_READ */, id, buf, sizeof buf - 1);
			if (n >= 0) { printf("sesskey: read %s\n", buf); fflush(stdout); continue; }
			result(name, -1);
		} else if (!strcmp(name, "inotifyn")) {
			// inotifyn=N: N inotify instances at once (the user's count, shared with the
			// user's other programs: an editor's or a dev server's watches fail once it is full).
			int n = atoi(arg), made = 0, err = 0;
			for (int k = 0; k < n; k++) {
				if (inotify_init1(IN_CLOEXEC) < 0) { err = errno; break; }
				made++;
			}
			printf("inotifyn: %d of %d, then %s\n", made, n, err ? strerrorname_np(err) : "none");
			fflush(stdout);
		} else if (!strcmp(name, "fanotifyn")) {
			// fanotifyn=N: N unprivileged fanotify groups at once (a per-user count too).
			int n = atoi(arg), made = 0, err = 0;
			for (int k = 0; k < n; k++) {
				if (fanotify_init(FAN_CLASS_NOTIF | FAN_REPORT_FID | FAN_CLOEXEC, O_RDONLY) < 0) { err = errno; break; }
				made++;
			}
			printf("fanotifyn: %d of %d, then %s\n", made, n, err ? strerrorname_np(err) : "none");
			fflush(stdout);
		} else if (!strcmp(name, "sibling")) {
			// sibling=PROG,OP: a child runs PROG (a learned program, which per-binary egress
			// rules may name) stopped on a pipe; the parent takes it over by OP: ptrace
			// (attach), vmwrite (process_vm_writev into it), getfd (pidfd_getfd of its fds).
			char *comma = strchr(arg, ',');
			if (!comma) { result(name, -1); continue; }
			*comma = 0;
			const char *op = comma + 1;
			char what[64];
			snprintf(what, sizeof what, "sibling-%s", op);
			int p[2];
			if (pipe(p) < 0) { result(what, -1); continue; }
			fflush(stdout);
			pid_t pid = fork();
			if (pid == 0) {
				dup2(p[0], 0);
				close(p[1]);
				execl(arg, arg, "-c", "read x", (char *)NULL);
				_exit(127);
			}
			close(p[0]);
			usleep(200000);
			long rc = -1;
			if (!strcmp(op, "ptrace")) {
				rc = ptrace(PTRACE_SEIZE, pid, 0, 0);
			} else if (!strcmp(op, "vmwrite")) {
				char buf[8] = {0};
				struct iovec l = {buf, sizeof buf}, r = {(char *)0x400000, sizeof buf};
				rc = process_vm_writev(pid, &l, 1, &r, 1, 0);
				if (rc < 0 && errno == EFAULT) rc = 0; // allowed: only the address was wrong
			} else if (!strcmp(op, "getfd")) {
				int pfd = syscall(SYS_pidfd_open, pid, 0);
				rc = pfd < 0 ? -1 : syscall(SYS_pidfd_getfd, pfd, 0, 0);
			}
			result(what, rc);
			close(p[1]);
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
		} else if (!strcmp(name, "die")) {
			// End at once (no exit handlers, nothing flushed): the record of what came before must
			// not depend on the command's exit being orderly.
			fflush(stdout);
			syscall(SYS_exit_group, 0);
		} else {
			printf("%s: unknown action\n", name);
			return 2;
		}
	}
	return 0;
}
