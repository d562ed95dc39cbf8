package enforcer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/policy"
)

// The pure half of Compile. CompileSeccomp turns the profile's syscall section into the
// filter's spec for one architecture (filter.go assembles the program from it), with the notes
// and the dropped rules; SyscallName and Dump read numbers and programs back. Nothing here looks
// at the host: StandaloneFilter (`export --format bpf`) calls this half alone.

// alwaysAllowed cannot widen what a process reaches and only crash it when denied.
// rt_sigaction and rt_sigprocmask change the caller's own signal state only; the command's
// process makes ~60 of them between the init stage's fork and its exec (Go's child resets the
// runtime's handlers), each a ~20 µs supervisor round trip if they were not allowed here.
var alwaysAllowed = []string{"exit", "exit_group", "rt_sigreturn", "restart_syscall", "rt_sigaction", "rt_sigprocmask"}

// CompileSeccomp is the pure half of Compile: the seccomp program of p for architecture
// archName (a go-seccomp-bpf name; "" is this machine's), with its notes and dropped rules. It
// looks at nothing on the host, so `export --format bpf` and StandaloneFilter do not pay for (or
// depend on) the host walk. The result has no plan.
func CompileSeccomp(p *policy.Profile, archName string) (*Compiled, error) {
	return compileSeccomp(p, archName, true)
}

// compileSeccomp is CompileSeccomp; supervised adds what only sysprof's supervisor answers (the
// opens for writing of a profile with /proc/self writes, procwrite.go).
func compileSeccomp(p *policy.Profile, archName string, supervised bool) (*Compiled, error) {
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		return nil, errors.New("seccomp compile: big-endian hosts are not supported")
	}
	if archName == "" {
		archName = runtime.GOARCH
	}
	host, err := arch.GetInfo(archName)
	if err != nil {
		return nil, fmt.Errorf("seccomp compile: %w", err)
	}
	c := &Compiled{Arch: host.Name, profile: p}
	if supervised {
		c.ProcWrites = procWrites(p)
	}
	spec, err := c.compileSyscalls(p, host)
	if err != nil {
		return nil, err
	}
	c.spec = spec
	if c.Filter, err = spec.program(); err != nil {
		return nil, fmt.Errorf("seccomp compile: %w", err)
	}
	return c, nil
}

// mptcpLearned reports whether the profile lets the command use MPTCP.
func mptcpLearned(p *policy.Profile) bool {
	for _, l := range [][]policy.Endpoint{p.Network.Connect, p.Network.Send, p.Network.Bind} {
		for _, e := range l {
			if strings.EqualFold(e.Proto, "mptcp") {
				return true
			}
		}
	}
	return false
}

// hardening are argument checks compile adds to allowed syscalls unless the profile has its own
// rule for the same argument: they close known bypasses of the other layers; procWrites sends
// opens for writing to the supervisor when it grants a /proc file.
func hardening(p *policy.Profile, procWrites []ProcWrite) map[string]argCheck {
	h := map[string]argCheck{
		"clone": {arg: 0, width32: true, mask: ^uint64(0), denyBits: namespaceFlags, fail: retNotify,
			why: "namespace flags (new namespaces escape the sandbox's view)"},
		"ioctl": {arg: 1, width32: true, mask: ^uint64(0), denyValues: []uint64{unix.TIOCSTI, unix.TIOCLINUX}, fail: retNotify,
			why: "TIOCSTI/TIOCLINUX (terminal input injection)"},
	}
	if !mptcpLearned(p) {
		h["socket"] = argCheck{arg: 2, width32: true, mask: ^uint64(0), denyValues: []uint64{ipprotoMPTCP}, fail: retNotify,
			why: "IPPROTO_MPTCP (bypasses Landlock TCP rules)"}
	}
	if slices.ContainsFunc(procWrites, func(w ProcWrite) bool { return w.Granted }) {
		// Opens for writing go to the supervisor, which grants the learned /proc files
		// (procwrite.go) and lets every other one go on to the mounts and Landlock.
		for name, arg := range map[string]int{"open": 1, "openat": 2} {
			h[name] = argCheck{arg: arg, width32: true, mask: unix.O_ACCMODE, values: []uint64{unix.O_RDONLY}, hasValues: true,
				fail: retNotify, why: procWriteWhy}
		}
	}
	return h
}

// int32Args marks arguments the kernel reads as 32-bit ints: checks look at the low word only,
// so that garbage in the high word can neither bypass a deny nor cause a false denial.
var int32Args = sync.OnceValue(func() map[string][]int {
	return map[string][]int{
		"socket": {0, 1, 2}, "socketpair": {0, 1, 2}, "ioctl": {1}, "fcntl": {1}, "setns": {1},
		"prctl": {0}, "personality": {0}, "kill": {1}, "tkill": {1}, "tgkill": {2}, "clone": {0},
		"open": {1}, "openat": {2}, "madvise": {2}, "setsockopt": {1, 2}, "getsockopt": {1, 2},
		"bpf": {0}, "keyctl": {0}, "seccomp": {0}, "flock": {1},
	}
})

func isInt32Arg(name string, i int) bool { return slices.Contains(int32Args()[name], i) }

// compileSyscalls is the filter's spec for p on host's architecture: one table per ABI the
// profile may use here, its allowed syscalls with their argument checks and hardening.
func (c *Compiled) compileSyscalls(p *policy.Profile, host *arch.Info) (*filterSpec, error) {
	names, rulesFor := c.allowedSyscalls(p)
	abis, others := c.abisOf(p.Syscalls.Architectures, host)
	hard := hardening(p, c.ProcWrites)
	spec := &filterSpec{}
	for _, info := range abis {
		abi, err := c.compileABI(info, info == host, others, names, rulesFor, hard)
		if err != nil {
			return nil, err
		}
		spec.abis = append(spec.abis, abi)
	}
	c.Notes = append(c.Notes, "clone3: answers ENOSYS (its flags cannot be checked; libc falls back to clone)")
	for name, rules := range rulesFor {
		if names[name] {
			continue
		}
		for _, r := range rules {
			if _, errnoOnly, _ := compileArgRule(r); !errnoOnly {
				c.Dropped = append(c.Dropped, fmt.Sprintf("syscalls.args: rule for %s arg %d, which is not allowed", name, r.Arg))
			}
		}
	}
	sort.Strings(c.Dropped)
	return spec, nil
}

// allowedSyscalls are the names p allows (with alwaysAllowed) and p's argument rules by
// syscall. clone3 always answers ENOSYS (compileABI), so libc falls back to clone(2): a
// profile that learned clone3 (a learn run never sees the fallback) gets clone, whose
// namespace flags stay denied. clone can do nothing clone3 could not.
func (c *Compiled) allowedSyscalls(p *policy.Profile) (names map[string]bool, rulesFor map[string][]policy.ArgRule) {
	names = map[string]bool{}
	for _, s := range p.Syscalls.Allow {
		names[s.Name] = true
	}
	for _, s := range alwaysAllowed {
		names[s] = true
	}
	rulesFor = map[string][]policy.ArgRule{}
	for _, r := range p.Syscalls.Args {
		rulesFor[r.Syscall] = append(rulesFor[r.Syscall], r)
	}
	if (names["clone3"] || len(rulesFor["clone3"]) > 0) && !names["clone"] {
		names["clone"] = true
		c.Notes = append(c.Notes, "syscalls.allow: + clone (the fallback of clone3, which answers ENOSYS)")
	}
	return names, rulesFor
}

// abisOf are the ABIs the filter has tables for on host (host's own first, then i386 and x32
// on x86_64 when the profile lists them), and the other machines' architectures the profile
// lists (their syscall names mean nothing here and are not a loss). Architectures that cannot
// run here are dropped.
func (c *Compiled) abisOf(archs []string, host *arch.Info) (abis, others []*arch.Info) {
	if len(archs) == 0 {
		archs = []string{host.Name}
	}
	abis = []*arch.Info{host}
	for _, a := range archs {
		info, err := arch.GetInfo(a)
		if err != nil {
			c.Dropped = append(c.Dropped, fmt.Sprintf("syscalls.architectures: %s (unknown)", a))
			continue
		}
		switch {
		case info == host:
		case host == arch.X86_64 && (info == arch.I386 || info == arch.X32):
			abis = append(abis, info)
		case nativeArch(info):
			others = append(others, info)
		default:
			c.Dropped = append(c.Dropped, fmt.Sprintf("syscalls.architectures: %s (cannot run on %s)", a, host.Name))
		}
	}
	return abis, others
}

// compileABI is the filter's table for one ABI: every number it knows, the allowed syscalls
// with their argument checks and the hardening checks the profile's own rules do not override
// (noted for the host's ABI), the errno-only rules, and clone3's ENOSYS.
func (c *Compiled) compileABI(info *arch.Info, isHost bool, others []*arch.Info, names map[string]bool,
	rulesFor map[string][]policy.ArgRule, hard map[string]argCheck) (*abiSpec, error) {
	abi := &abiSpec{info: info, allowed: true, rules: map[uint32]*sysRule{}, known: map[uint32]string{}}
	mask := uint32(info.SeccompMask)
	for nr, name := range info.SyscallNumbers {
		n := uint32(nr) | mask
		abi.known[n] = name
		abi.max = max(abi.max, n)
	}
	// By number: some tables (x32) give one name several numbers.
	byName := map[string][]int{}
	for nr, name := range info.SyscallNumbers {
		byName[name] = append(byName[name], nr)
	}
	for _, name := range sortedKeys(names) {
		nrs, ok := byName[name]
		if !ok && isHost && !slices.Contains(alwaysAllowed, name) && !knownOn(others, name) {
			c.Dropped = append(c.Dropped, fmt.Sprintf("syscalls.allow: %s (no such syscall on %s)", name, info.Name))
		}
		for _, nr := range nrs {
			rule := &sysRule{name: name, ret: retAllow}
			for _, ar := range rulesFor[name] {
				chk, errnoOnly, err := compileArgRule(ar)
				if err != nil {
					return nil, err
				}
				if errnoOnly {
					continue
				}
				rule.checks = append(rule.checks, chk)
			}
			if h, ok := hard[name]; ok && !explicitlyAllows(rule.checks, h) {
				rule.checks = append(rule.checks, h)
				if isHost {
					c.Notes = append(c.Notes, fmt.Sprintf("%s: denies %s unless the profile's argument rules allow it", name, h.why))
				}
			}
			abi.rules[uint32(nr)|mask] = rule
		}
	}
	// Errno-only rules answer every call of their syscall, allowed or not.
	for name, rules := range rulesFor {
		for _, ar := range rules {
			chk, errnoOnly, err := compileArgRule(ar)
			if err != nil {
				return nil, err
			}
			for _, nr := range byName[name] {
				if errnoOnly {
					abi.rules[uint32(nr)|mask] = &sysRule{name: name, ret: chk.fail}
				}
			}
		}
	}
	// clone3 passes its flags in memory that seccomp cannot read, so namespace flags could
	// not be denied: answer ENOSYS and libc falls back to clone(2), whose flags are checked.
	for _, nr := range byName["clone3"] {
		abi.rules[uint32(nr)|mask] = &sysRule{name: "clone3", ret: retErrno(unix.ENOSYS)}
	}
	return abi, nil
}

// nativeArch reports a 64-bit architecture a machine runs natively (not a compat ABI).
func nativeArch(info *arch.Info) bool { return info == arch.X86_64 || info == arch.AARCH64 }

// knownOn reports whether name is a syscall of one of infos (a name of another architecture
// the profile lists, such as arm64's fstatat, means nothing here and is not a loss).
func knownOn(infos []*arch.Info, name string) bool {
	for _, info := range infos {
		if _, ok := info.SyscallNames[name]; ok {
			return true
		}
	}
	return false
}

// explicitlyAllows reports whether the profile's own checks on the hardened argument let through
// something the hardening check would deny: then the profile's word wins.
func explicitlyAllows(checks []argCheck, h argCheck) bool {
	for _, c := range checks {
		if c.arg != h.arg {
			continue
		}
		for _, v := range c.values {
			if !h.ok(v & c.mask) {
				return true
			}
		}
		if c.hasAllowedBits && c.allowedBits&c.mask&h.denyBits != 0 {
			return true
		}
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// SyscallName names syscall nr of the ABI given by an audit arch value (x32 included).
func SyscallName(auditArch, nr uint32) (name, abi string) {
	switch {
	case auditArch == uint32(arch.X86_64.ID) && nr&x32Bit != 0:
		return arch.X32.SyscallNumbers[int(nr&^x32Bit)], arch.X32.Name
	case auditArch == uint32(arch.X86_64.ID):
		return arch.X86_64.SyscallNumbers[int(nr)], arch.X86_64.Name
	case auditArch == uint32(arch.I386.ID):
		return arch.I386.SyscallNumbers[int(nr)], arch.I386.Name
	case auditArch == uint32(arch.AARCH64.ID):
		return arch.AARCH64.SyscallNumbers[int(nr)], arch.AARCH64.Name
	}
	return "", arch.AuditArch(auditArch).String()
}

// Dump writes the seccomp program as readable BPF, one instruction a line (for --debug).
func (c *Compiled) Dump(w io.Writer) error {
	insns, ok := bpf.Disassemble(c.Filter)
	if !ok {
		return errors.New("BUG: the compiled program has instructions x/net/bpf cannot decode")
	}
	for i, ins := range insns {
		if _, err := fmt.Fprintf(w, "%4d: %v\n", i, ins); err != nil {
			return err
		}
	}
	return nil
}
