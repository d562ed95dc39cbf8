// Package guard is the kernel side of a root run of the enforcer: a per-run cgroup with
// bpf/guard.c's programs attached for it, and the reader of their denial events.
//
// API: Prewarm (load guard.c in the background ahead of a run), TakeLoad, Start(Config)
// (the cgroup at once, the setup in the background), Guard.Wait (before the command may
// exec), Guard.Close (the denials and notes), and Helper (HelperArg), the main of the helper
// process that detaches after a run, which the init dispatcher (enforcer.MaybeInit) runs.
// What is not guard.c's own (cgroups, tracepoints, bpffs, the fd escrow of the warm hand-over)
// is internal/kernrun's.
//
// For a run, Start creates a per-run cgroup2 directory (internal/kernrun), enters the run into
// bpf/guard.c's maps and attaches its programs for it; the enforcer starts the init stage
// inside it (clone3 CLONE_INTO_CGROUP), so nothing the command does escapes the programs. The
// guard watches files only: the network allowlist is the egress proxy's (package netproxy).
//
//   - File denials: one program on the exit tracepoints of the path syscalls (open, openat,
//     openat2, creat, execve, execveat, mkdir*, mknod*, unlink*, rmdir, rename*, link*,
//     symlink*, truncate, chmod/chown family, utimensat, setxattr/removexattr) reports calls
//     that failed with EACCES (Landlock), EROFS (the read-only mounts), EXDEV (Landlock's refer
//     rule, or a protected path's bind: kept only for the cover's end), EBUSY (a rename or
//     removal that met a mount point: kept only for protected and hidden paths' covers), and
//     ENOENT for absolute paths under a hidden path, with the path as given, the directory
//     it is relative to and the executable (walked in the kernel: the process may be gone
//     when user space reads the event). User space drops EACCES that Landlock's rules allow
//     (file permissions refused it, not the sandbox) and ENOENT outside hidden paths, and
//     suggests the profile line with the profile's variables ($WORKDIR/...). EPERM is taken
//     only from an executable mmap a noexec mount refused: seccomp's denials answer EPERM and
//     are already reported as syscalls. Not seen: ENOENT through a symlink or a relative
//     path into a hidden directory; a listing of a hidden directory (it reads as empty).
//   - clone3 into namespaces: the same program on clone3's exit takes the ENOSYS the filter
//     gives every clone3 and reads the flags from the caller's clone_args (memory seccomp
//     cannot read; the registers still point at it at exit). Only namespace flags make an
//     event (a syscall denial suggesting clone's flags rule); glibc's threads and spawns,
//     which try clone3 first, leave none.
//   - Lost records: an event that found the ring buffer (4 MiB per run) full, or the CPU's
//     scratch space in use, is counted in the run's entry (ENOENTs excepted for the latter);
//     Lost gives the sum, the report's lostRecords, which fails --fail-on-denial. The ring is
//     mapped into sysprof only once it holds an event (poll on the map, or its check at Close):
//     mapping and unmapping 4 MiB costs ~2 ms of CPU a run, and most runs report nothing.
//   - Reads of hidden files (hidden_linux.go, WatchHidden): a hidden file reads as empty, so
//     nothing fails; each one's cover is an inode of its own, watched with fanotify
//     permission events (FAN_OPEN_PERM, always allowed) once the stage's mounts are in place:
//     the opener waits until its executable is read. Only opens of hidden files pay that.
//
// Cost when nothing is denied: the path syscalls the run's filter allows pay, for every process
// on the host, the tracepoint dispatch and one compare when the call succeeded (a failed one
// also an array lookup and a cgroup-id compare; the program returns there for other cgroups);
// inside the run, an ENOENT pays reading up to 264 bytes of the path and comparing its first
// 8 bytes with each hidden path's; only when one agrees are they compared whole (at most 16
// byte prefixes of them in the kernel, however many paths are hidden: past 16, the closest are
// merged into their common prefix and user space checks the path). Nothing is sent, no sys_enter program runs and nothing is stashed: the
// arguments are read from the task's saved registers at exit. Enabling any syscall tracepoint
// also moves every syscall on the host to the kernel's syscall-work path while the run lasts:
// +8–17 ns per getppid here, most of what a syscall storm pays under enforce (BENCHMARKS.md). A
// single program on the raw sys_exit tracepoint would attach once instead of per syscall, but
// it runs for every syscall: ~+40 ns each, measured.
//
// Startup: guard.c is loaded while the profile loads and compiles (Prewarm; Run starts it
// otherwise), and set up for the run (its entries, the tracepoints) while the init stage
// starts; the enforcer waits for it (Guard.Wait) before the command may exec. Nothing of guard.c belongs to
// one run: its programs are verified once and pinned in bpffs (cache_linux.go), runs
// find their state by cgroup id (the file program through its slot: each slot's instance is
// attached with the slot as its cookie and reports for the run slot_cgid names), and
// concurrent runs share nothing but the programs.
//
// Teardown: detaching the file program from a tracepoint waits for a grace period (~35 ms
// here) and closing a tracepoint's last perf event for more, under a kernel-wide mutex every
// attach needs. Both are handed to a helper (this binary) that keeps the run's slot (its ring
// buffer and its instance of the file program, which the kernel attaches once per tracepoint)
// attached, reporting for nobody, for a quarter second (warm_linux.go): a run starting
// meanwhile whose path syscalls are among those attached takes the slot over (its own
// references to the links and perf events, by pidfd_getfd) and neither attaches nor detaches,
// so back-to-back runs never touch the mutex. The helper stays while the run holds the slot;
// when the run ends it gives the slot back to the same helper, so back-to-back runs start no
// helper either (only when that helper died does a run start a new one). Unclaimed past its
// deadline, or claimed by a run that died, the helper detaches, frees the slot and closes the
// perf events. bpffs is mounted at /sys/fs/bpf when nothing mounted it (some VMs boot without
// it). Without pins (no bpffs, and none could be mounted) the helper detaches at once and keeps
// only the perf events (then as `sleep`), so a run starting meanwhile finds the tracepoints
// registered.
package guard
