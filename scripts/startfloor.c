// startfloor: what the kernel alone costs to start a command the way `sysprof enforce` starts
// it (issue 28): one C process, no runtime, only the namespaces, the mounts, the loopback, the
// seccomp filter and the exec that `enforce -p true.yaml -- true` asks of the kernel. sysprof
// can come close to it, not below it. As root:
//
//	gcc -O2 -o /tmp/startfloor scripts/startfloor.c
//	bin/sysprof export -p true.yaml --format bpf -o /tmp/true.bpf
//	python3 scripts/pairbench.py -n 40 --warmup 5 --vs "/tmp/startfloor /tmp/true.bpf true" -- bin/sysprof enforce -p true.yaml -- true
//
// Steps, as the init stage does them: clone3 into new user (uid 0 mapped to 65534, as the
// init stage's unprivileged root), mount, IPC, PID and network namespaces; as PID 1: / private,
// a private tmpfs on /tmp, /var/tmp and /dev/shm, a fresh /proc with /proc/sys read-only, the
// whole tree read-only but the tmpfs (mount_setattr), lo up, no_new_privs, the filter (raw BPF,
// `sysprof export --format bpf`), exec; the parent waits for PID 1. Left out, each measured
// apart in BENCHMARKS.md: Landlock, the idmapped replica of the host's mounts, the covers of
// hidden paths, the guard and the supervisor.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/mount.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static void die(const char *what) {
	fprintf(stderr, "startfloor: %s: %s\n", what, strerror(errno));
	_exit(125);
}

static void writefile(const char *path, const char *s) {
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, s, strlen(s)) != (ssize_t)strlen(s))
		die(path);
	close(fd);
}

static void setattr(const char *path, unsigned flags, __u64 set, __u64 clr) {
	struct mount_attr a = {.attr_set = set, .attr_clr = clr};
	if (syscall(SYS_mount_setattr, AT_FDCWD, path, flags, &a, sizeof a) < 0)
		die(path);
}

// stage is PID 1 of the new namespaces: the mounts, lo, the filter, then the command.
static int stage(struct sock_fprog *filter, char **argv) {
	if (mount("", "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		die("make / private");
	const char *tmp[] = {"/tmp", "/var/tmp", "/dev/shm"};
	for (int i = 0; i < 3; i++)
		if (mount("tmpfs", tmp[i], "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777") < 0)
			die(tmp[i]);
	if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		die("mount /proc");
	if (mount("/proc/sys", "/proc/sys", NULL, MS_BIND | MS_REC, NULL) < 0)
		die("bind /proc/sys");
	setattr("/", AT_RECURSIVE, MOUNT_ATTR_RDONLY, 0);
	for (int i = 0; i < 3; i++)
		setattr(tmp[i], 0, MOUNT_ATTR_NOEXEC, MOUNT_ATTR_RDONLY);
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct ifreq ifr = {0};
	strcpy(ifr.ifr_name, "lo");
	if (s < 0 || ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
		die("lo");
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
		die("lo up");
	close(s);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		die("no_new_privs");
	pid_t pid = fork(); // PID 1 stays to reap, as sysprof's init stage does
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		// The profile's filter need not allow the fork: the child installs it.
		if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, filter) < 0)
			die("seccomp");
		execvp(argv[0], argv);
		die(argv[0]);
	}
	int ws;
	while (waitpid(pid, &ws, 0) < 0)
		if (errno != EINTR)
			die("wait");
	return WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
}

int main(int argc, char **argv) {
	if (argc < 3) {
		fprintf(stderr, "usage: startfloor FILTER.bpf CMD [ARG...]\n");
		return 125;
	}
	static struct sock_filter prog[BPF_MAXINSNS];
	int fd = open(argv[1], O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, prog, sizeof prog);
	if (n <= 0 || n % sizeof prog[0])
		die(argv[1]);
	close(fd);
	struct sock_fprog filter = {.len = n / sizeof prog[0], .filter = prog};

	int sync[2];
	if (pipe2(sync, O_CLOEXEC) < 0)
		die("pipe");
	struct clone_args ca = {
		.flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWPID | CLONE_NEWNET,
		.exit_signal = SIGCHLD,
	};
	pid_t pid = syscall(SYS_clone3, &ca, sizeof ca);
	if (pid < 0)
		die("clone3");
	if (pid == 0) {
		char c;
		close(sync[1]);
		if (read(sync[0], &c, 1) != 1) // the parent wrote the uid map
			_exit(125);
		if (setresgid(0, 0, 0) < 0 || setresuid(0, 0, 0) < 0)
			die("setresuid");
		_exit(stage(&filter, argv + 2));
	}
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/setgroups", pid);
	writefile(path, "deny");
	snprintf(path, sizeof path, "/proc/%d/uid_map", pid);
	writefile(path, "0 65534 1");
	snprintf(path, sizeof path, "/proc/%d/gid_map", pid);
	writefile(path, "0 65534 1");
	if (write(sync[1], "1", 1) != 1)
		die("release");
	int ws;
	while (waitpid(pid, &ws, 0) < 0)
		if (errno != EINTR)
			die("wait");
	return WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
}
