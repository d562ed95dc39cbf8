// stormtax: what one getppid costs under each kernel mechanism `sysprof enforce` puts on a
// sandboxed process, measured in turns inside long-lived processes (issue 28). Each
// configuration is a child that installs its filter once and then, when the parent asks,
// makes N getppid calls and reports their CPU time (kernel time included). Rounds run every
// child in turn, so the VM's drift and other processes' syscall hooks (any syscall tracepoint
// on the host puts every process on the syscall-work path) fall on every configuration of a
// round alike; each round is classed by the syscall hooks attached on the host during it
// (`bpftool perf show`: none, exit tracepoints only, or one on entry), and the medians of the
// per-round ratios over bare are printed per class. As root (bpftool needs it), with the profile's filter from
// `sysprof export -p storm.yaml --format bpf -o storm.bpf`:
//
//	gcc -O2 -o /tmp/stormtax bench/stormtax.c
//	/tmp/stormtax -r 40 -n 200000 storm.bpf
//
// Configurations: bare; allow (a one-instruction RET ALLOW filter: what any filter costs);
// profile (the profile's filter as enforce installs it: getppid served by the kernel's action
// cache); each once without and once with a guard's hook attached by this program for the
// second half of the round (an empty program on syscalls/sys_exit_openat: the guard's kind of
// hook, which puts every task on the syscall-work path). With another process's syscall hook
// on the host the kernel already runs that path for everyone, so only the rounds without one
// show what the hook itself costs.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/filter.h>
#include <linux/perf_event.h>
#include <linux/seccomp.h>
#include <sys/ioctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NCONF 6 // three filters, without and with the tracepoint
static const char *names[NCONF] = {"bare", "allow", "profile", "bare+tp", "allow+tp", "profile+tp"};

static void die(const char *what) {
	fprintf(stderr, "stormtax: %s: %s\n", what, strerror(errno));
	exit(1);
}

static double now(clockid_t c) {
	struct timespec t;
	clock_gettime(c, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

// child installs its filter (none for bare) and serves storms until its command pipe closes.
static void child(struct sock_fprog *f, int in, int out) {
	if (f) {
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
			die("no_new_privs");
		if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, f) < 0)
			die("seccomp");
	}
	long n;
	while (read(in, &n, sizeof n) == sizeof n) {
		double t0 = now(CLOCK_THREAD_CPUTIME_ID);
		for (long i = 0; i < n; i++)
			syscall(SYS_getppid);
		double ns = (now(CLOCK_THREAD_CPUTIME_ID) - t0) / n;
		if (write(out, &ns, sizeof ns) != sizeof ns)
			die("write");
	}
	_exit(0);
}

// hooks classes the syscall hooks attached on the host: 0 none, 1 exit tracepoints only (a
// guard's), 2 any on syscall entry (a learn's); -1 unknown.
static int hooks(void) {
	FILE *p = popen("bpftool perf show 2>/dev/null | grep -oE 'tracepoint +sys_(enter|exit)' | sort -u", "r");
	if (!p)
		return -1;
	char line[128];
	int k = 0;
	while (fgets(line, sizeof line, p))
		k = strstr(line, "sys_enter") ? 2 : k > 1 ? k : 1;
	return pclose(p) == -1 ? -1 : k;
}

// attach puts an empty program on syscalls/sys_exit_openat (as the guard attaches its own) and
// returns the perf event's fd; closing it detaches.
static int attach(void) {
	char buf[32] = {0};
	int fd = open("/sys/kernel/tracing/events/syscalls/sys_exit_openat/id", O_RDONLY | O_CLOEXEC);
	if (fd < 0 || read(fd, buf, sizeof buf - 1) <= 0)
		die("tracepoint id");
	close(fd);
	struct bpf_insn insns[] = {
		{.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0},
		{.code = BPF_JMP | BPF_EXIT},
	};
	union bpf_attr a = {.prog_type = BPF_PROG_TYPE_TRACEPOINT, .insn_cnt = 2,
	                    .insns = (unsigned long)insns, .license = (unsigned long)"GPL"};
	int prog = syscall(SYS_bpf, BPF_PROG_LOAD, &a, sizeof a);
	if (prog < 0)
		die("load");
	struct perf_event_attr pa = {.type = PERF_TYPE_TRACEPOINT, .size = sizeof pa,
	                             .config = strtoull(buf, NULL, 10), .sample_period = 1, .wakeup_events = 1};
	int pfd = syscall(SYS_perf_event_open, &pa, -1, 0, -1, PERF_FLAG_FD_CLOEXEC);
	if (pfd < 0 || ioctl(pfd, PERF_EVENT_IOC_SET_BPF, prog) < 0 || ioctl(pfd, PERF_EVENT_IOC_ENABLE, 0) < 0)
		die("attach");
	close(prog);
	return pfd;
}

static int cmp(const void *a, const void *b) {
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, int n) {
	qsort(v, n, sizeof *v, cmp);
	return n == 0 ? 0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv) {
	int rounds = 40, opt;
	long n = 200000;
	while ((opt = getopt(argc, argv, "r:n:")) != -1) {
		if (opt == 'r')
			rounds = atoi(optarg);
		else if (opt == 'n')
			n = atol(optarg);
		else
			return 2;
	}
	if (optind >= argc) {
		fprintf(stderr, "usage: stormtax [-r ROUNDS] [-n CALLS] PROFILE.bpf\n");
		return 2;
	}
	static struct sock_filter prog[BPF_MAXINSNS];
	int fd = open(argv[optind], O_RDONLY | O_CLOEXEC);
	ssize_t len = fd < 0 ? -1 : read(fd, prog, sizeof prog);
	if (len <= 0 || len % sizeof prog[0])
		die(argv[optind]);
	struct sock_fprog profile = {.len = len / sizeof prog[0], .filter = prog};
	struct sock_filter allow1[] = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
	struct sock_fprog allow = {.len = 1, .filter = allow1};
	struct sock_fprog *filters[NCONF] = {NULL, &allow, &profile, NULL, &allow, &profile};

	int cmd[NCONF], res[NCONF];
	for (int c = 0; c < NCONF; c++) {
		int a[2], b[2];
		if (pipe(a) < 0 || pipe(b) < 0)
			die("pipe");
		pid_t pid = fork();
		if (pid < 0)
			die("fork");
		if (pid == 0) {
			close(a[1]);
			close(b[0]);
			child(filters[c], a[0], b[1]);
		}
		close(a[0]);
		close(b[1]);
		cmd[c] = a[1];
		res[c] = b[0];
	}
	// per class of the host's hooks during the round (see hooks), per configuration
	double *ns[3][NCONF], *ratio[3][NCONF];
	int cnt[3] = {0, 0, 0};
	for (int k = 0; k < 3; k++)
		for (int c = 0; c < NCONF; c++) {
			ns[k][c] = calloc(rounds, sizeof(double));
			ratio[k][c] = calloc(rounds, sizeof(double));
		}
	for (int r = -1; r < rounds; r++) { // round -1 warms up
		int h0 = hooks();
		double v[NCONF];
		for (int half = 0; half < 2; half++) {
			int pfd = half ? attach() : -1;
			for (int i = 0; i < NCONF / 2; i++) {
				int c = half * NCONF / 2 + (i + (r < 0 ? 0 : r)) % (NCONF / 2); // a different first each round
				if (write(cmd[c], &n, sizeof n) != sizeof n || read(res[c], &v[c], sizeof v[c]) != sizeof v[c])
					die("child");
			}
			if (pfd >= 0)
				close(pfd);
		}
		int h1 = hooks();
		if (r < 0)
			continue;
		if (h0 < 0 || h1 < 0) {
			fprintf(stderr, "stormtax: bpftool perf show failed (run as root)\n");
			return 1;
		}
		int k = h0;
		if (h0 != h1)
			continue; // the host's hooks changed during the round
		for (int c = 0; c < NCONF; c++) {
			ns[k][c][cnt[k]] = v[c];
			ratio[k][c][cnt[k]] = v[c] / v[0];
		}
		cnt[k]++;
	}
	printf("%ld getppid per run, ns of thread CPU per call; ratio: median of per-round ratios over bare\n", n);
	static const char *classes[3] = {"no syscall hook on the host", "syscall exit tracepoints only (a guard's)", "a hook on syscall entry (a learn's)"};
	for (int k = 0; k < 3; k++) {
		printf("%s: %d rounds\n", classes[k], cnt[k]);
		for (int c = 0; c < NCONF && cnt[k]; c++) {
			double r = median(ratio[k][c], cnt[k]), m = median(ns[k][c], cnt[k]);
			printf("  %-8s %7.1f ns  %5.3fx\n", names[c], m, r);
		}
	}
	return 0;
}
