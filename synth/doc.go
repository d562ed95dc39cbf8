// Package synth turns what one learn run observed (a trace.Trace) into the smallest portable
// policy (a policy.Profile) that still lets the command do exactly that. It is pure: no I/O,
// no clock unless Options.Now is nil, and the same trace always gives the same profile bytes.
// It does not record anything (profiler/), store or merge profiles (policy/), or compile and
// enforce them (enforcer/).
//
// # Pipeline
//
// Synthesize runs small passes over an intermediate rule set, in order; each does one thing and
// says what it did (Result.Explain, printed by `sysprof learn --explain`):
//
//   - portable-paths: $WORKDIR, $HOME, $TMPDIR and toolchain roots replace machine prefixes
//     (longest wins); per-run random names become globs ($TMPDIR/go-build*, see paths.GlobComponent);
//     /proc/<pid> becomes /proc/self or /proc/*.
//   - credentials: paths.CredentialStores (and the ssh-agent socket) are hidden in every profile; an
//     access to one is dropped with a loud warning unless Options.AllowSecrets names it.
//   - failed-probes: failed accesses get no rule — they fail the same way under enforcement —
//     except a delete that found no file in the work tree: in a read-only directory the
//     unlink would answer EROFS, not ENOENT, so the write pass grants exactly that path (noted
//     "deleted if present", never rolled up).
//   - source-tree, read, write, exec: reads under $WORKDIR become one read-only $WORKDIR rule;
//     other reads become exact read rules, listings list rules (names only, no contents), and
//     metadata needs none; writes are granted on the narrowest directory the tool created or
//     wrote in, never $WORKDIR, $HOME or $TMPDIR whole; exec only on binaries that ran, their
//     twins (paths.ExecTwins: go run's cache and work dir) and companions (paths.Companions:
//     man's col, run only when its output is not a terminal), as exec rules and binaries. The
//     pager's history ($HOME/.lesshst and the $HOME/.lesshsQ it is written through) gets no
//     rule (paths.PagerHistory): a file rule in $HOME would make enforce refuse the profile, and
//     the enforcer runs less with LESSHISTFILE=- (paths.NoPagerHistory), so it reads and saves none.
//   - tool-state: a tool's own state file rewritten on a clock (paths.ToolStates: cargo's
//     last-use database, go's trim stamp) is one write rule, with the directory an sqlite
//     writer syncs listed, whenever the run touched it at all: whether a run writes it depends
//     on the time since the last run, so learn, drift and enforce must not.
//   - rollup-read, rollup-write: at least RollupThreshold rules under one directory of a system
//     tree (/usr, /lib, /etc/…, toolchain roots) become that directory, deepest first, until
//     nothing changes; never / or $HOME. Listings a read rule covers count for no list
//     roll-up (so whether a host has one more site-packages directory does not decide between
//     one listed directory and all of /usr).
//   - terminal: /dev/tty, the controlling terminal, is writable (and so readable) in every
//     profile but --exact ones: a tool opens it only at a terminal (git's credential prompt,
//     less), so a profile learned in CI never saw it. The enforcer runs the command in a
//     session of its own, without a controlling terminal, so the open fails with ENXIO as in a
//     learn run without one rather than being reported as a Landlock denial.
//   - coverage: rules a broader rule covers are dropped (write implies read implies list).
//   - private-tmp, syscalls, base, architectures, runtime-variants, families,
//     portable-syscalls, arch-equivalents, args, network.
//   - credential-flows: a binary that read a credential store (a touch the credentials pass
//     dropped) whose entry names a host the run connected to (.npmrc //HOST/:_authToken,
//     .git-credentials URLs, .netrc machines; Options.Stores, which learn reads on the host:
//     keys and hosts, never values) gets a credentials rule for that entry and host, by the
//     binary that connected; Result.CredentialFlows lists each flow for learn's review.
//   - metadata.
//
// # Families and architectures
//
// Which of several equivalent syscalls a tool makes is often picked by its I/O environment
// (stdout a file, a pipe or a terminal; stdin closed), its libc version or a copy fallback the
// sandbox itself provokes (EXDEV), not by what it does. Families lists such groups; seeing any
// member allows all of them, each marked `family: NAME` in the profile. A family adds no
// capability a learned member does not already give: every member acts on fds the process
// holds or on paths the filesystem layers decide. The members that can pass those fds to
// another process (sendmsg, sendmmsg: SCM_RIGHTS, which seccomp cannot read) come in as
// mates only when the command reaches no unix socket by path (a host daemon could take
// them); learned, they stay. Every profile also gets the terminal ioctl requests alone
// (policy.TerminalRequests: isatty, window size, a terminal's modes), setitimer/getitimer,
// dup2/dup3 and fsync (family terminal); a learn whose every ioctl was one of those requests
// gets the same rule, and one that made another request every request but injection. Options.Exact turns the families off (learn --exact) and is recorded as
// metadata.exact. The table is policy.Families: enforce's seccomp compiler and drift close the
// same families (policy.FamilyMates) for every profile not learned --exact.
//
// A learned profile lists x86_64 and aarch64 (DefaultArchitectures; Options.Architectures
// chooses): the names compile to each machine's own numbers, and arch-equivalents adds, for
// each allowed syscall an architecture lacks, what libc calls there instead (open → openat,
// stat → fstatat on arm64; fstatat → newfstatat on x86_64), marked `family: arch`.
//
// # Argument rules
//
// policy.ArgRule is compiled by the enforcer as: Values — the masked argument equals one of
// them; Flags — only these bits may be set; Deny — the masked argument equals none of them
// (ioctl TIOCSTI/TIOCLINUX); Errno with none of the three — the syscall is answered with Errno
// and never runs. The last form is how clone3 is handled: seccomp cannot read the flags inside
// struct clone_args, so clone3 gets ENOSYS and libc falls back to clone, whose namespace flags
// the clone rule checks (clone is allowed for that fallback even when only clone3 was seen).
// Only a run that saw clone3 create namespaces keeps clone3 plainly allowed (with a warning).
//
// # What is never granted
//
// Rules as broad as /, $HOME, $WORKDIR, $TMPDIR, /etc and the like — directly or through a *
// component ($WORKDIR/*, $HOME/*/x) — are refused with an explain line; roll-ups and directory
// grants never reach into a credential store.
//
// # Checking a profile
//
// Allows is the plain-Go model of the filesystem policy (hidden wins, write implies read
// implies list, metadata needs visibility only); Expand turns portable paths back into host paths.
// Resynthesize runs the passes over a profile read back as observations: on a profile
// Synthesize made it changes nothing.
package synth
