// Package profiler owns learning: it runs a command permissively in a fresh cgroup2 directory,
// records with eBPF what the command's whole process tree uses from the kernel, and returns a
// trace.Trace. It does not decide what a policy allows (that is synth) and does not enforce
// anything (that is enforcer).
//
// # How a run works
//
// Run creates <cgroup2 mount>/sysprof/run-<pid>-<n>, loads the programs of package bpf (or takes
// over those a run that ended less than a second ago handed on: warm.go), gives them that
// directory's id, and starts the command with clone3(CLONE_INTO_CGROUP), so it is born inside:
// there is no window in which a child could escape the record. Recording starts at
// the command's exec (sched_process_exec in the run's cgroup marks the process; forks copy the
// mark), so nothing sysprof does between fork and exec is attributed to the command. The
// command's own first execve happens before that gate and is added to the root executable's
// syscall set in user space. A marked process stays recorded wherever it goes, its execs
// included: one that moves to another cgroup, or a child born into one (clone3
// CLONE_INTO_CGROUP), too. Until one does, sys_enter skips every other process on the host by
// its cgroup alone, after one helper call (TestTaskOutsideTheRunCgroupIsRecorded).
//
//   - Syscalls are counted per {executable, arch, number} in a kernel hash map: nothing is lost
//     for the set however fast the command is. Calls through int 0x80 are recorded as i386 and
//     calls with the x32 bit as x32, each named from its own table. A syscall's first call goes
//     into the map; its next ones into a per-thread cache and, for the syscalls with nothing else
//     to record, a per-CPU one (learn.c's struct cpu_cache: a repeated getppid costs no helper
//     call), flushed into the map as entries change hands; what a CPU's cache holds when the
//     command exits is added after the run (TestStormEndsTheRun); an exec or a thread exit of the
//     run makes every CPU's entry stale (TestCPUCacheAcrossExec).
//   - Argument domains (socket, clone/clone3 flags, unshare, setns, prctl, personality, ioctl,
//     PROT_EXEC of anonymous mmaps and of mprotect: executable memory) are counted the same way.
//   - A file mapped executable (mmap PROT_EXEC of a file) is a file event; one outside the
//     system trees (policy.SystemCodePath) is recorded as an exec access: a library the
//     command's code comes from, which enforce keeps mappable in its noexec trees.
//   - Files, unix sockets, inet endpoints, DNS packets and the process tree go through a ring
//     buffer. File events are deduplicated in the kernel per {executable, access, result,
//     inode} (or path string and base directory when there is no file: the base's id when
//     the thread has already sent its path, else its inode), so FileAccess.Count and
//     NetworkAccess.Count count distinct kernel events, not calls: a compiler opening one header
//     10,000 times yields one event (a table of fingerprints: a key another one evicted from
//     its slot is sent again, so Count can exceed one).
//   - The first payload each TCP connection of the run sends (up to 1 KiB, once: a socket
//     cookie map filled at connect, emptied at that payload) is sent too; its TLS SNI or
//     HTTP Host (netproxy.FirstName) names NetworkAccess.Host for that binary's connects to
//     that address and port, before the DNS association (one record per name).
//   - Every ring buffer reservation that fails is counted per CPU and reported in
//     Trace.Loss.RingbufDrops, and so is a path syscall whose exit program the kernel skipped
//     (it does while another BPF program runs on the CPU: the call stays stashed, and the
//     thread's next syscall or its exit counts it); a full map in Loss.MapFull. Either marks
//     the trace Incomplete.
//
// When the command exits, what is left in the cgroup (double-forked daemons) gets a short grace
// period and is then killed through cgroup.kill; the trace says so and is marked Incomplete,
// since what those processes would have done next was not seen.
//
// # Requirements
//
// Linux 5.14 or later with BTF, a cgroup2 mount, and root or CAP_BPF+CAP_PERFMON (plus write
// access to the cgroup2 hierarchy). fentry/fexit, LSM programs and kprobes are not used. When
// tracefs is not mounted, Run mounts it at /sys/kernel/tracing.
//
// # Signals and interruption
//
// SIGINT, SIGTERM and SIGHUP received while the command runs are forwarded to it (SIGINT is
// not forwarded when the command shares sysprof's terminal foreground process group: the
// terminal already delivered it). A cancelled context sends SIGTERM, then kills the cgroup after
// a grace period. Either way Run still returns the trace, marked Incomplete with the reason.
package profiler
