// Package sandbox applies the kernel layers of a sandbox from inside the init stage: the mount
// namespace layout (read-only root, writable binds, hidden paths, private /tmp), the network
// namespace's loopback, Landlock, and dropping capabilities. It takes a Plan with absolute host
// paths and numbers only; turning a profile into a Plan is the enforcer's job, and seccomp is
// installed by the enforcer last, right before exec. This package does not start processes,
// read profiles, or report denials.
//
// # Using it from the init stage
//
// The parent starts the init stage with the namespaces from [Plan.NamespaceAttr] for the
// [Identity] [ChooseIdentity] picks (or, piece by piece, [Plan.CloneFlags], [UserNSMappings] and
// [InitAmbientCaps]). As PID 1 of its new PID namespace the init stage calls [MountProc] first. The init stage, on the
// goroutine that will later exec the tool, calls [Plan.Apply] (or [Plan.ApplyResult] to learn
// which paths were skipped and what was degraded), installs seccomp, and execs. Apply locks the
// calling goroutine to its OS thread and never unlocks it: Landlock, no_new_privs, securebits and
// the capability sets are per-thread attributes that survive execve only from that thread. The
// other runtime threads of the init stage keep their privileges until execve kills them; they
// never run tool code.
//
// # Order of operations
//
//  1. Mounts (needs CAP_SYS_ADMIN in the mount namespace's user namespace; Landlock would forbid
//     mount changes once applied).
//  2. Network: bring lo up in the new network namespace (needs CAP_NET_ADMIN), with
//     ConfiguredAddrs beside 127.0.0.1 and ::1 (glibc's AI_ADDRCONFIG counts neither).
//  3. Landlock (needs no_new_privs or CAP_SYS_ADMIN; it is the irrevocable layer: even a process
//     that somehow regained capabilities cannot lift it or change mounts). It comes after the
//     mounts because its rules name inodes: a rule on /tmp must name the private tmpfs, not the
//     host's /tmp it covers; and a Landlock-restricted process may not mount at all.
//  4. Capabilities: securebits locked, bounding set emptied, ambient cleared, capset to zero
//     (needs CAP_SETPCAP, so it comes last).
//
// # Hidden paths
//
// An existing hidden directory is covered by an empty read-only directory (mode 0555), a hidden
// file, socket or other non-directory by an empty read-only file (mode 0444), both cloned from
// one small detached tmpfs. A symlink to a hidden path, made anywhere, resolves to the cover. A
// hard link cannot reach the content: link(2) takes the name, which resolves to the cover on its
// own mount, and links never cross mounts (EXDEV); Landlock also refuses cross-directory links
// from outside Write (no refer right; EXDEV). open_by_handle_at would bypass names but needs
// CAP_DAC_READ_SEARCH, which is dropped. A hidden daemon socket (e.g. /run/docker.sock) becomes
// an unconnectable file (EACCES). A hidden path that does not exist is skipped and stays absent;
// if its parent is writable the tool may create it, but then it is the tool's own file, not the
// credential (Landlock has no deny rule to prevent that without taking the whole directory).
// A hidden path inside a writable directory is still hidden (covers are mounted after the
// writable binds).
//
// A masked file (Plan.Masked: a .git/config without its credentials) is covered the same way
// by a read-only file holding the masked content, in a small tmpfs of its own.
//
// # Hidden names, not inodes
//
// A cover sits on a dentry: when the host renames a new file over a hidden .env, or deletes
// and recreates it, during the run, the kernel detaches the cover from the sandbox's mount
// namespace and the new file shows through. Landlock.Hidden closes that for names below a
// read or exec rule: the rule on the ancestor is split (splitForHidden) so that the ancestors
// down to the hidden name's directory keep only read_dir, every other entry on the way gets
// the rule's rights on its own inode, and the cover gets them too (it is a mount root there,
// so a hidden file still reads as empty); a new inode at the hidden name matches no rule and
// is refused (EACCES). Chosen over the alternatives because it works the same as an ordinary
// user, needs no process watching the host, and grants nothing new: hiding the parent
// directory would hide the work tree, and re-mounting on change is racy. What it costs:
// files the host creates during the run in a directory on the way to a hidden name are not
// readable to the tool, and the split adds one rule per entry of each such directory
// (directories of more than 4096 entries keep their rule, noted). Not split, and noted: a
// hidden name in a directory some rule lets the tool create entries in, since the tool's own
// new files there must stay readable and Landlock cannot tell them from the host's; there the
// cover is the only layer. Symlinks on the way get no rule of their own (access through one
// is decided by the path it resolves to, as before).
//
// # Which layer answers
//
// The read-only mount answers first for writes outside Writable (EROFS, also where Landlock
// would deny: creating a file checks the mount before the LSM), Landlock for reads, execs and
// writes it does not allow (EACCES; EXDEV for cross-directory rename/link), and its scopes with
// EPERM. Device nodes stay writable on a read-only mount (the kernel skips the mount's write
// check for special files), so /dev/null, /dev/zero, /dev/urandom, /dev/tty and pty allocation
// through /dev/ptmx work; under Landlock they must be listed in Devices. Write does not include
// execute: a binary the tool writes is not runnable unless its directory is also in Exec
// (go test's and cargo's build directories, configure checks). That holds for execve only: the
// ELF interpreter, which every dynamically linked Exec binary needs (Apply adds it, see
// Result.Implied), can be run directly on any readable binary ("ld.so ./payload") and maps it
// with read_file alone. The mounts of Plan.NoExec close that: a writable mount in which no exec
// was learned is noexec, and mmap(PROT_EXEC) of a file there fails too. One with an exec rule in
// or above it cannot be noexec without breaking dlopen of build outputs (rustc proc-macros,
// Python extensions): there it stays open, and Landlock alone is tested as that known limit.
// The read-only trees a shipped payload sits in (the work tree, the home) are Plan.NoExecTrees:
// each is covered by a recursive clone of itself, noexec at its root only (the writable binds
// and covers below keep their flags), after every other mount step; then each path of
// Plan.ExecKeep inside them (the learned binaries and libraries, exec globs' directories,
// toolchain roots) is covered by a clone of itself with noexec cleared. Clearing is allowed: the
// flag was set in this mount namespace, so the kernel did not lock it. A stage the enforcer
// marks noexec although exec rules lie in it (a fresh checkout's work tree, staged for a
// target/ it does not have yet) keeps its ExecKeep paths the same way, and each directory of
// Plan.ExecOutputs becomes a clone of itself without noexec when the command makes it: the
// enforcer's supervisor has the init stage make the command's mkdir of it and bind it before
// the call returns ([ServeExecOutputMkdirs]); an inotify watch on its parent, set before the
// command starts, binds one made otherwise (renamed into place) a moment later
// (watchExecOutputs). Both are served by goroutines of the init stage on threads that keep the
// user namespace's capabilities. A directory there before the watch stays noexec. A program
// the run writes right in an existing directory of such a stage (Plan.ExecFiles: `go build -o
// app` at the top of the work tree) is bound exec over itself, the file alone, when the
// supervisor sees the command exec it (the same socket).
// A stage with a Size (the profile's write limits) gets a tmpfs of that many bytes and Files
// inodes as its overlay's upper and work directories (given to overlay by fd: Linux 6.13), so
// that a write past either answers ENOSPC; the stage's layer directories on the host are held
// through a detached clone of their mount, and [FlushBoundStages] copies what fitted into them
// once the command is gone (the init stage as PID 1: at the command's end, or when sysprof dies),
// writing [LimitFile] beside them when a bound was reached.
// Every writable mount (the writable trees, the stages' overlays, the private tmpfs) is
// nosuid,nodev ([WritableMountAttrs]): a set-uid binary the tool writes or copies there (as
// root its files are host root's through the idmapped replica) runs with the caller's ids, and
// a device node made there does not open.
//
// # /proc and /sys
//
// [MountProc] mounts the PID namespace's own /proc (only its processes are visible), binds
// [ProcReadOnly] (/proc/sys, /proc/sysrq-trigger, /proc/irq, /proc/bus) read-only over it and
// makes /sys read-only, whatever the plan says: uid 0 without capabilities may still write
// most sysctls by their mode bits. The read-only root covers the rest of /proc: a learned
// /proc/self write is granted by the enforcer's supervisor, file by file, not by a mount.
//
// # User namespaces
//
// As root, [ChooseIdentity] also puts the init stage in a user namespace unless the caller asks
// for real root. Plain root gets one in which uid and gid 0 are [RootUID] on the host, with no
// supplementary groups: the command is root inside and an unprivileged id outside. For root's
// files to stay its own (a 0700 $HOME, root-owned work trees and caches), the init stage runs on
// a [Replica] of the host's mounts: the host-root parent clones each visible mount
// ([PrepareReplica]: open_tree, one mount each, made private so that nothing mounted on a clone
// propagates back to the host) and idmaps the clones with the init stage's user namespace
// (mount_setattr MOUNT_ATTR_IDMAP, which needs CAP_SYS_ADMIN on the host); the init stage
// receives them over a socket and, before anything else of the sandbox, attaches them over /
// and pivots into them ([Replica.Enter]). Every layer Apply then builds (binds, stages, covers)
// is cut from idmapped mounts: files owned by host 0 read as its own, and what it creates is
// owned by 0 on disk. Kernel pseudo filesystems (/proc, /sys, /dev) travel as one plain
// recursive clone each. Where / cannot be idmapped ([CanIdmap]: overlayfs, NFS, FUSE),
// ChooseIdentity falls back to one mapping every id to itself (uid 0 keeps file ownership, its
// capabilities are the namespace's, the host's mounts are locked) and marks it Weaker; the
// enforcer runs that only when degrading. Under sudo the user namespace maps the invoking
// user's uid and gid, the init stage switching to them with no supplementary groups.
//
// When sysprof does not run as root, the init stage runs in a new user namespace in which the
// caller's uid and gid are mapped to themselves (not to root), so files the tool creates keep
// their owner and tools that compare the uid with file owners (git's safe.directory, ssh, gcc's
// temp files) behave as outside. A non-root uid loses its capabilities at execve, so the parent
// passes CAP_SYS_ADMIN, CAP_NET_ADMIN and CAP_SETPCAP as ambient capabilities (Go raises them in
// the child after the uid/gid maps are written); Apply drops them before the tool runs.
//
// # Graceful degradation
//
// Landlock features depend on the kernel's ABI version. [Downgrade] is the pure function that
// decides what of a Landlock layer can be enforced at a given ABI; it never forbids something the
// plan allowed and lists everything it could not enforce. Apply refuses to run (a *LayerError
// for layer "landlock") when anything would be dropped, unless Plan.Degrade is set; then the
// dropped features are listed in the Result.
//
// Landlock is applied with raw syscalls (golang.org/x/sys/unix), not go-landlock: the ruleset
// must be built on the thread that execs (as above), which the raw calls do, whereas go-landlock
// restricts every thread through libpsx, a module this repository does not carry; and the raw
// calls let Apply report each skipped path and fail closed on anything Downgrade drops.
//
// # Kernel requirements
//
// Linux 5.12 for mount_setattr and idmapped mounts (ext4, xfs, btrfs; tmpfs since 6.3), 5.2 for
// open_tree/move_mount/fsopen, Landlock ABI 1 (5.13) for
// any filesystem rule, ABI 2 (5.19) for Write paths (refer), ABI 3 (6.2) truncate, ABI 4 (6.7)
// TCP ports, ABI 5 (6.10) ioctl_dev, ABI 6 (6.12) signal and abstract unix socket scoping.
package sandbox
