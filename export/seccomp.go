package export

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math/bits"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/seccomp"
)

// The libseccomp names used by OCI runtimes and the Security Profiles Operator.
const (
	actAllow   = "SCMP_ACT_ALLOW"
	actErrno   = "SCMP_ACT_ERRNO"
	cmpEQ      = "SCMP_CMP_EQ"
	cmpMasked  = "SCMP_CMP_MASKED_EQ"
	errnoEPERM = 1
)

// maxEntries bounds the cross product of argument rules for one syscall.
const maxEntries = 1024

// scArch maps a go-seccomp-bpf architecture to its libseccomp name.
var scArch = map[string]string{
	arch.X86_64.Name:  "SCMP_ARCH_X86_64",
	arch.I386.Name:    "SCMP_ARCH_X86",
	arch.X32.Name:     "SCMP_ARCH_X32",
	arch.AARCH64.Name: "SCMP_ARCH_AARCH64",
}

// multiplexedOnX86 are the syscalls i386 also reaches through socketcall(2) or ipc(2), whose
// argument rules libseccomp rewrites.
var multiplexedOnX86 = sync.OnceValue(func() map[string]bool {
	return map[string]bool{
		"socket": true, "bind": true, "connect": true, "listen": true, "accept": true, "accept4": true,
		"getsockname": true, "getpeername": true, "socketpair": true, "send": true, "recv": true,
		"sendto": true, "recvfrom": true, "shutdown": true, "setsockopt": true, "getsockopt": true,
		"sendmsg": true, "recvmsg": true, "recvmmsg": true, "sendmmsg": true,
		"semop": true, "semget": true, "semctl": true, "semtimedop": true, "msgsnd": true,
		"msgrcv": true, "msgget": true, "msgctl": true, "shmat": true, "shmdt": true, "shmget": true,
		"shmctl": true,
	}
})

// scArg is one argument comparison, as libseccomp and OCI write it: for SCMP_CMP_MASKED_EQ,
// Value is the mask and ValueTwo the value the masked argument must equal.
type scArg struct {
	Index    uint
	Value    uint64
	ValueTwo uint64
	Op       string
}

// scEntry is one entry of an OCI syscalls list: the action applies when the syscall is one of
// Names and every Args comparison holds (entries are ORed, args within one are ANDed).
type scEntry struct {
	Names    []string
	Action   string
	ErrnoRet *uint
	Args     []scArg
}

// seccompPolicy is a profile's syscall section in libseccomp terms, shared by oci and spo.
type seccompPolicy struct {
	Architectures []string // SCMP_ARCH_*
	Entries       []scEntry
	Notes         []string
}

// runtimeSyscalls are what a consumer's own code calls after it loaded the filter and before
// the command runs: the export adds them (they are not the command's, and learn never sees
// them). Each name is checked against the consumer's table in the tests.
var runtimeSyscalls = map[string][]string{
	// runc's init (1.1) runs under the filter from its load to the exec: it checks that
	// /proc/self/fd is on procfs (fstatfs), reads it (openat, getdents64, close) to close what
	// it does not pass on, and execs; its Go runtime may meanwhile park, wake and preempt
	// threads (futex, nanosleep, sched_yield, getpid, gettid, tgkill, sigaltstack, epoll_ctl,
	// epoll_pwait). With noNewPrivileges false runc loads the filter earlier and then also
	// reads and sets its capabilities (capget, capset, prctl), ids (setgroups, setgid, setuid,
	// setresgid, setresuid), flags (fcntl) and directory (chdir, getcwd), checks its parent
	// (getppid) and looks the command up (faccessat2).
	// crun loads the filter right before execve.
	"oci": {"fstatfs", "openat", "getdents64", "close", "execve", "futex", "nanosleep", "sched_yield", "getpid", "gettid", "tgkill", "sigaltstack",
		"epoll_ctl", "epoll_pwait", "capget", "capset", "fcntl", "chdir", "getcwd", "getppid", "faccessat2", "prctl", "setgroups", "setgid", "setuid", "setresgid", "setresuid"},
	// bwrap's init (pid 1 of its pid namespace) runs under the filter and reaps the command.
	"bwrap": {"wait4"},
}

// runtimeValues are argument values a consumer's own calls pass where a profile may have a
// value rule: runc's init with noNewPrivileges false drops the bounding set and keeps
// capabilities across its uid change (prctl PR_CAPBSET_DROP, PR_SET_KEEPCAPS), and sets
// NO_NEW_PRIVS when asked (PR_SET_NO_NEW_PRIVS) — each only ever narrows what a process holds.
var runtimeValues = map[string]map[string]map[int][]uint64{
	"oci": {"prctl": {0: {unix.PR_CAPBSET_DROP, unix.PR_CAPBSET_READ, unix.PR_SET_KEEPCAPS, unix.PR_SET_NO_NEW_PRIVS}}},
}

// compileFor compiles p's syscall section with package seccomp, the compiler sysprof enforce
// uses, for every native architecture the profile lists (opts.Arch, or this machine's, when
// it lists none), adding the consumer's runtime set. The rules by name are the union of the
// architectures' (each has its equivalents of the other's calls, under names the other lacks).
//
// notes are what the compile added (hardening, clone3's ENOSYS: true of formats that carry
// argument checks), then what it left out and the runtime set (true of every format).
//
// differ names, per ABI, the syscalls whose rule there is not the rule by name (i386's old
// mmap: its arguments are in memory, so every call goes to the supervisor unless a rule lets
// PROT_EXEC through): a format that applies one rule per name to every architecture cannot
// carry them.
func compileFor(p *policy.Profile, consumer string, opts Options) (rules map[string]*seccomp.Rule, abis []*arch.Info, differ map[*arch.Info][]string, notes []string, err error) {
	var natives []string
	for _, a := range p.Syscalls.Architectures {
		if info, err := arch.GetInfo(a); err == nil && (info == arch.X86_64 || info == arch.AARCH64) {
			natives = append(natives, info.Name)
		}
	}
	if len(natives) == 0 {
		natives = []string{opts.Arch}
	}
	// The notes are the first compile's: this machine's architecture when the profile has it.
	if host, err := arch.GetInfo(cmp.Or(opts.Arch, runtime.GOARCH)); err == nil {
		if i := slices.Index(natives, host.Name); i > 0 {
			natives[0], natives[i] = natives[i], natives[0]
		}
	}
	extra := runtimeSyscalls[consumer]
	dropped := map[string]bool{}
	for _, a := range natives {
		f, err := seccomp.Compile(p, a, seccomp.Options{Extra: extra, ExtraValues: runtimeValues[consumer]})
		if err != nil {
			return nil, nil, nil, nil, err
		}
		// The rules by name are one set: each architecture's compile adds what the profile's
		// calls are there (policy.AcrossArchs: openat for open on aarch64, open for openat on
		// x86_64), names the other compile does not have.
		if rules == nil {
			rules = map[string]*seccomp.Rule{}
		}
		for name, r := range f.Rules {
			if _, ok := rules[name]; !ok {
				rules[name] = r
			}
		}
		for _, abi := range f.Spec.ABIs {
			if !slices.Contains(abis, abi.Info) {
				abis = append(abis, abi.Info)
			}
			for nr, r := range abi.Rules {
				if name := abi.Known[nr]; r != f.Rules[name] && !slices.Contains(differ[abi.Info], name) {
					if differ == nil {
						differ = map[*arch.Info][]string{}
					}
					differ[abi.Info] = append(differ[abi.Info], name)
					slices.Sort(differ[abi.Info])
				}
			}
		}
		if len(notes) == 0 {
			notes = append(notes, f.Notes...)
		}
		for _, d := range f.Dropped {
			dropped[d] = true
		}
	}
	for _, d := range slices.Sorted(maps.Keys(dropped)) {
		notes = append(notes, "left out, as sysprof enforce does: "+d)
	}
	for name, args := range runtimeValues[consumer] {
		for arg, vs := range args {
			var syms []string
			for _, v := range vs {
				syms = append(syms, policy.FormatArg(name, arg, v))
			}
			notes = append(notes, fmt.Sprintf("runtime: %s arg %d + %s where the profile restricts it (the runtime's own calls)", name, arg, strings.Join(syms, " ")))
		}
	}
	if len(extra) > 0 {
		notes = append(notes, fmt.Sprintf("runtime: + %s (the %s runtime's own calls after it loaded the filter; allowed to the command too)", strings.Join(extra, " "), consumer))
	}
	return rules, abis, differ, notes, nil
}

// consumerNames are go-seccomp-bpf names that libseccomp (and so runc, crun, the Security
// Profiles Operator and systemd) spells otherwise: arm64's syscall 79 is newfstatat in the
// kernel's and libseccomp's tables. The tests check every exported name against libseccomp's
// and systemd's own tables.
var consumerNames = map[string]string{"fstatat": "newfstatat"}

// consumerName is name as libseccomp spells it.
func consumerName(name string) string {
	if n, ok := consumerNames[name]; ok {
		return n
	}
	return name
}

// knownOn reports whether one of abis has the syscall name.
func knownOn(abis []*arch.Info, name string) bool {
	return slices.ContainsFunc(abis, func(a *arch.Info) bool { _, ok := a.SyscallNames[name]; return ok })
}

// errnoOf is the errno a seccomp action answers with; a USER_NOTIF (sysprof's supervisor, which
// answers EPERM) is EPERM where no supervisor listens.
func errnoOf(action uint32) uint {
	if action == seccomp.RetNotify {
		return errnoEPERM
	}
	return uint(action & unix.SECCOMP_RET_DATA)
}

// checkAlternatives turns one check of the compiled rules into the conditions of which one must
// hold for the call to pass it. Arguments the kernel reads as int are compared on their low
// 32 bits (SCMP_CMP_MASKED_EQ with a 32-bit mask), so high garbage neither bypasses a deny nor
// fails an allow. alone says no other check of the syscall compares this argument, so the
// complement of a denied set may use LT/GT for its two ends (64-bit arguments only).
func checkAlternatives(c seccomp.Check, alone bool) ([]cond, error) {
	mask := c.Mask
	if c.Width32 {
		mask &= 0xffffffff
	}
	trunc := func(v uint64) uint64 {
		if c.Width32 {
			return v & 0xffffffff
		}
		return v
	}
	var deny []uint64
	for _, d := range c.DenyValues {
		if d = trunc(d); d&^mask == 0 {
			deny = append(deny, d)
		}
	}
	slices.Sort(deny)
	deny = slices.Compact(deny)
	var must []cond // conditions every alternative also meets
	if c.HasAllowedBits {
		must = append(must, cond{Arg: c.Arg, Mask: mask &^ c.AllowedBits})
	}
	if b := c.DenyBits & mask; b != 0 {
		must = append(must, cond{Arg: c.Arg, Mask: b})
	}
	var base [][]cond
	switch {
	case c.HasValues:
		for _, v := range c.Values {
			if v = trunc(v); v&^mask == 0 && !slices.Contains(deny, v) {
				base = append(base, []cond{{Arg: c.Arg, Mask: mask, Value: v}})
			}
		}
	case len(deny) > 0:
		cs, err := complement(c.Arg, mask, deny, alone && len(must) == 0)
		if err != nil {
			return nil, fmt.Errorf("arg %d deny: %w", c.Arg, err)
		}
		for _, x := range cs {
			base = append(base, []cond{x})
		}
	default:
		base = [][]cond{nil}
	}
	var out []cond
	for _, b := range base {
		all := b
		ok := true
		for _, m := range must {
			if all, ok = merge(all, m); !ok {
				break
			}
		}
		if !ok {
			continue
		}
		if len(all) == 0 {
			all = []cond{{Arg: c.Arg}} // passes every value: MASKED_EQ with mask 0
		}
		if len(all) != 1 {
			return nil, fmt.Errorf("BUG: arg %d: %d comparisons for one argument", c.Arg, len(all))
		}
		out = append(out, all[0])
	}
	return out, nil
}

// rejectedConds returns conditions matching exactly the calls check c rejects, one comparison
// each, when that can be written: denied values, or the complement of allowed values.
func rejectedConds(c seccomp.Check, alone bool) ([]cond, error) {
	if c.HasAllowedBits || c.DenyBits != 0 {
		return nil, errors.New("a flags rule rejects any of many bits, one entry each; not written")
	}
	mask := c.Mask
	if c.Width32 {
		mask &= 0xffffffff
	}
	var set []uint64
	src := c.DenyValues
	if c.HasValues {
		src = c.Values
	}
	for _, v := range src {
		if c.Width32 {
			v &= 0xffffffff
		}
		if v&^mask == 0 {
			set = append(set, v)
		}
	}
	slices.Sort(set)
	set = slices.Compact(set)
	if c.HasValues {
		return complement(c.Arg, mask, set, alone && !c.Width32)
	}
	var out []cond
	for _, d := range set {
		out = append(out, cond{Arg: c.Arg, Mask: mask, Value: d})
	}
	return out, nil
}

// buildSeccomp translates the compiled rules (package seccomp's, the ones sysprof enforce
// loads, hardening included) into libseccomp entries: one SCMP_ACT_ALLOW entry with every
// syscall without checks; per syscall with checks, one entry per allowed combination (the
// cross product of its checks: checks are ANDed and entries ORed); SCMP_ACT_ERRNO entries for
// errno answers other than EPERM (clone3's ENOSYS). Everything else gets the default, EPERM.
func buildSeccomp(p *policy.Profile, consumer string, opts Options) (seccompPolicy, error) {
	var sp seccompPolicy
	rules, abis, differ, notes, err := compileFor(p, consumer, opts)
	if err != nil {
		return sp, err
	}
	sp.Notes = notes
	// Entries name syscalls for every listed architecture: an ABI whose rule for a name is
	// another (i386's old mmap) would get the native rule, checking registers that hold no
	// such argument. It is left out: its calls meet the default action.
	abis = slices.DeleteFunc(slices.Clone(abis), func(a *arch.Info) bool {
		names := differ[a]
		if len(names) == 0 {
			return false
		}
		sp.Notes = append(sp.Notes, fmt.Sprintf("left out: the %s ABI (its calls fail as an unlisted ABI's do): its %s %s a rule of its own in sysprof enforce "+
			"(i386's old mmap passes its arguments in memory, so every call goes to the supervisor unless a rule lets PROT_EXEC through), "+
			"and this format applies one rule per name to every architecture; use --format bpf (bwrap), or allow PROT_EXEC on mmap to keep %s",
			a.Name, strings.Join(names, ", "), map[bool]string{true: "has", false: "have"}[len(names) == 1], a.Name))
		return true
	})
	for _, a := range abis {
		sp.Architectures = append(sp.Architectures, scArch[a.Name])
	}
	slices.Sort(sp.Architectures)
	x86 := slices.Contains(abis, arch.I386)
	var plain []string
	var errnoEntries []scEntry
	for _, name := range slices.Sorted(maps.Keys(rules)) {
		r := rules[name]
		if !knownOn(abis, name) {
			continue
		}
		if r.Ret != seccomp.RetAllow {
			if e := errnoOf(r.Ret); e != errnoEPERM {
				errnoEntries = append(errnoEntries, scEntry{Names: []string{consumerName(name)}, Action: actErrno, ErrnoRet: &e})
			}
			continue
		}
		if len(r.Checks) == 0 {
			plain = append(plain, consumerName(name))
			continue
		}
		uses := map[int]int{}
		for _, c := range r.Checks {
			uses[c.Arg]++
		}
		combos := [][]cond{nil}
		for _, c := range r.Checks {
			alts, err := checkAlternatives(c, uses[c.Arg] == 1)
			if err != nil {
				return sp, fmt.Errorf("%s %w", name, err)
			}
			if c.When != nil { // a call the check does not apply to passes it
				alts = append(alts, cond{Arg: c.When.Arg, Mask: uint64(c.When.Bits)})
			}
			var next [][]cond
			for _, cs := range combos {
				for _, a := range alts {
					if m, ok := merge(cs, a); ok {
						next = append(next, m)
					}
				}
			}
			if len(next) > maxEntries {
				return sp, fmt.Errorf("%s: argument rules expand to more than %d combinations", name, maxEntries)
			}
			combos = next
		}
		combos = dedupeCombos(combos)
		if len(combos) == 0 {
			sp.Notes = append(sp.Notes, fmt.Sprintf("%s: no argument value satisfies its rules, so it is never allowed", name))
		}
		for _, cs := range combos {
			e := scEntry{Names: []string{consumerName(name)}, Action: actAllow}
			for _, x := range cs {
				if x.Mask == 0 && x.Op == "" {
					continue // passes every value
				}
				e.Args = append(e.Args, x.arg())
			}
			sp.Entries = append(sp.Entries, e)
		}
		// Rejections with another errno than EPERM: entries matching exactly what the check
		// rejects on its argument, disjoint from the allow entries on that argument.
		for _, c := range r.Checks {
			e := errnoOf(c.Fail)
			if e == errnoEPERM {
				continue
			}
			en := unix.ErrnoName(unix.Errno(e))
			if x86 && multiplexedOnX86()[name] {
				sp.Notes = append(sp.Notes, fmt.Sprintf("%s arg %d: rejected calls fail with EPERM, not %s: on i386 libseccomp folds %s into socketcall/ipc and rejects such errno rules (EEXIST)", name, c.Arg, en, name))
				continue
			}
			rejected, err := rejectedConds(c, uses[c.Arg] == 1)
			if err != nil {
				sp.Notes = append(sp.Notes, fmt.Sprintf("%s arg %d: rejected calls fail with EPERM, not %s (%v)", name, c.Arg, en, err))
				continue
			}
			for _, x := range rejected {
				errnoEntries = append(errnoEntries, scEntry{Names: []string{consumerName(name)}, Action: actErrno, ErrnoRet: &e, Args: []scArg{x.arg()}})
			}
		}
	}
	slices.Sort(plain)
	plain = slices.Compact(plain)
	if len(plain) > 0 {
		sp.Entries = append([]scEntry{{Names: plain, Action: actAllow}}, sp.Entries...)
	}
	sp.Entries = append(sp.Entries, errnoEntries...)
	return sp, nil
}

// cond says: argument Arg, masked with Mask, equals Value (Op ""), or the whole argument is
// below (Op cmpLT) or above (Op cmpGT) Value. Value never has bits outside Mask.
type cond struct {
	Arg   int
	Op    string
	Mask  uint64
	Value uint64
}

const (
	cmpLT = "SCMP_CMP_LT"
	cmpGT = "SCMP_CMP_GT"
)

// merge ANDs c into conds, keeping at most one comparison per argument (libseccomp rejects
// two comparisons of one argument in one rule: EINVAL). ok is false when both cannot hold.
// LT/GT conditions are only made for an argument nothing else compares (see alternatives).
func merge(conds []cond, c cond) ([]cond, bool) {
	out := slices.Clone(conds)
	for i, o := range out {
		if o.Arg != c.Arg {
			continue
		}
		if o.Op != "" || c.Op != "" {
			panic("BUG: export: a range comparison merged with another comparison of one argument")
		}
		overlap := o.Mask & c.Mask
		if o.Value&overlap != c.Value&overlap {
			return nil, false
		}
		out[i] = cond{Arg: o.Arg, Mask: o.Mask | c.Mask, Value: o.Value | c.Value}
		return out, true
	}
	out = append(out, c)
	slices.SortFunc(out, func(a, b cond) int { return a.Arg - b.Arg })
	return out, true
}

func (c cond) arg() scArg {
	switch {
	case c.Op != "":
		return scArg{Index: uint(c.Arg), Value: c.Value, Op: c.Op}
	case c.Mask == ^uint64(0):
		return scArg{Index: uint(c.Arg), Value: c.Value, Op: cmpEQ}
	}
	return scArg{Index: uint(c.Arg), Value: c.Mask, ValueTwo: c.Value, Op: cmpMasked}
}

// complement returns conditions that together match exactly the arguments whose masked value
// is not in set (sorted). The mask must be contiguous low bits (0xf, 0xffffffff, all ones).
// With useRange (and a full mask) the lowest and highest intervals become one LT and one GT;
// the others are split into aligned power-of-two blocks, each one MASKED_EQ.
func complement(arg int, mask uint64, set []uint64, useRange bool) ([]cond, error) {
	if mask&(mask+1) != 0 {
		return nil, fmt.Errorf("mask %#x is not contiguous low bits: its complement cannot be written as seccomp comparisons", mask)
	}
	useRange = useRange && mask == ^uint64(0)
	var out []cond
	lo, done := uint64(0), false
	for i, d := range set {
		if d > lo {
			if i == 0 && useRange {
				out = append(out, cond{Arg: arg, Op: cmpLT, Mask: mask, Value: d})
			} else {
				out = append(out, blocks(arg, mask, lo, d-1)...)
			}
		}
		if d == mask {
			done = true
			break
		}
		lo = d + 1
	}
	if !done {
		if useRange && len(set) > 0 {
			out = append(out, cond{Arg: arg, Op: cmpGT, Mask: mask, Value: set[len(set)-1]})
		} else {
			out = append(out, blocks(arg, mask, lo, mask)...)
		}
	}
	return out, nil
}

// blocks splits [lo, hi] into aligned power-of-two blocks, as MASKED_EQ conditions.
func blocks(arg int, mask, lo, hi uint64) []cond {
	var out []cond
	for {
		span := hi - lo // block size minus one
		size := 64
		if span != ^uint64(0) {
			size = 63 - bits.LeadingZeros64(span+1)
		}
		if tz := bits.TrailingZeros64(lo); tz < size {
			size = tz
		}
		var low uint64 // the bits a block of this size leaves free
		if size == 64 {
			low = ^uint64(0)
		} else {
			low = 1<<size - 1
		}
		out = append(out, cond{Arg: arg, Mask: mask &^ low, Value: lo})
		next := lo + low + 1
		if next == 0 || next > hi || lo+low >= hi {
			return out
		}
		lo = next
	}
}

func dedupeCombos(cs [][]cond) [][]cond {
	seen := map[string]bool{}
	var out [][]cond
	for _, c := range cs {
		var b strings.Builder
		for _, x := range c {
			b.WriteString(strconv.Itoa(x.Arg) + x.Op + ":" + strconv.FormatUint(x.Mask, 16) + ":" + strconv.FormatUint(x.Value, 16) + ";")
		}
		if seen[b.String()] {
			continue
		}
		seen[b.String()] = true
		out = append(out, c)
	}
	return out
}

// notSeccompNotes are the parts of a profile no seccomp format carries.
func notSeccompNotes(p *policy.Profile) []string {
	var notes []string
	fs := p.Filesystem
	if len(fs.Read)+len(fs.Write)+len(fs.Exec)+len(fs.Hidden) > 0 || fs.PrivateTmp {
		notes = append(notes, "filesystem rules (read, write, exec, hidden, privateTmp) are not part of a seccomp profile: apply them with the container's mounts")
	}
	n := p.Network
	if len(n.Connect)+len(n.Send)+len(n.Bind) > 0 {
		notes = append(notes, "network endpoints are not part of a seccomp profile: apply them with a network policy")
	} else {
		notes = append(notes, "the profile allows no network: give the container no network (e.g. --network none)")
	}
	return notes
}
