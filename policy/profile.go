package policy

// APIVersion and Kind head every profile file.
const (
	APIVersion = "sysprof.dev/v1"
	Kind       = "Profile"
)

// Profile is the policy for one command: what it may do and nothing else. It is plain data,
// identical on every machine; the enforcer compiles it for a host without changing it.
// Every list is kept sorted (see Normalize) so that the file is deterministic.
type Profile struct {
	APIVersion string     `yaml:"apiVersion" json:"apiVersion"`
	Kind       string     `yaml:"kind" json:"kind"`
	Metadata   Metadata   `yaml:"metadata" json:"metadata"`
	Syscalls   Syscalls   `yaml:"syscalls" json:"syscalls"`
	Filesystem Filesystem `yaml:"filesystem" json:"filesystem"`
	Network    Network    `yaml:"network" json:"network"`
	// Env: which secret-looking environment variables still reach the command.
	Env Env `yaml:"env,omitempty" json:"env,omitzero"`
	// Credentials the command uses through the egress proxy without holding them.
	Credentials []Credential `yaml:"credentials,omitempty" json:"credentials,omitempty"`
	// Binaries lists every executable the command ran, with its hash for provenance.
	Binaries []Binary `yaml:"binaries,omitempty" json:"binaries,omitempty"`
	// Limits bounds the run's processes, memory and private /tmp (limits.go).
	Limits Limits `yaml:"limits,omitempty" json:"limits,omitzero"`
	// HostRoot runs the command as real host root when sysprof runs as root (capabilities still
	// dropped). Without it a root sysprof runs the command in a user namespace (or as the sudo
	// user). Never learned: only a person writes it.
	HostRoot bool `yaml:"hostRoot,omitempty" json:"hostRoot,omitempty"`
}

// Metadata says where a profile came from. Nothing here widens or narrows the policy.
type Metadata struct {
	Name           string   `yaml:"name" json:"name"` // e.g. cargo-build
	Command        []string `yaml:"command" json:"command"`
	SysprofVersion string   `yaml:"sysprofVersion,omitempty" json:"sysprofVersion,omitempty"`
	Kernel         string   `yaml:"kernel,omitempty" json:"kernel,omitempty"`
	// LearnedOn are the architectures the learn runs ran on (x86_64, aarch64): the syscall
	// names are that machine's, and enforce elsewhere maps them (ArchEquivalents).
	LearnedOn []string `yaml:"learnedOn,omitempty" json:"learnedOn,omitempty"`
	Created   string   `yaml:"created,omitempty" json:"created,omitempty"` // RFC 3339, UTC
	Updated   string   `yaml:"updated,omitempty" json:"updated,omitempty"`
	// Runs is how many learn runs were merged into this profile; Seen counts are out of it.
	Runs int `yaml:"runs" json:"runs"`
	// Incomplete marks a profile that may miss behaviour (lost events, interrupted run).
	Incomplete        bool     `yaml:"incomplete" json:"incomplete"`
	IncompleteReasons []string `yaml:"incompleteReasons,omitempty" json:"incompleteReasons,omitempty"`
	// Exact marks a profile learned with --exact (every merged run): only the syscalls seen.
	// Every other profile, also one learned before this field existed, has its behaviour
	// families closed by enforce and drift as learn closes them (Families).
	Exact bool `yaml:"exact,omitempty" json:"exact,omitempty"`
}

// Provenance says why an allowance exists: the executable that first needed it and in how many
// of the merged runs it was seen. It is written as `by: /usr/bin/cc` and `seen: 3` (out of
// metadata.runs). Provenance never changes what is allowed.
type Provenance struct {
	By   string `yaml:"by,omitempty" json:"by,omitempty"`
	Seen int    `yaml:"seen,omitempty" json:"seen,omitempty"`
}

// Syscalls is the seccomp part of the policy.
type Syscalls struct {
	// Architectures the command may enter the kernel through, by name: x86_64, i386, x32,
	// aarch64. Anything else is denied.
	Architectures []string  `yaml:"architectures" json:"architectures"`
	Allow         []Syscall `yaml:"allow" json:"allow"`
	// Args restricts argument values of allowed syscalls. Rules for one syscall are ANDed.
	Args []ArgRule `yaml:"args,omitempty" json:"args,omitempty"`
}

// Syscall is one allowed syscall, by name (never by number).
type Syscall struct {
	Name       string `yaml:"name" json:"name"`
	Provenance `yaml:",inline" json:",inline"`
	// Base is true for the mandatory base set every process may need on rare paths.
	Base bool `yaml:"base,omitempty" json:"base,omitempty"`
	// Family names the behaviour-equivalence family (see `sysprof show --explain`) that allowed
	// this syscall because the command used another member of it; empty when it was learned.
	Family string `yaml:"family,omitempty" json:"family,omitempty"`
}

// ArgRule limits one argument of one syscall. A call whose argument matches no Values (after
// Mask) or sets a bit outside Flags fails with Errno (EPERM when empty).
type ArgRule struct {
	Syscall string `yaml:"syscall" json:"syscall"`
	Arg     int    `yaml:"arg" json:"arg"`                       // 0..5
	Name    string `yaml:"name,omitempty" json:"name,omitempty"` // what the argument is: domain, flags
	// Mask is applied before comparing with Values (socket type & 0xf drops SOCK_CLOEXEC).
	Mask string `yaml:"mask,omitempty" json:"mask,omitempty"`
	// Values: the argument must equal one of these. Symbolic (AF_INET) or numeric (0x10).
	Values []string `yaml:"values,omitempty" json:"values,omitempty"`
	// Flags: the argument may only have these bits set. Symbolic or numeric.
	Flags []string `yaml:"flags,omitempty" json:"flags,omitempty"`
	// Deny: the argument must not equal any of these (after Mask); a call that does fails with
	// Errno. It is the one deny-list form, for values that must never pass whatever else is
	// allowed (ioctl TIOCSTI and TIOCLINUX on any fd). Symbolic or numeric.
	Deny []string `yaml:"deny,omitempty" json:"deny,omitempty"`
	// A rule with Errno set and no Values, Flags or Deny answers every call of the syscall with
	// Errno without running it: clone3 answered ENOSYS, because seccomp cannot read the flags
	// inside struct clone_args and libc then falls back to clone, whose flags it can check.
	Errno      string `yaml:"errno,omitempty" json:"errno,omitempty"`
	Provenance `yaml:",inline" json:",inline"`
}

// Filesystem is the mount-namespace and Landlock part of the policy. Paths may start with a
// variable (paths.Names: $WORKDIR, $HOME, $TMPDIR, $GOPATH, $NPM_CACHE, ...) and hold globs
// (`$TMPDIR/go-build*`, `$WORKDIR/**/.env`). A path covers everything below it.
type Filesystem struct {
	Read  []PathRule `yaml:"read,omitempty" json:"read,omitempty"`
	Write []PathRule `yaml:"write,omitempty" json:"write,omitempty"`
	Exec  []PathRule `yaml:"exec,omitempty" json:"exec,omitempty"`
	// List grants listing the entries of a directory (and of directories below it), never
	// reading file contents: `ls /` needs it, and a read rule on / would grant everything.
	List []PathRule `yaml:"list,omitempty" json:"list,omitempty"`
	// Hidden paths are absent inside the sandbox even when a broader read or write rule covers them.
	Hidden []PathRule `yaml:"hidden,omitempty" json:"hidden,omitempty"`
	// PrivateTmp gives the command an empty /tmp of its own.
	PrivateTmp bool `yaml:"privateTmp" json:"privateTmp"`
}

// PathRule is one path with why it is there.
type PathRule struct {
	Path       string `yaml:"path" json:"path"`
	Provenance `yaml:",inline" json:",inline"`
	// Note is a human reason (e.g. "credential store", "rolled up from 42 files").
	Note string `yaml:"note,omitempty" json:"note,omitempty"`
	// Pending marks a critical allowance learn saw but nobody accepted yet (a write to a
	// protected path, a read of a credential store): enforce treats it as absent until `sysprof
	// refine` (or `learn --accept-risky`) accepts it. See MarkPending.
	Pending bool `yaml:"pending,omitempty" json:"pending,omitempty"`
}

// Network is the network allowlist. Empty means no network at all (a private namespace with
// only loopback).
type Network struct {
	Connect []Endpoint `yaml:"connect,omitempty" json:"connect,omitempty"`
	Send    []Endpoint `yaml:"send,omitempty" json:"send,omitempty"`
	Bind    []Endpoint `yaml:"bind,omitempty" json:"bind,omitempty"`
	// Resolve are names (endpoint: the name, no port) the command looked up but never
	// connected to: the DNS stub answers them, so the same lookup succeeds under enforce, and
	// no connection to them is allowed (that takes a connect rule).
	Resolve []Endpoint `yaml:"resolve,omitempty" json:"resolve,omitempty"`
}

// Endpoint is host:port, CIDR:port, [v6]:port or unix:PATH (unix:@name for abstract sockets).
// Port 0 in a bind endpoint means any ephemeral port.
type Endpoint struct {
	Endpoint   string `yaml:"endpoint" json:"endpoint"`
	Proto      string `yaml:"proto,omitempty" json:"proto,omitempty"` // tcp, udp, mptcp; empty for unix
	Provenance `yaml:",inline" json:",inline"`
}

// Binary is an executable the command ran.
type Binary struct {
	Path       string `yaml:"path" json:"path"`
	SHA256     string `yaml:"sha256,omitempty" json:"sha256,omitempty"`
	Provenance `yaml:",inline" json:",inline"`
}
