//go:build ignore

// guard.c: the kernel side of `sysprof enforce` as root: it observes the file refusals of the
// run's sandbox (the network allowlist is the egress proxy's, in user space).
//
// Attached to the syscalls/sys_exit_<name> tracepoints of the path syscalls only (open*, creat,
// exec*, mkdir*, mknod*, unlink*, rmdir, rename*, link*, symlink*, truncate, chmod/chown
// family, utimensat) and connect, one program; each slot's instance is attached with the slot as the attach
// cookie, and reports for the run slot_cgid[slot] names:
//
//   sys_exit_path       a refusal the sandbox gives (-EACCES from Landlock, -EROFS from the
//                       read-only mounts, -EXDEV from Landlock's refer rule, -EBUSY of a
//                       rename or removal of a mount point (a protected file's read-only
//                       bind: git's config.lock renamed over .git/config), -EPERM of an
//                       executable mmap from a noexec mount; -ENOENT only for absolute paths
//                       under a hidden path) -> file event with the path string as given (or
//                       the mapped file), the directory it is relative to, and the executable;
//                       a failed connect (a unix path with its directory, which user space
//                       keeps when it is a covered host socket; an IPv4/IPv6 address Landlock
//                       refused, -EACCES, or had no route, -ENETUNREACH) likewise.
//
// A call that succeeds costs one compare, one that fails otherwise or in another cgroup a few
// more. The arguments are read from the task's saved user registers at exit (they are unchanged
// by the syscall), so no sys_enter program and no stash are needed. Syscall numbers come from
// user space (fops), never from this file.
//
// Nothing in the programs or in their maps belongs to one run, so that they can be loaded
// before a run's cgroup exists, and shared by runs: every run's state is found by its cgroup id
// (runs: configuration, counters and the slot of its ring buffer in rings).

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "arch.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define AT_FDCWD -100
#define EPERM 1
#define ENOENT 2
#define EBUSY 16
#define EACCES 13
#define EXDEV 18
#define EROFS 30
#define ENETUNREACH 101
#define ECONNREFUSED 111
#define ENOSYS 38
// CLONE_NEW{NS,CGROUP,UTS,IPC,USER,PID,NET,TIME}: seccomp.NamespaceFlags
#define NS_FLAGS (0x00020000ULL | 0x02000000ULL | 0x04000000ULL | 0x08000000ULL | 0x10000000ULL | 0x20000000ULL | 0x40000000ULL | 0x00000080ULL)
#define AF_UNIX 1
#define AF_INET 2
#define AF_INET6 10

#define NAME_SZ 256      // one dentry name incl. NUL
#define PATH_SZ 4096     // one user path incl. NUL
#define DATA_MASK 8191   // offsets into scratch data are masked with this
#define SCRATCH_SZ 16384 // > DATA_MASK + NAME_SZ
#define HIDDEN_MAX 16
#define HIDDEN_WORDS 32  // a hidden path is compared on at most 256 bytes
#define SLOT_FILE 1      // the scratch slot sys_exit_path builds its events in

// ---- shared with Go (bpf2go -type) -----------------------------------------------------------

enum guard_kind {
	GK_FILE = 2,
};

// What a syscall number means to sys_exit_path (user space fills fops[nr]).
enum file_op {
	FOP_NONE = 0,
	FOP_OPEN,      // path a0, flags a1
	FOP_OPENAT,    // dirfd a0, path a1, flags a2
	FOP_OPENAT2,   // dirfd a0, path a1, how a2 (flags first)
	FOP_CREAT,     // path a0
	FOP_EXECVE,    // path a0
	FOP_EXECVEAT,  // dirfd a0, path a1
	FOP_PATH,      // path a0 (mkdir, mknod, unlink, rmdir, truncate, chmod, chown, lchown)
	FOP_PATHAT,    // dirfd a0, path a1 (mkdirat, mknodat, unlinkat, fchmodat*, fchownat, utimensat)
	FOP_TWO,       // old a0, new a1 (rename, link)
	FOP_TWOAT,     // olddirfd a0, old a1, newdirfd a2, new a3 (renameat*, linkat)
	FOP_SYMLINK,   // target a0, linkpath a1
	FOP_SYMLINKAT, // target a0, newdirfd a1, linkpath a2
	FOP_MMAP,      // prot a2, fd a4: an executable mapping refused (EPERM: a noexec mount)
	FOP_CONNECT,   // fd a0, sockaddr a1, len a2: a covered host unix socket (ECONNREFUSED,
	               // ENOENT), a TCP port Landlock refused (EACCES), no route (ENETUNREACH)
	FOP_CLONE3,    // clone_args a0: seccomp's ENOSYS to namespace flags (read here, at exit)
};

// One event: this header, then in order the executable's path components (leaf first, each
// NUL-terminated), the parent's executable likewise, the first path as given (NUL-terminated),
// the components of the directory it is relative to (when relative), the second path and its
// directory. A connect to an IPv4 or IPv6 address carries the sockaddr's bytes as its path.
struct guard_event {
	__u32 kind;
	__u32 tgid;
	__u32 pid;
	__s32 ret; // file: the syscall's return value (-errno)
	__u64 ts;
	char comm[16];
	__u32 nr;   // the native ABI's syscall number
	__u32 fop;  // enum file_op
	__u64 flags; // open flags (open, openat, openat2, creat: O_CREAT|O_WRONLY|O_TRUNC); connect: the family
	__u16 exe_len;
	__u16 path_len;
	__u16 base_len;
	__u16 path2_len;
	__u16 base2_len;
	__u8 exe_trunc;
	__u8 path_trunc; // a path or base was longer than the room for it
	__u32 ptgid;     // the parent process (for the parent chain when the caller is gone)
	__u16 pexe_len;  // the parent's executable, after the caller's
	__u16 pad;
	__u32 pad2;
	__u64 cgid; // the run's: a reused ring buffer may hold another run's last events
};

const struct guard_event *unused_guard_event __attribute__((unused));
const enum file_op *unused_file_op __attribute__((unused));
const enum guard_kind *unused_guard_kind __attribute__((unused));
const struct run_cfg *unused_run_cfg __attribute__((unused));

// ---- configuration and maps --------------------------------------------------------------------

#define RUNS_MAX 1024        // runs at the same time on the host
#define RING_SLOTS 64        // ring buffers, one per run at a time (a run without one is not shared)
// A ring buffer: ~16,000 events of ~250 bytes between two reads (a flood of refused creates
// filled 1 MiB on a loaded machine). Lost events are still counted (run_cfg.drops).
#define RINGBUF_SZ (4 << 20)

struct hidden_path {
	__u32 len; // bytes, at most 8 * HIDDEN_WORDS
	__u32 pad;
	__u64 w[HIDDEN_WORDS];
};

// One run, by its cgroup id.
struct run_cfg {
	__u32 hidden_n; // entries in hidden
	__u32 slot;     // its ring buffer in rings (user space owns it in slot_owner)
	__u64 drops;    // denials that did not fit in the ring buffer (still refused)
	__u64 busy;     // denials not reported: the scratch buffer was in use (ENOENT not counted)
	struct hidden_path hidden[HIDDEN_MAX];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RUNS_MAX);
	__type(key, __u64);
	__type(value, struct run_cfg);
} runs SEC(".maps");

// The ring buffers, created by user space on a slot's first use and kept for the next run that
// takes the slot: changing a map of maps waits for an RCU grace period.
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, RING_SLOTS);
	__type(key, __u32);
	__array(values, struct {
		__uint(type, BPF_MAP_TYPE_RINGBUF);
		__uint(max_entries, RINGBUF_SZ);
	});
} rings SEC(".maps");

// Which run (cgroup id) the file program of a slot reports for, 0 for none: each slot's
// instance of sys_exit_path is attached with the slot as its cookie, so that a run can take
// over a slot whose program is still attached (see enforcer's warm slots) by changing this.
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, RING_SLOTS);
	__type(key, __u32);
	__type(value, __u64);
} slot_cgid SEC(".maps");

// Which process holds a slot of rings: user space takes a slot by creating its entry.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RING_SLOTS);
	__type(key, __u32);
	__type(value, __u64);
} slot_owner SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u32);
} fops SEC(".maps");

#include "scratch.h"

// ---- dentry walk, the current task's files (path.h, shared with learn.c) -----------------------

#include "path.h"

// header fills the common part of an event in scratch slot `slot` and writes the executable's
// path (and its parent's) after it. Returns the offset after it, 0 without the slot. A global
// function: the verifier checks it once, not once for every path of its callers.
__noinline __u32 header(__u32 slot, __u32 kind)
{
	struct scratch *s = bpf_map_lookup_elem(&scratch, &slot);
	if (!s)
		return 0;
	struct guard_event *e = (void *)s->data;
	__builtin_memset(e, 0, sizeof(*e));
	__u64 id = bpf_get_current_pid_tgid();
	e->kind = kind;
	e->tgid = id >> 32;
	e->pid = (__u32)id;
	e->ts = bpf_ktime_get_ns();
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	e->ptgid = BPF_CORE_READ(task, real_parent, tgid);
	struct file *exe = BPF_CORE_READ(task, mm, exe_file);
	__u32 n = 0;
	if (exe) {
		struct path p;
		BPF_CORE_READ_INTO(&p, exe, f_path);
		__u8 trunc = 0;
		n = walk(s, p.mnt, p.dentry, slot, sizeof(*e), PATH_SZ, &trunc);
		n &= PATH_SZ - 1;
		e->exe_trunc = trunc;
	}
	e->exe_len = n;
	__u32 off = sizeof(*e) + n;
	struct file *pexe = BPF_CORE_READ(task, real_parent, mm, exe_file);
	if (pexe) {
		struct path p;
		BPF_CORE_READ_INTO(&p, pexe, f_path);
		__u8 trunc = 0;
		__u32 m = walk(s, p.mnt, p.dentry, slot, off, PATH_SZ, &trunc);
		m &= PATH_SZ - 1;
		e->pexe_len = m;
		off += m;
	}
	return off;
}

// submit sends size bytes of the scratch slot to the run's ring buffer.
static __always_inline void submit(__u64 cgid, struct run_cfg *cfg, struct scratch *s, __u32 size)
{
	size &= SCRATCH_SZ - 1;
	if (size < sizeof(struct guard_event))
		return;
	((struct guard_event *)s->data)->cgid = cgid;
	__u32 slot = cfg->slot;
	void *rb = bpf_map_lookup_elem(&rings, &slot);
	if (!rb || bpf_ringbuf_output(rb, s->data, size, 0))
		__sync_fetch_and_add(&cfg->drops, 1);
}

// ---- file denials --------------------------------------------------------------------------------

// The context of every syscalls/sys_exit_<name> tracepoint.
struct sys_exit_ctx {
	__u64 common;
	int nr;
	int pad;
	long ret;
};

struct match_ctx {
	struct run_cfg *cfg;
	__u32 off; // where the path string starts in the scratch data
	__u32 hit;
};

// match_hidden: is the string at c->off prefixed by hidden path i? (User space checks the
// component boundary.)
static long match_hidden(__u32 i, struct match_ctx *c)
{
	struct run_cfg *cfg = c->cfg;
	__u64 k = i;
	barrier_var(k); // compared and used as one 64-bit register (no zero extension between)
	if (!cfg || k >= HIDDEN_MAX || k >= cfg->hidden_n)
		return 1;
	struct hidden_path *h = &cfg->hidden[k];
	__u32 slot = SLOT_FILE;
	struct scratch *s = bpf_map_lookup_elem(&scratch, &slot);
	if (!s)
		return 1;
	__u32 len = h->len;
	if (len == 0 || len > 8 * HIDDEN_WORDS)
		return 0;
	for (int j = 0; j < HIDDEN_WORDS; j++) {
		__u32 left = len - j * 8;
		if (j * 8 >= len)
			break;
		__u64 w = 0;
		bpf_probe_read_kernel(&w, 8, &s->data[(c->off + j * 8) & DATA_MASK]);
		__u64 want = h->w[j];
		if (left < 8) {
			__u64 mask = (1ULL << (left * 8)) - 1;
			w &= mask;
			want &= mask;
		}
		if (w != want)
			return 0;
	}
	c->hit = 1;
	return 1;
}

// put_path reads the user string at ptr into the file event at off, and when it is relative,
// the components of its directory (dirfd's file, or the cwd) after it; it sets the event's
// lengths of the first path (second == 0) or of the second. Returns the new offset. A global
// function (see header).
__noinline __u32 put_path(__u64 off, long dirfd, unsigned long ptr, int resolve, int second)
{
	__u32 slot = SLOT_FILE;
	struct scratch *s = bpf_map_lookup_elem(&scratch, &slot);
	if (!s || off > SCRATCH_SZ - PATH_SZ * 3)
		return off;
	struct guard_event *e = (void *)s->data;
	long n = bpf_probe_read_user_str(&s->data[off & DATA_MASK], PATH_SZ, (void *)ptr);
	if (n <= 0)
		return off;
	n &= PATH_SZ - 1;
	if (second)
		e->path2_len = n;
	else
		e->path_len = n;
	__u8 first = s->data[off & DATA_MASK];
	off += n;
	// An empty path with a descriptor is the descriptor's own file (AT_EMPTY_PATH: execveat of
	// an fd, fexecve): its "directory" is that file, which names it.
	if (!resolve || first == '/' || (n <= 1 && dirfd == AT_FDCWD))
		return off;
	struct path base = {};
	if (dirfd == AT_FDCWD) {
		struct task_struct *task = bpf_get_current_task_btf();
		BPF_CORE_READ_INTO(&base, task, fs, pwd);
	} else {
		struct file *f = fd_file(dirfd);
		if (!f)
			return off;
		BPF_CORE_READ_INTO(&base, f, f_path);
	}
	__u8 trunc = 0;
	__u32 b = walk(s, base.mnt, base.dentry, SLOT_FILE, off, PATH_SZ, &trunc);
	b &= PATH_SZ - 1;
	if (second)
		e->base2_len = b;
	else
		e->base_len = b;
	if (trunc)
		e->path_trunc = 1;
	return off + b;
}

// put_sockaddr copies a connect's IPv4 or IPv6 sockaddr (28 bytes, or 16 when less is
// readable) into the file event at off as its path and returns the new offset. A global
// function (see header).
__noinline __u32 put_sockaddr(__u64 off, unsigned long sa)
{
	__u32 slot = SLOT_FILE;
	struct scratch *s = bpf_map_lookup_elem(&scratch, &slot);
	if (!s || off > SCRATCH_SZ - PATH_SZ * 3)
		return off;
	struct guard_event *e = (void *)s->data;
	__u32 n = 28;
	if (bpf_probe_read_user(&s->data[off & DATA_MASK], 28, (void *)sa)) {
		n = 16;
		if (bpf_probe_read_user(&s->data[off & DATA_MASK], 16, (void *)sa))
			return off;
	}
	e->path_len = n;
	return off + n;
}

// hidden_hit reports whether the absolute user path at ptr starts with a hidden path of run
// cgid (user space checks the component boundary). A global function (see header).
__noinline int hidden_hit(__u64 cgid, unsigned long ptr)
{
	__u32 slot = SLOT_FILE;
	struct scratch *s = bpf_map_lookup_elem(&scratch, &slot);
	struct run_cfg *cfg = bpf_map_lookup_elem(&runs, &cgid);
	if (!s || !cfg)
		return 0;
	__u32 at = sizeof(struct guard_event);
	long n = bpf_probe_read_user_str(&s->data[at], 8 * HIDDEN_WORDS + 8, (void *)ptr);
	if (n <= 1 || s->data[at] != '/')
		return 0;
	// Nearly every ENOENT is a search (include directories, modules) whose first 8 bytes differ
	// from every hidden path's: decided here, without match_hidden's loop (a callback and a
	// helper call per hidden path). The same compare as match_hidden's first word.
	__u64 w0 = 0;
	__builtin_memcpy(&w0, &s->data[at], 8);
	int maybe = 0;
	for (__u32 k = 0; k < HIDDEN_MAX; k++) {
		if (k >= cfg->hidden_n)
			break;
		__u32 len = cfg->hidden[k].len;
		__u64 w = w0, want = cfg->hidden[k].w[0];
		if (len < 8) {
			__u64 mask = (1ULL << (len * 8)) - 1;
			w &= mask;
			want &= mask;
		}
		if (w == want) {
			maybe = 1;
			break;
		}
	}
	if (!maybe)
		return 0;
	struct match_ctx mc = {.cfg = cfg, .off = at};
	bpf_loop(HIDDEN_MAX, match_hidden, &mc, 0);
	return mc.hit;
}

// put_fd writes the components of the path of the current task's file fd into the file event
// at off (as put_path does for a relative path's directory) and returns the new offset. A global
// function (see header).
__noinline __u32 put_fd(__u64 off, long fd)
{
	__u32 slot = SLOT_FILE;
	struct scratch *s = bpf_map_lookup_elem(&scratch, &slot);
	if (!s || off > SCRATCH_SZ - PATH_SZ * 3)
		return off;
	struct guard_event *e = (void *)s->data;
	struct file *f = fd_file(fd);
	if (!f)
		return off;
	struct path p = {};
	BPF_CORE_READ_INTO(&p, f, f_path);
	__u8 trunc = 0;
	__u32 b = walk(s, p.mnt, p.dentry, SLOT_FILE, off, PATH_SZ, &trunc);
	b &= PATH_SZ - 1;
	e->base_len = b;
	if (trunc)
		e->path_trunc = 1;
	return off + b;
}

SEC("tracepoint/syscalls/sys_exit_path")
int sys_exit_path(struct sys_exit_ctx *ctx)
{
	long ret = ctx->ret;
	if (ret >= 0) // nearly every call: one compare
		return 0;
	if (ret != -EACCES && ret != -EROFS && ret != -EXDEV && ret != -ENOENT && ret != -EPERM &&
	    ret != -ECONNREFUSED && ret != -ENETUNREACH && ret != -ENOSYS && ret != -EBUSY)
		return 0;
	// Each slot's instance is attached with the slot as the cookie; slot_cgid names the run
	// that holds the slot: the calls of its command are its own, the others' belong to other
	// runs (or to no run).
	__u32 cslot = (__u32)bpf_get_attach_cookie(ctx);
	__u64 *owner = bpf_map_lookup_elem(&slot_cgid, &cslot);
	__u64 cgid = bpf_get_current_cgroup_id();
	if (!owner || *owner != cgid)
		return 0;
	struct run_cfg *cfg = bpf_map_lookup_elem(&runs, &cgid);
	if (!cfg)
		return 0;
	__u32 nr = ctx->nr;
	__u32 *fopp = bpf_map_lookup_elem(&fops, &nr);
	if (!fopp)
		return 0;
	__u32 fop = *fopp;
	// ENOSYS is seccomp's answer to every clone3 (its flags are in memory it cannot read).
	if ((ret == -ENOSYS) != (fop == FOP_CLONE3))
		return 0;
	// EBUSY: every mount point inside the sandbox is the sandbox's; only a rename or a removal
	// (the path calls) meets one that way. User space keeps those of protected and hidden paths.
	if (ret == -EBUSY && fop != FOP_TWO && fop != FOP_TWOAT && fop != FOP_PATH && fop != FOP_PATHAT)
		return 0;
	// A failed connect is rare: user space decides which are the sandbox's (a covered socket).
	int enoent = 0;
	if (fop != FOP_CONNECT) {
		if (ret == -ECONNREFUSED || ret == -ENETUNREACH)
			return 0;
		if (ret == -ENOENT) {
			if (cfg->hidden_n == 0)
				return 0;
			enoent = 1;
		}
	}
	// EPERM is seccomp's answer to a path syscall (the supervisor reports it); only an
	// executable mapping refused by a noexec mount is the sandbox's, and only that is taken.
	if ((ret == -EPERM) != (fop == FOP_MMAP))
		return 0;

	struct task_struct *task = bpf_get_current_task_btf();
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);
	unsigned long a[5];
	exit_sc_args(regs, a);
	unsigned long a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3];
	long dirfd1 = AT_FDCWD, dirfd2 = AT_FDCWD;
	unsigned long p1 = 0, p2 = 0;
	int resolve1 = 1;
	long mmap_fd = -1;
	unsigned long sa = 0; // a connect's IPv4 or IPv6 sockaddr
	__u64 flags = 0;
	switch (fop) {
	case FOP_OPEN:
		p1 = a0;
		flags = a1;
		break;
	case FOP_OPENAT:
		dirfd1 = (int)a0;
		p1 = a1;
		flags = a2;
		break;
	case FOP_OPENAT2:
		dirfd1 = (int)a0;
		p1 = a1;
		bpf_probe_read_user(&flags, sizeof(flags), (void *)a2);
		break;
	case FOP_CREAT:
		p1 = a0;
		flags = 01 | 0100 | 01000; // O_WRONLY|O_CREAT|O_TRUNC
		break;
	case FOP_EXECVE:
	case FOP_PATH:
		p1 = a0;
		break;
	case FOP_EXECVEAT:
	case FOP_PATHAT:
		dirfd1 = (int)a0;
		p1 = a1;
		break;
	case FOP_TWO:
		p1 = a0;
		p2 = a1;
		break;
	case FOP_TWOAT:
		dirfd1 = (int)a0;
		p1 = a1;
		dirfd2 = (int)a2;
		p2 = a3;
		break;
	case FOP_SYMLINK:
		p1 = a0;
		resolve1 = 0; // the target is a string, not a lookup
		p2 = a1;
		break;
	case FOP_SYMLINKAT:
		p1 = a0;
		resolve1 = 0;
		dirfd2 = (int)a1;
		p2 = a2;
		break;
	case FOP_MMAP:
		if (!(a2 & 4)) // PROT_EXEC
			return 0;
		mmap_fd = (int)a[4];
		if (mmap_fd < 0)
			return 0;
		break;
	case FOP_CONNECT: {
		__u16 fam = 0;
		bpf_probe_read_user(&fam, sizeof(fam), (void *)a1);
		flags = fam;
		if (fam == AF_UNIX) {
			char c0 = 0;
			bpf_probe_read_user(&c0, 1, (void *)(a1 + 2));
			if (!c0 || ret == -ENETUNREACH) // abstract (Landlock's scope answers EPERM)
				return 0;
			p1 = a1 + 2;
		} else if ((fam == AF_INET || fam == AF_INET6) && (ret == -EACCES || ret == -ENETUNREACH)) {
			sa = a1;
		} else {
			return 0;
		}
		break;
	}
	case FOP_CLONE3:
		// Only namespace flags are an attempt: glibc's threads and spawns try clone3 first.
		if (bpf_probe_read_user(&flags, sizeof(flags), (void *)a0) || !(flags & NS_FLAGS))
			return 0;
		break;
	default:
		return 0;
	}
	if (!p1 && mmap_fd < 0 && !sa && fop != FOP_CLONE3)
		return 0;

	__u32 slot = SLOT_FILE;
	struct scratch *s = bpf_map_lookup_elem(&scratch, &slot);
	if (!s || s->busy) {
		// Counted as lost (report.LostRecords) unless it was an ENOENT, nearly always a lookup
		// of something that is not there rather than a hidden path.
		if (!enoent)
			__sync_fetch_and_add(&cfg->busy, 1);
		return 0;
	}
	s->busy = 1;
	// ENOENT only for an absolute path under a hidden path: everything else that is not there
	// is the tool looking around (PATH and library searches), not a refusal. Decided on the
	// first bytes of the string before any other work.
	if (enoent && (!p1 || !hidden_hit(cgid, p1))) {
		s->busy = 0;
		return 0;
	}
	__u32 off = header(SLOT_FILE, GK_FILE);
	if (off < sizeof(struct guard_event)) {
		s->busy = 0;
		return 0;
	}
	struct guard_event *e = (void *)s->data;
	e->ret = ret;
	e->nr = nr;
	e->fop = fop;
	e->flags = flags;
	if (mmap_fd >= 0)
		off = put_fd(off, mmap_fd);
	else if (sa)
		off = put_sockaddr(off, sa);
	else if (p1)
		off = put_path(off, dirfd1, p1, resolve1, 0);
	if (p2)
		off = put_path(off, dirfd2, p2, 1, 1);
	submit(cgid, cfg, s, off);
	s->busy = 0;
	return 0;
}
