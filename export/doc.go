// Package export converts a sysprof profile into the formats other sandboxes read, so a policy
// learned once can be enforced by Docker, Podman, Kubernetes, bubblewrap or systemd too. It
// owns the translation and the list of what each format cannot express; it does not compile
// seccomp BPF itself (the enforcer does, and hands its compiler in), run anything, or change
// the profile.
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
// # Seccomp formats (oci, spo)
//
// Argument rules are read by policy.ParseArgRule, as the enforcer reads them; a rule that
// restricts nothing (no values, flags or deny, no errno) is no restriction.
// The default action is SCMP_ACT_ERRNO with EPERM. Syscalls without argument rules form one
// SCMP_ACT_ALLOW entry. A syscall with argument rules gets one SCMP_ACT_ALLOW entry per allowed
// combination: OCI runtimes OR the entries and AND the args of one entry, and libseccomp takes
// at most one comparison per argument in an entry, so the rules (which are ANDed) are
// multiplied out and comparisons of one argument are merged into a single SCMP_CMP_MASKED_EQ
// (value is the mask, valueTwo the expected masked value) or SCMP_CMP_EQ. Flags become
// MASKED_EQ with mask = ^allowed and valueTwo 0. Deny values become the complement of the
// denied set, as LT/GT ends and aligned MASKED_EQ blocks. A rule that answers every call
// with an errno (clone3 → ENOSYS) becomes an SCMP_ACT_ERRNO entry with errnoRet; a rule's
// errno for rejected values is kept where the rejected set can be written as entries, and is
// EPERM (with a note) where it cannot: flags rules, masks that are not contiguous low bits,
// and socketcall/ipc-family syscalls when i386 is listed (libseccomp rewrites those and rejects
// the entries). Every export is tested against libseccomp itself and, call by call, against the
// profile's own rule semantics. Filesystem and network rules have no place in these formats (a
// note says so).
//
// # Host formats (bwrap, systemd)
//
// Paths are expanded with Options.Env ($WORKDIR, $HOME, ...) for the host the output is for,
// and globs are matched against that host when exporting. A write path that cannot be expanded
// is left out (narrower, with a note); a hidden path whose variable is missing is an error,
// because leaving it out would show what the profile hides. bwrap leaves out paths that do not
// exist now (a bind needs its source; a hidden path that is absent has nothing to hide);
// systemd writes every path with a "-" prefix, so one missing when the unit starts is ignored.
//
// bwrap output is a /bin/sh script that execs bwrap with one option and its operands per line
// (shell-quoted where needed): every namespace unshared, the network shared only when the
// profile has IP endpoints or abstract unix sockets, all capabilities dropped, the whole
// filesystem read-only, /dev and /proc, a private /tmp (re-binding a work tree that lives
// under /tmp read-only), writable binds, then a read-only tmpfs over hidden directories and
// /dev/null over hidden files (last, so they win over any bind), --chdir $WORKDIR, and
// `--seccomp 3 3<FILE` when Options.SeccompFDPath names the bpf export. BwrapArgs gives the
// same arguments as a slice for callers that exec bwrap themselves (fd 3 is theirs to open).
//
// systemd output is a [Service] drop-in: SystemCallFilter= (names only), SystemCallArchitectures=,
// SystemCallErrorNumber=EPERM, ProtectSystem=strict, ReadWritePaths=, InaccessiblePaths=,
// PrivateTmp=, RestrictAddressFamilies= (from socket's domain rule), RestrictNamespaces= (from
// clone/unshare flags), and PrivateNetwork=yes or IPAddressDeny=any plus IPAddressAllow= for
// address endpoints. systemd cannot filter other syscall arguments, host names or ports, and
// it adds its @default group to any allow list; the notes say which rules that loosens.
package export
