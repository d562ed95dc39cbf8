// Package seccomp is sysprof's one seccomp compiler: a profile's syscall section becomes rules
// as plain data (Rule, Check: by name, the same on every architecture), compiled per
// architecture into a Spec (by number) and a classic-BPF program. sysprof enforce loads the
// program; every export (raw bpf, OCI, SPO, systemd, bwrap) is derived from the same rules, so an
// export is as strong as enforce or says what its format cannot carry. It does not load
// filters, answer notifications or read the host. The allowed set is the profile's, with the
// behaviour families of its learned syscalls closed (policy.FamilyMates) unless it was learned
// --exact: a profile learned before a family existed runs as a newer learn's would (a note
// says what that added).
//
// Syscall names become numbers from go-seccomp-bpf's tables (never a hand-kept table). The BPF program is generated
// here, not by go-seccomp-bpf's assembler, because enforcement needs what that library cannot
// express: masked argument compares, several ABIs in one program, USER_NOTIF as the default and
// ENOSYS for unknown numbers. The program:
//
//   - checks the audit arch first: x86_64, plus i386 and x32 only when the profile lists them;
//     any other arch (int 0x80 from a 64-bit process when i386 is not listed) is reported;
//   - x32 numbers (bit 0x40000000) go to their own table, reported unless x32 is listed;
//   - a binary search over syscall numbers; allowed syscalls without argument rules return
//     ALLOW on their own (so the kernel's action cache makes them free);
//   - syscalls in the table but not in the profile go to the supervisor (USER_NOTIF), which
//     records them and answers EPERM (or lets them continue under audit);
//   - numbers the table does not know (newer than sysprof) answer ENOSYS so libc falls back;
//   - clone3 always answers ENOSYS: its flags are in memory seccomp cannot read, and libc then
//     uses clone(2), whose flags are checked;
//   - hardening added to allowed syscalls unless the profile's own rules allow it: clone with
//     namespace flags, ioctl TIOCSTI/TIOCLINUX, and socket(…, IPPROTO_MPTCP) unless the
//     profile has an mptcp endpoint (MPTCP bypasses Landlock's TCP rules); every memfd_create
//     unless a rule on its flags names MFD_EXEC (the supervisor makes the memfd non-executable:
//     WhyMemfd); PROT_EXEC on anonymous mmap/mmap2, mprotect, pkey_mprotect and shmat's
//     SHM_EXEC unless a rule on prot lets it through (WhyExecMemory), and under i386 every old
//     mmap, whose arguments are in memory (WhyOldMmap); prlimit64 on a pid other than 0
//     (another process's limits: the init stage's, a sibling's) unless a rule on pid lets
//     other pids through (WhyPrlimitOther; the supervisor lets the caller's own pid go on);
//     under enforce (Options.InitStage), kill, tkill, tgkill, rt_sigqueueinfo,
//     rt_tgsigqueueinfo and pidfd_open naming pid 1, the init stage (WhyInitSignal), and
//     ptrace, process_vm_readv/writev and kcmp naming it (WhyInitAccess; exports do neither:
//     a container's pid 1 may be the command); every setxattr, mknod of a device and
//     RENAME_WHITEOUT (Options.RecordKernelRefusals: WhyXattr, WhyDevice);
//   - arguments the kernel reads as int are compared on their low 32 bits only.
//
// The program is tested without a kernel through golang.org/x/net/bpf's VM, table-driven and
// against a plain Go model of the profile's meaning. ConstAllow is the kernel's action-cache
// emulator (seccomp_is_const_allow): a test holds every arg-free allow of x86_64 and i386 to
// being served by the cache, so that only syscalls with an argument check (set-id modes on
// openat, mkdir, chmod, …; a profile's argument rules) ever run the program. A new argument
// rule keeps this property for the other syscalls as long as its checks are emitted in its own
// syscall's leaf of the number search (emitChecks), never before the search.
//
// VM runs a program in golang.org/x/net/bpf's interpreter (tests of the compiler and of the
// exports).
package seccomp
