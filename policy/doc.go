// Package policy owns the profile: the versioned, plain-data policy for one command (syscall
// names and argument rules, filesystem paths, network endpoints, binaries), its YAML file format
// and schema, atomic load/save, Merge and Diff with risk classes. It does no I/O on the host
// beyond its own file and knows nothing about syscall numbers, Landlock or mounts: compiling a
// profile for a host is the enforcer's job.
//
// # The file
//
// A profile is one YAML document. sysprof writes it (Marshal, Save) in a fixed order with one
// line per allowance, so that a review of a change to the policy is a review of changed lines;
// learning the same command twice gives the same bytes. People may edit it by hand: Parse
// accepts any YAML layout, without anchors, aliases or custom tags.
//
//	apiVersion: sysprof.dev/v1          # the only version this sysprof reads
//	kind: Profile
//	metadata:
//	  name: cargo-build                 # derived from the command
//	  command: [cargo, build]
//	  sysprofVersion: "0.1.0"
//	  kernel: "6.18.0"
//	  created: "2026-11-30T04:00:00Z"   # RFC 3339, UTC
//	  updated: "2026-11-30T05:00:00Z"
//	  runs: 3                           # learn runs merged into this profile
//	  incomplete: false                 # true when a run lost events or was interrupted
//	  incompleteReasons: [...]
//	  exact: true                       # learned --exact: no behaviour families (Families)
//	syscalls:
//	  architectures: [aarch64, x86_64]  # x86_64, i386, x32, aarch64, arm; others are denied
//	  allow:
//	    - {name: openat, by: $CARGO_HOME/bin/cargo, seen: 3}
//	    - {name: rt_sigreturn, base: true}
//	  args:                             # argument rules; rules for one syscall are ANDed
//	    - syscall: socket
//	      arg: 0                        # 0..5
//	      name: domain
//	      values: [AF_INET, AF_INET6, AF_UNIX]   # must equal one of these (after mask)
//	      errno: EAFNOSUPPORT           # what a denied call returns (EPERM when empty)
//	    - syscall: clone
//	      arg: 0
//	      flags: [CLONE_VM, CLONE_FS, CLONE_FILES, CLONE_SIGHAND, CLONE_THREAD, SIGCHLD]  # no other bits
//	filesystem:
//	  read:   [...]                     # each {path, by, seen, note}
//	  write:  [...]
//	  exec:   [...]
//	  hidden: [...]                     # absent inside the sandbox, whatever else allows
//	  privateTmp: true
//	network:                            # {} means no network at all (loopback only)
//	  connect:
//	    - {endpoint: "registry.example:443", proto: tcp, by: $CARGO_HOME/bin/cargo, seen: 2}
//	  send:   [...]                     # sendmsg/sendto destinations (UDP)
//	  bind:   [...]                     # port 0: any ephemeral port
//	  resolve: [{endpoint: cdn.example}]  # looked up, never connected: the stub answers, no connect
//	env:
//	  pass: [NPM_TOKEN]                 # secret-looking variables the command still gets
//	binaries:
//	  - {path: $CARGO_HOME/bin/cargo, sha256: "…", seen: 3}
//	limits:                             # left out: the default (Limits)
//	  pids: 64                          # tasks at once: learn's peak x4, at least 64
//	  memoryMiB: 256                    # the whole run's memory: peak x4, at least 256
//	  tmpMiB: 64                        # each private tmpfs (written by hand)
//	  writeMiB: 1024                    # each staged directory's writes: what learn left x4, at least 1024
//	  writeFiles: 65536                 # files each staged directory and private tmpfs holds
//
// The JSON Schema of this format is embedded (Schema, profile.schema.json in the source tree)
// and checked by Parse, which then checks what a schema cannot: syscall names exist in the
// go-seccomp-bpf table of at least one supported architecture, argument values are known
// constants of the right kind (see ParseValue, Symbol, ArgKind) or numbers, errno names are
// known, paths are clean, endpoints parse. Every problem is a *LoadError that names the file,
// the line and the field:
//
//	cargo-build.yaml:14: syscalls.allow[3].name: "opennat" is not a syscall on any supported architecture (did you mean "openat"?)
//
// A profile with another apiVersion is refused with the list of versions this sysprof reads.
//
// An argument rule is read in one place: ParseArgRule gives its ArgSpec (numbers, the
// errno, whether it restricts anything, Allows), which the enforcer compiles and export
// writes; FormatArg prints a value of an argument the way a rule writes it, for the enforcer's
// explanations and suggestions.
//
// # Paths and variables
//
// Paths are portable: absolute system paths (/usr, /etc/ssl), or paths that start with a
// variable the enforcer expands on the host that runs the command:
//
//	$WORKDIR     the directory the command runs in (the work tree)
//	$HOME        the user's home
//	$TMPDIR      the temporary directory
//	$CARGO_HOME $RUSTUP_HOME $GOROOT $GOPATH $GOMODCACHE $GOCACHE $NPM_CACHE $PNPM_HOME $GOCONFIG   toolchain roots, caches and tool homes
//
// The variables, how each is found on a host, the expander and the matcher are package paths'
// (see its doc). A path covers everything below it. A component may be a glob
// (`$TMPDIR/go-build*`, `$HOME/.cargo/credentials*`), matching within one component, and a `**`
// component matches any number of them (see paths.Covers). Paths are clean: no `.`, `..`, `//`
// or trailing slash.
//
// Hidden paths are a subtraction: they win over any read, write or exec rule.
// paths.CredentialStores is the list every synthesized profile hides by default.
//
// # Environment
//
// The command gets the caller's environment minus every variable SecretEnv classifies as a
// credential (ScrubEnv): names with a TOKEN, SECRET, PASSWORD, PASSWD, PASSPHRASE, APIKEY or
// CREDENTIALS component, names ending in API_KEY, ACCESS_KEY, PRIVATE_KEY, SECRET_KEY, ...,
// every AWS_* variable, *_KEY/*_AUTH/*_DSN with a key-like value, *_PWD/*_PASS, and any value
// that starts like a well-known token (ghp_, glpat-, npm_, AKIA, -----BEGIN ...) or is a URL
// with a password. env.pass names those that still pass; Diff rates adding one high.
//
// # Credentials
//
// A credentials rule lets the command use a secret without holding it: its source (file and
// key, e.g. $HOME/.npmrc and //registry.example.com/:_authToken, or env NPM_TOKEN), the hosts
// it is presented to (name or name:port) and how (bearer, basic, header:NAME). Inside the
// sandbox the store holds a per-run stand-in; the egress proxy puts the real value in the
// request's credential header for those hosts only. Diff rates a host the store itself names
// low, a variable's host high and any other host critical (CredentialRisk); two rules claiming
// one host are refused. ParseStore/RewriteStore read a store (.npmrc, .git-credentials, .netrc,
// cargo's credentials.toml, pip.conf, .docker/config.json) and write the copy the command sees
// (same format, its other secrets dropped); a store that does not parse is a StoreError naming
// its file, line and key.
//
// # Endpoints
//
//	host.example:443        a DNS name and port (proto tcp, udp or mptcp is required)
//	192.0.2.0/24:443        an IPv4 address or CIDR, and port
//	[2001:db8::1]:443       an IPv6 address or prefix in brackets, and port
//	unix:/run/nscd/socket   a unix socket path (no proto); unix:$TMPDIR/x works too
//	unix:@name              an abstract unix socket
//
// # Provenance
//
// Every allowance may say why it is there: by is the executable that first needed it, seen
// the number of the merged learn runs (metadata.runs) that used it, so `seen: 1` in a profile
// with `runs: 9` is a rarely used allowance worth a look. note is a human reason ("rolled up
// from 42 files", "credential store"). Provenance never changes what is allowed, and Diff
// ignores it.
//
// # Saving, locking, merging
//
// Save writes atomically (temporary file, fsync, rename) and refuses a profile that Validate
// rejects. A learn into an existing profile runs Update: Lock (flock on FILE.lock) → Load →
// Merge → Save → unlock, so concurrent learns serialize and none is lost. Merge is a union
// that never drops what either side allowed; seen counts and runs add up and incomplete is
// sticky. SameCommand lets a caller refuse to merge profiles of different commands.
//
// # Diff and risk
//
// Diff compares two profiles semantically and rates each widening change critical, high or
// low (Risk) with a reason; narrowing changes have RiskNone. Widens(changes, atLeast) is the
// CI gate. The rules, from most to least severe:
//
//   - critical: a credential store becomes readable (or is no longer hidden); a write to a
//     protected path (paths.IsProtected: .git, .github, .sysprof, shell rc files, ...), under
//     /proc, or outside the work tree, temp and tool caches; a privileged syscall (mount, bpf, ptrace, kexec,
//     modules, unshare/setns, keyctl, perf_event_open, io_uring, …; see PrivilegedSyscall);
//     namespace clone flags; TIOCSTI/TIOCLINUX; a network destination that is not a named host
//     on a registry or git port (see EndpointRisk for the exact table).
//   - high: a new executed binary or exec path, or a changed sha256; a named host on tcp
//     443/80/22/9418; DNS; a new socket family or raw socket type; a new architecture;
//     privateTmp turned off; a read outside system directories and the work tree; the whole
//     work tree made writable.
//   - low: ordinary syscalls and argument values, reads under system directories, the work
//     tree or tool caches, writes inside the work tree, temp or a tool cache.
//
// The ratings are functions, not only Diff's: SyscallRisk, ArchitectureRisk, ArgValueRisk,
// ArgAnyRisk, PathRisk (read, list, exec, write of a portable path in a profile, un-hiding
// included) and EndpointRisk. A Grant is one addition to a profile (what a denial suggests,
// what refine applies; it prints as the suggestion and ParseGrant reads that back), and
// GrantRisk rates it by dispatching to those: the enforcer rates a denial with it, refine a
// proposal, and Diff its added syscalls, architectures and endpoints (its paths and argument
// values with the same functions, against the new profile and per value), so the three agree
// (report.Risk is Risk). Review is the subset of a Diff a
// person must look at (critical widenings, new network endpoints rated high or above): learn's
// review list and what learn --strict fails on. MarkPending writes the critical filesystem
// ones of a learn pending (PathRule.Pending): enforce compiles WithoutPending, refine Accepts.
package policy
