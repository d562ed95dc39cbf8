package policy

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/sysprof/sysprof/paths"
)

// Risk classes a change to a profile. Narrowing changes have RiskNone.
type Risk int

const (
	RiskNone Risk = iota
	RiskLow
	RiskHigh
	RiskCritical
)

var riskNames = [...]string{"none", "low", "high", "critical"}

func (r Risk) String() string {
	if r < 0 || int(r) >= len(riskNames) {
		return fmt.Sprintf("Risk(%d)", int(r))
	}
	return riskNames[r]
}

// ParseRisk reads "none", "low", "high" or "critical" (any case), as given to --fail-on.
func ParseRisk(s string) (Risk, error) {
	for i, n := range riskNames {
		if strings.EqualFold(s, n) {
			return Risk(i), nil
		}
	}
	return RiskNone, fmt.Errorf("unknown risk %q: want low, high or critical", s)
}

// MarshalText writes the risk's name, so that JSON reports say "critical", not 3.
func (r Risk) MarshalText() ([]byte, error) {
	if r < 0 || int(r) >= len(riskNames) {
		return nil, fmt.Errorf("invalid risk %d", int(r))
	}
	return []byte(r.String()), nil
}

// UnmarshalText reads a risk's name; empty is none (a report field left unset).
func (r *Risk) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*r = RiskNone
		return nil
	}
	v, err := ParseRisk(string(b))
	if err != nil {
		return err
	}
	*r = v
	return nil
}

// systemSecrets are host files that hold secrets. Reading one of them (or a path inside one)
// is critical; a roll-up such as /etc that merely covers them is not rated on their account.
var systemSecrets = []string{"/etc/shadow", "/etc/gshadow", "/etc/sudoers", "/etc/sudoers.d", "/etc/ssh", "/root", "/proc/kcore", "/dev/mem", "/dev/kmem"}

// publicInSecrets are the files of a system secret that every client reads and that hold no
// secret: ssh's (and git over ssh's) client configuration and the system's known host keys.
// Only these exact paths: a rule on /etc/ssh or a glob in it still reaches the host keys.
var publicInSecrets = []string{"/etc/ssh/ssh_config", "/etc/ssh/ssh_config.d", "/etc/ssh/ssh_known_hosts"}

// systemDirs are read-only system trees: reading below them is low risk.
var systemDirs = []string{"/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin", "/etc", "/opt", "/proc", "/sys", "/dev", "/run", "/var/lib", "/var/cache", "/nix/store", "$GOROOT", "$RUSTUP_HOME"}

// systemCode are the system trees that hold programs and libraries: root's, read-only to
// everyone else, and the same on every later run. A symlink into one (a venv's bin/python3 ->
// /usr/bin/python3) lets nothing reach what the command could not already read and run.
var systemCode = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt", "/nix/store"}

// SystemCodePath reports whether host path p (clean, absolute) lies in a system tree of programs
// and libraries (/usr, /bin, /lib*, /opt): where a link a run leaves behind may point.
func SystemCodePath(p string) bool {
	for _, d := range systemCode {
		if p == d || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

// workAreas are the work tree, temp and tool caches: reading there is low risk, and writing
// strictly below them too (writing $WORKDIR itself is rated on its own).
var workAreas = []string{"$WORKDIR", "$TMPDIR", "/tmp", "/var/tmp", "$CARGO_HOME", "$GOCACHE", "$GOMODCACHE", "$NPM_CACHE", "$PNPM_HOME/store", "$GOPATH", "$HOME/.cache"}

// harmlessDevices may be written by anything.
var harmlessDevices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/pts", "/dev/ptmx", "/dev/shm", "/dev/stdout", "/dev/stderr", "/dev/fd", "/proc/self/fd"}

// homeEquivalent maps absolute home paths to $HOME ones (/home/alice/.ssh → $HOME/.ssh, /root
// → $HOME, /home → $HOME) so that a machine-specific rule is rated like its portable form.
func homeEquivalent(p string) (string, bool) {
	switch {
	case p == "/home" || p == "/root":
		return "$HOME", true
	case strings.HasPrefix(p, "/root/"):
		return "$HOME/" + p[len("/root/"):], true
	case strings.HasPrefix(p, "/home/"):
		rest := p[len("/home/"):]
		if _, after, ok := strings.Cut(rest, "/"); ok {
			return "$HOME/" + after, true
		}
		return "$HOME", true
	}
	return p, false
}

// exposedCredential returns the first credential store that a rule on p makes reachable and
// that no hidden rule hides, or "".
func exposedCredential(p string, hidden []PathRule) string {
	forms := []string{p}
	if h, ok := homeEquivalent(p); ok {
		forms = append(forms, h)
	}
	isHidden := func(x string) bool {
		for _, h := range hidden {
			if paths.Covers(h.Path, x) {
				return true
			}
		}
		return false
	}
	for _, c := range paths.CredentialStores() {
		for _, f := range forms {
			switch {
			case paths.Covers(f, c) && !isHidden(c): // a parent of the store
				return c
			case paths.Covers(c, f) && !isHidden(f): // the store or a file in it
				return c
			}
		}
	}
	return ""
}

func systemSecret(p string) string {
	if paths.CoveredBy(p, publicInSecrets) && !paths.HasGlob(p) && path.Clean(p) == p {
		return ""
	}
	for _, s := range systemSecrets {
		if paths.Covers(s, p) {
			return s
		}
	}
	return ""
}

// ProtectedPath returns the protected path (paths.IsProtected) p is or lies in, also for an
// absolute home path (/home/alice/.bashrc), or "".
func ProtectedPath(p string) string { return protectedPath(p) }

func protectedPath(p string) string {
	if q, ok := paths.IsProtected(p); ok {
		return q
	}
	if h, ok := homeEquivalent(p); ok {
		if q, ok := paths.IsProtected(h); ok {
			return q
		}
	}
	return ""
}

// PathRisk rates allowing access to portable path p in profile n: the one rating `sysprof
// diff` gives a new path rule, the enforcer a file denial, refine a proposal and learn its
// review list. access is read, list, exec or write (create and delete are writes). A hidden
// rule of n that covers p counts as removed, since nothing less would allow p, and is rated
// too. n is not modified; nil is the empty profile.
func PathRisk(access, p string, n *Profile) (Risk, string) {
	if n == nil {
		n = &Profile{}
	}
	switch access {
	case "create", "delete":
		access = "write"
	case "metadata", "":
		access = "read"
	}
	next := *n
	next.Filesystem.Hidden = nil
	var unhidden []PathRule
	for _, h := range n.Filesystem.Hidden {
		if paths.Covers(h.Path, p) {
			unhidden = append(unhidden, h)
		} else {
			next.Filesystem.Hidden = append(next.Filesystem.Hidden, h)
		}
	}
	r, why := pathRisk(access, p, &next)
	if len(unhidden) == 0 {
		return r, why
	}
	rule := []PathRule{{Path: p}}
	switch access {
	case "write":
		next.Filesystem.Write = append(rule, n.Filesystem.Write...)
	case "exec":
		next.Filesystem.Exec = append(rule, n.Filesystem.Exec...)
	case "read", "list":
		next.Filesystem.Read = append(rule, n.Filesystem.Read...)
	}
	for _, h := range unhidden {
		if hr, hwhy := hiddenRemovalRisk(h.Path, next.Filesystem); hr > r {
			r, why = hr, hwhy
		}
	}
	return r, why
}

// hiddenRemovalRisk rates no longer hiding h in a profile whose rules are fs.
func hiddenRemovalRisk(h string, fs Filesystem) (Risk, string) {
	reachable := coveredBy(h, fs.Read) || coveredBy(h, fs.Write) || coveredBy(h, fs.Exec)
	switch cred := credentialIn(h); {
	case cred != "":
		return RiskCritical, "credential store " + cred + " no longer hidden"
	case reachable:
		return RiskHigh, "no longer hidden, and a broader rule makes it reachable"
	}
	return RiskLow, "no longer hidden (no rule reaches it yet)"
}

// pathRisk rates a newly allowed path. access is read, write or exec.
func pathRisk(access, p string, n *Profile) (Risk, string) {
	if c := exposedCredential(p, n.Filesystem.Hidden); c != "" {
		return RiskCritical, fmt.Sprintf("credential store %s becomes %s", c, accessWord(access))
	}
	if s := systemSecret(p); s != "" {
		return RiskCritical, fmt.Sprintf("system secret %s becomes %s", s, accessWord(access))
	}
	if q := protectedPath(p); q != "" && access == "write" {
		return RiskCritical, fmt.Sprintf("protected path %s becomes writable: what is written there runs outside the sandbox later", q)
	}
	if access == "write" && (p == "/proc" || strings.HasPrefix(p, "/proc/")) {
		return RiskCritical, "write under /proc: process and kernel settings (a writable /proc/sys is host root)"
	}
	switch access {
	case "read", "list":
		switch {
		case paths.CoveredBy(p, systemDirs):
			return RiskLow, "read-only path under a system directory"
		case paths.CoveredBy(p, workAreas):
			return RiskLow, "read in the work tree, temp or a tool cache"
		}
		return RiskHigh, "read outside system directories, the work tree and tool caches"
	case "write":
		switch {
		case p == "$WORKDIR":
			return RiskHigh, "the whole work tree becomes writable, sources included"
		case paths.CoveredBy(p, harmlessDevices):
			return RiskLow, "write to a harmless device"
		case paths.CoveredBy(p, workAreas):
			return RiskLow, "write in the work tree, temp or a tool cache"
		case paths.LinkProbe(p):
			return RiskLow, "a package manager's hard-link probe beside its store (a per-run name it creates and removes)"
		}
		return RiskCritical, "write outside the work tree and tool caches"
	default:
		reason := "new executable path: more code may run"
		for _, w := range n.Filesystem.Write {
			if paths.Covers(w.Path, p) || paths.Covers(p, w.Path) {
				reason += "; it is also writable, so code written during the run can be executed"
				break
			}
		}
		return RiskHigh, reason
	}
}

func accessWord(access string) string {
	switch access {
	case "write":
		return "writable"
	case "exec":
		return "executable"
	case "list":
		return "listable"
	}
	return "readable"
}

// privilegedSyscalls are critical to allow, with why (built on first use, not at start).
var privilegedSyscalls = sync.OnceValue(func() map[string]string {
	m := map[string]string{}
	for why, names := range map[string][]string{
		"changes the mount table or root directory":                 {"mount", "umount", "umount2", "fsopen", "fsmount", "fsconfig", "fspick", "move_mount", "open_tree", "mount_setattr", "pivot_root", "chroot"},
		"loads eBPF programs into the kernel":                       {"bpf"},
		"reads or controls other processes":                         {"ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp"},
		"replaces or reboots the kernel":                            {"kexec_load", "kexec_file_load", "reboot"},
		"loads or unloads kernel modules":                           {"init_module", "finit_module", "delete_module", "create_module"},
		"creates or enters namespaces":                              {"unshare", "setns"},
		"reaches the kernel keyring, where credentials are kept":    {"keyctl", "add_key", "request_key"},
		"opens the kernel's performance monitoring (side channels)": {"perf_event_open"},
		"io_uring weakens the seccomp argument rules: its OPENAT, SOCKET and CONNECT operations skip them (socket families, MPTCP, set-id modes)": {"io_uring_setup", "io_uring_enter", "io_uring_register"},
		"opens files by handle, bypassing path checks":                {"open_by_handle_at"},
		"userfaultfd is a common kernel-exploit primitive":            {"userfaultfd"},
		"changes host-wide state (clock, swap, hostname, accounting)": {"settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "stime", "swapon", "swapoff", "sethostname", "setdomainname", "acct", "quotactl", "quotactl_fd", "vhangup", "nfsservctl", "lookup_dcookie", "uselib"},
		"reads the kernel log":                                        {"syslog"},
		"gets raw I/O port access":                                    {"iopl", "ioperm"},
		"watches file access across the system":                       {"fanotify_init"},
		"changes another process's memory policy or pages":            {"migrate_pages", "move_pages"},
	} {
		for _, n := range names {
			m[n] = why
		}
	}
	return m
})

// PrivilegedSyscall says why allowing name is critical, or "" for an ordinary syscall.
func PrivilegedSyscall(name string) string { return privilegedSyscalls()[name] }

// networkSyscalls give a tool that had none a way onto the network (or a local socket).
var networkSyscalls = map[string]bool{"socket": true, "connect": true, "bind": true,
	"listen": true, "accept": true, "accept4": true, "sendto": true, "sendmsg": true, "sendmmsg": true}

// SyscallRisk rates allowing syscall name: critical for a privileged one, high for one that
// reaches the network, low otherwise.
func SyscallRisk(name string) (Risk, string) {
	if why := PrivilegedSyscall(name); why != "" {
		return RiskCritical, "privileged syscall: " + why
	}
	if networkSyscalls[name] {
		return RiskHigh, "opens or uses network sockets"
	}
	return RiskLow, "ordinary syscall"
}

// ArchitectureRisk rates allowing system calls through architecture a: low for another
// machine's native table (the same names, reached only there), high for a compat ABI.
func ArchitectureRisk(a string) (Risk, string) {
	if a == "x86_64" || a == "aarch64" {
		return RiskLow, "another machine's architecture: the same syscall names compile to its own numbers there"
	}
	return RiskHigh, "new compat architecture: another syscall table reachable on this machine (compat ABIs are a classic bypass)"
}

// ArgValueRisk rates a newly allowed argument value (or flag bits) of syscall's argument arg.
func ArgValueRisk(syscall string, arg int, v uint64) (Risk, string) {
	if i, ok := SetIDModeArgs[syscall]; ok && i == arg && v&0o6000 != 0 {
		return RiskCritical, "makes a set-id file (S_ISUID/S_ISGID), which runs with its owner's ids after the run"
	}
	if i, ok := ExecMemoryArgs[syscall]; ok && i == arg && v&protExec != 0 {
		return RiskHigh, "makes memory no file backs executable (a JIT, or injected code)"
	}
	if bit, _, ok := execBit(syscall, arg); ok && v&bit != 0 {
		return RiskHigh, "makes memfds executable (code run from memory, which no exec rule names)"
	}
	switch ArgKind(syscall, arg) {
	case KindFamily:
		return RiskHigh, "new socket family"
	case KindSockType:
		switch v & 0xf {
		case 3, 10: // SOCK_RAW, SOCK_PACKET
			return RiskHigh, "raw sockets see and forge traffic"
		}
		return RiskLow, "socket type"
	case KindProtocol:
		switch v {
		case 255, 262: // IPPROTO_RAW, IPPROTO_MPTCP
			return RiskHigh, "uncommon protocol (raw or MPTCP)"
		}
		return RiskLow, "socket protocol"
	case KindClone:
		var nsFlags uint64 = 0x80 | 0x20000 | 0x2000000 | 0x4000000 | 0x8000000 | 0x10000000 | 0x20000000 | 0x40000000
		if syscall == "clone" {
			// clone(2)'s low byte is the exit signal: CLONE_NEWTIME (0x80) cannot be asked there.
			nsFlags &^= 0xff
		}
		if v&nsFlags != 0 {
			return RiskCritical, "creates namespaces (" + Symbol(KindClone, v&nsFlags) + ")"
		}
		return RiskLow, "clone flags"
	case KindIoctl:
		if v == 0x5412 || v == 0x541C {
			return RiskCritical, "terminal injection (" + Symbol(KindIoctl, v) + " types into the user's terminal)"
		}
		return RiskLow, "ioctl request"
	case KindPersonality:
		if v&(0x40000|0x400000|0x100000) != 0 {
			return RiskHigh, "weakens memory protections (" + Symbol(KindPersonality, v) + ")"
		}
		return RiskLow, "personality"
	case KindPrctl:
		switch v {
		case 0x59616d61, 35, 47: // PR_SET_PTRACER, PR_SET_MM, PR_CAP_AMBIENT
			return RiskHigh, Symbol(KindPrctl, v) + " changes who may trace or what the process may do"
		}
		return RiskLow, "prctl option"
	}
	return RiskLow, "argument value"
}

// ExecMemoryArgs are the syscalls that can make memory executable, by their prot argument
// (mmap2: i386's mmap).
// Enforce refuses PROT_EXEC there unless a rule lets it through (seccomp's exec-memory
// hardening): no rule means "never executable", not "any value" (Diff).
var ExecMemoryArgs = map[string]int{"mmap": 2, "mmap2": 2, "mprotect": 2, "pkey_mprotect": 2}

// execBit is the bit of syscall's argument arg that enforce refuses unless a rule lets it
// through (no rule there means "never", not "any value"), and the rule that lets it through:
// PROT_EXEC of ExecMemoryArgs, and memfd_create's MFD_EXEC (enforce makes every memfd
// non-executable unless learned).
func execBit(syscall string, arg int) (bit uint64, lets ArgRule, ok bool) {
	if i, hard := ExecMemoryArgs[syscall]; hard && i == arg {
		return protExec, ArgRule{Syscall: syscall, Arg: arg, Mask: "PROT_EXEC", Values: []string{"PROT_NONE", "PROT_EXEC"}}, true
	}
	if syscall == "memfd_create" && arg == 1 {
		return mfdExec, ArgRule{Syscall: syscall, Arg: arg, Mask: "0x10", Values: []string{"0", "0x10"}}, true
	}
	return 0, ArgRule{}, false
}

// SelfOnlyArgs are the pid arguments enforce lets through only as 0 (the caller) unless a
// rule names other pids (seccomp's WhyPrlimitOther; refine adds such a rule): no rule there
// means "pid 0", not "any value" (Diff, Merge).
var SelfOnlyArgs = map[string]int{"prlimit64": 0}

// selfOnly reports a SelfOnlyArgs argument.
func selfOnly(syscall string, arg int) bool {
	i, ok := SelfOnlyArgs[syscall]
	return ok && i == arg
}

// mfdExec is memfd_create's MFD_EXEC.
const mfdExec = 0x10

const protExec = 0x4

// SetIDModeArgs are the syscalls that set a file's mode, by the argument that carries it: the
// seccomp layer denies S_ISUID and S_ISGID there, and allowing them is critical.
var SetIDModeArgs = map[string]int{
	"chmod": 1, "fchmod": 1, "fchmodat": 2, "fchmodat2": 2,
	"creat": 1, "open": 2, "openat": 3, "mknod": 1, "mknodat": 2, "mkdir": 1, "mkdirat": 2,
}

// ArgAnyButRisk rates lifting the restriction on an argument to any value but deny: as
// ArgAnyRisk, unless deny keeps refusing what made that critical (ioctl's terminal injection:
// a tool that starts to make an ioctl request beyond the terminal ones).
func ArgAnyButRisk(syscall string, arg int, deny []uint64) (Risk, string) {
	if ArgKind(syscall, arg) == KindIoctl && slices.Contains(deny, 0x5412) && slices.Contains(deny, 0x541C) {
		return RiskLow, "any ioctl request but terminal injection (TIOCSTI and TIOCLINUX stay denied)"
	}
	return ArgAnyRisk(syscall, arg)
}

// ArgAnyRisk rates lifting the restriction on an argument altogether.
func ArgAnyRisk(syscall string, arg int) (Risk, string) {
	if i, ok := SetIDModeArgs[syscall]; ok && i == arg {
		return RiskCritical, "set-id modes (S_ISUID/S_ISGID) are no longer denied"
	}
	switch ArgKind(syscall, arg) {
	case KindFamily:
		return RiskHigh, "any socket family (AF_PACKET, AF_ALG, AF_VSOCK, ...)"
	case KindSockType, KindProtocol:
		return RiskHigh, "any socket type or protocol, raw sockets included"
	case KindClone:
		return RiskCritical, "namespace flags are no longer checked"
	case KindIoctl:
		return RiskCritical, "TIOCSTI and TIOCLINUX (terminal injection) are no longer denied"
	case KindPersonality:
		return RiskHigh, "any personality, ADDR_NO_RANDOMIZE and READ_IMPLIES_EXEC included"
	}
	return RiskLow, "argument no longer restricted"
}
