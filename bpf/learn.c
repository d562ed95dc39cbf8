//go:build ignore

// learn.c: the kernel side of `sysprof learn`.
//
// Everything here is gated on the run's cgroup2 id (run.cgid) and on the `tasks` map: a thread
// group is recorded only once it (or an ancestor) exec'd inside the run's cgroup, so nothing the
// launcher does between fork and exec is seen. The programs and maps may serve several runs in
// turn (profiler's warm take-over): what a run leaves in `stashes` (per thread, for threads still
// alive) carries its run.id and is reset, never used, by a later run.
//
//   sched_process_exec   mark the tgid, record its executable        -> exec event
//   sched_process_fork   copy the mark to a new process              -> fork event
//   sched_process_exit   forget the tgid once the whole group is dead -> exit event
//   cgroup_attach_task   note a task of the run moved out of its cgroup (run_state.escaped)
//   raw_syscalls/sys_enter  count {exe, arch, nr} in a hash map (never through the ring buffer;
//                       repeats in a per-thread and a per-CPU cache, see struct cpu_cache),
//                       aggregate argument domains, stash path-syscall arguments
//   syscalls/sys_exit_*  (one program, attached to the path syscalls only) read the stashed
//                       strings, resolve fds and the cwd with a dentry walk   -> file / unix events
//   cgroup/{connect,sendmsg,bind}{4,6}  inet endpoints                       -> net events
//   cgroup_skb/{egress,ingress}         UDP port 53 payloads                  -> dns events
//                       egress: the first payload of each TCP connection the run connected
//                       (its start: TLS ClientHello, HTTP request)             -> sniff events
//
// Syscall numbers never appear in this file: user space fills `sc_ops` (nr -> op) from the
// go-seccomp-bpf table of the native ABI (x86_64 or aarch64), so there is no second table to
// keep in sync. How a syscall's arguments and ABI are read per architecture is arch.h's.

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_endian.h>
#include "arch.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

// Superblock magics of pseudo filesystems (include/uapi/linux/magic.h).
#define PIPEFS_MAGIC 0x50495045
#define SOCKFS_MAGIC 0x534F434B
#define ANON_INODE_FS_MAGIC 0x09041934
#define NSFS_MAGIC 0x6e736673

#define AT_FDCWD -100
#define PROT_EXEC 0x4
#define MAP_ANONYMOUS 0x20
#define O_ACCMODE 00000003
#define O_CREAT 00000100
#define O_TRUNC 00001000
#define O_PATH 010000000
#define AT_REMOVEDIR 0x200
#define EEXIST 17
#define AF_UNIX 1
#define AF_INET 2
#define AF_INET6 10
#define S_IFMT 00170000
#define S_IFDIR 0040000

#define NAME_SZ 256      // one dentry name incl. NUL
#define PATH_SZ 4096     // one user path incl. NUL
#define DATA_MASK 8191   // offsets into scratch data are masked with this
#define SCRATCH_SZ 16384 // > DATA_MASK + NAME_SZ + header
#define DNS_MAX 512
#define SNIFF_MAX 1024 // a ClientHello's SNI and an HTTP request's Host come within this
#define SC_OPS_MAX 1024
#define SC_CACHE 16 // syscalls counted per thread between map updates (see struct stash)

// ---- shared with Go (bpf2go -type) -----------------------------------------------------------

enum ev_kind {
	EV_EXEC = 1,
	EV_FORK = 2,
	EV_EXIT = 3,
	EV_FILE = 4,
	EV_NET = 5,
	EV_DNS = 6,
	EV_UNIX = 7,
	EV_SNIFF = 8,
};

// What a syscall number means to this program; user space fills sc_ops[nr] with these.
enum sc_op {
	SCOP_NONE = 0,
	// argument domains
	SCOP_SOCKET,
	SCOP_CLONE,
	SCOP_CLONE3,
	SCOP_UNSHARE,
	SCOP_SETNS,
	SCOP_PRCTL,
	SCOP_PERSONALITY,
	SCOP_IOCTL,
	SCOP_MPROTECT,
	// path syscalls (stashed at enter, handled at exit)
	SCOP_PATH_FIRST,
	SCOP_OPEN = SCOP_PATH_FIRST, // path a0, flags a1
	SCOP_OPENAT,               // dirfd a0, path a1, flags a2
	SCOP_OPENAT2,              // dirfd a0, path a1, how a2
	SCOP_CREAT,                // path a0
	SCOP_STAT,                 // path a0 (stat, lstat, access, readlink)
	SCOP_STATAT,               // dirfd a0, path a1 (newfstatat, statx, faccessat*, readlinkat)
	SCOP_EXECVE,               // path a0
	SCOP_EXECVEAT,             // dirfd a0, path a1
	SCOP_UNLINK,               // path a0 (unlink, rmdir)
	SCOP_UNLINKAT,             // dirfd a0, path a1
	SCOP_RENAME,               // old a0, new a1
	SCOP_RENAMEAT,             // olddirfd a0, old a1, newdirfd a2, new a3 (renameat, renameat2)
	SCOP_LINK,                 // old a0, new a1
	SCOP_LINKAT,               // olddirfd a0, old a1, newdirfd a2, new a3
	SCOP_SYMLINK,              // target a0, linkpath a1
	SCOP_SYMLINKAT,            // target a0, newdirfd a1, linkpath a2
	SCOP_MKDIR,                // path a0 (mkdir, mknod)
	SCOP_MKDIRAT,              // dirfd a0, path a1 (mkdirat, mknodat)
	SCOP_CHANGE,               // path a0 (chmod, chown, lchown, truncate)
	SCOP_CHANGEAT,             // dirfd a0, path a1 (fchmodat, fchmodat2, fchownat, utimensat)
	SCOP_CONNECT,              // fd a0, addr a1, len a2 (connect, bind: unix only)
	SCOP_BIND,
	SCOP_SENDTO,               // fd a0, addr a4, len a5
	SCOP_SENDMSG,              // fd a0, msghdr a1
	SCOP_MMAP,                 // prot a2, flags a3, fd a4: an anonymous PROT_EXEC mapping is an
	                           // argument, a file's is stashed (the file it maps, at exit)
	SCOP_LAST,
};

// Argument kinds; the names in trace.ArgValue.Kind are in the same order.
enum arg_kind {
	ARGK_SOCKET = 1,
	ARGK_CLONE_FLAGS,
	ARGK_CLONE3_FLAGS,
	ARGK_UNSHARE_FLAGS,
	ARGK_SETNS_NSTYPE,
	ARGK_PRCTL_OPTION,
	ARGK_PERSONALITY,
	ARGK_IOCTL_REQUEST,
	ARGK_MMAP_PROT,
	ARGK_MPROTECT_PROT,
};

enum access_kind {
	ACC_READ = 1,
	ACC_WRITE,
	ACC_CREATE,
	ACC_DELETE,
	ACC_EXEC,
	ACC_LIST,
	ACC_METADATA,
	ACC_MAP, // mapped executable (mmap PROT_EXEC of the file)
};

// The ABI a syscall came through. The names are x86_64's; on arm64 0 is aarch64 and 1 is
// arm (AArch32 compat); x32 exists on x86_64 only (bpf.ArchTables names them per build).
enum arch_kind {
	SCARCH_X86_64 = 0,
	SCARCH_I386 = 1,
	SCARCH_X32 = 2,
};

enum counter {
	CNT_RINGBUF_DROPS = 0, // ring buffer reserve/output failures
	CNT_SYSCALLS_FULL,     // syscall count map full
	CNT_ARGS_FULL,         // argument map full
	CNT_TASKS_FULL,        // tasks map full: a process is not recorded
	CNT_STASH_FULL,        // stash map full: a path syscall is not recorded
	CNT_SCRATCH_BUSY,      // scratch buffer in use: event dropped
	CNT_EXIT_MISSED,       // a path syscall whose exit handler did not run: event dropped
	CNT_MAX,
};

struct task_info {
	__u64 exe_key;
	__u32 flags;
	__u32 pad;
};

struct sc_key {
	__u64 exe_key;
	__u32 arch;
	__u32 nr;
};

struct arg_key {
	__u64 exe_key;
	__u32 nr;
	__u32 kind;
	__u64 value;
};

// A path syscall between its enter and its exit.
struct pending {
	__u64 exe_key;
	__u64 args[6];
	__u32 nr;
	__u32 op; // SCOP_NONE: nothing stashed
};

// A directory whose path the reader has under id: a later event of the same thread relative to
// it (fstatat(dirfd, name), a cwd-relative open) or under it (a file opened in it) sends the id
// and the rest of the path instead of walking the directory's dentries again (most of a
// find(1) run's kernel time went to walking the same directory once per entry).
struct base_cache {
	__u64 dentry; // struct dentry *, 0: empty
	__u64 mnt;    // struct mount *
	__u64 parent; // the dentry's d_parent and d_name.hash_len when it was cached: a rename of
	__u64 name;   // the directory itself, by any process, changes one of them
	__u64 gen;    // path_state.gen when it was cached: a rename in the run bumps it
	__u32 id;
	__u32 pad;
};

struct stash {
	struct pending sc;
	// The thread's entry in `tasks`, cached by sys_enter (a task storage lookup is cheaper
	// than hashing the tgid on every syscall). Set at the thread's first recorded syscall and
	// by sched_exec (the only change of a recorded thread group's exe_key while it lives).
	__u64 task_exe_key;
	__u32 task_cached;
	__u32 pad;
	// The thread's recent syscalls, in slot nr % SC_CACHE. A syscall is counted in `syscalls`
	// when it takes its slot (so the set of syscalls is always complete there), and its calls
	// after that here, added when another syscall takes the slot or the thread execs or exits
	// (a thread that outlives the run, having left its cgroup, keeps those uncounted).
	__u64 sc_tag[SC_CACHE]; // (arch + 1) << 32 | nr; 0: empty
	__u64 sc_rep[SC_CACHE];
	// The last two directories whose path this thread sent (see base_find).
	struct base_cache bases[2];
	__u32 base_next; // the entry the next one replaces
	__u32 pad2;
	__u64 run_id; // the run.id all of the above belongs to
};

// sys_enter's fast path, per CPU: the recent syscalls of the run's thread that last ran one
// here, for the syscalls sys_enter does nothing with but count (no argument domain, no path).
// A hit is one inlined per-CPU array lookup and a few compares, with no helper call but the
// current task's (the task storage lookup and the calls around it were most of what the program
// cost a getppid storm: BENCHMARKS.md, "Learning"). The first call of a syscall is counted by the
// slow path (so the map always has the whole set); the calls after it here, added to the map
// when the entry changes hands or the slot is taken, or by user space after the run. The owner
// is a task pointer, which a new task may get once the old one is gone: every exit (and every
// exec, which changes the exe_key) of a run's thread bumps run_state.gen, and an entry taken
// under another gen is stale.
struct cpu_cache {
	__u64 task;    // struct task_struct *; 0: none
	__u64 run_id;
	__u64 gen;
	__u64 exe_key;
	__u32 busy; // being rewritten (a preemptible kernel may run another sys_enter here meanwhile)
	__u32 pad;
	__u64 tag[SC_CACHE]; // as stash.sc_tag
	__u64 rep[SC_CACHE];
};

struct seen_key {
	__u64 exe_key;
	__u32 kind; // event kind << 8 | access
	__s32 err;  // 0 = ok, else errno
	__u64 a;    // dev or string hash
	__u64 b;    // ino or base ino
};

struct exec_event {
	__u32 kind;
	__u32 tgid;
	__u32 pid;
	__u32 old_pid;
	__u64 ts;
	__u64 exe_key;
	__u16 exe_len;   // bytes of exe path components (leaf first, NUL-separated)
	__u16 argv0_len; // bytes of argv[0] incl. NUL, after the components
	__u16 fname_len; // bytes of the file name given to execve incl. NUL, after argv[0]
	__u16 cwd_len;   // bytes of cwd components when that name is relative, after it
	__u8 exe_trunc;
	__u8 pad[7];
};

struct fork_event {
	__u32 kind;
	__u32 tgid;
	__u32 parent_tgid;
	__u32 pad;
	__u64 ts;
	__u64 exe_key;
};

struct exit_event {
	__u32 kind;
	__u32 tgid;
	__u64 ts;
	__u32 exit_code; // task->exit_code: status << 8 | signal
	__u32 pad;
};

struct file_event {
	__u32 kind;
	__u32 tgid;
	__u64 exe_key;
	__u32 op;
	__u32 access;
	__s32 err;      // 0 = ok, else errno
	__u8 resolved;  // 1: path = dentry components of the opened file; 0: path = user string
	__u8 is_dir;
	__u8 path_trunc;
	__u8 base_trunc;
	__u16 path_len; // bytes of path (components or string incl. NUL)
	__u16 base_len; // bytes of base components (0: none sent)
	// ref_id: the path of an earlier event's def_id is the base (a user string) or the prefix
	// of the components (a resolved path) of this one. def_id: remember this event's base (user
	// string) or full path (resolved) as def_id. 0: none.
	__u32 ref_id;
	__u32 def_id;
	__u32 pad;
};

struct unix_event {
	__u32 kind;
	__u32 tgid;
	__u64 exe_key;
	__u32 op;
	__s32 err;
	__u16 sock_type;
	__u16 path_len; // bytes of sun_path that are valid
	__u8 abstract;
	__u8 pad[3];
	char path[108];
	__u8 pad2[4];
};

struct net_event {
	__u32 kind;
	__u32 tgid;
	__u64 exe_key;
	__u32 op; // SCOP_CONNECT, SCOP_SENDMSG, SCOP_BIND
	__u32 family;
	__u32 type;
	__u32 protocol;
	__u32 port; // host order
	__u32 pad;
	__u8 addr[16];
};

struct dns_event {
	__u32 kind;
	__u32 egress;
	__u32 family;
	__u16 sport;
	__u16 dport;
	__u8 saddr[16];
	__u8 daddr[16];
	__u32 len;
	__u32 pad;
	__u8 data[DNS_MAX];
};

// The first bytes a connection of the run sent (user space reads the TLS SNI or HTTP Host).
struct sniff_event {
	__u32 kind;
	__u32 family;
	__u64 exe_key;
	__u16 dport;
	__u16 pad;
	__u32 len;
	__u8 daddr[16];
	__u8 data[SNIFF_MAX];
};

const struct exec_event *unused_exec __attribute__((unused));
const struct fork_event *unused_fork __attribute__((unused));
const struct exit_event *unused_exit __attribute__((unused));
const struct file_event *unused_file __attribute__((unused));
const struct unix_event *unused_unix __attribute__((unused));
const struct net_event *unused_net __attribute__((unused));
const struct dns_event *unused_dns __attribute__((unused));
const struct sniff_event *unused_sniff __attribute__((unused));
const struct sc_key *unused_sc __attribute__((unused));
const struct cpu_cache *unused_cc __attribute__((unused));
const struct arg_key *unused_arg __attribute__((unused));
const struct task_info *unused_task __attribute__((unused));
const enum sc_op *unused_op __attribute__((unused));
const enum ev_kind *unused_kind __attribute__((unused));
const enum arg_kind *unused_argk __attribute__((unused));
const enum access_kind *unused_acc __attribute__((unused));
const enum arch_kind *unused_arch __attribute__((unused));
const enum counter *unused_cnt __attribute__((unused));

// ---- configuration and maps ------------------------------------------------------------------

// The run being recorded: its cgroup, and an id no earlier run of these programs had (user space
// sets both before it attaches anything).
struct run_state {
	__u64 cgid;
	__u64 id;
	__u64 gen; // bumped by every exec and thread exit of the run (see struct cpu_cache)
	__u64 rb_quarter; // a quarter of the ring buffer's bytes (see rb_flags); 0: ask the ring
	// Set once a task of the run is outside the run's cgroup (moved by a write to cgroup.procs
	// or cgroup.threads: cgroup_attach; born elsewhere by clone3's CLONE_INTO_CGROUP:
	// sched_fork). Until then sys_enter tells the run's tasks by their cgroup alone.
	__u64 escaped;
	// Set once `events` was full: from then on the run writes to `spill` (see rb_output).
	__u64 spilled;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct run_state);
} run SEC(".maps");

// events is small (user space maps all of a ring's pages at once, twice: 16 MB cost a run
// ~3 ms of CPU to map and unmap); spill is the big one, which user space maps only once a run
// has written to it (user space sizes both).
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 512 << 10);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 << 20);
} spill SEC(".maps");

// Allocated on use: an insert is one fork or exec (the ~1 us an allocation costs is nothing
// there), and preallocating 64k entries cost ~1 ms per run.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, struct task_info);
} tasks SEC(".maps");

// Allocated on use: a big build runs thousands of distinct executables (build scripts, test
// binaries), each with its own syscall set, but most runs use a few hundred entries.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 262144);
	__type(key, struct sc_key);
	__type(value, __u64);
} syscalls SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__type(key, struct arg_key);
	__type(value, __u64);
} args SEC(".maps");

// The arguments of a path syscall between its enter and exit, per thread, and the thread's
// exe_key. Task storage: no hashing, no capacity limit, freed with the thread.
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct stash);
} stashes SEC(".maps");

// The dedup set: a direct-mapped table of 64-bit fingerprints of {run, seen_key}. A hit means
// this run sent the event already; a miss sends it and takes the slot, so a key evicted by
// another is sent again (user space dedupes too; Count is approximate anyway). It replaced a
// hash map (64k preallocated + 256k on demand) whose lookup-then-insert, two cache-missing
// bucket walks and a bucket lock per new key, was ~7% of a find(1) run's CPU: here it is one
// array slot, no lock, and nothing to clear between runs (the run id is in the fingerprint:
// a hash of {run, key}, so that no run of a warm take-over sees what an earlier one sent).
// Two keys sharing a fingerprint is as unlikely as two paths sharing seen_key.a's hash.
#define SEEN_SLOTS (1 << 18) // 2 MB
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SEEN_SLOTS);
	__type(key, __u32);
	__type(value, __u64);
} seen SEC(".maps");

// The run's base ids and the generation of paths (see struct base_cache).
struct path_state {
	__u64 gen;     // bumped by every rename the run makes
	__u64 next_id; // base ids handed out
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct path_state);
} path_state SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cpu_cache);
} fast SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SC_OPS_MAX);
	__type(key, __u32);
	__type(value, __u32);
} sc_ops SEC(".maps");

// TCP sockets the run connected and has not sent on yet: socket cookie -> exe_key. The first
// payload on one is sent as a sniff event and the entry deleted. LRU: a connection that never
// sends ages out; cookies are never reused, so a previous run's entries match nothing.
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, __u64);
	__type(value, __u64);
} conns SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, CNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

// Per-CPU scratch for variable-length events, one slot per program family so that a softirq
// program cannot overwrite what a tracepoint program on the same CPU is building.
#define SLOT_SYSEXIT 0
#define SLOT_EXEC 1
#include "scratch.h"

static __always_inline void count(__u32 idx)
{
	__u64 *c = bpf_map_lookup_elem(&counters, &idx);
	if (c)
		__sync_fetch_and_add(c, 1); // a softirq program may interrupt a tracepoint one
}

static __always_inline struct run_state *run_get(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&run, &zero);
}

// stash_of_run makes st the current run's: a stash of an earlier run (its thread outlived that
// run) is emptied, not flushed.
static __always_inline void stash_of_run(struct stash *st, __u64 run_id)
{
	if (st->run_id == run_id)
		return;
	__builtin_memset(st, 0, sizeof(*st));
	st->run_id = run_id;
}

// rb_flags: no wakeup per event (in a VM each one is an IPI through a trapped APIC write, 20 %
// of all CPU time in a find(1) run); user space polls every few ms, and is woken only when the
// ring fills up past a quarter (run_state says how many bytes that is: asking the ring for its
// size was one more helper call per event). Once the run writes to spill, user space polls it
// every few ms, never waits for it. A function of its own: the verifier walks it once, not at
// every event's submit.
__attribute__((noinline)) __u64 rb_flags(void)
{
	struct run_state *rs = run_get();
	if (rs && rs->spilled)
		return BPF_RB_NO_WAKEUP;
	__u64 quarter = rs ? rs->rb_quarter : 0;
	if (!quarter)
		quarter = bpf_ringbuf_query(&events, BPF_RB_RING_SIZE) / 4;
	__u64 avail = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA);
	return avail > quarter ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
}

// rb_output writes an event to events, or to spill once events was full: for the rest of the
// run, so that an event written after another (by the same task, or caused by it) is never in
// the ring user space reads first. Nonzero: both were full, the event is lost.
static __always_inline long rb_output(void *data, __u64 size)
{
	struct run_state *rs = run_get();
	if (!rs)
		return -1;
	if (!rs->spilled) {
		// rb_flags, with the run_state at hand, but the reader is woken only by the event that
		// takes the ring past a quarter: with a reader that lags, waking it for every event
		// past that point cost sys_exit_path a third more (an IPI each, in a VM). A wakeup
		// two CPUs both miss costs no event: the reader's poll finds them, or spill keeps them.
		__u64 quarter = rs->rb_quarter;
		if (!quarter)
			quarter = bpf_ringbuf_query(&events, BPF_RB_RING_SIZE) / 4;
		__u64 avail = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA);
		// avail <= quarter < avail + size, in one compare (past a quarter, the difference wraps)
		__u64 flags = quarter - avail < size ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
		if (!bpf_ringbuf_output(&events, data, size, flags))
			return 0;
		rs->spilled = 1;
	}
	return bpf_ringbuf_output(&spill, data, size, BPF_RB_NO_WAKEUP);
}

// rb_reserve is rb_output's reserve: the event is submitted with bpf_ringbuf_submit(e,
// rb_flags()) or discarded, whichever ring it is in. One call site per ring, whichever the run
// writes to: the verifier walks what follows once per ring.
#define rb_reserve(size)                                                                           \
	({                                                                                          \
		struct run_state *__rs = run_get();                                                 \
		void *__e = 0;                                                                      \
		if (__rs) {                                                                         \
			if (!__rs->spilled)                                                         \
				__e = bpf_ringbuf_reserve(&events, size, 0);                        \
			if (!__e) {                                                                 \
				__rs->spilled = 1;                                                  \
				__e = bpf_ringbuf_reserve(&spill, size, 0);                         \
			}                                                                           \
		}                                                                                   \
		__e;                                                                                \
	})

static __always_inline void add_n(void *map, void *key, __u64 n, __u32 full_counter)
{
	__u64 *c = bpf_map_lookup_elem(map, key);
	if (c) {
		__sync_fetch_and_add(c, n);
		return;
	}
	if (bpf_map_update_elem(map, key, &n, BPF_NOEXIST) == 0)
		return;
	c = bpf_map_lookup_elem(map, key); // lost a race with another CPU
	if (c)
		__sync_fetch_and_add(c, n);
	else
		count(full_counter);
}

static __always_inline void add_count(void *map, void *key, __u32 full_counter)
{
	add_n(map, key, 1, full_counter);
}

// flush_slot adds the calls kept in slot i of the thread's syscall cache to the counts.
static __always_inline void flush_slot(struct stash *st, __u32 i)
{
	i &= SC_CACHE - 1;
	__u64 n = st->sc_rep[i];
	if (!n)
		return;
	__u64 tag = st->sc_tag[i];
	struct sc_key k = {.exe_key = st->task_exe_key, .arch = (tag >> 32) - 1, .nr = (__u32)tag};
	add_n(&syscalls, &k, n, CNT_SYSCALLS_FULL);
	st->sc_rep[i] = 0;
}

struct flush_ctx {
	struct stash *st;
	int clear;
};

static long flush_step(__u32 i, struct flush_ctx *c)
{
	struct stash *st = c->st;
	if (!st)
		return 1;
	flush_slot(st, i);
	if (c->clear)
		st->sc_tag[i & (SC_CACHE - 1)] = 0;
	return 0;
}

// flush_syscalls adds all the calls kept in the thread's syscall cache to the counts, and
// empties it when clear is set (a bpf_loop: an unrolled loop cost ~9k verified instructions).
static __always_inline void flush_syscalls(struct stash *st, int clear)
{
	struct flush_ctx c = {.st = st, .clear = clear};
	if (st)
		bpf_loop(SC_CACHE, flush_step, &c, 0);
}

// fast_flush_slot adds the calls kept in slot i of the CPU's cache to the counts (those of an
// earlier run are dropped: its user space has read them) and empties the slot.
static __always_inline void fast_flush_slot(struct cpu_cache *fc, __u32 i, __u64 run_id)
{
	i &= SC_CACHE - 1;
	__u64 n = fc->rep[i], tag = fc->tag[i];
	if (n && tag && fc->run_id == run_id) {
		struct sc_key k = {.exe_key = fc->exe_key, .arch = (tag >> 32) - 1, .nr = (__u32)tag};
		add_n(&syscalls, &k, n, CNT_SYSCALLS_FULL);
	}
	fc->rep[i] = 0;
	fc->tag[i] = 0;
}

struct fast_flush_ctx {
	struct cpu_cache *fc;
	__u64 run_id;
};

static long fast_flush_step(__u32 i, struct fast_flush_ctx *c)
{
	if (!c->fc)
		return 1;
	fast_flush_slot(c->fc, i, c->run_id);
	return 0;
}

// fast_put caches syscall tag in the CPU's cache for the current thread (task, exe_key), after
// the slow path counted it: the entry's earlier calls go to the counts first. A global function,
// verified once (inlined at its two call sites it cost sys_enter ~1,100 verified instructions).
__attribute__((noinline)) int fast_put(struct cpu_cache *fc, __u64 task, struct run_state *rs, __u64 exe_key,
				       __u64 tag)
{
	if (!fc || !rs || fc->busy)
		return 0;
	__u32 slot = (__u32)tag & (SC_CACHE - 1);
	fc->busy = 1;
	if (fc->task != task || fc->run_id != rs->id || fc->gen != rs->gen || fc->exe_key != exe_key) {
		struct fast_flush_ctx c = {.fc = fc, .run_id = rs->id};
		bpf_loop(SC_CACHE, fast_flush_step, &c, 0);
		fc->task = task;
		fc->run_id = rs->id;
		fc->gen = rs->gen;
		fc->exe_key = exe_key;
	} else {
		fast_flush_slot(fc, slot, rs->id);
	}
	fc->tag[slot] = tag;
	fc->rep[slot] = 0;
	fc->busy = 0;
	return 0;
}

// mix64 is splitmix64's finalizer: a bijection, so chaining it over a key's fields keeps them
// apart.
static __always_inline __u64 mix64(__u64 z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

// In seen_key.kind: seen_key.b is a base id (struct base_cache), not an inode key.
#define SEEN_BY_ID (1 << 16)

// seen_before records key in this run's dedup table and reports whether it was there. A global
// function: emit_path calls it twice, and inlined it cost the verifier ~400 instructions.
__attribute__((noinline)) int seen_before(struct seen_key *k)
{
	if (!k)
		return 0;
	struct run_state *rs = run_get();
	// The run id is mixed on its own first: (id ^ exe_key) made run i of one binary and run
	// i ^ d of another share fingerprints when their exe_keys differ by d, which for binaries
	// of one file system is the XOR of small inode numbers (ls and look: 1). A warm take-over
	// then found the other binary's loader reads (ld.so.cache, libc) "seen" and sent nothing.
	__u64 h = mix64(mix64(rs ? rs->id : 0) ^ k->exe_key);
	h = mix64(h ^ ((__u64)k->kind << 32 | (__u32)k->err));
	h = mix64(h ^ k->a);
	h = mix64(h ^ k->b) | 1; // never 0, the empty slot
	__u32 i = (h >> 32) & (SEEN_SLOTS - 1);
	__u64 *slot = bpf_map_lookup_elem(&seen, &i);
	if (!slot)
		return 0;
	if (*slot == h)
		return 1;
	*slot = h;
	return 0;
}

// ---- kernel structs, a few fields per helper call --------------------------------------------

#include "span.h"

// What learn.c uses of an inode (and of its superblock).
struct inode_info {
	__u64 key; // inode_key
	__u64 dev;
	__u64 magic;
	__u16 mode;
};

// read_inode fills *ii from ino with two helper calls. The key identifies a file: inode number,
// device, and generation (so that a deleted temp binary whose inode number is reused is not
// taken for the new one, where the fs keeps it). The spans are read into the tail of the
// scratch slot s, which no event reaches (events end before DATA_MASK + NAME_SZ): on the stack
// their 224 bytes made emit_fd's call chain 512 bytes, the verifier's limit.
#define SPAN_AT (SCRATCH_SZ - 256)
static __always_inline void read_inode(struct scratch *s, struct inode *ino, struct inode_info *ii)
{
	__u64(*ib)[16] = (void *)&s->data[SPAN_AT];
	__u64(*sbb)[12] = (void *)&s->data[SPAN_AT + sizeof(*ib)];
	SPAN_READ(*ib, ino, struct inode, i_mode);
	struct super_block *sb = SPAN_GET(*ib, ino, struct inode, i_mode, i_sb, struct super_block *);
	__u64 nr = SPAN_GET(*ib, ino, struct inode, i_mode, i_ino, unsigned long);
	__u64 gen = SPAN_GET(*ib, ino, struct inode, i_mode, i_generation, __u32);
	ii->mode = SPAN_GET(*ib, ino, struct inode, i_mode, i_mode, __u16);
	SPAN_READ(*sbb, sb, struct super_block, s_dev);
	ii->dev = SPAN_GET(*sbb, sb, struct super_block, s_dev, s_dev, __u32);
	ii->magic = SPAN_GET(*sbb, sb, struct super_block, s_dev, s_magic, unsigned long);
	ii->key = nr ^ (ii->dev * 0x9E3779B97F4A7C15ULL) ^ (gen << 32);
}
_Static_assert(SPAN_AT >= DATA_MASK + NAME_SZ + 8 && SPAN_AT + 128 + 96 <= SCRATCH_SZ, "read_inode's spans overlap events");

// inode_key is read_inode's key alone, from narrower spans (96 bytes of stack, not 224): in
// emit_path the wider ones put sys_exit_path's and emit_path's frames together over the
// verifier's 512 bytes (a 6.18.44 kernel refused the program: "combined stack size").
static __always_inline __u64 inode_key(struct inode *ino)
{
	__u64 ib[11];
	SPAN_READ(ib, ino, struct inode, i_sb);
	struct super_block *sb = SPAN_GET(ib, ino, struct inode, i_sb, i_sb, struct super_block *);
	__u64 nr = SPAN_GET(ib, ino, struct inode, i_sb, i_ino, unsigned long);
	__u64 gen = SPAN_GET(ib, ino, struct inode, i_sb, i_generation, __u32);
	__u64 sd[1];
	SPAN_READ(sd, sb, struct super_block, s_dev);
	__u64 dev = SPAN_GET(sd, sb, struct super_block, s_dev, s_dev, __u32);
	return nr ^ (dev * 0x9E3779B97F4A7C15ULL) ^ (gen << 32);
}

static __always_inline __u64 exe_key_of(struct file *f)
{
	return inode_key(BPF_CORE_READ(f, f_inode));
}

// What learn.c uses of a struct file: its inode and its path, with one helper call.
struct file_info {
	struct inode *inode;
	struct vfsmount *mnt;
	struct dentry *dentry;
};

static __always_inline void read_file(struct file *f, struct file_info *fi)
{
	__u64 fb[6];
	SPAN_READ(fb, f, struct file, f_inode);
	fi->inode = SPAN_GET(fb, f, struct file, f_inode, f_inode, struct inode *);
	fi->mnt = SPAN_GET(fb, f, struct file, f_inode, f_path.mnt, struct vfsmount *);
	fi->dentry = SPAN_GET(fb, f, struct file, f_inode, f_path.dentry, struct dentry *);
}

// ---- dentry walk, the current task's files (path.h, shared with guard.c) -----------------------

#include "path.h"

// ---- process tree ----------------------------------------------------------------------------

// The programs on tracepoints are raw_tp, not tp_btf: a tp_btf program is loaded with the BTF id
// of its tracepoint, which user space finds by parsing the kernel's BTF (~20 ms a run); raw_tp
// ones, with the CO-RE fixups user space keeps per kernel, load without it. The price is that
// tracepoint arguments are plain integers (read through BPF_CORE_READ); the current task, from
// bpf_get_current_task_btf(), is still a typed pointer.

// The exec event carries the executable (mm->exe_file, the binary that really runs: for a
// script, its interpreter) and the name given to execve, so that user space can also record the
// script itself.
SEC("raw_tp/sched_process_exec")
int BPF_PROG(sched_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	struct run_state *rs = run_get();
	if (!rs || !rs->cgid)
		return 0;
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;
	// A process of the run that left its cgroup (run_state.escaped) is still the run's: its
	// exec is recorded too, or its next syscalls would count under the old executable.
	if (bpf_get_current_cgroup_id() != rs->cgid && !(rs->escaped && bpf_map_lookup_elem(&tasks, &tgid)))
		return 0;
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct file *exe = BPF_CORE_READ(task, mm, exe_file);
	struct task_info ti = {};
	ti.exe_key = exe_key_of(exe);
	if (bpf_map_update_elem(&tasks, &tgid, &ti, BPF_ANY)) {
		count(CNT_TASKS_FULL);
		return 0;
	}
	struct stash *cache = bpf_task_storage_get(&stashes, bpf_get_current_task_btf(), 0,
						   BPF_LOCAL_STORAGE_GET_F_CREATE);
	__sync_fetch_and_add(&rs->gen, 1); // CPU caches hold the old exe_key (struct cpu_cache)
	if (cache) {
		stash_of_run(cache, rs->id);
		flush_syscalls(cache, 1); // under the exe that made them
		// The execve is done (its exit reports only failures), and after a switch to a 32-bit
		// binary its exit is not traced at all: nothing is pending.
		cache->sc.op = SCOP_NONE;
		cache->task_exe_key = ti.exe_key;
		cache->task_cached = 1;
	}

	__u32 slot = SLOT_EXEC;
	struct scratch *s = bpf_map_lookup_elem(&scratch, &slot);
	if (!s)
		return 0;
	if (s->busy) {
		count(CNT_SCRATCH_BUSY);
		return 0;
	}
	s->busy = 1;
	struct exec_event *e = (void *)s->data;
	e->kind = EV_EXEC;
	e->tgid = tgid;
	e->pid = (__u32)id;
	e->old_pid = old_pid;
	e->ts = bpf_ktime_get_ns();
	e->exe_key = ti.exe_key;
	e->cwd_len = 0;
	__u8 trunc = 0;
	struct path pth;
	BPF_CORE_READ_INTO(&pth, exe, f_path);
	__u32 n = walk(s, pth.mnt, pth.dentry, SLOT_EXEC, sizeof(*e), PATH_SZ, &trunc);
	n &= PATH_SZ - 1;
	e->exe_len = n;
	e->exe_trunc = trunc;
	unsigned long arg_start = BPF_CORE_READ(task, mm, arg_start);
	__u32 off = sizeof(*e) + n;
	long m = bpf_probe_read_user_str(&s->data[off & DATA_MASK], NAME_SZ, (void *)arg_start);
	if (m < 0)
		m = 0;
	m &= NAME_SZ - 1;
	e->argv0_len = m;
	off += m;
	const char *fname = BPF_CORE_READ(bprm, filename);
	long f = bpf_probe_read_kernel_str(&s->data[off & DATA_MASK], 512, fname);
	if (f < 0)
		f = 0;
	f &= 511;
	e->fname_len = f;
	if (f > 0 && s->data[off & DATA_MASK] != '/') {
		struct path cwd;
		BPF_CORE_READ_INTO(&cwd, task, fs, pwd);
		__u32 c = walk(s, cwd.mnt, cwd.dentry, SLOT_EXEC, off + f, 3072, &trunc);
		c &= PATH_SZ - 1;
		e->cwd_len = c;
		off += c;
	}
	off += f;
	__u32 size = off & (SCRATCH_SZ - 1);
	if (rb_output(s->data, size))
		count(CNT_RINGBUF_DROPS);
	s->busy = 0;
	return 0;
}

SEC("raw_tp/sched_process_fork")
int BPF_PROG(sched_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 tgid = BPF_CORE_READ(child, tgid);
	if (BPF_CORE_READ(child, pid) != tgid)
		return 0; // a thread: same process
	__u32 ptgid = BPF_CORE_READ(parent, tgid);
	struct task_info *pti = bpf_map_lookup_elem(&tasks, &ptgid);
	if (!pti)
		return 0;
	struct task_info ti = *pti;
	if (bpf_map_update_elem(&tasks, &tgid, &ti, BPF_ANY)) {
		count(CNT_TASKS_FULL);
		return 0;
	}
	struct run_state *rs = run_get();
	if (rs && !rs->escaped && BPF_CORE_READ(child, cgroups, dfl_cgrp, kn, id) != rs->cgid)
		rs->escaped = 1; // clone3 CLONE_INTO_CGROUP: born outside the run's cgroup
	struct fork_event *e = rb_reserve(sizeof(*e));
	if (!e) {
		count(CNT_RINGBUF_DROPS);
		return 0;
	}
	e->kind = EV_FORK;
	e->tgid = tgid;
	e->parent_tgid = ptgid;
	e->pad = 0;
	e->ts = bpf_ktime_get_ns();
	e->exe_key = ti.exe_key;
	bpf_ringbuf_submit(e, rb_flags());
	return 0;
}

// A task migrated to another cgroup (a write to cgroup.procs or cgroup.threads, of any
// hierarchy): when it is one of the run's, sys_enter can no longer skip a task by its cgroup.
// The tracepoint fires once the move is done: another thread of a process that moves itself may
// make a syscall or two meanwhile that sys_enter skips.
SEC("raw_tp/cgroup_attach_task")
int BPF_PROG(cgroup_attach, struct cgroup *dst, const char *path, struct task_struct *task, bool threadgroup)
{
	struct run_state *rs = run_get();
	if (!rs || rs->escaped)
		return 0;
	__u32 tgid = BPF_CORE_READ(task, tgid);
	if (bpf_map_lookup_elem(&tasks, &tgid))
		rs->escaped = 1;
	return 0;
}

SEC("raw_tp/sched_process_exit")
int BPF_PROG(sched_exit, struct task_struct *p, bool group_dead)
{
	// p is the current thread.
	struct stash *st = bpf_task_storage_get(&stashes, bpf_get_current_task_btf(), 0, 0);
	struct run_state *rs = run_get();
	if (st && rs && st->run_id == rs->id) {
		if (st->sc.op != SCOP_NONE)
			count(CNT_EXIT_MISSED); // see sys_enter
		flush_syscalls(st, 0);
		__sync_fetch_and_add(&rs->gen, 1); // its task pointer may be reused (struct cpu_cache)
	}
	if (!group_dead)
		return 0; // other threads of the group still run
	__u32 tgid = BPF_CORE_READ(p, tgid);
	if (!bpf_map_lookup_elem(&tasks, &tgid))
		return 0;
	bpf_map_delete_elem(&tasks, &tgid);
	struct exit_event *e = rb_reserve(sizeof(*e));
	if (!e) {
		count(CNT_RINGBUF_DROPS);
		return 0;
	}
	e->kind = EV_EXIT;
	e->tgid = tgid;
	e->ts = bpf_ktime_get_ns();
	e->exit_code = BPF_CORE_READ(p, exit_code);
	e->pad = 0;
	bpf_ringbuf_submit(e, rb_flags());
	return 0;
}

// ---- syscalls --------------------------------------------------------------------------------

static __always_inline void arg(__u64 exe_key, __u32 nr, __u32 kind, __u64 value)
{
	struct arg_key k = {.exe_key = exe_key, .nr = nr, .kind = kind, .value = value};
	add_count(&args, &k, CNT_ARGS_FULL);
}


// is_empty_path reports whether the path argument at ptr is NULL or "": the exit handler does
// nothing for those (fstat is newfstatat(fd, "", AT_EMPTY_PATH), a third of a find(1) run's
// syscalls), so they are not stashed. A string that cannot be read yet is stashed as usual.
static __always_inline int is_empty_path(unsigned long ptr)
{
	char c = 1;
	if (!ptr)
		return 1;
	return bpf_probe_read_user(&c, 1, (void *)ptr) == 0 && c == 0;
}

SEC("raw_tp/sys_enter")
int BPF_PROG(sys_enter, struct pt_regs *regs, long raw)
{
	struct task_struct *cur = bpf_get_current_task_btf();
	struct run_state *rs = run_get();
	if (!rs)
		return 0;
	// The native ABI, compat (i386; arm on arm64) or x32 (arch.h); without branches, so that
	// the verifier walks the rest once, not once per architecture.
	__u32 arch = syscall_abi(cur, regs, raw);
	__u32 nr0 = raw & ~X32_SYSCALL_BIT;
	__u64 tag = ((__u64)(arch + 1) << 32) | nr0;
	__u32 slot = nr0 & (SC_CACHE - 1);
	__u32 zero = 0;
	struct cpu_cache *fc = bpf_map_lookup_elem(&fast, &zero);
	if (!fc)
		return 0; // never: one entry per CPU (and one state for the verifier below, not two)
	if (fc->task == (__u64)cur && fc->tag[slot] == tag && fc->gen == rs->gen && fc->run_id == rs->id &&
	    !fc->busy) {
		fc->rep[slot]++;
		return 0;
	}
	// Every other process on the host while the run lasts returns here, after one helper call
	// (the thread's stash, its tgid and the tasks map cost it three, and the hash lookup): only a
	// task in the run's cgroup can be the run's, until one leaves it (run_state.escaped).
	if (bpf_get_current_cgroup_id() != rs->cgid && !rs->escaped)
		return 0;

	struct stash *st = bpf_task_storage_get(&stashes, cur, 0, 0);
	if (!st || st->run_id != rs->id || !st->task_cached) {
		__u32 tgid = bpf_get_current_pid_tgid() >> 32;
		struct task_info *ti = bpf_map_lookup_elem(&tasks, &tgid);
		if (!ti)
			return 0; // not the run's
		__u64 key = ti->exe_key;
		st = bpf_task_storage_get(&stashes, cur, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (!st) {
			// No memory for the thread's stash: its syscall is still counted, but a path
			// syscall cannot be followed to its exit, which the loss counter says.
			struct sc_key k = {.exe_key = key, .arch = arch, .nr = nr0};
			add_count(&syscalls, &k, CNT_SYSCALLS_FULL);
			count(CNT_STASH_FULL);
			return 0;
		}
		stash_of_run(st, rs->id);
		st->task_exe_key = key;
		st->task_cached = 1;
	}
	// The run's thread (no call for other processes): cur as a plain number, for fast_put (a
	// global function takes no task pointer).
	__u64 task = bpf_get_current_task();
	__u64 exe_key = st->task_exe_key;
	struct sc_key k = {.exe_key = exe_key, .arch = arch, .nr = nr0};
	if (st->sc_tag[slot] == tag) {
		st->sc_rep[slot]++;
	} else {
		flush_slot(st, slot);
		st->sc_tag[slot] = tag;
		add_count(&syscalls, &k, CNT_SYSCALLS_FULL);
	}
	if (k.arch != SCARCH_X86_64) {
		fast_put(fc, task, rs, exe_key, tag);
		return 0;
	}
	if (st->sc.op != SCOP_NONE) {
		// The thread's last path syscall was stashed but its exit program never ran: the kernel
		// skips a tracepoint program while bpf_prog_active is held on the CPU (by another BPF
		// program, or on a preemptible kernel by a preempted map operation). Count the loss.
		count(CNT_EXIT_MISSED);
		st->sc.op = SCOP_NONE;
	}

	__u32 nr = k.nr;
	__u32 *opp = bpf_map_lookup_elem(&sc_ops, &nr);
	if (!opp || *opp == SCOP_NONE) {
		fast_put(fc, task, rs, exe_key, tag);
		return 0;
	}
	__u32 op = *opp;
	struct sc_args r;
	if (read_sc_args(regs, &r))
		return 0;
	unsigned long a0 = r.a[0], a1 = r.a[1], a2 = r.a[2];
	switch (op) {
	case SCOP_SOCKET:
		arg(exe_key, nr, ARGK_SOCKET, ((__u64)(a0 & 0xffff) << 32) | ((a1 & 0xf) << 16) | (a2 & 0xffff));
		return 0;
	case SCOP_CLONE:
		arg(exe_key, nr, ARGK_CLONE_FLAGS, a0);
		return 0;
	case SCOP_CLONE3: {
		__u64 flags = 0;
		if (bpf_probe_read_user(&flags, sizeof(flags), (void *)a0) == 0)
			arg(exe_key, nr, ARGK_CLONE3_FLAGS, flags);
		return 0;
	}
	case SCOP_UNSHARE:
		arg(exe_key, nr, ARGK_UNSHARE_FLAGS, a0);
		return 0;
	case SCOP_SETNS:
		arg(exe_key, nr, ARGK_SETNS_NSTYPE, a1);
		return 0;
	case SCOP_PRCTL:
		arg(exe_key, nr, ARGK_PRCTL_OPTION, a0);
		return 0;
	case SCOP_PERSONALITY:
		arg(exe_key, nr, ARGK_PERSONALITY, a0);
		return 0;
	case SCOP_IOCTL:
		arg(exe_key, nr, ARGK_IOCTL_REQUEST, a1 & 0xffffffff);
		return 0;
	case SCOP_MMAP:
		if (!(a2 & PROT_EXEC))
			return 0;
		if ((r.a[3] & MAP_ANONYMOUS) || (int)r.a[4] < 0) {
			arg(exe_key, nr, ARGK_MMAP_PROT, a2);
			return 0;
		}
		break; // a file mapped executable: its path at exit
	case SCOP_MPROTECT:
		if (a2 & PROT_EXEC)
			arg(exe_key, nr, ARGK_MPROTECT_PROT, a2);
		return 0;
	}
	if (op < SCOP_PATH_FIRST || op >= SCOP_LAST)
		return 0;
	if (op == SCOP_CONNECT || op == SCOP_BIND || op == SCOP_SENDTO) {
		// Only unix addresses are handled at exit (inet ones by the cgroup hooks): skip the
		// stash for the rest. The address was just written by the caller, so it is readable.
		unsigned long addr = op == SCOP_SENDTO ? r.a[4] : a1;
		__u16 family = 0;
		if (!addr)
			return 0;
		if (bpf_probe_read_user(&family, sizeof(family), (void *)addr) == 0 && family != AF_UNIX)
			return 0;
	}
	if ((op == SCOP_STATAT || op == SCOP_CHANGEAT || op == SCOP_EXECVEAT) && is_empty_path(a1))
		return 0;
	st->sc.exe_key = exe_key;
	st->sc.nr = nr;
	st->sc.op = op;
	st->sc.args[0] = a0;
	st->sc.args[1] = a1;
	st->sc.args[2] = a2;
	st->sc.args[3] = r.a[3];
	st->sc.args[4] = r.a[4];
	st->sc.args[5] = r.a[5];
	return 0;
}

// The context of every syscalls/sys_exit_<name> tracepoint.
struct sys_exit_ctx {
	__u64 common;
	int nr;
	int pad;
	long ret;
};

struct hash_ctx {
	__u64 h;
	struct scratch *s;
	__u32 start; // a multiple of 8
	__u32 len;
};

// hash_step mixes in the i-th 8 bytes of the string (the bytes past its end masked off: the
// scratch holds older data there). Word by word: a byte-wise loop cost a callback per byte.
static long hash_step(__u32 i, struct hash_ctx *c)
{
	__u32 at = i * 8;
	if (at >= c->len)
		return 1;
	struct scratch *s = c->s;
	if (!s)
		return 1;
	__u64 w = *(__u64 *)&s->data[(c->start + at) & (DATA_MASK & ~7)];
	__u32 left = c->len - at;
	if (left < 8)
		w &= (1ULL << (left * 8)) - 1;
	w ^= c->h;
	w *= 0x9E3779B97F4A7C15ULL;
	c->h = w ^ (w >> 29);
	return 0;
}

// ---- directories the reader already has (struct base_cache) ---------------------------------

static __always_inline struct path_state *path_state_get(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&path_state, &zero);
}

// dentry_ident reads what struct base_cache keeps of a dentry to notice its rename: the parent,
// and the name's hash and length (not the name's pointer: a short name lives in the dentry and
// a rename copies the new one there).
static __always_inline void dentry_ident(__u64 d, __u64 *parent, __u64 *name)
{
	__u64 db[2];
	SPAN_READ(db, d, struct dentry, d_parent);
	*parent = SPAN_GET(db, d, struct dentry, d_parent, d_parent, __u64);
	*name = SPAN_GET(db, d, struct dentry, d_parent, d_name.hash_len, __u64);
}

static __always_inline struct base_cache *base_at(struct stash *sp, __u32 i)
{
	return i ? &sp->bases[1] : &sp->bases[0];
}

// base_valid reports whether b's path is still what the reader has: no rename in the run since
// (gen), and the directory itself still has the parent and name it had.
static __always_inline int base_valid(struct base_cache *b, __u64 gen)
{
	if (!b->dentry || b->gen != gen)
		return 0;
	__u64 parent, name;
	dentry_ident(b->dentry, &parent, &name);
	return parent == b->parent && name == b->name;
}

// base_find returns 1 + the index of the valid entry for (dentry, mnt), 0 if none.
static __always_inline __u32 base_find(struct stash *sp, __u64 dentry, __u64 mnt, __u64 gen)
{
	if (sp->bases[0].dentry == dentry && sp->bases[0].mnt == mnt && base_valid(&sp->bases[0], gen))
		return 1;
	if (sp->bases[1].dentry == dentry && sp->bases[1].mnt == mnt && base_valid(&sp->bases[1], gen))
		return 2;
	return 0;
}

// base_put remembers that the reader has the path of (dentry, mnt) as id: in the entry that
// had it, else in the older one. Call it only once the event defining id is in the ring.
static __always_inline void base_put(struct stash *sp, __u64 dentry, __u64 mnt, __u32 id, __u64 gen)
{
	__u32 i = sp->base_next & 1;
	if (sp->bases[0].dentry == dentry && sp->bases[0].mnt == mnt)
		i = 0;
	else if (sp->bases[1].dentry == dentry && sp->bases[1].mnt == mnt)
		i = 1;
	else
		sp->base_next = i ^ 1;
	struct base_cache *b = base_at(sp, i);
	b->dentry = dentry;
	b->mnt = mnt;
	dentry_ident(dentry, &b->parent, &b->name);
	b->gen = gen;
	b->id = id;
}

static __always_inline __u32 base_new_id(struct path_state *ps)
{
	return __sync_fetch_and_add(&ps->next_id, 1) + 1;
}

// emit_path sends one file event for the user string at ptr, relative to dirfd (AT_FDCWD: the
// cwd). The string is read now (at exit: at enter it may not be paged in yet). It is a global
// function, so the verifier checks it once, not at each of its ~20 call sites.
struct path_req {
	long dirfd;
	unsigned long ptr;
	__u32 access;
	__s32 err;
};

__attribute__((noinline)) int emit_path(struct scratch *s, struct pending *st, struct path_req *r,
					 struct stash *sp)
{
	if (!s || !st || !r || !sp)
		return 0;
	long dirfd = r->dirfd;
	unsigned long ptr = r->ptr;
	__u32 access = r->access;
	__s32 err = r->err;
	struct file_event *e = (void *)s->data;
	__u32 start = sizeof(*e);
	long n = bpf_probe_read_user_str(&s->data[start], PATH_SZ, (void *)ptr);
	if (n <= 1)
		return 0; // NULL or "" (an fd operation: AT_EMPTY_PATH, utimensat(fd, NULL))
	n &= PATH_SZ - 1;

	// Base: none for an absolute path, else the dirfd's file or the cwd.
	struct vfsmount *base_mnt = 0;
	struct dentry *base_dentry = 0;
	int has_base = 0;
	if (s->data[start] != '/') {
		if (dirfd == AT_FDCWD) {
			struct task_struct *task = (struct task_struct *)bpf_get_current_task();
			struct fs_struct *fs = BPF_CORE_READ(task, fs);
			__u64 pb[2];
			SPAN_READ(pb, fs, struct fs_struct, pwd.mnt);
			base_mnt = SPAN_GET(pb, fs, struct fs_struct, pwd.mnt, pwd.mnt, struct vfsmount *);
			base_dentry = SPAN_GET(pb, fs, struct fs_struct, pwd.mnt, pwd.dentry, struct dentry *);
			has_base = 1;
		} else {
			struct file *f = fd_file(dirfd);
			if (f) {
				struct file_info fi;
				read_file(f, &fi);
				base_mnt = fi.mnt;
				base_dentry = fi.dentry;
				has_base = 1;
			}
		}
	}

	struct hash_ctx hc = {.h = 0xcbf29ce484222325ULL, .s = s, .start = start, .len = n};
	bpf_loop(PATH_SZ / 8, hash_step, &hc, 0);
	struct seen_key k = {.exe_key = st->exe_key, .kind = (EV_FILE << 8) | access, .err = err, .a = hc.h};
	// The base's identity in the dedup key: the id the reader has its path under when this
	// thread has one (an id names one path of this run: find's fstatat(dirfd, name) for each
	// entry then reads no inode), else its inode. A miss sent with the inode marks the id's key
	// too (below), so that the next repeat, keyed by the id, is not sent again.
	struct path_state *ps = 0;
	__u64 mnt = 0, gen = 0;
	__u32 hit = 0;
	if (has_base) {
		ps = path_state_get();
		gen = ps ? ps->gen : 0;
		mnt = mount_of(base_mnt);
		hit = ps ? base_find(sp, (__u64)base_dentry, mnt, gen) : 0;
		if (hit) {
			k.kind |= SEEN_BY_ID;
			k.b = base_at(sp, hit - 1)->id;
		} else {
			k.b = inode_key(BPF_CORE_READ(base_dentry, d_inode));
		}
	}
	if (seen_before(&k))
		return 0;

	e->kind = EV_FILE;
	e->tgid = bpf_get_current_pid_tgid() >> 32;
	e->exe_key = st->exe_key;
	e->op = st->op;
	e->access = access;
	e->err = err;
	e->resolved = 0;
	e->is_dir = 0;
	e->path_trunc = 0;
	e->base_trunc = 0;
	e->path_len = n;
	e->base_len = 0;
	e->ref_id = 0;
	e->def_id = 0;
	e->pad = 0;
	__u32 bl = 0;
	if (has_base) {
		if (hit) {
			e->ref_id = base_at(sp, hit - 1)->id;
		} else {
			__u8 trunc = 0;
			bl = walk(s, base_mnt, base_dentry, SLOT_SYSEXIT, start + n, PATH_SZ, &trunc);
			bl &= PATH_SZ - 1;
			e->base_len = bl;
			e->base_trunc = trunc;
			if (!trunc && ps)
				e->def_id = base_new_id(ps);
		}
	}
	__u32 size = (start + n + bl) & (SCRATCH_SZ - 1);
	if (rb_output(s->data, size)) {
		count(CNT_RINGBUF_DROPS);
		return 0;
	}
	if (e->def_id) {
		base_put(sp, (__u64)base_dentry, mnt, e->def_id, gen);
		k.kind |= SEEN_BY_ID;
		k.b = e->def_id;
		seen_before(&k);
	}
	return 0;
}

// emit_fd sends one file event for the file an open returned, resolved by a dentry walk.
// A global function, verified once on its own: inlined into sys_exit_path it tripled the
// instructions the verifier walks there.
__attribute__((noinline)) int emit_fd(struct scratch *s, struct pending *st, struct stash *sp, long fd,
				      __u32 access)
{
	if (!s || !st || !sp)
		return 0;
	struct file *f = fd_file(fd);
	if (!f)
		return 0;
	struct file_info fi;
	read_file(f, &fi);
	struct inode_info ii;
	read_inode(s, fi.inode, &ii);
	// Pipes, sockets, anonymous inodes and namespace files (a reopened /proc/self/fd/N) have no
	// path a policy could name; their dentry walk would end at "/".
	unsigned long magic = ii.magic;
	if (magic == PIPEFS_MAGIC || magic == SOCKFS_MAGIC || magic == ANON_INODE_FS_MAGIC ||
	    magic == NSFS_MAGIC)
		return 0;
	__u8 is_dir = (ii.mode & S_IFMT) == S_IFDIR;
	if (is_dir && access == ACC_READ)
		access = ACC_LIST;
	struct seen_key k = {.exe_key = st->exe_key, .kind = (EV_FILE << 8) | access};
	// With the generation: a file created after another was deleted can get its inode number.
	k.a = ii.dev;
	k.b = ii.key;
	if (seen_before(&k))
		return 0;
	struct file_event *e = (void *)s->data;
	e->kind = EV_FILE;
	e->tgid = bpf_get_current_pid_tgid() >> 32;
	e->exe_key = st->exe_key;
	e->op = st->op;
	e->access = access;
	e->err = 0;
	e->resolved = 1;
	e->is_dir = is_dir;
	e->base_trunc = 0;
	e->base_len = 0;
	e->ref_id = 0;
	e->def_id = 0;
	e->pad = 0;
	struct path_state *ps = path_state_get();
	__u64 gen = ps ? ps->gen : 0;
	// The walk stops at a directory the reader has (the dirfd of an openat(dirfd, "name"), the
	// cwd of a relative open), if that entry is still valid.
	struct walk_stop stops[2] = {};
	if (ps) {
		if (base_valid(&sp->bases[0], gen)) {
			stops[0].dentry = sp->bases[0].dentry;
			stops[0].mnt = sp->bases[0].mnt;
		}
		if (base_valid(&sp->bases[1], gen)) {
			stops[1].dentry = sp->bases[1].dentry;
			stops[1].mnt = sp->bases[1].mnt;
		}
	}
	__u8 trunc = 0;
	__u32 n = walk_to(s, fi.mnt, fi.dentry, SLOT_SYSEXIT, sizeof(*e), PATH_SZ, &trunc, stops);
	__u32 hit = s->hit;
	if (hit)
		e->ref_id = base_at(sp, hit - 1)->id;
	n &= PATH_SZ - 1;
	e->path_len = n;
	e->path_trunc = trunc;
	if (is_dir && !trunc && ps)
		e->def_id = base_new_id(ps);
	__u32 size = (sizeof(*e) + n) & (SCRATCH_SZ - 1);
	if (rb_output(s->data, size)) {
		count(CNT_RINGBUF_DROPS);
		return 0;
	}
	if (e->def_id)
		base_put(sp, (__u64)fi.dentry, mount_of(fi.mnt), e->def_id, gen);
	return 0;
}

static __always_inline __u32 open_access(__u64 flags)
{
	if (flags & O_PATH)
		return ACC_METADATA; // a handle for *at calls and fstat: no data
	if (flags & O_CREAT)
		return ACC_CREATE;
	if ((flags & O_ACCMODE) != 0 || (flags & O_TRUNC))
		return ACC_WRITE;
	if (flags & O_DIRECTORY)
		return ACC_LIST;
	return ACC_READ;
}

// emit_unix reports a connect/bind/sendto/sendmsg whose address is a unix socket.
static __attribute__((noinline)) int emit_unix(struct pending *st, long fd, unsigned long addr,
						unsigned long alen, __s32 err)
{
	if (!st)
		return 0;
	if (!addr || alen < 3)
		return 0;
	__u16 family = 0;
	if (bpf_probe_read_user(&family, sizeof(family), (void *)addr) || family != AF_UNIX)
		return 0;
	struct unix_event *e = rb_reserve(sizeof(*e));
	if (!e) {
		count(CNT_RINGBUF_DROPS);
		return 0;
	}
	__builtin_memset(e, 0, sizeof(*e));
	e->kind = EV_UNIX;
	e->tgid = bpf_get_current_pid_tgid() >> 32;
	e->exe_key = st->exe_key;
	e->op = st->op;
	e->err = err;
	__u32 n = alen - 2;
	if (n > sizeof(e->path))
		n = sizeof(e->path);
	bpf_probe_read_user(e->path, sizeof(e->path), (void *)(addr + 2));
	e->path_len = n;
	e->abstract = e->path[0] == 0;
	struct file *f = fd_file(fd);
	if (f) {
		struct socket *sock = BPF_CORE_READ(f, private_data);
		e->sock_type = BPF_CORE_READ(sock, type);
	}
	bpf_ringbuf_submit(e, rb_flags());
	return 0;
}

// sys_exit_path is attached to the syscalls/sys_exit_<name> tracepoints of the path syscalls
// only. (A raw_syscalls/sys_exit program instead would be one link instead of ~40 perf events,
// but it runs at the end of every syscall on the host: ~45 ns each here, even when it returns
// at once, more than the whole sys_enter program.)
SEC("tracepoint/syscalls/sys_exit_path")
int sys_exit_path(struct sys_exit_ctx *ctx)
{
	// Between runs (the warm helper holds these programs, attached: profiler/warm.go) the
	// cgroup is 0 and every path syscall on the host returns here, with no helper call.
	struct run_state *rs = run_get();
	if (!rs || !rs->cgid)
		return 0;
	struct stash *sp = bpf_task_storage_get(&stashes, bpf_get_current_task_btf(), 0, 0);
	if (!sp || sp->sc.op == SCOP_NONE)
		return 0;
	if (sp->run_id != rs->id)
		return 0; // stashed in an earlier run
	struct pending st = sp->sc;
	sp->sc.op = SCOP_NONE;
	if (st.nr != (__u32)ctx->nr) {
		count(CNT_EXIT_MISSED); // the stashed call's exit was missed (see sys_enter)
		return 0;
	}
	long ret = ctx->ret;
	__s32 err = ret < 0 ? -ret : 0;
	if ((st.op == SCOP_RENAME || st.op == SCOP_RENAMEAT) && ret == 0) {
		struct path_state *ps = path_state_get();
		if (ps) // every path a thread has cached may have changed
			__sync_fetch_and_add(&ps->gen, 1);
	}

	switch (st.op) {
	case SCOP_CONNECT:
	case SCOP_BIND:
		emit_unix(&st, st.args[0], st.args[1], st.args[2], err);
		return 0;
	case SCOP_SENDTO:
		emit_unix(&st, st.args[0], st.args[4], st.args[5], err);
		return 0;
	case SCOP_SENDMSG: {
		struct user_msghdr m = {};
		if (bpf_probe_read_user(&m, sizeof(m), (void *)st.args[1]))
			return 0;
		emit_unix(&st, st.args[0], (unsigned long)m.msg_name, m.msg_namelen, err);
		return 0;
	}
	}

	__u32 slot = SLOT_SYSEXIT;
	struct scratch *s = bpf_map_lookup_elem(&scratch, &slot);
	if (!s)
		return 0;
	if (s->busy) {
		count(CNT_SCRATCH_BUSY);
		return 0;
	}
	s->busy = 1;

#define PATH(d, p, a)                                                                      \
	do {                                                                                       \
		struct path_req r = {.dirfd = (d), .ptr = (p), .access = (a), .err = err};          \
		emit_path(s, &st, &r, sp);                                                         \
	} while (0)
	long dirfd = AT_FDCWD;
	unsigned long path = st.args[0];
	__u32 access = ACC_METADATA;
	switch (st.op) {
	case SCOP_OPEN:
	case SCOP_OPENAT:
	case SCOP_OPENAT2:
	case SCOP_CREAT: {
		__u64 flags = st.args[1];
		if (st.op == SCOP_OPENAT) {
			flags = st.args[2];
		} else if (st.op == SCOP_OPENAT2) {
			flags = 0;
			bpf_probe_read_user(&flags, sizeof(flags), (void *)st.args[2]);
		} else if (st.op == SCOP_CREAT) {
			flags = O_CREAT | O_TRUNC | 1;
		}
		if (st.op == SCOP_OPENAT || st.op == SCOP_OPENAT2) {
			dirfd = (int)st.args[0];
			path = st.args[1];
		}
		access = open_access(flags);
		if (ret >= 0)
			emit_fd(s, &st, sp, ret, access);
		else
			PATH(dirfd, path, access);
		break;
	}
	case SCOP_STAT:
		PATH(AT_FDCWD, path, ACC_METADATA);
		break;
	case SCOP_STATAT:
		PATH((int)st.args[0], st.args[1], ACC_METADATA);
		break;
	case SCOP_EXECVE:
		if (ret < 0) // a successful exec is reported by sched_process_exec
			PATH(AT_FDCWD, path, ACC_EXEC);
		break;
	case SCOP_EXECVEAT:
		if (ret < 0)
			PATH((int)st.args[0], st.args[1], ACC_EXEC);
		break;
	case SCOP_UNLINK:
		PATH(AT_FDCWD, path, ACC_DELETE);
		break;
	case SCOP_UNLINKAT:
		PATH((int)st.args[0], st.args[1], ACC_DELETE);
		break;
	case SCOP_RENAME:
		PATH(AT_FDCWD, st.args[0], ACC_DELETE);
		PATH(AT_FDCWD, st.args[1], ACC_CREATE);
		break;
	case SCOP_RENAMEAT:
		PATH((int)st.args[0], st.args[1], ACC_DELETE);
		PATH((int)st.args[2], st.args[3], ACC_CREATE);
		break;
	// A link's source is a read: where the link crosses a mount (EXDEV: a sandbox's staged
	// tree and a bound $HOME), git's local clone, pnpm and ccache copy it instead.
	case SCOP_LINK:
		PATH(AT_FDCWD, st.args[0], ACC_READ);
		PATH(AT_FDCWD, st.args[1], ACC_CREATE);
		break;
	case SCOP_LINKAT:
		PATH((int)st.args[0], st.args[1], ACC_READ);
		PATH((int)st.args[2], st.args[3], ACC_CREATE);
		break;
	case SCOP_SYMLINK:
		PATH(AT_FDCWD, st.args[1], ACC_CREATE);
		break;
	case SCOP_SYMLINKAT:
		PATH((int)st.args[1], st.args[2], ACC_CREATE);
		break;
	case SCOP_MKDIR:
		PATH(AT_FDCWD, path, ACC_CREATE);
		break;
	case SCOP_MKDIRAT:
		PATH((int)st.args[0], st.args[1], ACC_CREATE);
		break;
	case SCOP_CHANGE:
		PATH(AT_FDCWD, path, ACC_WRITE);
		break;
	case SCOP_CHANGEAT:
		PATH((int)st.args[0], st.args[1], ACC_WRITE);
		break;
	case SCOP_MMAP:
		if (ret >= 0 || ret < -4095) // an address: the mapping exists
			emit_fd(s, &st, sp, (int)st.args[4], ACC_MAP);
		break;
	}
	s->busy = 0;
	return 0;
}

// ---- network ---------------------------------------------------------------------------------

static __always_inline void emit_net(struct bpf_sock_addr *ctx, __u32 op, int v6)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct task_info *ti = bpf_map_lookup_elem(&tasks, &tgid);
	if (!ti)
		return;
	struct net_event ev = {};
	ev.kind = EV_NET;
	ev.tgid = tgid;
	ev.exe_key = ti->exe_key;
	ev.op = op;
	ev.family = ctx->user_family;
	ev.type = ctx->type;
	ev.protocol = ctx->protocol;
	ev.port = bpf_ntohs(ctx->user_port);
	if (v6) {
		__u32 *a = (__u32 *)ev.addr;
		a[0] = ctx->user_ip6[0];
		a[1] = ctx->user_ip6[1];
		a[2] = ctx->user_ip6[2];
		a[3] = ctx->user_ip6[3];
	} else {
		*(__u32 *)ev.addr = ctx->user_ip4;
	}
	if (op == SCOP_CONNECT && ctx->type == 1 /* SOCK_STREAM */) {
		__u64 cookie = bpf_get_socket_cookie(ctx);
		bpf_map_update_elem(&conns, &cookie, &ev.exe_key, BPF_ANY);
	}
	struct seen_key k = {.exe_key = ev.exe_key, .kind = (EV_NET << 8) | op};
	k.a = *(__u64 *)&ev.addr[0] ^ ((__u64)ev.port << 32) ^ ((__u64)ev.protocol << 48) ^ ev.type;
	k.b = *(__u64 *)&ev.addr[8] ^ ev.family;
	if (seen_before(&k))
		return;
	if (rb_output(&ev, sizeof(ev)))
		count(CNT_RINGBUF_DROPS);
}

SEC("cgroup/connect4")
int connect4(struct bpf_sock_addr *ctx)
{
	emit_net(ctx, SCOP_CONNECT, 0);
	return 1;
}

SEC("cgroup/connect6")
int connect6(struct bpf_sock_addr *ctx)
{
	emit_net(ctx, SCOP_CONNECT, 1);
	return 1;
}

SEC("cgroup/sendmsg4")
int sendmsg4(struct bpf_sock_addr *ctx)
{
	emit_net(ctx, SCOP_SENDMSG, 0);
	return 1;
}

SEC("cgroup/sendmsg6")
int sendmsg6(struct bpf_sock_addr *ctx)
{
	emit_net(ctx, SCOP_SENDMSG, 1);
	return 1;
}

SEC("cgroup/bind4")
int bind4(struct bpf_sock_addr *ctx)
{
	emit_net(ctx, SCOP_BIND, 0);
	return 1;
}

SEC("cgroup/bind6")
int bind6(struct bpf_sock_addr *ctx)
{
	emit_net(ctx, SCOP_BIND, 1);
	return 1;
}

// ---- DNS -------------------------------------------------------------------------------------

static __always_inline void dns(struct __sk_buff *skb, __u32 egress)
{
	__u8 vbyte = 0;
	if (bpf_skb_load_bytes(skb, 0, &vbyte, 1))
		return;
	__u32 family, l4;
	struct dns_event *e;
	__u8 saddr[16] = {}, daddr[16] = {};
	if ((vbyte >> 4) == 4) {
		struct iphdr ip;
		if (bpf_skb_load_bytes(skb, 0, &ip, sizeof(ip)) || ip.protocol != IPPROTO_UDP)
			return;
		family = AF_INET;
		l4 = (vbyte & 0xf) * 4;
		*(__u32 *)saddr = ip.saddr;
		*(__u32 *)daddr = ip.daddr;
	} else if ((vbyte >> 4) == 6) {
		struct ipv6hdr ip6;
		if (bpf_skb_load_bytes(skb, 0, &ip6, sizeof(ip6)) || ip6.nexthdr != IPPROTO_UDP)
			return;
		family = AF_INET6;
		l4 = sizeof(ip6);
		__builtin_memcpy(saddr, &ip6.saddr, 16);
		__builtin_memcpy(daddr, &ip6.daddr, 16);
	} else {
		return;
	}
	struct udphdr udp;
	if (bpf_skb_load_bytes(skb, l4, &udp, sizeof(udp)))
		return;
	__u16 sport = bpf_ntohs(udp.source), dport = bpf_ntohs(udp.dest);
	if (sport != 53 && dport != 53)
		return;
	__u32 off = l4 + sizeof(udp);
	if (skb->len <= off)
		return;
	__u32 len = skb->len - off;
	if (len > DNS_MAX)
		len = DNS_MAX;
	e = rb_reserve(sizeof(*e));
	if (!e) {
		count(CNT_RINGBUF_DROPS);
		return;
	}
	e->kind = EV_DNS;
	e->egress = egress;
	e->family = family;
	e->sport = sport;
	e->dport = dport;
	__builtin_memcpy(e->saddr, saddr, 16);
	__builtin_memcpy(e->daddr, daddr, 16);
	e->pad = 0;
	__u64 n = len;
	asm volatile("%0 &= 0x3ff" : "+r"(n)); // clang 14: keep an explicit bound for the verifier
	if (n > DNS_MAX || n == 0 || bpf_skb_load_bytes(skb, off, e->data, n)) {
		bpf_ringbuf_discard(e, 0);
		return;
	}
	e->len = n;
	bpf_ringbuf_submit(e, rb_flags());
}

// sniff sends the first payload of a TCP connection in conns (its first bytes are its
// protocol's greeting: user space takes the TLS SNI or HTTP Host as the name connected to,
// per binary, whether or not it came from a DNS answer seen in the run).
static __noinline int sniff(struct __sk_buff *skb)
{
	__u8 vbyte = 0;
	if (!skb || bpf_skb_load_bytes(skb, 0, &vbyte, 1))
		return 0;
	__u32 family, l4;
	__u8 daddr[16] = {};
	if ((vbyte >> 4) == 4) {
		struct iphdr ip;
		if (bpf_skb_load_bytes(skb, 0, &ip, sizeof(ip)) || ip.protocol != IPPROTO_TCP)
			return 0;
		family = AF_INET;
		l4 = (vbyte & 0xf) * 4;
		*(__u32 *)daddr = ip.daddr;
	} else if ((vbyte >> 4) == 6) {
		struct ipv6hdr ip6;
		if (bpf_skb_load_bytes(skb, 0, &ip6, sizeof(ip6)) || ip6.nexthdr != IPPROTO_TCP)
			return 0;
		family = AF_INET6;
		l4 = sizeof(ip6);
		__builtin_memcpy(daddr, &ip6.daddr, 16);
	} else {
		return 0;
	}
	struct tcphdr tcp;
	if (bpf_skb_load_bytes(skb, l4, &tcp, sizeof(tcp)))
		return 0;
	__u32 off = l4 + tcp.doff * 4;
	if (skb->len <= off)
		return 0; // no payload (SYN, ACK)
	__u64 cookie = bpf_get_socket_cookie(skb);
	__u64 *exe_key = bpf_map_lookup_elem(&conns, &cookie);
	if (!exe_key)
		return 0;
	__u64 key = *exe_key;
	bpf_map_delete_elem(&conns, &cookie);
	__u32 len = skb->len - off;
	if (len > SNIFF_MAX)
		len = SNIFF_MAX;
	struct sniff_event *e = rb_reserve(sizeof(*e));
	if (!e) {
		count(CNT_RINGBUF_DROPS);
		return 0;
	}
	e->kind = EV_SNIFF;
	e->family = family;
	e->exe_key = key;
	e->dport = bpf_ntohs(tcp.dest);
	e->pad = 0;
	__builtin_memcpy(e->daddr, daddr, 16);
	__u64 n = len;
	asm volatile("%0 &= 0x7ff" : "+r"(n)); // an explicit bound for the verifier
	if (n > SNIFF_MAX || n == 0 || bpf_skb_load_bytes(skb, off, e->data, n)) {
		bpf_ringbuf_discard(e, 0);
		return 0;
	}
	e->len = n;
	bpf_ringbuf_submit(e, rb_flags());
	return 0;
}

SEC("cgroup_skb/egress")
int dns_egress(struct __sk_buff *skb)
{
	dns(skb, 1);
	sniff(skb);
	return 1;
}

SEC("cgroup_skb/ingress")
int dns_ingress(struct __sk_buff *skb)
{
	dns(skb, 0);
	return 1;
}
