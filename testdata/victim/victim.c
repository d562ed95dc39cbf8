// victim: a scripted program for the profiler tests. Its arguments are a list of actions, each
// with a fixed number of parameters, run in order:
//
//   victim open-rel FILE  open-missing PATH  exit 3
//
// Every action does exactly what its name says and nothing the tests could mistake for another
// action. Failures of the action itself are not fatal (a failed open is behaviour to record),
// except where noted; an unknown action exits 100.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void run_and_wait(const char *path)
{
	pid_t pid = fork();
	if (pid == 0) {
		execl(path, path, (char *)NULL);
		_exit(127);
	}
	if (pid > 0)
		waitpid(pid, NULL, 0);
}

static void *thread_main(void *arg)
{
	(void)arg;
	struct timespec ts;
	syscall(SYS_clock_getres, CLOCK_MONOTONIC, &ts); // the thread's marker syscall
	return NULL;
}

static struct sockaddr_in inet_addr_port(const char *host, const char *port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(atoi(port))};
	inet_pton(AF_INET, host, &sa.sin_addr);
	return sa;
}

static void tcp_connect(struct sockaddr_in sa)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0)
		perror("victim: tcp connect");
	close(fd);
}

// dns_query sends an A query for name to server:port over UDP and returns the first A answer
// (network order) or 0.
static uint32_t dns_query(struct sockaddr_in server, const char *name)
{
	unsigned char q[512], r[512];
	size_t n = 0;
	memset(q, 0, 12);
	q[0] = 0x12, q[1] = 0x34; // id
	q[2] = 0x01;              // RD
	q[5] = 1;                 // QDCOUNT
	n = 12;
	const char *p = name;
	while (*p) {
		const char *dot = strchr(p, '.');
		size_t l = dot ? (size_t)(dot - p) : strlen(p);
		q[n++] = l;
		memcpy(q + n, p, l);
		n += l;
		p += l;
		if (*p == '.')
			p++;
	}
	q[n++] = 0;
	q[n++] = 0, q[n++] = 1; // A
	q[n++] = 0, q[n++] = 1; // IN
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	struct timeval tv = {.tv_sec = 5};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	sendto(fd, q, n, 0, (struct sockaddr *)&server, sizeof(server));
	ssize_t m = recv(fd, r, sizeof(r), 0);
	close(fd);
	if (m < (ssize_t)n + 16)
		return 0;
	// Skip the question, then the answer's name (a pointer, 2 bytes), type, class, ttl, rdlen.
	size_t off = n + 2 + 2 + 2 + 4 + 2;
	uint32_t a;
	memcpy(&a, r + off, 4);
	return a;
}

static int int80(long nr)
{
	long ret;
	__asm__ volatile("int $0x80" : "=a"(ret) : "a"(nr) : "memory");
	return ret;
}

int main(int argc, char **argv)
{
	int held_dfd = -1;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
#define ARG(k) (i + (k) < argc ? argv[i + (k)] : (fprintf(stderr, "victim: %s needs %d args\n", a, k), exit(100), ""))
		if (!strcmp(a, "open-rel") || !strcmp(a, "open-symlink") || !strcmp(a, "open-missing")) {
			int fd = open(ARG(1), O_RDONLY);
			if (fd >= 0)
				close(fd);
			i += 1;
		} else if (!strcmp(a, "open-dirfd")) {
			int dfd = open(ARG(1), O_RDONLY | O_DIRECTORY);
			int fd = openat(dfd, ARG(2), O_RDONLY);
			if (fd >= 0)
				close(fd);
			close(dfd);
			i += 2;
		} else if (!strcmp(a, "dirfd-open")) { // keep DIR open for the dirfd-* actions
			if (held_dfd >= 0)
				close(held_dfd);
			held_dfd = open(ARG(1), O_RDONLY | O_DIRECTORY);
			i += 1;
		} else if (!strcmp(a, "dirfd-stat")) { // fstatat(held dir, NAME)
			struct stat st;
			fstatat(held_dfd, ARG(1), &st, AT_SYMLINK_NOFOLLOW);
			i += 1;
		} else if (!strcmp(a, "dirfd-stat-many")) { // fstatat(held dir, PREFIX<k>), k < N
			long n = atol(ARG(1));
			char buf[4096];
			struct stat st;
			for (long k = 0; k < n; k++) {
				snprintf(buf, sizeof(buf), "%s%ld", ARG(2), k);
				fstatat(held_dfd, buf, &st, AT_SYMLINK_NOFOLLOW);
			}
			i += 2;
		} else if (!strcmp(a, "dirfd-sub")) { // openat(held dir, SUB, O_DIRECTORY), fstatat(it, NAME)
			struct stat st;
			int sfd = openat(held_dfd, ARG(1), O_RDONLY | O_DIRECTORY);
			fstatat(sfd, ARG(2), &st, AT_SYMLINK_NOFOLLOW);
			if (sfd >= 0)
				close(sfd);
			i += 2;
		} else if (!strcmp(a, "mark-wait")) { // create NAME, wait until someone removes it
			int fd = open(ARG(1), O_WRONLY | O_CREAT, 0644);
			if (fd < 0) {
				perror("victim: mark-wait");
				exit(101);
			}
			close(fd);
			while (access(ARG(1), F_OK) == 0)
				usleep(1000);
			i += 1;
		} else if (!strcmp(a, "write")) {
			int fd = open(ARG(1), O_WRONLY | O_CREAT | O_TRUNC, 0644);
			if (fd >= 0) {
				if (write(fd, "victim\n", 7) != 7)
					perror("victim: write");
				close(fd);
			}
			i += 1;
		} else if (!strcmp(a, "stat-missing")) {
			struct stat st;
			stat(ARG(1), &st);
			i += 1;
		} else if (!strcmp(a, "mkdir")) {
			mkdir(ARG(1), 0755);
			i += 1;
		} else if (!strcmp(a, "rename")) {
			rename(ARG(1), ARG(2));
			i += 2;
		} else if (!strcmp(a, "unlink")) {
			unlink(ARG(1));
			i += 1;
		} else if (!strcmp(a, "exec")) {
			run_and_wait(ARG(1));
			i += 1;
		} else if (!strcmp(a, "execv")) { // replace this process with PATH (no arguments)
			execl(ARG(1), ARG(1), (char *)NULL);
			return 101;
		} else if (!strcmp(a, "exec-missing")) {
			execl(ARG(1), ARG(1), (char *)NULL); // fails: recorded as exec, ok=false
			i += 1;
		} else if (!strcmp(a, "thread")) {
			pthread_t t;
			pthread_create(&t, NULL, thread_main, NULL);
			pthread_join(t, NULL);
		} else if (!strcmp(a, "vfork")) {
			const char *path = ARG(1);
			pid_t pid = vfork();
			if (pid == 0) {
				execl(path, path, (char *)NULL);
				_exit(127);
			}
			if (pid > 0)
				waitpid(pid, NULL, 0);
			i += 1;
		} else if (!strcmp(a, "clone3")) {
			struct clone_args ca = {.flags = CLONE_PARENT_SETTID, .exit_signal = SIGCHLD};
			int ptid = 0;
			ca.parent_tid = (uintptr_t)&ptid;
			long pid = syscall(SYS_clone3, &ca, sizeof(ca));
			if (pid == 0) {
				syscall(SYS_getpgid, 0); // the clone3 child's marker syscall
				syscall(SYS_exit_group, 0);
			}
			if (pid > 0)
				waitpid(pid, NULL, 0);
			else
				perror("victim: clone3");
		} else if (!strcmp(a, "clone3-into")) { // a child born into cgroup DIR stats PATH, exits
			int cg = open(ARG(1), O_RDONLY | O_DIRECTORY);
			struct clone_args ca = {.flags = CLONE_INTO_CGROUP, .exit_signal = SIGCHLD, .cgroup = cg};
			long pid = cg < 0 ? -1 : syscall(SYS_clone3, &ca, sizeof(ca));
			if (pid == 0) {
				struct stat st;
				stat(ARG(2), &st);
				syscall(SYS_exit_group, 0);
			}
			if (pid > 0)
				waitpid(pid, NULL, 0);
			else
				perror("victim: clone3-into");
			if (cg >= 0)
				close(cg);
			i += 2;
		} else if (!strcmp(a, "cgroup-move")) { // move this process: "0" into PATH (a cgroup.procs)
			int fd = open(ARG(1), O_WRONLY);
			if (fd < 0 || write(fd, "0", 1) != 1)
				perror("victim: cgroup-move");
			if (fd >= 0)
				close(fd);
			i += 1;
		} else if (!strcmp(a, "udp-send")) {
			struct sockaddr_in sa = inet_addr_port(ARG(1), ARG(2));
			int fd = socket(AF_INET, SOCK_DGRAM, 0);
			sendto(fd, "victim", 6, 0, (struct sockaddr *)&sa, sizeof(sa));
			close(fd);
			i += 2;
		} else if (!strcmp(a, "tcp-connect")) {
			tcp_connect(inet_addr_port(ARG(1), ARG(2)));
			i += 2;
		} else if (!strcmp(a, "tcp-connect6")) {
			struct sockaddr_in6 sa = {.sin6_family = AF_INET6, .sin6_port = htons(atoi(ARG(2)))};
			inet_pton(AF_INET6, ARG(1), &sa.sin6_addr);
			int fd = socket(AF_INET6, SOCK_STREAM, 0);
			if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0)
				perror("victim: tcp6 connect");
			close(fd);
			i += 2;
		} else if (!strcmp(a, "dns-query")) {
			// dns-query SERVER PORT NAME CONNECTPORT: resolve NAME, then TCP-connect to it.
			uint32_t ip = dns_query(inet_addr_port(ARG(1), ARG(2)), ARG(3));
			if (ip) {
				struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(atoi(ARG(4)))};
				sa.sin_addr.s_addr = ip;
				tcp_connect(sa);
			} else {
				fprintf(stderr, "victim: no answer for %s\n", ARG(3));
			}
			i += 4;
		} else if (!strcmp(a, "unix-connect")) {
			// unix-connect PATH (or @NAME for an abstract socket)
			const char *p = ARG(1);
			struct sockaddr_un su = {.sun_family = AF_UNIX};
			socklen_t len;
			if (p[0] == '@') {
				strncpy(su.sun_path + 1, p + 1, sizeof(su.sun_path) - 2);
				len = offsetof(struct sockaddr_un, sun_path) + 1 + strlen(p + 1);
			} else {
				strncpy(su.sun_path, p, sizeof(su.sun_path) - 1);
				len = sizeof(su);
			}
			int fd = socket(AF_UNIX, SOCK_STREAM, 0);
			connect(fd, (struct sockaddr *)&su, len);
			close(fd);
			i += 1;
		} else if (!strcmp(a, "unix-bind")) {
			// unix-bind PATH: bind a unix datagram socket to PATH (creates the socket file).
			struct sockaddr_un su = {.sun_family = AF_UNIX};
			strncpy(su.sun_path, ARG(1), sizeof(su.sun_path) - 1);
			int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
			if (bind(fd, (struct sockaddr *)&su, sizeof(su)) != 0)
				perror("victim: unix bind");
			close(fd);
			i += 1;
		} else if (!strcmp(a, "int80")) {
			// int80 getpid: the i386 getpid (20) through the compat entry.
			if (strcmp(ARG(1), "getpid") != 0)
				exit(100);
			if (int80(20) != getpid())
				fprintf(stderr, "victim: int80 getpid mismatch\n");
			i += 1;
		} else if (!strcmp(a, "x32")) {
			syscall(0x40000000 | 39); // x32 getpid; ENOSYS when the kernel has no x32
		} else if (!strcmp(a, "socket")) {
			int fd = socket(atoi(ARG(1)), atoi(ARG(2)), atoi(ARG(3)));
			if (fd >= 0)
				close(fd);
			i += 3;
		} else if (!strcmp(a, "prctl")) {
			prctl(atoi(ARG(1)), 0, 0, 0, 0);
			i += 1;
		} else if (!strcmp(a, "unshare")) {
			unshare(strtoul(ARG(1), NULL, 0)); // may fail: the attempt is what counts
			i += 1;
		} else if (!strcmp(a, "mprotect-exec")) {
			void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			mprotect(p, 4096, PROT_READ | PROT_EXEC);
			munmap(p, 4096);
		} else if (!strcmp(a, "storm")) {
			long n = atol(ARG(1));
			for (long k = 0; k < n; k++)
				syscall(SYS_getppid);
			i += 1;
		} else if (!strcmp(a, "storm-timed")) {
			// storm-timed N: like storm, then print the mean ns per call to stderr.
			long n = atol(ARG(1));
			struct timespec t0, t1;
			clock_gettime(CLOCK_MONOTONIC, &t0);
			for (long k = 0; k < n; k++)
				syscall(SYS_getppid);
			clock_gettime(CLOCK_MONOTONIC, &t1);
			double ns = (t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec);
			fprintf(stderr, "storm-timed: %ld calls, %.1f ns/call\n", n, ns / n);
			i += 1;
		} else if (!strcmp(a, "storm-cpu")) {
			// storm-cpu N: like storm-timed, in the thread's CPU time (kernel time included):
			// less moved by other load on the machine than the wall clock.
			long n = atol(ARG(1));
			struct timespec t0, t1;
			clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
			for (long k = 0; k < n; k++)
				syscall(SYS_getppid);
			clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
			double ns = (t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec);
			fprintf(stderr, "storm-cpu: %ld calls, %.1f ns/call\n", n, ns / n);
			i += 1;
		} else if (!strcmp(a, "time-child")) {
			// time-child CMD ARG...: run the rest of the arguments as a command, wait, print its
			// wall and CPU time (user + system, its children included) to stderr, exit with
			// its status. Under enforce it times what the command itself pays, start-up apart.
			struct timespec t0, t1;
			struct rusage ru;
			int st = 0;
			ARG(1);
			clock_gettime(CLOCK_MONOTONIC, &t0);
			pid_t pid = fork();
			if (pid == 0) {
				execvp(argv[i + 1], argv + i + 1);
				_exit(127);
			}
			wait4(pid, &st, 0, &ru);
			clock_gettime(CLOCK_MONOTONIC, &t1);
			long wall = (t1.tv_sec - t0.tv_sec) * 1000000 + (t1.tv_nsec - t0.tv_nsec) / 1000;
			long cpu = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000 + ru.ru_utime.tv_usec + ru.ru_stime.tv_usec;
			fprintf(stderr, "time-child: wall_us %ld cpu_us %ld\n", wall, cpu);
			exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
		} else if (!strcmp(a, "forkstorm")) {
			// forkstorm N PATH: N times fork + exec PATH + wait.
			long n = atol(ARG(1));
			for (long k = 0; k < n; k++)
				run_and_wait(ARG(2));
			i += 2;
		} else if (!strcmp(a, "stat-many")) {
			// stat-many N PREFIX: N stats of distinct missing paths PREFIX<k>.
			long n = atol(ARG(1));
			char buf[4096];
			struct stat st;
			for (long k = 0; k < n; k++) {
				snprintf(buf, sizeof(buf), "%s%ld", ARG(2), k);
				stat(buf, &st);
			}
			i += 2;
		} else if (!strcmp(a, "open-many")) {
			// open-many N PREFIX: N opens of distinct missing paths PREFIX<k> (ENOENT: what an
			// include or module search does), then the thread CPU per open to stderr.
			long n = atol(ARG(1));
			char buf[4096];
			struct timespec t0, t1;
			clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
			for (long k = 0; k < n; k++) {
				snprintf(buf, sizeof(buf), "%s%ld", ARG(2), k);
				int fd = open(buf, O_RDONLY);
				if (fd >= 0)
					close(fd);
			}
			clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
			double ns = (t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec);
			fprintf(stderr, "open-many: %ld opens, %.1f ns/open\n", n, ns / n);
			i += 2;
		} else if (!strcmp(a, "daemon")) {
			// Double fork + setsid; the grandchild outlives the victim.
			pid_t pid = fork();
			if (pid == 0) {
				setsid();
				if (fork() == 0) {
					for (;;)
						pause();
				}
				_exit(0);
			}
			waitpid(pid, NULL, 0);
		} else if (!strcmp(a, "sleep")) {
			sleep(atoi(ARG(1)));
			i += 1;
		} else if (!strcmp(a, "exit")) {
			exit(atoi(ARG(1)));
		} else if (!strcmp(a, "kill-self")) {
			kill(getpid(), atoi(ARG(1)));
			pause();
		} else {
			fprintf(stderr, "victim: unknown action %s\n", a);
			exit(100);
		}
	}
	return 0;
}
