package policy

import (
	"maps"
	"slices"
	"sort"

	"github.com/elastic/go-seccomp-bpf/arch"
)

// Values the legacy calls fix (include/uapi: fcntl.h, signal.h, sched.h, time.h).
const (
	atFDCWD           = 0xffffff9c // AT_FDCWD (-100) as the int the kernel reads
	atRemoveDir       = 0x200
	atSymlinkNoFollow = 0x100
	oCreatWronlyTrunc = 0x241 // creat's O_CREAT|O_WRONLY|O_TRUNC
	sigChld           = 17
	cloneVMVfork      = 0x100 | 0x4000 // CLONE_VM|CLONE_VFORK
)

// ArchEquivalent is a syscall one 64-bit architecture has and another lacks (Legacy: x86_64's
// open, stat, fork; aarch64 has only the generic table), and the call libc and runtimes make
// in its place there (Generic: openat, fstatat, clone). Args maps Legacy's argument i to
// Generic's argument Args[i] (-1: it has none there, as poll's timeout in ms is a timespec
// pointer in ppoll); Implied are Generic's arguments the legacy call fixes (open is
// openat(AT_FDCWD, ...); rmdir is unlinkat(AT_FDCWD, path, AT_REMOVEDIR)). Pointer arguments
// (a sigmask, a timespec) are never implied: seccomp cannot read what they point to.
type ArchEquivalent struct {
	Legacy, Generic string
	Args            []int
	Implied         map[int]uint64
}

// ArchEquivalents is the one table of syscalls across 64-bit architectures: synth lists the
// generic names a profile's other architectures need, and the seccomp compiler and Diff map a
// profile learned on one architecture to the other, both ways (AcrossArchs). x86_64 and
// aarch64 number fstatat differently and name it differently (newfstatat, fstatat): both
// names are here.
var ArchEquivalents = []ArchEquivalent{
	{"access", "faccessat", []int{1, 2}, map[int]uint64{0: atFDCWD}},
	{"alarm", "setitimer", []int{-1}, map[int]uint64{0: 0}}, // ITIMER_REAL
	{"chmod", "fchmodat", []int{1, 2}, map[int]uint64{0: atFDCWD}},
	{"chown", "fchownat", []int{1, 2, 3}, map[int]uint64{0: atFDCWD, 4: 0}},
	{"creat", "openat", []int{1, 3}, map[int]uint64{0: atFDCWD, 2: oCreatWronlyTrunc}},
	{"dup2", "dup3", []int{0, 1}, map[int]uint64{2: 0}},
	{"epoll_create", "epoll_create1", []int{-1}, map[int]uint64{0: 0}},
	{"epoll_wait", "epoll_pwait", []int{0, 1, 2, 3}, nil},
	{"eventfd", "eventfd2", []int{0}, map[int]uint64{1: 0}},
	// clone's flags are its first argument on both (arm64's CLONE_BACKWARDS swaps only the
	// tls and child_tid pointers).
	{"fork", "clone", nil, map[int]uint64{0: sigChld}},
	{"vfork", "clone", nil, map[int]uint64{0: cloneVMVfork | sigChld}},
	{"futimesat", "utimensat", []int{0, 1, -1}, map[int]uint64{3: 0}},
	{"getdents", "getdents64", []int{0, 1, 2}, nil},
	{"getpgrp", "getpgid", nil, map[int]uint64{0: 0}},
	{"inotify_init", "inotify_init1", nil, map[int]uint64{0: 0}},
	{"lchown", "fchownat", []int{1, 2, 3}, map[int]uint64{0: atFDCWD, 4: atSymlinkNoFollow}},
	{"link", "linkat", []int{1, 3}, map[int]uint64{0: atFDCWD, 2: atFDCWD, 4: 0}},
	{"lstat", "fstatat", []int{1, 2}, map[int]uint64{0: atFDCWD, 3: atSymlinkNoFollow}},
	{"lstat", "newfstatat", []int{1, 2}, map[int]uint64{0: atFDCWD, 3: atSymlinkNoFollow}},
	{"mkdir", "mkdirat", []int{1, 2}, map[int]uint64{0: atFDCWD}},
	{"mknod", "mknodat", []int{1, 2, 3}, map[int]uint64{0: atFDCWD}},
	{"newfstatat", "fstatat", []int{0, 1, 2, 3}, nil},
	{"fstatat", "newfstatat", []int{0, 1, 2, 3}, nil},
	{"open", "openat", []int{1, 2, 3}, map[int]uint64{0: atFDCWD}},
	{"pause", "ppoll", nil, nil},
	{"pause", "rt_sigsuspend", nil, nil},
	{"pipe", "pipe2", []int{0}, map[int]uint64{1: 0}},
	{"poll", "ppoll", []int{0, 1, -1}, nil},
	{"readlink", "readlinkat", []int{1, 2, 3}, map[int]uint64{0: atFDCWD}},
	{"rename", "renameat", []int{1, 3}, map[int]uint64{0: atFDCWD, 2: atFDCWD}},
	{"rename", "renameat2", []int{1, 3}, map[int]uint64{0: atFDCWD, 2: atFDCWD, 4: 0}},
	{"rmdir", "unlinkat", []int{1}, map[int]uint64{0: atFDCWD, 2: atRemoveDir}},
	{"select", "pselect6", []int{0, 1, 2, 3, -1}, nil},
	{"signalfd", "signalfd4", []int{0, 1, 2}, map[int]uint64{3: 0}},
	{"stat", "fstatat", []int{1, 2}, map[int]uint64{0: atFDCWD, 3: 0}},
	{"stat", "newfstatat", []int{1, 2}, map[int]uint64{0: atFDCWD, 3: 0}},
	{"symlink", "symlinkat", []int{0, 2}, map[int]uint64{1: atFDCWD}},
	{"time", "clock_gettime", []int{-1}, map[int]uint64{0: 0}}, // CLOCK_REALTIME
	{"unlink", "unlinkat", []int{1}, map[int]uint64{0: atFDCWD, 2: 0}},
	{"utime", "utimensat", []int{1, -1}, map[int]uint64{0: atFDCWD, 3: 0}},
	{"utimes", "utimensat", []int{1, -1}, map[int]uint64{0: atFDCWD, 3: 0}},
}

// ArchStartCall is a call every process makes at start on one architecture that another
// does without a syscall: x86_64 sets its thread pointer with arch_prctl(ARCH_SET_FS), arm64
// writes a register. A profile learned there gets it, with only these values of Arg.
type ArchStartCall struct {
	Name   string
	Arg    int
	Values []uint64
	Why    string
}

// ArchStartCalls are added for a profile learned on another architecture (AcrossArchs).
var ArchStartCalls = []ArchStartCall{
	// ARCH_SET_GS, ARCH_SET_FS, ARCH_GET_FS, ARCH_GET_GS (arch/x86/include/uapi/asm/prctl.h);
	// ARCH_CET_STATUS (glibc's CET probe); ARCH_SHSTK_ENABLE, _DISABLE, _LOCK, _STATUS: the
	// caller's own thread pointer and shadow stack.
	{"arch_prctl", 0, []uint64{0x1001, 0x1002, 0x1003, 0x1004, 0x3001, 0x5001, 0x5002, 0x5003, 0x5005},
		"x86_64's thread pointer and shadow stack, set by a register on arm64"},
}

// nativeArchs are the 64-bit architectures a profile is carried between.
var nativeArchs = []*arch.Info{arch.X86_64, arch.AARCH64}

// AcrossArchs is what a profile learned on another 64-bit architecture needs on target so that
// the same tool does the same there. names are p's allowed syscalls as the caller has them,
// rules its argument rules. Forward, each allowed name target lacks brings its generic
// equivalents (open → openat on aarch64), with the name's argument rules moved to the
// generic's arguments and the arguments the legacy call fixes pinned (openat's dirfd to
// AT_FDCWD: exactly what open could do). Backward, when p was learned on another architecture
// than target (Metadata.LearnedOn; a profile from before it was recorded: when it lists
// another native architecture, where it may have been learned), each allowed generic name
// brings the legacy calls target has (clone → fork: a static binary's fork on x86_64) whose
// fixed arguments its rules admit, with its rules moved back. A name several sources bring gets
// rules that admit what each does (values and flags joined per argument; an argument one
// source leaves free is free). Names already allowed keep their own rules. added maps each new
// name to the names that brought it; out is the rules for the new names only.
func AcrossArchs(p *Profile, target *arch.Info, names map[string]bool, rules []ArgRule) (added map[string][]string, out []ArgRule) {
	if !slices.Contains(nativeArchs, target) {
		return nil, nil
	}
	elsewhere := func(a string) bool { return a != target.Name && isNativeArch(a) }
	backward := slices.ContainsFunc(p.Metadata.LearnedOn, elsewhere) ||
		len(p.Metadata.LearnedOn) == 0 && slices.ContainsFunc(p.Syscalls.Architectures, elsewhere)
	byName := map[string][]ArgRule{}
	for _, r := range rules {
		if s, err := ParseArgRule(r); err == nil && !s.ErrnoOnly() {
			byName[r.Syscall] = append(byName[r.Syscall], r)
		}
	}
	has := func(n string) bool { _, ok := target.SyscallNames[n]; return ok }
	have := maps.Clone(names)
	added = map[string][]string{}
	for _, c := range ArchStartCalls {
		if backward && has(c.Name) && !have[c.Name] {
			r := ArgRule{Syscall: c.Name, Arg: c.Arg}
			for _, v := range c.Values {
				r.Values = append(r.Values, hexValue(v))
			}
			added[c.Name] = []string{c.Why}
			out = append(out, r)
			have[c.Name] = true
		}
	}
	// Until nothing more comes: an aarch64 profile's fstatat brings newfstatat on x86_64, which
	// brings stat and lstat.
	for {
		sources := map[string][][]ArgRule{}
		from := map[string][]string{}
		for _, n := range sortedNames(have) {
			for _, e := range ArchEquivalents {
				var to string
				var rs []ArgRule
				var ok bool
				switch {
				case e.Legacy == n && !has(n) && has(e.Generic):
					to = e.Generic
					rs, ok = e.forward(byName[n])
				case backward && e.Generic == n && has(n) && has(e.Legacy):
					to = e.Legacy
					rs, ok = e.backward(byName[n])
				}
				if to == "" || have[to] || !ok {
					continue
				}
				sources[to] = append(sources[to], rs)
				from[to] = append(from[to], n)
			}
		}
		if len(sources) == 0 {
			return added, out
		}
		for _, to := range sortedNames(sources) {
			added[to] = from[to]
			j := joinSources(to, sources[to])
			out = append(out, j...)
			byName[to] = j
			have[to] = true
		}
	}
}

func isNativeArch(name string) bool {
	return slices.ContainsFunc(nativeArchs, func(i *arch.Info) bool { return i.Name == name })
}

// forward moves the legacy call's rules to the generic's arguments and pins the implied ones.
// A rule on an argument the generic has no counterpart of cannot be kept: no equivalent then.
func (e ArchEquivalent) forward(rules []ArgRule) ([]ArgRule, bool) {
	var out []ArgRule
	for _, r := range rules {
		if r.Arg >= len(e.Args) || e.Args[r.Arg] < 0 {
			return nil, false
		}
		r.Syscall, r.Arg = e.Generic, e.Args[r.Arg]
		r.Values, r.Flags, r.Deny = slices.Clone(r.Values), slices.Clone(r.Flags), slices.Clone(r.Deny)
		out = append(out, r)
	}
	for _, a := range sortedArgs(e.Implied) {
		out = append(out, ArgRule{Syscall: e.Generic, Arg: a, Values: []string{hexValue(e.Implied[a])}})
	}
	return out, true
}

// backward moves the generic call's rules to the legacy call's arguments: a rule on an implied
// argument must admit the value the legacy call fixes (else the legacy call is not an
// equivalent), a rule on an argument the legacy call has no way to set (a pointer it leaves
// NULL) makes it no equivalent either.
func (e ArchEquivalent) backward(rules []ArgRule) ([]ArgRule, bool) {
	var out []ArgRule
	for _, r := range rules {
		if i := slices.Index(e.Args, r.Arg); i >= 0 {
			r.Syscall, r.Arg = e.Legacy, i
			r.Values, r.Flags, r.Deny = slices.Clone(r.Values), slices.Clone(r.Flags), slices.Clone(r.Deny)
			out = append(out, r)
			continue
		}
		v, ok := e.Implied[r.Arg]
		if !ok || !ruleAdmits(r, v) {
			return nil, false
		}
	}
	return out, true
}

// ruleAdmits reports whether the implied value v (an int: its low 32 bits) passes r.
func ruleAdmits(r ArgRule, v uint64) bool {
	s, err := ParseArgRule(r)
	if err != nil {
		return false
	}
	lo := func(x uint64) uint64 { return x & 0xffffffff }
	m := lo(v & s.Mask)
	if s.Values != nil && !slices.ContainsFunc(s.Values, func(x uint64) bool { return lo(x&s.Mask) == m }) {
		return false
	}
	if s.HasFlags && m&^lo(s.Flags) != 0 {
		return false
	}
	return !slices.ContainsFunc(s.Deny, func(x uint64) bool { return lo(x) == m })
}

// joinSources are the rules of name that admit what every source admits: one source's rules
// as they are; several sources' joined per argument where each restricts it by one rule of
// values or flags (values and values: their union; flags or a mix: the union of the bits),
// dropped where one source leaves the argument free.
func joinSources(name string, sources [][]ArgRule) []ArgRule {
	if len(sources) == 1 {
		return sources[0]
	}
	perArg := map[int][]ArgRule{}
	for _, src := range sources {
		seen := map[int]int{}
		for _, r := range src {
			seen[r.Arg]++
		}
		for a, n := range seen {
			if n != 1 {
				seen[a] = -1 // several rules on one argument: not joined
			}
		}
		for _, r := range src {
			if seen[r.Arg] == 1 {
				perArg[r.Arg] = append(perArg[r.Arg], r)
			}
		}
	}
	var out []ArgRule
	for _, a := range sortedArgs(perArg) {
		rs := perArg[a]
		if len(rs) != len(sources) {
			continue // a source leaves it free
		}
		if j, ok := joinRules(name, a, rs); ok {
			out = append(out, j)
		}
	}
	return out
}

// joinRules is one rule admitting what each of rs admits, when they share a mask and have no
// deny list.
func joinRules(name string, a int, rs []ArgRule) (ArgRule, bool) {
	j := ArgRule{Syscall: name, Arg: a, Name: rs[0].Name, Mask: rs[0].Mask}
	var vals, bits uint64set
	anyFlags := false
	for _, r := range rs {
		s, err := ParseArgRule(r)
		if err != nil || len(s.Deny) > 0 || r.Mask != j.Mask || (s.Values == nil && !s.HasFlags) {
			return ArgRule{}, false
		}
		if s.HasFlags {
			anyFlags = true
			bits.add(s.Flags)
		}
		for _, v := range s.Values {
			vals.add(v)
			bits.add(v)
		}
	}
	if anyFlags {
		var all uint64
		for _, b := range bits {
			all |= b
		}
		j.Flags = []string{hexValue(all)}
	} else {
		for _, v := range vals {
			j.Values = append(j.Values, hexValue(v))
		}
	}
	return j, true
}

type uint64set []uint64

func (s *uint64set) add(v uint64) {
	if !slices.Contains(*s, v) {
		*s = append(*s, v)
		slices.Sort(*s)
	}
}

func sortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sortedArgs[V any](m map[int]V) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Ints(out)
	return out
}
