package seccomp

import "golang.org/x/sys/unix"

// The values the hardening checks. Argument values of profile rules are read by policy
// (policy.ParseArgRule) and printed by it (policy.FormatArg).

// NamespaceFlags are clone's flags that make new namespaces (they escape the sandbox's view).
var NamespaceFlags uint64 = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC |
	unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWTIME

// IPProtoMPTCP is IPPROTO_MPTCP: MPTCP sockets bypass Landlock's TCP port rules.
const IPProtoMPTCP = 262

// WhyOpenWrites marks the check that sends opens for writing to the supervisor.
const WhyOpenWrites = "opens for writing (the supervisor grants the profile's /proc/<pid> writes)"

// WhySetID marks the checks that keep set-id modes out of the sandbox.
const WhySetID = "set-id mode bits (S_ISUID/S_ISGID)"

// WhyPrlimitOther marks the check that sends prlimit64 on another process (pid != 0) to the
// supervisor: reading or lowering the init stage's or a sibling's limits. The supervisor lets
// a call naming the caller's own pid go on.
const WhyPrlimitOther = "prlimit64 on another process (the init stage's or a sibling's limits)"

// WhyInitSignal marks the check that sends a signal (kill, tkill, tgkill, rt_sigqueueinfo,
// rt_tgsigqueueinfo) or a pidfd_open naming pid 1, the init stage, to the supervisor.
const WhyInitSignal = "a signal or pidfd for pid 1 (the init stage, outside the command's reach)"

// WhyInitAccess marks the checks that send a ptrace, a memory read or write
// (process_vm_readv/writev) or a kcmp naming pid 1, the init stage, to the supervisor: the
// kernel refuses them (the stage is not dumpable) without a trace when the profile learned the
// call for the command's own processes.
const WhyInitAccess = "ptrace, memory access or kcmp of pid 1 (the init stage, outside the command's reach)"

// WhyProfileRule marks the check of a profile's own argument rule.
const WhyProfileRule = "profile rule"

// WhyExecMemory marks the checks that refuse executable memory no file backs (mmap of an
// anonymous mapping with PROT_EXEC, mprotect/pkey_mprotect adding PROT_EXEC, shmat SHM_EXEC)
// unless the profile has a rule on prot that lets PROT_EXEC through (learned from a JIT).
const WhyExecMemory = "executable memory no file backs (PROT_EXEC: a JIT, or injected code; learn saw none)"

// WhyOldMmap marks the check that sends every call of i386's old mmap to the supervisor when
// WhyExecMemory applies to mmap: it passes its arguments in memory, which seccomp cannot read,
// so its prot cannot be checked (glibc and musl use mmap2, whose arguments are in registers).
const WhyOldMmap = "i386's old mmap (its arguments are in memory: prot cannot be checked; libc uses mmap2)"

// WhyMemfd marks the check that sends every memfd_create to the supervisor, which answers with
// a file on a noexec tmpfs instead (no mount flag or Landlock rule reaches a real memfd, so
// nothing would stop an executable mapping of one), unless the profile has a rule on its
// flags that lets MFD_EXEC through (learned: a memfd was executed or mapped executable).
const WhyMemfd = "memfds that can hold code (the supervisor makes them on a noexec tmpfs; learn saw no memfd executed)"

// shmExec is SHM_EXEC: shmat maps the segment executable.
const shmExec = 0o100000

// WhyMkdir: every mkdir goes to the supervisor, which has the init stage make a fresh
// checkout's exec output directory and bind it exec before the call returns.
const WhyMkdir = "directories made (an exec output directory is made and bound by the init stage)"

// WhyExec: every execve goes to the supervisor, which has the init stage bind a program the run
// wrote into a noexec stage exec before it runs.
const WhyExec = "programs run, files removed or renamed (an exec output file is bound exec by the init stage, unbound before its name goes)"

// WhyLink: every link goes to the supervisor, which answers a cross-directory link of a file of
// a stage's lower layer (the host's, not written by the run) with EXDEV, as Landlock answers
// one it has no refer right for: overlayfs would copy the file up first (a change of a file
// the run never wrote) and give the new name the upper inode, so that git's local clone
// dies "hardlink different from source"; link's callers copy on EXDEV.
const WhyLink = "hard links (a cross-directory link out of a stage's lower layer is answered EXDEV)"

// WhyXattr: every setxattr goes to the supervisor, which refuses, and records, what the kernel
// would refuse without a trace or must never leave a run: file capabilities, trusted.* and
// overlayfs's own attributes (a redirect or metacopy of a staged file), an ACL naming a user
// or group the sandbox does not map; every other one goes on.
const WhyXattr = "extended attributes set (file capabilities, trusted and overlay attributes, ACLs naming ids the sandbox lacks: refused and recorded)"

// WhyDevice marks the checks that send a device node made (mknod of a character or block
// device: a 0/0 one is an overlay whiteout, which hides a file of a stage's lower layer) or a
// rename leaving a whiteout (RENAME_WHITEOUT) to the supervisor, which refuses and records it:
// the kernel refuses most of them on its own (EPERM without CAP_MKNOD, EINVAL on an overlay),
// without a trace.
const WhyDevice = "device nodes and whiteouts (mknod of a character or block device, RENAME_WHITEOUT)"

// WhyConnect: every connect goes to the supervisor, which tells the egress proxy which process
// made it (its file as it was then) before the call goes on: a per-binary network rule passes
// only for the process that connected, not for one that exec'd the rule's binary since.
const WhyConnect = "connects (the supervisor records which program made each, for the per-binary network rules)"
