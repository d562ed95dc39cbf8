package export

import (
	"fmt"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/elastic/go-seccomp-bpf/arch"
	"github.com/sysprof/sysprof/policy"
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

// scArch maps a profile architecture to its libseccomp name and go-seccomp-bpf table.
var scArch = map[string]struct {
	scmp string
	info *arch.Info
}{
	"x86_64":  {"SCMP_ARCH_X86_64", arch.X86_64},
	"i386":    {"SCMP_ARCH_X86", arch.I386},
	"x32":     {"SCMP_ARCH_X32", arch.X32},
	"aarch64": {"SCMP_ARCH_AARCH64", arch.AARCH64},
	"arm":     {"SCMP_ARCH_ARM", arch.ARM},
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

func parseValues(ss []string) ([]uint64, error) {
	out := make([]uint64, 0, len(ss))
	for _, s := range ss {
		v, err := policy.ParseValue(s)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// parsedRule is an ArgRule as policy reads it (spec), with what export derives from it.
type parsedRule struct {
	policy.ArgRule // as written, for notes
	spec           policy.ArgSpec
	mask           uint64
	values         []uint64 // after dropping denied ones and ones outside the mask
	deny           []uint64 // masked, sorted, unique
	flags          *uint64  // allowed bits
	errno          uint     // 0: EPERM
}

func parseRule(r policy.ArgRule) (parsedRule, []string, error) {
	spec, err := policy.ParseArgRule(r)
	if err != nil {
		return parsedRule{}, nil, err
	}
	pr := parsedRule{ArgRule: r, spec: spec, mask: spec.Mask, errno: errnoRet(spec.Errno)}
	where := fmt.Sprintf("%s arg %d", r.Syscall, r.Arg)
	if spec.HasFlags {
		allowed := spec.Flags
		pr.flags = &allowed
	}
	for _, d := range spec.Deny {
		pr.deny = append(pr.deny, d&pr.mask)
	}
	slices.Sort(pr.deny)
	pr.deny = slices.Compact(pr.deny)
	var notes []string
	for i, v := range spec.Values {
		switch {
		case v&^pr.mask != 0:
			notes = append(notes, fmt.Sprintf("%s: value %s has bits outside mask %s and can never match; left out", where, r.Values[i], r.Mask))
		case slices.Contains(pr.deny, v):
			// Denied wins over allowed.
		default:
			pr.values = append(pr.values, v)
		}
	}
	slices.Sort(pr.values)
	pr.values = slices.Compact(pr.values)
	return pr, notes, nil
}

// errnoOnly reports a rule that answers every call with its errno.
func (r parsedRule) errnoOnly() bool { return r.spec.ErrnoOnly() }

// alternatives turns one rule into the conditions of which one must hold for the call to be
// allowed. alone says no other rule of the syscall compares this argument, so the denied set's
// complement may use LT/GT for its two ends instead of aligned blocks.
func alternatives(r parsedRule, alone bool) ([]cond, error) {
	var flags *cond
	if r.flags != nil {
		flags = &cond{Arg: r.Arg, Mask: ^*r.flags}
	}
	var base []cond
	switch {
	case len(r.Values) > 0:
		for _, v := range r.values {
			base = append(base, cond{Arg: r.Arg, Mask: r.mask, Value: v})
		}
	case len(r.Deny) > 0:
		cs, err := complement(r.Arg, r.mask, r.deny, alone && flags == nil)
		if err != nil {
			return nil, fmt.Errorf("%s arg %d deny: %w", r.Syscall, r.Arg, err)
		}
		base = cs
	case flags != nil:
		return []cond{*flags}, nil
	default:
		return nil, nil
	}
	if flags == nil {
		return base, nil
	}
	var out []cond
	for _, c := range base {
		if m, ok := merge([]cond{c}, *flags); ok {
			out = append(out, m[0])
		}
	}
	return out, nil
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

// ruleErrno is the errno a rule's failures return; 0 means the default (EPERM).
func ruleErrno(r policy.ArgRule) (uint, error) {
	if r.Errno == "" {
		return 0, nil
	}
	e, err := policy.ParseErrno(r.Errno)
	if err != nil {
		return 0, fmt.Errorf("%s arg %d errno: %w", r.Syscall, r.Arg, err)
	}
	return errnoRet(e), nil
}

// errnoRet is the errnoRet an entry carries for errno e: 0 (the default, EPERM) for none.
func errnoRet(e uint16) uint {
	if e == errnoEPERM {
		return 0
	}
	return uint(e)
}

// argRulesBySyscall groups rules by syscall name, each group in a stable order.
func argRulesBySyscall(p *policy.Profile) map[string][]policy.ArgRule {
	m := map[string][]policy.ArgRule{}
	for _, r := range p.Syscalls.Args {
		m[r.Syscall] = append(m[r.Syscall], r)
	}
	for _, rs := range m {
		slices.SortStableFunc(rs, func(a, b policy.ArgRule) int { return a.Arg - b.Arg })
	}
	return m
}

// architectures maps the profile's architectures to libseccomp names, in the profile's
// (sorted) order.
func architectures(p *policy.Profile) ([]string, []*arch.Info, error) {
	var names []string
	var infos []*arch.Info
	for _, a := range p.Syscalls.Architectures {
		m, ok := scArch[a]
		if !ok {
			return nil, nil, fmt.Errorf("architecture %q is not one of x86_64, i386, x32, aarch64, arm", a)
		}
		names = append(names, m.scmp)
		infos = append(infos, m.info)
	}
	return names, infos, nil
}

// unknownSyscalls lists allowed names no listed architecture (x86_64 and aarch64 when none
// are listed) knows.
func unknownSyscalls(p *policy.Profile, infos []*arch.Info) []string {
	if len(infos) == 0 {
		infos = []*arch.Info{arch.X86_64, arch.AARCH64}
	}
	var out []string
	for _, s := range p.Syscalls.Allow {
		known := false
		for _, in := range infos {
			if _, ok := in.SyscallNames[s.Name]; ok {
				known = true
				break
			}
		}
		if !known {
			out = append(out, s.Name)
		}
	}
	return out
}

// buildSeccomp translates the syscall section: one SCMP_ACT_ALLOW entry with every syscall that
// has no argument rules; for each syscall with rules, one entry per allowed combination of
// values (the cross product of its rules, since rules are ANDed and OCI entries are ORed);
// and an SCMP_ACT_ERRNO entry for a syscall whose rule fails every call with another errno
// than EPERM (clone3 → ENOSYS, so that libc falls back to clone).
func buildSeccomp(p *policy.Profile) (seccompPolicy, error) {
	var sp seccompPolicy
	archNames, infos, err := architectures(p)
	if err != nil {
		return sp, err
	}
	sp.Architectures = archNames
	if len(archNames) == 0 {
		sp.Notes = append(sp.Notes, "the profile lists no architectures: the runtime allows only its native one")
	}
	if unk := unknownSyscalls(p, infos); len(unk) > 0 {
		sp.Notes = append(sp.Notes, fmt.Sprintf("syscalls unknown on the listed architectures (runtimes skip them): %s", strings.Join(unk, " ")))
	}

	rules := argRulesBySyscall(p)
	allowed := map[string]bool{}
	var plain []string
	for _, s := range p.Syscalls.Allow {
		allowed[s.Name] = true
		if len(rules[s.Name]) == 0 {
			plain = append(plain, s.Name)
		}
	}
	slices.Sort(plain)
	plain = slices.Compact(plain)
	if len(plain) > 0 {
		sp.Entries = append(sp.Entries, scEntry{Names: plain, Action: actAllow})
	}

	names := make([]string, 0, len(rules))
	for n := range rules {
		names = append(names, n)
	}
	slices.Sort(names)
	x86 := slices.Contains(archNames, "SCMP_ARCH_X86")
	var errnoEntries []scEntry
	for _, name := range names {
		var prs []parsedRule
		argUses := map[int]int{}
		for _, r := range rules[name] {
			pr, notes, err := parseRule(r)
			if err != nil {
				return sp, err
			}
			sp.Notes = append(sp.Notes, notes...)
			prs = append(prs, pr)
			argUses[r.Arg]++
		}
		// A rule that answers every call with an errno (clone3 → ENOSYS) is the whole policy
		// for the syscall: one errno entry, nothing allowed.
		if i := slices.IndexFunc(prs, parsedRule.errnoOnly); i >= 0 {
			if e := prs[i].errno; e != 0 {
				errnoEntries = append(errnoEntries, scEntry{Names: []string{name}, Action: actErrno, ErrnoRet: &e})
			} else if allowed[name] {
				sp.Notes = append(sp.Notes, fmt.Sprintf("%s: a rule with no values denies every call", name))
			}
			continue
		}
		if !allowed[name] {
			sp.Notes = append(sp.Notes, fmt.Sprintf("%s: argument rules for a syscall that is not allowed are ignored (it stays denied)", name))
			continue
		}
		combos := [][]cond{nil}
		for _, r := range prs {
			if !r.spec.Restricts() {
				continue // a rule that restricts nothing (what a merge of values and flags leaves)
			}
			alts, err := alternatives(r, argUses[r.Arg] == 1)
			if err != nil {
				return sp, err
			}
			var next [][]cond
			for _, c := range combos {
				for _, a := range alts {
					if m, ok := merge(c, a); ok {
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
		for _, c := range combos {
			e := scEntry{Names: []string{name}, Action: actAllow}
			for _, x := range c {
				e.Args = append(e.Args, x.arg())
			}
			sp.Entries = append(sp.Entries, e)
		}
		// Rejections with another errno than EPERM: entries matching exactly what the rule
		// rejects on its argument. They are disjoint from the allow entries on that argument.
		for _, r := range prs {
			if r.errno == 0 {
				continue
			}
			if x86 && multiplexedOnX86()[name] {
				sp.Notes = append(sp.Notes, fmt.Sprintf("%s arg %d: rejected calls fail with EPERM, not %s: on i386 libseccomp folds %s into socketcall/ipc and rejects such errno rules (EEXIST)", name, r.Arg, r.Errno, name))
				continue
			}
			rejected, err := rejectedSet(r, argUses[r.Arg] == 1)
			if err != nil {
				sp.Notes = append(sp.Notes, fmt.Sprintf("%s arg %d: rejected calls fail with EPERM, not %s (%v)", name, r.Arg, r.Errno, err))
				continue
			}
			for _, c := range rejected {
				e := r.errno
				errnoEntries = append(errnoEntries, scEntry{Names: []string{name}, Action: actErrno, ErrnoRet: &e, Args: []scArg{c.arg()}})
			}
		}
	}
	sp.Entries = append(sp.Entries, errnoEntries...)
	return sp, nil
}

// rejectedSet returns conditions matching exactly the calls rule r rejects, one comparison
// each, when that can be written: denied values, or the complement of allowed values.
func rejectedSet(r parsedRule, alone bool) ([]cond, error) {
	if r.flags != nil {
		return nil, fmt.Errorf("a flags rule rejects any of %d bits, one entry each; not written", bits.OnesCount64(^*r.flags))
	}
	if len(r.Values) > 0 {
		return complement(r.Arg, r.mask, r.values, alone)
	}
	var out []cond
	for _, d := range r.deny {
		out = append(out, cond{Arg: r.Arg, Mask: r.mask, Value: d})
	}
	return out, nil
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
