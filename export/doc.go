// Package export converts a sysprof profile into the formats other sandboxes read, so a policy
// learned once can be enforced by Docker, Podman, Kubernetes, bubblewrap or systemd too. It
// owns the translation and the list of what each format cannot express; it does not compile
// seccomp itself (package seccomp does, for enforce and every format alike), run anything, or
// change the profile.
//
//	sysprof export --format oci     > cargo-build.json   # docker run --security-opt seccomp=cargo-build.json
//	sysprof export --format spo     > cargo-build.yaml   # kubectl apply -f (Security Profiles Operator)
//	sysprof export --format systemd > sysprof.conf       # a [Service] drop-in
//	sysprof export --format bpf     > cargo-build.bpf    # raw filter for bwrap --seccomp
//	sysprof export --format bwrap   > run.sh             # a complete bubblewrap command
//
// Write produces the bytes; Notes lists, one line each, what was widened, approximated or left
// out, for the CLI to print on stderr. The comment-capable formats (bwrap, systemd, spo) carry
// the same notes as comments. The same profile and options always give byte-identical output.
//
// # Seccomp formats (oci, spo, bpf)
//
// Every format starts from package seccomp's compiled rules, the ones sysprof enforce loads:
// the profile's argument rules plus the hardening (clone namespace flags, TIOCSTI/TIOCLINUX,
// IPPROTO_MPTCP unless learned, set-id modes), 32-bit arguments compared on their low word,
// clone3 and openat2 answering ENOSYS, the i386/x32 tables only when the profile lists them.
// oci and spo name a syscall's rule once for every listed architecture, while enforce maps
// rules per ABI by number: an ABI whose rule for a name is another (i386's old mmap, every
// call refused unless a rule lets PROT_EXEC through) is left out of their architectures, with
// a note (its calls meet the default action); bpf carries it.
// Each consumer's own calls after it loaded the filter are added as a documented runtime set
// (runtimeSyscalls: runc's init, bwrap's init), never learned. Names are written as libseccomp
// spells them (arm64's fstatat is newfstatat); the tests check them against libseccomp's and
// systemd's tables. bpf is the enforce program itself, USER_NOTIF answered with EPERM.
// The default action is SCMP_ACT_ERRNO with EPERM (sysprof's supervisor answers EPERM too).
// Syscalls without checks form one SCMP_ACT_ALLOW entry. A syscall with checks gets one
// SCMP_ACT_ALLOW entry per allowed combination: OCI runtimes OR the entries and AND the args
// of one entry, and libseccomp takes at most one comparison per argument in an entry, so the
// checks (which are ANDed) are multiplied out and comparisons of one argument are merged into
// a single SCMP_CMP_MASKED_EQ (value is the mask, valueTwo the expected masked value) or
// SCMP_CMP_EQ. Flags and denied bits become MASKED_EQ with valueTwo 0. Deny values become the
// complement of the denied set, as aligned MASKED_EQ blocks (for a 32-bit argument, blocks of a
// 32-bit mask, so TIOCSTI|1<<32 matches no allow entry) or, for a 64-bit argument compared
// alone, LT/GT ends. A syscall that answers every call with an errno (clone3, openat2 →
// ENOSYS) becomes an SCMP_ACT_ERRNO entry with errnoRet; a check's errno for rejected values
// is kept where the rejected set can be written as entries, and is EPERM (with a note) where
// it cannot: flags checks, masks that are not contiguous low bits, and socketcall/ipc-family
// syscalls when i386 is listed (libseccomp rewrites those and rejects the entries). Every
// export is tested against libseccomp itself, call by call against enforce's compiled spec,
// and in runc, crun and bwrap (e2e/consumers_test.go). spo is oci's entries in a
// security-profiles-operator.x-k8s.io/v1 SeccompProfile (cluster-scoped: localhostProfile
// operator/NAME.json), validated against the operator's CRD with kube-openapi's validator;
// values stay within int64 (a 64-bit comparison loses bit 63, with a note). Filesystem and
// network rules have no place in these formats (a note says so).
//
// # Host formats (bwrap, systemd)
//
// Paths are expanded with Options.Env ($WORKDIR, $HOME, ...) for the host the output is for,
// and globs are matched against that host when exporting. A write path that cannot be expanded
// is left out (narrower, with a note); a hidden path whose variable is missing is an error,
// because leaving it out would show what the profile hides. A write path that does not exist
// yet (main.o in a fresh tree) makes its nearest existing directory writable under bwrap (a
// bind needs its source; noted, never $HOME or above); bwrap's own /dev (its devpts: a working
// pty) is never covered by the host's; a hidden path that is absent has nothing to hide.
// systemd writes every path with a "-" prefix, so one missing when the unit starts is ignored.
//
// bwrap output is a /bin/sh script that execs bwrap with one option and its operands per line
// (shell-quoted where needed): every namespace unshared, the network shared only when the
// profile has IP endpoints or abstract unix sockets, all capabilities dropped, the whole
// filesystem read-only, /dev and /proc, a private /tmp (re-binding a work tree that lives
// under /tmp read-only), writable binds, then a read-only tmpfs over hidden directories and
// /dev/null over hidden files (last, so they win over any bind), --chdir $WORKDIR, and
// `--seccomp 3 3<FILE` when Options.SeccompFDPath names the bpf export. Paths in the work tree
// are written below "$WORKDIR" ($SYSPROF_WORKDIR, or the export's work tree), so the script
// runs from any directory and on a copy; its arguments are the command ("$@"; the learned one
// when none). BwrapArgs gives the same arguments as a slice for callers that exec bwrap
// themselves (fd 3 is theirs to open).
//
// systemd output is a [Service] drop-in: SystemCallFilter= (names only), SystemCallArchitectures=,
// SystemCallErrorNumber=EPERM, ProtectSystem=strict, ReadWritePaths=, InaccessiblePaths=,
// PrivateTmp=, RestrictAddressFamilies= (from socket's domain rule), RestrictNamespaces= (from
// clone's flags), RestrictSUIDSGID=yes (set-id modes), and PrivateNetwork=yes or IPAddressDeny=any plus IPAddressAllow= for
// address endpoints. systemd cannot filter other syscall arguments, host names or ports, and
// it adds its @default group to any allow list; the notes say which rules that loosens.
package export
