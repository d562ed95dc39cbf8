// Package enforcer owns running a command under its profile: it compiles a policy.Profile for
// this host (seccomp program, sandbox.Plan), starts the init stage (sysprof re-executed with a
// hidden argument) in new namespaces, and supervises the seccomp listener to explain every
// denied call in a report.Report. It does not apply mounts, Landlock or capabilities itself
// (package sandbox does, called from the init stage), and it does not parse profiles.
//
// # Compiling
//
// Compile never modifies the profile, and Run never modifies what Compile returned (a test says
// so): what one run adds, its stages' overlay directories, goes into the run's copy of the plan.
// Compile (compile.go) is two halves, a file each: CompileSeccomp (compile_seccomp.go) is the
// pure one, the filter from the profile and an architecture, made by package seccomp (the one
// compiler enforce and every export share; its doc says what the program does);
// compilePlan (compile_plan.go) is the host plan (paths, mounts, sockets).
//
// # Running
//
// Run is Compile, a pure decision of the run's layers from the compiled profile and the host's
// facts (decideLayers, table-tested), and the run itself (run_linux.go: report, guard, proxy,
// stages; session_linux.go: the init stage's protocol; package initstage: the stage's own side).
// Each layer is one entry of layerTable (layers.go): its name, what it holds and what --degrade
// gives up, its part of the decision, the part of the plan the init stage applies for it, its
// part of the run outside the init stage (Start: a layerRun), where its report state comes from
// and its line in `sysprof show`; a new layer is a new entry there (DEVELOPERS.md, "Adding a
// layer"). The limits layer (limits.go) bounds tasks, memory and the private /tmp: in the run's
// cgroup as root (made, and the init stage moved into it, in the background from StartEarly on)
// or below an ordinary user's delegated cgroup subtree, as rlimits otherwise. Run starts the init
// stage (package initstage: the small program the build embeds, from a sealed memfd that a
// keeper process holds between runs and each run checks byte for byte (initkeep_linux.go), or else
// /proc/self/exe with the hidden argument, MaybeInit being the first call in main) in a new
// session (no terminal injection into the caller's terminal), with SIGKILL as parent-death
// signal, and sends it the compiled policy on an inherited pipe. A stage in a user namespace is
// started by internal/spawn (clone3 with CLONE_VFORK|CLONE_VM: Go's forkExec fully forks
// sysprof for a user namespace): it execs before its id maps exist, its capabilities ambient,
// the parent writes the maps at once, and the stage takes its ids and exactly the capabilities
// Go's child would have had (initstage.Switch) when its config arrives. The CLI starts that init stage
// before the profile is known (StartEarly), with the namespaces every sandboxed run has and, as
// root, in a fresh run cgroup, while another goroutine loads the profile and compiles it
// (Prepare; Run is Prepare and Prepared.Run): the init program's memfd, the clone and the
// second Go runtime's start overlap the load and the compile, whose seccomp half runs beside
// the host plan. The early stage unshares its network namespace on the thread that execs while
// it waits for its config (initstage.ArgNetNS): every sandboxed plan has one. A run that does
// not fit an early stage (another directory, environment or streams; no sandbox or no network
// namespace; another cgroup, or none, for the guard; another identity, see below) kills it and
// starts its own. The init stage is PID 1 of a new PID
// namespace: it mounts the namespace's /proc (sandbox.MountProc), applies the sandbox plan,
// marks every fd above 2 close-on-exec, sets no_new_privs, installs the filter on its locked
// thread with SECCOMP_FILTER_FLAG_NEW_LISTENER, and blocks on a sync pipe. The parent takes the
// listener with pidfd_getfd (it cannot deadlock: the child only waits), starts the supervisor
// and releases the child. The init stage then stops being dumpable, forks the command from the
// locked thread (which carries the filter, Landlock, no_new_privs and the empty capability sets
// into it), forwards SIGINT/SIGTERM/SIGHUP/SIGQUIT, reaps orphans and exits with the command's
// status (128+N for a signal): the kernel then kills what is left in the namespace. Calls made
// in the init stage's address space (its filtered thread, and Go's vfork child before the
// command's exec) are let through unrecorded: the supervisor recognises them with kcmp(KCMP_VM);
// nothing the command runs shares that address space. A memfd_create the filter sends (no
// rule naming MFD_EXEC: learn saw no memfd run) is answered by the supervisor with a file on a
// detached noexec tmpfs the init stage mounted (neither executable nor mappable executable),
// placed in the caller as the call's result (memfd_linux.go). Without the sandbox (degraded) the init
// stage execs the command itself, in no PID namespace. A notification is the only per-call
// cost the supervisor adds, and only for calls the filter sends it: the listener asks for
// synchronous wake-ups (Linux 6.6; older kernels answer as before), and a denial already listed
// is only counted, without walking /proc for its parents again.
//
// Who the command is (sandbox.ChooseIdentity): an ordinary user's own uid; as root under sudo
// the invoking user's (with that user's HOME where sudo left root's: userEnviron, decided
// before the profile's $HOME is expanded); as plain root uid 0 only inside its user namespace (sandbox.RootUID on
// the host), with the host's mounts as an idmapped replica that the parent prepares and sends
// over fdReplica (spawnStage, sendReplica) and the init stage enters before anything else;
// where / cannot be idmapped, uid 0 mapped to itself only with --degrade=userns (decideLayers); real
// host root only with the profile's hostRoot.
//
// # What compile adds to the sandbox plan
//
//   - Every profile gets the read-only root and Landlock (withBase): an empty or missing
//     filesystem section is "nothing beyond the base", never "layer off". The base is BaseRead
//     (the loader's cache, library directories, harmless devices, the online CPU list), the command itself as the
//     one exec rule when the profile has none, the terminal the command's stdio is on
//     (/dev/pts/N, which node reopens by name: terminal.go), every credential store
//     (paths.CredentialStores) hidden unless a rule names it (a rule for a path inside one,
//     $HOME/.aws/config, leaves that path reachable and hides the rest of the store entry by
//     entry: credstore.go),
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
//     cannot connect to any of them anyway. Only a run whose filter lets a call that names a
//     socket address reach the kernel (or any run under --audit) reads and covers them
//     (socketAddressing): without one, a socket file is only a file the command cannot open.
//   - The profile's binaries are compared with their learned sha256 (binaries.go; symlinks
//     followed, hashes cached by dev/inode/size/mtime/ctime, key and hash from one open file, the
//     cache hidden from the command): a change is a warning line and a report entry
//     (changedBinaries); Options.VerifyBinaries refuses the run (exit 125).
//   - With a private /tmp, paths the profile reads inside /tmp are bound read-only from the
//     host, and writable paths inside it that do not exist yet become the private directory
//     itself instead of host binds.
//   - Globs in read and exec rules become their directory (mounts and Landlock cannot express
//     globs), noted; hidden globs hide what matches now, never their directory.
//   - Hidden paths become Landlock.Hidden too (those that exist, and those named without a glob
//     that do not exist yet), so that a file the host renames over one, or creates there,
//     during the run stays unreadable (see package sandbox, "Hidden names, not inodes").
//   - The work tree's git config files (.git/config; a linked worktree's config.worktree and
//     common config; the submodules' below modules/; the files include.path and
//     includeIf.*.path name, recursively) that hold credentials are masked: a read-only copy without
//     http.*.extraHeader, credential.helper and URL passwords covers them (git needs the rest).
//   - Credentials rules (credentials.go): the real values are read here (the store, or the
//     command's environment) and stay in this process (netproxy.Broker); each store file a
//     rule names is masked with its brokered entries holding per-run stand-ins and its other
//     secrets dropped (a store entry ${VAR} stays and VAR holds the stand-in); a brokered
//     variable is replaced by its stand-in; the system CA bundle is masked with the host's
//     bundle (SSL_CERT_FILE's when set) plus the run CA, and SSL_CERT_FILE,
//     NODE_EXTRA_CA_CERTS, REQUESTS_CA_BUNDLE, PIP_CERT, GIT_SSL_CAINFO and CARGO_HTTP_CAINFO
//     point at it. Each host must be reached by a network.connect rule (a name, or an address
//     rule for a registry on loopback); a store that does not parse or lacks the entry fails
//     compile naming its file, line and key.
//   - Writes mean exactly what was learned (writes.go, staged_linux.go): an existing directory
//     rule outside the work tree is bound writable, one inside it staged with its parent (a
//     symlink, or one resolving outside its variable's directory, is
//     refused); a file rule, a glob or a path that does not exist yet stages its nearest
//     existing directory: an overlay (sandbox.Stage) whose upper layer Run copies back after
//     the command, only for what the rules cover; the rest is reported as denials. Protected
//     paths (paths.ProtectedPaths) inside a bound directory get read-only binds, or the
//     directory is staged when one does not exist yet. A host $TMPDIR outside the private tmp
//     roots is granted whole (temp names are incidental); one below a private tmp root is
//     there read-only even when the tool only looked it up (node realpaths os.tmpdir()); a missing tool cache root is
//     created. Writable mounts in which no exec rule lies are noexec; writesExact refuses a
//     plan whose grants reach further. The work tree and the home are noexec trees but for
//     the exec rules inside them (exectrees.go: the learned binaries and libraries, exec
//     globs' directories, toolchain roots), so the loader cannot run what sits there unnamed.
//     A stage whose exec rules name outputs in a directory it does not have yet is noexec too
//     (execoutputs.go): the init stage binds that directory exec when the command makes it
//     (every mkdir then goes to the supervisor, which has the init stage make an output
//     directory and bind it before the call returns: execoutputs_linux.go),
//     so a fresh checkout's shipped files stay unmappable although Landlock's exec rule (which
//     needs an existing inode) lies on the work tree. A program written right in an existing
//     directory of such a stage (go build -o app) is bound exec alone when the command execs
//     it (every execve, unlink and rename then goes to the supervisor: an unlink or rename of
//     that name has the bind undone first). A nested repository's hooks and config written in
//     a directory bound writable are held in the changeset by the sweep (bound_linux.go).
//   - A profile with clone3 also gets clone, the libc fallback of clone3's ENOSYS.
//   - No network in the profile: a new network namespace with only loopback. A network
//     allowlist (egress.go): the same namespace, as root and as an ordinary user, whose only
//     way out is sysprof's DNS stub and name-checking splice proxy (package netproxy: the
//     init stage opens their sockets inside right after lo is up, before Landlock and the
//     capability drop, and Run takes them with pidfd_getfd and serves them from the host's
//     namespace). tcp/mptcp connect rules become proxy rules, by name or by address;
//     localhost:PORT means 127.0.0.1 and ::1; a rule's "by" binary limits it to that very
//     file and the transport helpers it runs (netproxy helpers.go; "by: any" opts out); udp rules to port 53 are served by the
//     stub; other UDP rules to an exact address:port are relayed to it (netproxy udp.go), to a
//     name or a range dropped and said (the datagrams stay refused; the rest runs);
//     resolve names are answered by the stub with no connection allowed, and so are the
//     names of the host's hosts file when the profile reads it (a lookup there leaves no query
//     to learn); the seccomp filter then allows what a resolver needs to ask the stub
//     (policy.CloseResolver), whatever source the learn resolved from; bind rules work
//     inside the namespace, and a loopback TCP listener with a fixed port is published to the
//     host at the same address by a forwarder in the namespace (publish_linux.go: nsenter,
//     which joins the sandbox's user namespace as an ordinary user; --publish PORT adds one).
//     Landlock still holds the TCP ports. The stub or the proxy
//     not coming up refuses the run (exit 125), --degrade or not. The proxy enforces under
//     --audit too.
//
// # Writes: the changeset
//
// A directory a write rule names that exists is bound writable, unless it lies in the work tree
// (an output directory a tool removes and makes again: it is staged with its parent, so that it
// is no mount point); every other write rule stages its nearest existing directory (writes.go). The stages are the run's changeset (package
// changeset, staged_linux.go): changeset.Begin and AddStage make the run's manifest and empty
// overlay layers before the init stage gets its plan (a kill -9 of sysprof leaves the run for
// `sysprof changes`), nothing is made inside them (the tree inside is the host's), and once the
// command and its PID namespace are gone FinishChangeset applies what Options.Apply selects
// (learned, by default) and holds the rest, reported in report.Changes. A gated run's steps
// share one changeset (Options.Changeset): a stage of a directory an earlier step staged reuses
// its layers, and nothing is applied until the caller finishes it. Directories bound writable
// are swept when the command ends (bound_linux.go): set-id bits and file capabilities are
// stripped, a symlink out of its tree or at a protected path is moved into the changeset, held.
//
// # The guard (root)
//
// As root, Run starts the init stage inside a per-run cgroup2 directory that package guard
// (enforcer/guard) creates and watches with bpf/guard.c: the file denials (Landlock's EACCES,
// the read-only mounts' EROFS, ENOENT under hidden paths, executable mappings a noexec mount
// refused). Run decides what the guard watches (guardConfig) and what the run loses without it
// (decideLayers); the guard's own lifecycle (pins in bpffs, warm slots, the helper that
// detaches after a run, run by MaybeInit) is described in package guard.
//
// # Environment
//
// The init stage, early (StartEarly, before the profile is known) or not, is started with the
// caller's environment minus every secret-looking variable (policy.ScrubEnv, nothing passed):
// it lives on as PID 1 of the sandbox, so no secret is in its memory or environ. The variables
// the profile's env.pass names, the brokered variables' stand-ins and the CA bundle variables
// (credentials.go) come in its config (SetEnv) and are added right before exec; UnsetEnv
// names the variables removed. The report notes the names removed. The loader variables
// (paths.LoaderEnv: LD_PRELOAD and the rest) come in SetEnv too: a dynamically linked stage
// program would run the caller's preload as PID 1 before any layer, with the host's mounts.
//
// # Lifetime
//
// The init stage re-enters the working directory after the mounts (the old one points into
// the host's mount). When the command exits, what is left of its process group is killed; the
// supervisor stops when the listener has no more tasks or when Run returns.
//
// # Audit
//
// Options.Audit lets every reported syscall continue (and marks the denial Allowed). The
// filesystem layers (mounts, Landlock) still enforce: as root their refusals are reported, as an
// ordinary user the report lists them in Unobservable. The network allowlist (the egress proxy)
// still enforces too, and reports what it refuses.
//
// # Fail closed
//
// A layer the profile needs that this host or build cannot apply makes Run return a
// *LayerError (exit 125) unless Options.Degrade names it (--degrade=LAYER; bare --degrade: any);
// then the report lists the layer as degraded.
//
// Requires Linux 5.9 (USER_NOTIF with CONTINUE, close_range, pidfd_getfd).
package enforcer
