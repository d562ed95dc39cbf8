// Package enforcer owns running a command under its profile: it compiles a policy.Profile for
// this host (seccomp program, sandbox.Plan), starts the init stage (sysprof re-executed with a
// hidden argument) in new namespaces, and supervises the seccomp listener to explain every
// denied call in a report.Report. It does not apply mounts, Landlock or capabilities itself
// (package sandbox does, called from the init stage), and it does not parse profiles.
//
// # Compiling
//
// Compile never modifies the profile. Syscall names become numbers from go-seccomp-bpf's tables
// (never a hand-kept table). The BPF program is generated here, not by go-seccomp-bpf's
// assembler, because enforcement needs what that library cannot express: masked argument
// compares, several ABIs in one program, USER_NOTIF as the default and ENOSYS for unknown
// numbers. The program:
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
//     profile has an mptcp endpoint (MPTCP bypasses Landlock's TCP rules);
//   - arguments the kernel reads as int are compared on their low 32 bits only.
//
// The program is tested without a kernel through golang.org/x/net/bpf's VM, table-driven and
// against a plain Go model of the profile's meaning.
//
// # Running
//
// Run starts /proc/self/exe with the hidden argument (MaybeInit must be the first call in
// main) in a new session (no terminal injection into the caller's terminal), with SIGKILL as
// parent-death signal, and sends it the compiled policy on an inherited pipe. The CLI starts
// that init stage before it loads the profile (StartEarly: the second Go runtime's start, a few
// ms, overlaps the load and the compile), with the namespaces every sandboxed run has and, as
// root, in a fresh run cgroup; the network namespace, the one that depends on the profile, the
// stage then unshares itself on the thread that execs. A run that does not fit an early stage
// (another directory, environment or streams; no sandbox; another cgroup, or none, for the
// guard; another identity, see below) kills it and starts its own. The init stage is PID 1 of
// a new PID namespace: it mounts the namespace's /proc (sandbox.MountProc), applies the
// sandbox plan, marks every fd above 2 close-on-exec, sets no_new_privs, installs the filter on
// its locked thread with SECCOMP_FILTER_FLAG_NEW_LISTENER, and blocks on a sync pipe. The parent
// takes the listener with pidfd_getfd (it cannot deadlock: the child only waits), starts the
// supervisor and releases the child. The init stage then stops being dumpable, forks the
// command from the locked thread (which carries the filter, Landlock, no_new_privs and the empty
// capability sets into it), forwards SIGINT/SIGTERM/SIGHUP/SIGQUIT, reaps orphans and exits
// with the command's status (128+N for a signal): the kernel then kills what is left in the
// namespace. Calls made in the init stage's address space (its filtered thread, and Go's vfork
// child before the command's exec) are let through unrecorded: the supervisor recognises them
// with kcmp(KCMP_VM); nothing the command runs shares that address space. Without the sandbox
// (degraded) the init stage execs the command itself, in no PID namespace.
//
// Who the command is (sandbox.ChooseIdentity): an ordinary user's own uid; as root under sudo
// the invoking user's; as plain root uid 0 in a user namespace mapping every id to itself (no
// host capabilities); real host root only with the profile's hostRoot.
//
// # What compile adds to the sandbox plan
//
//   - Every profile gets the read-only root and Landlock (withBase): an empty or missing
//     filesystem section is "nothing beyond the base", never "layer off". The base is BaseRead
//     (the loader's cache, library directories, harmless devices), the command itself as the
//     one exec rule when the profile has none, every credential store (paths.CredentialStores)
//     hidden unless a rule names it (a rule for a path inside one, $HOME/.aws/config, leaves
//     that path reachable and hides the rest of the store entry by entry: credstore.go),
//     sysprof's own state (the binary-hash cache's directory, $HOME/.cache/sysprof) hidden, and
//     a private /tmp when the section has no rules. Compile refuses a plan weaker than the
//     profile or the base (notWeaker: every hidden path of either that exists must be hidden).
//   - Argument rules are read by policy.ParseArgRule and refused values printed by
//     policy.FormatArg (argrule.go, explain.go): the enforcer has no symbol table of its own.
//   - A syscall denial carries the change that allows it as data (report.Denial.Change, a
//     policy.Grant) and printed (Suggest), rated with policy.GrantRisk against the compiled
//     profile, as file and network denials are: the rating diff and refine give the change.
//   - Every pathname unix socket the host has (tmux, docker, dbus, agents) is hidden unless
//     the profile connects to it: Landlock has no rule for pathname sockets and neither a
//     read-only mount nor a network namespace stops connect. The kernel's lists of every
//     network namespace a process is in are read (hostsockets.go; sockets bound by a relative
//     path are placed through their holders' working directories, checked by dev/inode), plus
//     a listing of /run, /tmp, /var/tmp, /dev/shm and $XDG_RUNTIME_DIR. With a private /tmp the
//     host's sockets there count only below the host directories bound into it. No cap: a directory
//     with 2+ sockets and no rule in, below or above it is hidden whole (one mount). A socket
//     that cannot be placed is noted, not hidden. A profile whose socket() rule lacks AF_UNIX
//     cannot connect to any of them anyway.
//   - The profile's binaries are compared with their learned sha256 (binaries.go; symlinks
//     followed, hashes cached by dev/inode/size/mtime/ctime, key and hash from one open file, the
//     cache hidden from the command): a change is a warning line and a report entry
//     (changedBinaries); Options.VerifyBinaries refuses the run (exit 125).
//   - With a private /tmp, paths the profile reads inside /tmp are bound from the host (Landlock
//     keeps them read-only), and writable paths inside it that do not exist yet become the
//     private directory itself instead of host binds.
//   - Globs in read, write and exec rules become their directory (mounts and Landlock cannot
//     express globs), noted; hidden globs hide what matches now, never their directory.
//   - Hidden paths become Landlock.Hidden too (those that exist, and those named without a glob
//     that do not exist yet), so that a file the host renames over one, or creates there,
//     during the run stays unreadable (see package sandbox, "Hidden names, not inodes").
//   - The work tree's git config files (.git/config; a linked worktree's config.worktree and
//     common config; the submodules' below modules/; the files include.path and
//     includeIf.*.path name, recursively) that hold credentials are masked: a read-only copy without
//     http.*.extraHeader, credential.helper and URL passwords covers them (git needs the rest).
//   - Write rules on files, or on paths that do not exist yet (build outputs), become their
//     nearest directory: tools replace files rather than rewrite them. Nothing is created on
//     the host. Widening beyond the work tree, temp and cache directories is unenforceable.
//   - A profile with clone3 also gets clone, the libc fallback of clone3's ENOSYS.
//   - No network in the profile: a new network namespace with only loopback. A network
//     allowlist (egress.go): the same namespace, as root and as an ordinary user, whose only
//     way out is sysprof's DNS stub and name-checking splice proxy (package netproxy: the
//     init stage opens their sockets inside right after lo is up, before Landlock and the
//     capability drop, and Run takes them with pidfd_getfd and serves them from the host's
//     namespace). tcp/mptcp connect rules become proxy rules, by name or by address;
//     localhost:PORT means 127.0.0.1 and ::1; a rule's "by" binary limits it to that binary
//     and what runs under it ("by: any" opts out); udp rules to port 53 are served by the
//     stub; other UDP is unenforceable (refused; --degrade keeps it refused); bind rules work
//     inside the namespace only. Landlock still holds the TCP ports. The stub or the proxy
//     not coming up refuses the run (exit 125), --degrade or not. The proxy enforces under
//     --audit too.
//
// # The guard (root)
//
// As root, Run creates a per-run cgroup2 directory (internal/kernrun), enters the run into
// bpf/guard.c's maps, attaches its programs for it and starts the init stage inside it (clone3
// CLONE_INTO_CGROUP), so nothing the command does escapes the programs:
//
//   - (No longer used for the network allowlist, which the egress proxy holds; kept until
//     removed.) cgroup connect4/6, sendmsg4/6 and bind4/6 hooks check {operation, protocol, port,
//     address} against LPM tries filled from the profile's inet endpoints: exact addresses
//     and CIDRs, IPv4 also as v4-mapped IPv6. A refused call gets EPERM (in --audit it goes
//     through) and is reported with the endpoint, the host name it came from, the
//     executable, its parents and the profile line. UDP connect and send rules allow each
//     other (a connected socket sends without the sendmsg hook). MPTCP reaches the hooks as
//     its first TCP subflow, so an mptcp rule is a tcp rule there; seccomp's socket() rule
//     still decides whether MPTCP may be used at all. Landlock's TCP port rules are turned
//     off: the hooks are finer and, unlike Landlock, they report.
//   - (Hooks only.) Host names (host:port) are resolved with Go's resolver at start and every 30 s while
//     the command runs; addresses a name stops resolving to stay allowed for 5 minutes. When
//     the profile names hosts, udp and tcp port 53 to the nameservers of /etc/resolv.conf
//     are allowed too (noted in the report): the tool resolves the names itself.
//   - File denials: one program on the exit tracepoints of the path syscalls (open, openat,
//     openat2, creat, execve, execveat, mkdir*, mknod*, unlink*, rmdir, rename*, link*,
//     symlink*, truncate, chmod/chown family, utimensat) reports calls that failed with
//     EACCES (Landlock), EROFS (the read-only mounts) or EXDEV (Landlock's refer rule), and
//     ENOENT for absolute paths under a hidden path, with the path as given, the directory
//     it is relative to and the executable (walked in the kernel: the process may be gone
//     when user space reads the event). User space drops EACCES that Landlock's rules allow
//     (file permissions refused it, not the sandbox) and ENOENT outside hidden paths, and
//     suggests the profile line with the profile's variables ($WORKDIR/...). EPERM is not
//     taken: seccomp's denials answer EPERM and are already reported as syscalls. Not seen:
//     a hidden file (not directory) reads as empty; ENOENT through a symlink or a relative
//     path into a hidden directory.
//
// Cost when nothing is denied: an allowed connect/sendmsg/bind pays a hash and a trie lookup.
// The path syscalls the run's filter allows pay, for every process on the host, the
// tracepoint dispatch and one compare when the call succeeded (a failed one also an array lookup
// and a cgroup-id compare; the program returns there for other cgroups); inside the run, an ENOENT pays
// reading up to 264 bytes of the path and comparing them with the hidden paths. Nothing is
// sent, no sys_enter program runs and nothing is stashed: the arguments are read from the
// task's saved registers at exit. Enabling any syscall tracepoint also moves every syscall on
// the host to the kernel's syscall-work path while the run lasts: +8–17 ns per getppid here,
// most of what a syscall storm pays under enforce (BENCHMARKS.md). A single program on the raw sys_exit tracepoint would attach
// once instead of per syscall, but it runs for every syscall: ~+40 ns each, measured.
//
// Startup: guard.c is loaded while the profile loads and compiles (Prewarm; Run starts it
// otherwise), and set up for the run (its entries, the tracepoints, the hooks) while the init
// stage starts; start waits for it before the command may exec. Nothing of guard.c belongs to
// one run: its programs are verified once and pinned in bpffs (guardcache_linux.go), runs
// find their state by cgroup id (the file program through its slot: each slot's instance is
// attached with the slot as its cookie and reports for the run slot_cgid names), and
// concurrent runs share nothing but the programs. A profile with a network allowlist starts
// the init stage without Landlock's TCP rules, as the hooks need; if the hooks then fail to
// come up, that init stage is killed before the command runs and the run goes on as if they
// had failed up front (refused, or with --degrade, Landlock's TCP rules back).
//
// Teardown: detaching the file program from a tracepoint waits for a grace period (~35 ms
// here) and closing a tracepoint's last perf event for more, under a kernel-wide mutex every
// attach needs. Both are handed to a helper (this binary) that keeps the run's slot (its ring
// buffer and its instance of the file program, which the kernel attaches once per tracepoint)
// attached, reporting for nobody, for a quarter second (guard_warm_linux.go): a run starting
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
//
// # Environment
//
// The init stage execs the command without the variables policy.ScrubEnv removes from the
// environment it was started with (secret-looking ones the profile's env.pass does not name).
// It is told their names in its config and removes them itself, right before exec: an early
// stage (StartEarly) starts with the caller's whole environment before the profile is known,
// and fits a run by that environment. The report notes the names removed.
//
// # Lifetime
//
// The init stage re-enters the working directory after the mounts (the old one points into
// the host's mount). When the command exits, what is left of its process group is killed; the
// supervisor stops when the listener has no more tasks or when Run returns.
//
// # Audit
//
// Options.Audit lets every reported syscall continue (and marks the denial Allowed); as root it
// also lets refused inet network calls through the cgroup hooks, reported as allowed. The
// filesystem layers (mounts, Landlock) still enforce; as root their refusals are reported, as
// an ordinary user the report lists them in Unobservable.
//
// # Fail closed
//
// A layer the profile needs that this host or build cannot apply makes Run return a
// *LayerError (exit 125) unless Options.Degrade; then the report lists the layer as degraded.
//
// Requires Linux 5.9 (USER_NOTIF with CONTINUE, close_range, pidfd_getfd).
package enforcer
