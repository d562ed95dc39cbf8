package policy

import (
	"fmt"
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

// UnmarshalText reads a risk's name.
func (r *Risk) UnmarshalText(b []byte) error {
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

// systemDirs are read-only system trees: reading below them is low risk.
var systemDirs = []string{"/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin", "/etc", "/opt", "/proc", "/sys", "/dev", "/run", "/var/lib", "/var/cache", "/nix/store", "$GOROOT", "$RUSTUP_HOME"}

// workAreas are the work tree, temp and tool caches: reading there is low risk, and writing
// strictly below them too (writing $WORKDIR itself is rated on its own).
var workAreas = []string{"$WORKDIR", "$TMPDIR", "/tmp", "/var/tmp", "$CARGO_HOME", "$GOCACHE", "$GOMODCACHE", "$NPM_CACHE", "$GOPATH", "$HOME/.cache"}

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

func underAny(p string, roots []string) bool {
	for _, r := range roots {
		if paths.Covers(r, p) {
			return true
		}
	}
	return false
}

func systemSecret(p string) string {
	for _, s := range systemSecrets {
		if paths.Covers(s, p) {
			return s
		}
	}
	return ""
}

// pathRisk rates a newly allowed path. access is read, write or exec.
func pathRisk(access, p string, n *Profile) (Risk, string) {
	if c := exposedCredential(p, n.Filesystem.Hidden); c != "" {
		return RiskCritical, fmt.Sprintf("credential store %s becomes %s", c, accessWord(access))
	}
	if s := systemSecret(p); s != "" {
		return RiskCritical, fmt.Sprintf("system secret %s becomes %s", s, accessWord(access))
	}
	switch access {
	case "read":
		switch {
		case underAny(p, systemDirs):
			return RiskLow, "read-only path under a system directory"
		case underAny(p, workAreas):
			return RiskLow, "read in the work tree, temp or a tool cache"
		}
		return RiskHigh, "read outside system directories, the work tree and tool caches"
	case "write":
		switch {
		case p == "$WORKDIR":
			return RiskHigh, "the whole work tree becomes writable, sources included"
		case underAny(p, harmlessDevices):
			return RiskLow, "write to a harmless device"
		case underAny(p, workAreas):
			return RiskLow, "write in the work tree, temp or a tool cache"
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
		"changes the mount table or root directory":                   {"mount", "umount", "umount2", "fsopen", "fsmount", "fsconfig", "fspick", "move_mount", "open_tree", "mount_setattr", "pivot_root", "chroot"},
		"loads eBPF programs into the kernel":                         {"bpf"},
		"reads or controls other processes":                           {"ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp"},
		"replaces or reboots the kernel":                              {"kexec_load", "kexec_file_load", "reboot"},
		"loads or unloads kernel modules":                             {"init_module", "finit_module", "delete_module", "create_module"},
		"creates or enters namespaces":                                {"unshare", "setns"},
		"reaches the kernel keyring, where credentials are kept":      {"keyctl", "add_key", "request_key"},
		"opens the kernel's performance monitoring (side channels)":   {"perf_event_open"},
		"io_uring performs operations that seccomp cannot see":        {"io_uring_setup", "io_uring_enter", "io_uring_register"},
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

// argValueRisk rates a newly allowed argument value (or flag bit) of syscall's argument arg.
func argValueRisk(syscall string, arg int, v uint64) (Risk, string) {
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
		const nsFlags = 0x80 | 0x20000 | 0x2000000 | 0x4000000 | 0x8000000 | 0x10000000 | 0x20000000 | 0x40000000
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

// argAnyRisk rates lifting the restriction on an argument altogether.
func argAnyRisk(syscall string, arg int) (Risk, string) {
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
