package seccomp

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

// AlwaysAllowed cannot widen what a process reaches and only crash it when denied.
// rt_sigaction and rt_sigprocmask change the caller's own signal state only; the command's
// process makes ~60 of them between the init stage's fork and its exec (Go's child resets the
// runtime's handlers), each a ~20 µs supervisor round trip if they were not allowed here.
var AlwaysAllowed = []string{"exit", "exit_group", "rt_sigreturn", "restart_syscall", "rt_sigaction", "rt_sigprocmask"}

// Options say what the program's consumer answers beyond the filter.
type Options struct {
	// SupervisedOpenWrites sends every open for writing to the supervisor (sysprof enforce,
	// when the profile writes a per-process /proc file the supervisor grants).
	SupervisedOpenWrites bool
	// Extra are syscalls the consumer itself makes after the filter is loaded (a container
	// runtime's init): allowed with no argument check unless the profile has one.
	Extra []string
	// ExtraValues are argument values the consumer itself passes (syscall → argument →
	// values): added to the profile's value rule on that argument, if it has one.
	ExtraValues map[string]map[int][]uint64
	// ResolverStub: names resolve through sysprof's DNS stub (sysprof enforce), so a profile
	// that reaches names gets the resolver's calls (policy.CloseResolver). Exports run under
	// the host's own resolver and do not.
	ResolverStub bool
	// SupervisedMkdirs sends every mkdir and mkdirat to the supervisor (sysprof enforce, when
	// a fresh checkout's exec output directory is made and bound exec by the init stage).
	SupervisedMkdirs bool
	// InitStage: pid 1 is sysprof's init stage, not the command's (sysprof enforce), so a
	// signal or pidfd naming it goes to the supervisor. In an export's container pid 1 may be
	// the command itself (abort's tgkill of its own pid).
	InitStage bool
	// SupervisedExecs sends every execve and execveat to the supervisor (sysprof enforce, when
	// a program the run writes into an existing directory of a noexec stage is bound exec by
	// the init stage before it runs), and every unlink and rename (the bind is undone before
	// one removes or replaces that name); the supervisor lets each go on.
	SupervisedExecs bool
	// SupervisedLinks sends every link and linkat to the supervisor (sysprof enforce, when the
	// plan stages a directory: a cross-directory link of a file of the stage's lower layer is
	// answered EXDEV, WhyLink); the supervisor lets every other one go on.
	SupervisedLinks bool
	// RecordKernelRefusals sends to the supervisor (sysprof enforce) what the kernel refuses
	// inside the sandbox without a trace, for it to refuse and record: every setxattr
	// (WhyXattr: the name and value are in memory, which seccomp cannot read), device nodes
	// and whiteouts (WhyDevice).
	RecordKernelRefusals bool
	// SupervisedConnects sends every connect to the supervisor (sysprof enforce, when a
	// network rule or credential names a binary: WhyConnect); the supervisor lets each go on.
	SupervisedConnects bool
}

// Filter is a profile's syscall policy compiled for one architecture: the rules as data
// (Rules, by name, the same on every ABI; Spec, by number per ABI), the BPF program, and what
// compile added (Notes) or dropped as meaningless here (Dropped).
type Filter struct {
	Arch    string
	Rules   map[string]*Rule
	Spec    *Spec
	Program []bpf.RawInstruction
	Notes   []string
	Dropped []string

	resolverAdded []string // policy.CloseResolver's additions, kept only where the ABI has them
}

// Compile compiles p's syscall section for architecture archName (a go-seccomp-bpf name; ""
// is this machine's). It looks at nothing on the host and does not change p.
func Compile(p *policy.Profile, archName string, opts Options) (*Filter, error) {
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
	f := &Filter{Arch: host.Name}
	spec, err := f.compileSyscalls(p, host, opts)
	if err != nil {
		return nil, err
	}
	f.Spec = spec
	if f.Program, err = spec.Program(); err != nil {
		return nil, fmt.Errorf("seccomp compile: %w", err)
	}
	return f, nil
}

// MPTCPLearned reports whether the profile lets the command use MPTCP.
func MPTCPLearned(p *policy.Profile) bool {
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
// rule for the same argument: they close known bypasses of the other layers; opts says what
// only sysprof's supervisor answers (opens for writing: it grants a /proc file; mkdirs; pid 1).
func hardening(p *policy.Profile, opts Options) map[string][]Check {
	h := map[string][]Check{
		"clone": {{Arg: 0, Width32: true, Mask: ^uint64(0), DenyBits: NamespaceFlags, Fail: RetNotify,
			Why: "namespace flags (new namespaces escape the sandbox's view)"}},
		"ioctl": {{Arg: 1, Width32: true, Mask: ^uint64(0), DenyValues: []uint64{unix.TIOCSTI, unix.TIOCLINUX}, Fail: RetNotify,
			Why: "TIOCSTI/TIOCLINUX (terminal input injection)"}},
		// pid 0 is the caller; any other pid is another process's limits (a flags rule on pid lifts it).
		"prlimit64": {{Arg: 0, Width32: true, Mask: ^uint64(0), Values: []uint64{0}, HasValues: true, Fail: RetNotify,
			Why: WhyPrlimitOther}},
	}
	if opts.InitStage {
		// pid 1 is the init stage: no signal of the command's is for it (it drops them: a
		// fault signal would crash it). A signal or pidfd aimed at it by pid (tkill: its main
		// thread's tid) goes to the supervisor.
		for _, name := range []string{"kill", "tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo", "pidfd_open"} {
			h[name] = []Check{{Arg: 0, Width32: true, Mask: ^uint64(0), DenyValues: []uint64{1}, Fail: RetNotify, Why: WhyInitSignal}}
		}
		for name, args := range map[string][]int{"ptrace": {1}, "process_vm_readv": {0}, "process_vm_writev": {0}, "kcmp": {0, 1}} {
			for _, arg := range args {
				h[name] = append(h[name], Check{Arg: arg, Width32: true, Mask: ^uint64(0), DenyValues: []uint64{1}, Fail: RetNotify, Why: WhyInitAccess})
			}
		}
	}
	if !MPTCPLearned(p) {
		h["socket"] = []Check{{Arg: 2, Width32: true, Mask: ^uint64(0), DenyValues: []uint64{IPProtoMPTCP}, Fail: RetNotify,
			Why: "IPPROTO_MPTCP (bypasses Landlock TCP rules)"}}
	}
	if opts.SupervisedOpenWrites {
		// Opens for writing go to the supervisor, which grants the learned /proc files
		// (procwrite.go) and lets every other one go on to the mounts and Landlock.
		for name, arg := range map[string]int{"open": 1, "openat": 2} {
			h[name] = append(h[name], Check{Arg: arg, Width32: true, Mask: unix.O_ACCMODE, Values: []uint64{unix.O_RDONLY}, HasValues: true,
				Fail: RetNotify, Why: WhyOpenWrites})
		}
	}
	if opts.SupervisedMkdirs {
		// Values empty: no mode passes; the supervisor answers each call (WhyMkdir).
		for name, arg := range map[string]int{"mkdir": 1, "mkdirat": 2} {
			h[name] = append(h[name], Check{Arg: arg, Width32: true, Mask: ^uint64(0), HasValues: true, Fail: RetNotify, Why: WhyMkdir})
		}
	}
	if opts.SupervisedExecs {
		// Values empty: every call goes to the supervisor, which lets it go on (WhyExec).
		for name, arg := range map[string]int{"execve": 0, "execveat": 1, "unlink": 0, "unlinkat": 1, "rename": 1, "renameat": 3, "renameat2": 3} {
			h[name] = append(h[name], Check{Arg: arg, Width32: true, Mask: ^uint64(0), HasValues: true, Fail: RetNotify, Why: WhyExec})
		}
		// An access check for exec (`test -x conftest`, autoconf's link test) binds it too:
		// the noexec stage answers X_OK with EACCES.
		for name, arg := range map[string]int{"access": 1, "faccessat": 2, "faccessat2": 2} {
			h[name] = append(h[name], Check{Arg: arg, Width32: true, Mask: ^uint64(0), DenyBits: unix.X_OK, Fail: RetNotify, Why: WhyExec})
		}
	}
	if opts.SupervisedLinks {
		// Values empty: every call goes to the supervisor (WhyLink). Arguments 0 and 1 are
		// the old path's pointer: no profile rules on them.
		for name, arg := range map[string]int{"link": 0, "linkat": 1} {
			h[name] = append(h[name], Check{Arg: arg, Mask: ^uint64(0), HasValues: true, Fail: RetNotify, Why: WhyLink})
		}
	}
	if opts.RecordKernelRefusals {
		// Values empty: every call goes to the supervisor (WhyXattr). The argument is the
		// name's pointer: no profile rules on it.
		for name, arg := range map[string]int{"setxattr": 1, "lsetxattr": 1, "fsetxattr": 1, "setxattrat": 3} {
			h[name] = append(h[name], Check{Arg: arg, Mask: ^uint64(0), HasValues: true, Fail: RetNotify, Why: WhyXattr})
		}
		// No device node or whiteout is made inside the sandbox (WhyDevice): refused and recorded.
		for name, arg := range map[string]int{"mknod": 1, "mknodat": 2} {
			h[name] = append(h[name], Check{Arg: arg, Width32: true, Mask: unix.S_IFMT, DenyValues: []uint64{unix.S_IFCHR, unix.S_IFBLK}, Fail: RetNotify, Why: WhyDevice})
		}
		h["renameat2"] = append(h["renameat2"], Check{Arg: 4, Width32: true, Mask: ^uint64(0), DenyBits: unix.RENAME_WHITEOUT, Fail: RetNotify, Why: WhyDevice})
	}
	if opts.SupervisedConnects {
		// Values empty: every call goes to the supervisor (WhyConnect). Argument 0 is the
		// socket: no profile rule is on it.
		h["connect"] = append(h["connect"], Check{Arg: 0, Width32: true, Mask: ^uint64(0), HasValues: true, Fail: RetNotify, Why: WhyConnect})
	}
	// No code that no file holds runs unless learned: the loader maps files (their mounts
	// decide: noexec trees), a JIT maps memory, an injected payload does too. mprotect cannot
	// tell a file's mapping from memory: any PROT_EXEC counts (ld.so adds none). i386's
	// mmap2 takes mmap's arguments; its old mmap passes them in memory (compatOldMmap).
	execMem := Check{Arg: 2, Width32: true, Mask: ^uint64(0), DenyBits: unix.PROT_EXEC, Fail: RetNotify, Why: WhyExecMemory}
	anonExec := execMem
	anonExec.When = &Cond{Arg: 3, Bits: unix.MAP_ANONYMOUS}
	h["mmap"] = append(h["mmap"], anonExec)
	h["mmap2"] = append(h["mmap2"], anonExec)
	h["mprotect"] = append(h["mprotect"], execMem)
	h["pkey_mprotect"] = append(h["pkey_mprotect"], execMem)
	shm := execMem
	shm.DenyBits = shmExec
	h["shmat"] = append(h["shmat"], shm)
	// A memfd is code no file rule names (execve of /proc/self/fd/N, dlopen of it): every
	// memfd_create goes to the supervisor, which makes the memfd non-executable (WhyMemfd).
	// Values empty: no flags value passes; only a rule whose values name MFD_EXEC lifts it.
	h["memfd_create"] = append(h["memfd_create"], Check{Arg: 1, Width32: true, Mask: ^uint64(0), HasValues: true, Fail: RetNotify, Why: WhyMemfd})
	// No set-id file is made inside the sandbox: a mode with S_ISUID or S_ISGID goes to the
	// supervisor, which reports it and answers EPERM (an open without O_CREAT ignores its
	// mode: the supervisor lets that one go on).
	for name, arg := range policy.SetIDModeArgs { // openat2: ENOSYS (compileRules)
		h[name] = append(h[name], Check{Arg: arg, Width32: true, Mask: ^uint64(0), DenyBits: unix.S_ISUID | unix.S_ISGID, Fail: RetNotify, Why: WhySetID})
	}
	return h
}

// int32Args marks arguments the kernel reads as 32-bit ints: checks look at the low word only,
// so that garbage in the high word can neither bypass a deny nor cause a false denial.
var int32Args = sync.OnceValue(func() map[string][]int {
	return map[string][]int{
		"socket": {0, 1, 2}, "socketpair": {0, 1, 2}, "ioctl": {1}, "fcntl": {1}, "setns": {1},
		"prctl": {0}, "personality": {0}, "kill": {1}, "tkill": {1}, "tgkill": {2}, "clone": {0},
		"open": {1}, "openat": {0, 2}, "madvise": {2}, "setsockopt": {1, 2}, "getsockopt": {1, 2},
		"bpf": {0}, "keyctl": {0}, "seccomp": {0}, "flock": {1}, "prlimit64": {0},
		// dirfds and flags of the calls policy.ArchEquivalents pins (open → openat(AT_FDCWD, …)).
		"faccessat": {0, 2}, "fchmodat": {0}, "fchownat": {0, 4}, "unlinkat": {0, 2}, "mkdirat": {0},
		"mknodat": {0}, "newfstatat": {0, 3}, "fstatat": {0, 3}, "readlinkat": {0}, "renameat": {0, 2},
		"renameat2": {0, 2, 4}, "linkat": {0, 2, 4}, "symlinkat": {1}, "utimensat": {0, 3}, "dup3": {2},
		"pipe2": {1}, "eventfd2": {1}, "epoll_create1": {0}, "inotify_init1": {0}, "signalfd4": {3},
		"setitimer": {0}, "clock_gettime": {0}, "getpgid": {0}, "arch_prctl": {0},
	}
})

func isInt32Arg(name string, i int) bool { return slices.Contains(int32Args()[name], i) }

// compileSyscalls is the filter's spec for p on host's architecture: one table per ABI the
// profile may use here, its allowed syscalls with their argument checks and hardening.
func (c *Filter) compileSyscalls(p *policy.Profile, host *arch.Info, opts Options) (*Spec, error) {
	names, rulesFor := c.allowedSyscalls(p, opts.Extra, opts.ResolverStub)
	abis, others := c.abisOf(p.Syscalls.Architectures, host)
	c.closeFamilies(p, names, append(slices.Clone(abis), others...))
	for _, n := range c.resolverAdded {
		if !knownOn(append(slices.Clone(abis), others...), n) {
			delete(names, n) // poll on aarch64: ppoll is its only one
		}
	}
	c.acrossArchs(p, host, names, rulesFor)
	hard := hardening(p, opts)
	if err := c.compileRules(names, rulesFor, hard, opts.ExtraValues); err != nil {
		return nil, err
	}
	spec := &Spec{}
	for _, info := range abis {
		spec.ABIs = append(spec.ABIs, c.compileABI(info, info == host, others, names, hard))
	}
	c.Notes = append(c.Notes, "clone3: answers ENOSYS (its flags cannot be checked; libc falls back to clone)")
	if names["io_uring_setup"] {
		c.Notes = append(c.Notes, "io_uring_setup: allowed because learned: io_uring's OPENAT, SOCKET and CONNECT operations skip every argument check of this filter (Landlock and the mounts still apply)")
	}
	if names["openat2"] {
		c.Notes = append(c.Notes, "openat2: answers ENOSYS (its mode cannot be checked for set-id bits; callers fall back to openat)")
	}
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
func (c *Filter) allowedSyscalls(p *policy.Profile, extra []string, stub bool) (names map[string]bool, rulesFor map[string][]policy.ArgRule) {
	names = map[string]bool{}
	for _, s := range p.Syscalls.Allow {
		names[s.Name] = true
	}
	for _, s := range extra {
		names[s] = true
	}
	for _, s := range AlwaysAllowed {
		names[s] = true
	}
	rulesFor = map[string][]policy.ArgRule{}
	args := p.Syscalls.Args
	if p.ClosesFamilies() {
		args = policy.CloseTerminalRequests(args) // as closeFamilies: what a newer learn writes
	}
	if stub && policy.UsesResolver(p) {
		var add []string
		add, args = policy.CloseResolver(p, args, func(n string) bool { return names[n] })
		for _, n := range add {
			names[n] = true
			c.resolverAdded = append(c.resolverAdded, n)
		}
		c.Notes = append(c.Notes, "syscalls: + what a resolver needs to ask sysprof's DNS stub ("+strings.Join(policy.ResolverCalls, ", ")+"; socket AF_INET SOCK_DGRAM, ioctl FIONREAD): names resolve through it whatever source the host used")
	}
	for _, r := range args {
		rulesFor[r.Syscall] = append(rulesFor[r.Syscall], r)
	}
	if (names["clone3"] || len(rulesFor["clone3"]) > 0) && !names["clone"] {
		names["clone"] = true
		c.Notes = append(c.Notes, "syscalls.allow: + clone (the fallback of clone3, which answers ENOSYS)")
	}
	return names, rulesFor
}

// closeFamilies allows the behaviour-family mates (policy.FamilyMates) of p's learned syscalls
// that p lacks, known on one of infos, unless p was learned --exact: as learn closes them, so
// that a profile learned before a family existed or grew (the send family, the copy
// fallbacks) runs under every I/O condition a newer learn would.
func (c *Filter) closeFamilies(p *policy.Profile, names map[string]bool, infos []*arch.Info) {
	if !p.ClosesFamilies() {
		return
	}
	var added []string
	for n, fam := range policy.FamilyMates(p) {
		if !names[n] && knownOn(infos, n) {
			names[n] = true
			added = append(added, n+" ("+fam+")")
		}
	}
	if len(added) > 0 {
		sort.Strings(added)
		c.Notes = append(c.Notes, "syscalls.allow: + "+strings.Join(added, ", ")+": behaviour families of the learned syscalls, closed as learn closes them (the profile was not learned --exact)")
	}
}

// acrossArchs allows on host what p's syscalls are on the other 64-bit architecture
// (policy.AcrossArchs: open → openat with its dirfd pinned to AT_FDCWD on aarch64; for a profile
// learned on aarch64, clone → fork on x86_64), with their argument rules moved, whether or not
// p was learned --exact: the same program makes the other call there.
func (c *Filter) acrossArchs(p *policy.Profile, host *arch.Info, names map[string]bool, rulesFor map[string][]policy.ArgRule) {
	var rules []policy.ArgRule
	for _, n := range sortedKeys(rulesFor) {
		rules = append(rules, rulesFor[n]...)
	}
	added, out := policy.AcrossArchs(p, host, names, rules)
	if len(added) == 0 {
		return
	}
	var notes []string
	for _, n := range sortedKeys(added) {
		names[n] = true
		notes = append(notes, n+" ("+strings.Join(added[n], ", ")+")")
	}
	for _, r := range out {
		rulesFor[r.Syscall] = append(rulesFor[r.Syscall], r)
	}
	on := strings.Join(p.Metadata.LearnedOn, ", ")
	if on == "" {
		on = "not recorded; it lists " + strings.Join(p.Syscalls.Architectures, ", ")
	}
	c.Notes = append(c.Notes, "syscalls.allow: + "+strings.Join(notes, ", ")+": what those calls are on "+host.Name+" (learned on "+on+")")
}

// abisOf are the ABIs the filter has tables for on host (host's own first, then i386 and x32
// on x86_64 when the profile lists them), and the other machines' architectures the profile
// lists (their syscall names mean nothing here and are not a loss). Architectures that cannot
// run here are dropped.
func (c *Filter) abisOf(archs []string, host *arch.Info) (abis, others []*arch.Info) {
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

// compileRules are the rules by name: the allowed syscalls with their argument checks and the
// hardening checks the profile's own rules do not override, the errno-only rules, and clone3's
// ENOSYS. They are the same on every ABI.
func (c *Filter) compileRules(names map[string]bool, rulesFor map[string][]policy.ArgRule, hard map[string][]Check, extra map[string]map[int][]uint64) error {
	c.Rules = map[string]*Rule{}
	for _, name := range sortedKeys(names) {
		rule := &Rule{Name: name, Ret: RetAllow}
		for _, ar := range rulesFor[name] {
			chk, errnoOnly, err := compileArgRule(ar)
			if err != nil {
				return err
			}
			if errnoOnly {
				continue
			}
			if vs := extra[name][chk.Arg]; chk.HasValues && len(vs) > 0 {
				chk.Values = append(slices.Clone(chk.Values), vs...)
			}
			rule.Checks = append(rule.Checks, chk)
		}
		own := rule.Checks
		for _, h := range hard[name] {
			if !explicitlyAllows(own, h) {
				rule.Checks = append(rule.Checks, h)
			}
		}
		c.Rules[name] = rule
	}
	// Errno-only rules answer every call of their syscall, allowed or not.
	for _, name := range sortedKeys(rulesFor) {
		for _, ar := range rulesFor[name] {
			chk, errnoOnly, err := compileArgRule(ar)
			if err != nil {
				return err
			}
			if errnoOnly {
				c.Rules[name] = &Rule{Name: name, Ret: chk.Fail}
			}
		}
	}
	// clone3 passes its flags in memory that seccomp cannot read, so namespace flags could
	// not be denied: answer ENOSYS and libc falls back to clone(2), whose flags are checked.
	// openat2's mode (set-id bits) is in memory too: callers fall back to openat.
	c.Rules["clone3"] = &Rule{Name: "clone3", Ret: RetErrno(unix.ENOSYS)}
	c.Rules["openat2"] = &Rule{Name: "openat2", Ret: RetErrno(unix.ENOSYS)}
	return nil
}

// compileABI is the filter's table for one ABI: every number it knows, and the rules of the
// names it has (hardening noted for the host's ABI).
func (c *Filter) compileABI(info *arch.Info, isHost bool, others []*arch.Info, names map[string]bool, hard map[string][]Check) *ABI {
	abi := &ABI{Info: info, Allowed: true, Rules: map[uint32]*Rule{}, Known: map[uint32]string{}}
	mask := uint32(info.SeccompMask)
	for nr, name := range info.SyscallNumbers {
		n := uint32(nr) | mask
		abi.Known[n] = name
		abi.Max = max(abi.Max, n)
	}
	// By number: some tables (x32) give one name several numbers.
	byName := map[string][]int{}
	for nr, name := range info.SyscallNumbers {
		byName[name] = append(byName[name], nr)
	}
	for _, name := range sortedKeys(names) {
		nrs, ok := byName[name]
		if !ok && isHost && !slices.Contains(AlwaysAllowed, name) && !knownOn(others, name) {
			c.Dropped = append(c.Dropped, fmt.Sprintf("syscalls.allow: %s (no such syscall on %s)", name, info.Name))
		}
		for _, h := range hard[name] {
			if !isHost || !slices.ContainsFunc(c.Rules[name].Checks, func(x Check) bool { return x.Why == h.Why }) {
				continue
			}
			for range nrs {
				if h.Why == WhyConnect { // it goes on: recorded, never denied
					c.Notes = append(c.Notes, fmt.Sprintf("%s: each call waits in the supervisor first, then goes on: %s", name, h.Why))
					continue
				}
				if h.HasValues && len(h.Values) == 0 { // every call: the supervisor decides each
					c.Notes = append(c.Notes, fmt.Sprintf("%s: each call goes to the supervisor, which decides: %s", name, h.Why))
					continue
				}
				c.Notes = append(c.Notes, fmt.Sprintf("%s: denies %s unless the profile's argument rules allow it", name, h.Why))
			}
		}
	}
	for name, rule := range c.Rules {
		for _, nr := range byName[name] {
			abi.Rules[uint32(nr)|mask] = rule
		}
	}
	if info == arch.I386 {
		if r := c.Rules["mmap"]; r != nil {
			for _, nr := range byName["mmap"] {
				abi.Rules[uint32(nr)] = compatOldMmap(r)
			}
		}
	}
	return abi
}

// compatOldMmap is the rule of i386's old mmap (number 90, named mmap as x86_64's is) for the
// rule r of mmap: its one argument points to the others in memory, which seccomp cannot read,
// so while r refuses executable memory (WhyExecMemory: no profile rule lets PROT_EXEC through)
// every call that passes r's other checks goes to the supervisor (WhyOldMmap in its place: no
// value passes). Nothing uses it but old binaries: glibc and musl map with mmap2, whose
// arguments are checked as mmap's.
func compatOldMmap(r *Rule) *Rule {
	i := slices.IndexFunc(r.Checks, func(c Check) bool { return c.Why == WhyExecMemory })
	if i < 0 {
		return r
	}
	out := &Rule{Name: r.Name, Ret: r.Ret, Checks: slices.Clone(r.Checks)}
	out.Checks[i] = Check{Arg: 2, Width32: true, Mask: ^uint64(0), HasValues: true, Fail: RetNotify, Why: WhyOldMmap}
	return out
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
func explicitlyAllows(checks []Check, h Check) bool {
	if h.Why == WhyConnect { // a rule on the socket's fd number says nothing of who connects
		return false
	}
	for _, c := range checks {
		if c.Arg != h.Arg {
			continue
		}
		for _, v := range c.Values {
			if h.Why == WhyMemfd { // no flags value passes h: a rule naming MFD_EXEC lifts it
				if v&c.Mask&unix.MFD_EXEC != 0 {
					return true
				}
				continue
			}
			if !h.OK(v & c.Mask) {
				return true
			}
		}
		if c.HasAllowedBits && c.AllowedBits&c.Mask&h.DenyBits != 0 {
			return true
		}
		// A value list (prlimit64's pid 0) is lifted by flags that let another value through
		// (not memfd's: only MFD_EXEC named as a value lifts it).
		if c.HasAllowedBits && h.HasValues && h.Why != WhyMemfd && c.AllowedBits&c.Mask != 0 && !h.OK(c.AllowedBits&c.Mask) {
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
	case auditArch == uint32(arch.X86_64.ID) && nr&X32Bit != 0:
		return arch.X32.SyscallNumbers[int(nr&^X32Bit)], arch.X32.Name
	case auditArch == uint32(arch.X86_64.ID):
		return arch.X86_64.SyscallNumbers[int(nr)], arch.X86_64.Name
	case auditArch == uint32(arch.I386.ID):
		return arch.I386.SyscallNumbers[int(nr)], arch.I386.Name
	case auditArch == uint32(arch.AARCH64.ID):
		return arch.AARCH64.SyscallNumbers[int(nr)], arch.AARCH64.Name
	}
	return "", arch.AuditArch(auditArch).String()
}

// Dump writes a seccomp program as readable BPF, one instruction a line (for --debug).
func Dump(w io.Writer, prog []bpf.RawInstruction) error {
	insns, ok := bpf.Disassemble(prog)
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
