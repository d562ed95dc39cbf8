package enforcer

import (
	"fmt"
	"slices"

	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// seccomp return values used by the filter.
const (
	retAllow  = unix.SECCOMP_RET_ALLOW
	retNotify = unix.SECCOMP_RET_USER_NOTIF
	retKill   = unix.SECCOMP_RET_KILL_PROCESS
)

func retErrno(e unix.Errno) uint32 { return unix.SECCOMP_RET_ERRNO | uint32(e)&unix.SECCOMP_RET_DATA }

// x32Bit marks x32-ABI syscall numbers on x86_64 (__X32_SYSCALL_BIT).
const x32Bit = 0x40000000

// offsets into struct seccomp_data (little-endian hosts: the low word of an argument comes first).
const (
	offNr   = 0
	offArch = 4
	offArgs = 16
)

func argLo(i int) uint32 { return uint32(offArgs + 8*i) }
func argHi(i int) uint32 { return uint32(offArgs + 8*i + 4) }

// filterSpec is the compiled syscall policy before it becomes BPF: per ABI, which syscall
// numbers are allowed, argument-checked or answered with an errno. A number the ABI's table
// knows but the spec does not list goes to the supervisor (USER_NOTIF); a number the table does
// not know (newer than sysprof's table) answers ENOSYS so libc fallbacks work.
type filterSpec struct {
	abis []*abiSpec // the native ABI first
}

// abiSpec is one syscall ABI: an audit arch plus, for x32, the number bit.
type abiSpec struct {
	info    *arch.Info
	allowed bool                // false: every known syscall of this ABI is reported (arch not in the profile)
	rules   map[uint32]*sysRule // by number, x32 bit included
	max     uint32              // highest number in the ABI's table, x32 bit included
	known   map[uint32]string   // number → name, x32 bit included
}

// sysRule is what one allowed syscall compiles to.
type sysRule struct {
	name   string
	ret    uint32     // the action when every check passes (ALLOW, or ERRNO for compatibility answers)
	checks []argCheck // in order; the first failing check decides
}

// argCheck is one condition on one argument. With v = arg & mask (arg truncated to 32 bits when
// width32, because the kernel reads that argument as an int): v must equal one of values (when
// values is non-nil), have no bit outside allowedBits (when hasAllowedBits), have no bit of
// denyBits, and equal none of denyValues. Otherwise the call gets fail.
type argCheck struct {
	arg            int
	width32        bool
	mask           uint64
	values         []uint64
	hasValues      bool
	allowedBits    uint64
	hasAllowedBits bool
	denyBits       uint64
	denyValues     []uint64
	fail           uint32
	why            string // for the supervisor and notes: "profile rule", "MPTCP", ...
}

// ok evaluates the check in plain Go (the reference the BPF is tested against).
func (c *argCheck) ok(arg uint64) bool {
	mask := c.mask
	if c.width32 {
		arg &= 0xffffffff
		mask &= 0xffffffff
	}
	v := arg & mask
	trunc := func(x uint64) uint64 {
		if c.width32 {
			return x & 0xffffffff
		}
		return x
	}
	if c.hasValues && !slices.ContainsFunc(c.values, func(x uint64) bool { return trunc(x) == v }) {
		return false
	}
	if c.hasAllowedBits && v&^c.allowedBits != 0 {
		return false
	}
	if v&c.denyBits != 0 {
		return false
	}
	if slices.ContainsFunc(c.denyValues, func(x uint64) bool { return trunc(x) == v }) {
		return false
	}
	return true
}

// eval is the plain-Go meaning of the spec for one call; the BPF program must agree with it.
func (s *filterSpec) eval(auditArch, nr uint32, args [6]uint64) uint32 {
	for _, a := range s.abis {
		if uint32(a.info.ID) != auditArch {
			continue
		}
		isX32 := a.info.SeccompMask != 0
		if auditArch == uint32(arch.X86_64.ID) && (nr >= x32Bit) != isX32 {
			continue
		}
		if nr > a.max {
			return retErrno(unix.ENOSYS)
		}
		if _, ok := a.known[nr]; !ok {
			return retErrno(unix.ENOSYS)
		}
		r := a.rules[nr]
		if !a.allowed || r == nil {
			return retNotify
		}
		for i := range r.checks {
			if !r.checks[i].ok(args[r.checks[i].arg]) {
				return r.checks[i].fail
			}
		}
		return r.ret
	}
	// An x32 number when x32 is not in the profile, or a foreign architecture: if the number
	// is a real syscall of that ABI, report it; anything else is ENOSYS.
	if auditArch == uint32(arch.X86_64.ID) && nr >= x32Bit {
		if _, ok := arch.X32.SyscallNumbers[int(nr&^x32Bit)]; ok {
			return retNotify
		}
		return retErrno(unix.ENOSYS)
	}
	return retNotify
}

// ---- assembler -------------------------------------------------------------------------------

type label int

const next label = -1 // fall through to the following instruction

type node struct {
	ins    bpf.Instruction // a non-jump instruction, or nil
	isJump bool            // unconditional jump to jt
	isCond bool
	cond   bpf.JumpTest
	val    uint32
	jt, jf label
	mark   label // >= 0: this node is a label position (size 0)
	long   bool  // conditional jump emitted as jcond + two unconditional jumps
}

type asm struct {
	nodes  []node
	labels int
}

func (a *asm) newLabel() label { a.labels++; return label(a.labels - 1) }
func (a *asm) set(l label)     { a.nodes = append(a.nodes, node{mark: l}) }
func (a *asm) emit(i bpf.Instruction) {
	a.nodes = append(a.nodes, node{ins: i, mark: -1})
}
func (a *asm) ret(k uint32)    { a.emit(bpf.RetConstant{Val: k}) }
func (a *asm) load(off uint32) { a.emit(bpf.LoadAbsolute{Off: off, Size: 4}) }
func (a *asm) and(m uint32)    { a.emit(bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: m}) }
func (a *asm) jmp(l label)     { a.nodes = append(a.nodes, node{isJump: true, jt: l, mark: -1}) }
func (a *asm) cond(t bpf.JumpTest, v uint32, jt, jf label) {
	a.nodes = append(a.nodes, node{isCond: true, cond: t, val: v, jt: jt, jf: jf, mark: -1})
}

func (n *node) size() int {
	switch {
	case n.mark >= 0:
		return 0
	case n.isCond && n.long:
		return 3
	default:
		return 1
	}
}

// assemble resolves labels. Conditional jumps reach at most 255 instructions; farther ones are
// rewritten as a conditional over two unconditional jumps, until the layout is stable.
func (a *asm) assemble() ([]bpf.Instruction, error) {
	for {
		pos := make([]int, len(a.nodes))
		where := make(map[label]int)
		p := 0
		for i := range a.nodes {
			pos[i] = p
			if a.nodes[i].mark >= 0 {
				where[a.nodes[i].mark] = p
			}
			p += a.nodes[i].size()
		}
		target := func(l label, from int) (int, error) {
			if l == next {
				return 0, nil
			}
			t, ok := where[l]
			if !ok {
				return 0, fmt.Errorf("BUG: seccomp assembler: label %d never set", l)
			}
			if t <= from {
				return 0, fmt.Errorf("BUG: seccomp assembler: backward jump to label %d", l)
			}
			return t - from - 1, nil
		}
		changed := false
		var out []bpf.Instruction
		for i := range a.nodes {
			n := &a.nodes[i]
			switch {
			case n.mark >= 0:
			case n.isJump:
				d, err := target(n.jt, pos[i])
				if err != nil {
					return nil, err
				}
				out = append(out, bpf.Jump{Skip: uint32(d)})
			case n.isCond && !n.long:
				dt, err := target(n.jt, pos[i])
				if err != nil {
					return nil, err
				}
				df, err := target(n.jf, pos[i])
				if err != nil {
					return nil, err
				}
				if dt > 255 || df > 255 {
					n.long = true
					changed = true
					continue
				}
				out = append(out, bpf.JumpIf{Cond: n.cond, Val: n.val, SkipTrue: uint8(dt), SkipFalse: uint8(df)})
			case n.isCond && n.long:
				out = append(out, bpf.JumpIf{Cond: n.cond, Val: n.val, SkipTrue: 0, SkipFalse: 1})
				dt, err := target(n.jt, pos[i]+1)
				if err != nil && n.jt != next {
					return nil, err
				}
				if n.jt == next {
					dt = 1 // skip the second jump
				}
				out = append(out, bpf.Jump{Skip: uint32(dt)})
				df, err := target(n.jf, pos[i]+2)
				if err != nil {
					return nil, err
				}
				out = append(out, bpf.Jump{Skip: uint32(df)})
			default:
				out = append(out, n.ins)
			}
		}
		if !changed {
			return out, nil
		}
	}
}

// ---- code generation -------------------------------------------------------------------------

// program turns the spec into BPF: arch check first, then a binary search over syscall numbers
// whose leaves return an action or run a syscall's argument checks.
func (s *filterSpec) program() ([]bpf.RawInstruction, error) {
	a := &asm{}
	a.load(offArch)
	byArch := map[uint32][]*abiSpec{}
	var order []uint32
	for _, abi := range s.abis {
		id := uint32(abi.info.ID)
		if _, ok := byArch[id]; !ok {
			order = append(order, id)
		}
		byArch[id] = append(byArch[id], abi)
	}
	labels := map[uint32]label{}
	for _, id := range order {
		labels[id] = a.newLabel()
		a.cond(bpf.JumpEqual, id, labels[id], next)
	}
	a.ret(retNotify) // foreign architecture: report (e.g. int 0x80 when i386 is not in the profile)
	for _, id := range order {
		a.set(labels[id])
		a.load(offNr)
		abis := byArch[id]
		if id == uint32(arch.X86_64.ID) {
			var native, x32 *abiSpec
			for _, abi := range abis {
				if abi.info.SeccompMask != 0 {
					x32 = abi
				} else {
					native = abi
				}
			}
			lx32 := a.newLabel()
			a.cond(bpf.JumpGreaterOrEqual, x32Bit, lx32, next)
			if native != nil {
				s.tree(a, native.ranges(0, x32Bit-1))
			} else {
				a.ret(retNotify)
			}
			a.set(lx32)
			if x32 != nil {
				s.tree(a, x32.ranges(x32Bit, 0xffffffff))
			} else {
				s.tree(a, foreignX32Ranges())
			}
			continue
		}
		s.tree(a, abis[0].ranges(0, 0xffffffff))
	}
	insns, err := a.assemble()
	if err != nil {
		return nil, err
	}
	if len(insns) > unix.BPF_MAXINSNS {
		return nil, fmt.Errorf("seccomp program has %d instructions, the kernel takes at most %d: too many argument rules", len(insns), unix.BPF_MAXINSNS)
	}
	raw := make([]bpf.RawInstruction, len(insns))
	for i, ins := range insns {
		r, err := ins.Assemble()
		if err != nil {
			return nil, fmt.Errorf("BUG: seccomp assembler: instruction %d (%v): %w", i, ins, err)
		}
		raw[i] = r
	}
	return raw, nil
}

// numRange is [lo, hi] with one outcome: a return value, or a syscall's checks.
type numRange struct {
	lo, hi uint32
	ret    uint32
	rule   *sysRule
}

// ranges covers [lo, hi] with the ABI's outcomes, merging neighbours with the same return.
func (abi *abiSpec) ranges(lo, hi uint32) []numRange {
	var out []numRange
	add := func(r numRange) {
		if n := len(out); n > 0 && out[n-1].rule == nil && r.rule == nil && out[n-1].ret == r.ret && out[n-1].hi+1 == r.lo {
			out[n-1].hi = r.hi
			return
		}
		out = append(out, r)
	}
	for nr := lo; nr <= abi.max && nr <= hi; nr++ {
		r := numRange{lo: nr, hi: nr}
		switch rule := abi.rules[nr]; {
		case abi.known[nr] == "":
			r.ret = retErrno(unix.ENOSYS)
		case !abi.allowed || rule == nil:
			r.ret = retNotify
		case len(rule.checks) == 0:
			r.ret = rule.ret
		default:
			r.rule = rule
		}
		add(r)
	}
	if abi.max < hi {
		add(numRange{lo: max(abi.max+1, lo), hi: hi, ret: retErrno(unix.ENOSYS)})
	}
	return out
}

// foreignX32Ranges reports every real x32 syscall and answers ENOSYS to other numbers.
func foreignX32Ranges() []numRange {
	known := map[uint32]string{}
	var hi uint32
	for nr, name := range arch.X32.SyscallNumbers {
		known[uint32(nr)|x32Bit] = name
		hi = max(hi, uint32(nr)|x32Bit)
	}
	abi := &abiSpec{info: arch.X32, allowed: false, known: known, max: hi}
	return abi.ranges(x32Bit, 0xffffffff)
}

// tree emits a binary search over contiguous ranges (the first range's lo is implied).
func (s *filterSpec) tree(a *asm, rs []numRange) {
	if len(rs) == 1 {
		r := rs[0]
		if r.rule == nil {
			a.ret(r.ret)
		} else {
			emitChecks(a, r.rule)
		}
		return
	}
	mid := len(rs) / 2
	right := a.newLabel()
	a.cond(bpf.JumpGreaterOrEqual, rs[mid].lo, right, next)
	s.tree(a, rs[:mid])
	a.set(right)
	s.tree(a, rs[mid:])
}

// emitChecks emits a syscall's argument checks; each failure returns its action.
func emitChecks(a *asm, r *sysRule) {
	fails := make([]label, len(r.checks))
	for i := range r.checks {
		c := &r.checks[i]
		fails[i] = a.newLabel()
		fail := fails[i]
		mask := c.mask
		lo, hi := uint32(mask), uint32(mask>>32)
		// Bits that must be clear: denied bits, and bits outside the allowed set.
		clear := c.denyBits & mask
		if c.hasAllowedBits {
			clear |= mask &^ c.allowedBits
		}
		if uint32(clear) != 0 {
			a.load(argLo(c.arg))
			a.cond(bpf.JumpBitsSet, uint32(clear), fail, next)
		}
		if !c.width32 && uint32(clear>>32) != 0 {
			a.load(argHi(c.arg))
			a.cond(bpf.JumpBitsSet, uint32(clear>>32), fail, next)
		}
		// matchValue jumps to onMatch when arg&mask == v, else falls through.
		matchValue := func(v uint64, onMatch label) {
			miss := a.newLabel()
			a.load(argLo(c.arg))
			if lo != 0xffffffff {
				a.and(lo)
			}
			if c.width32 {
				a.cond(bpf.JumpEqual, uint32(v), onMatch, next)
			} else {
				a.cond(bpf.JumpEqual, uint32(v), next, miss)
				a.load(argHi(c.arg))
				if hi != 0xffffffff {
					a.and(hi)
				}
				a.cond(bpf.JumpEqual, uint32(v>>32), onMatch, next)
			}
			a.set(miss)
		}
		for _, v := range c.denyValues {
			matchValue(v, fail)
		}
		if c.hasValues {
			pass := a.newLabel()
			for _, v := range c.values {
				matchValue(v, pass)
			}
			a.jmp(fail)
			a.set(pass)
		}
	}
	a.ret(r.ret)
	for i := range r.checks {
		a.set(fails[i])
		a.ret(r.checks[i].fail)
	}
}

// abiFor is the ABI table a call of auditArch and nr is decided by, or nil (an architecture the
// filter has no table for).
func (s *filterSpec) abiFor(auditArch, nr uint32) *abiSpec {
	isX32Call := auditArch == uint32(arch.X86_64.ID) && nr&x32Bit != 0
	for _, a := range s.abis {
		if uint32(a.info.ID) == auditArch && (a.info.SeccompMask != 0) == isX32Call {
			return a
		}
	}
	return nil
}

// ruleFor is the rule a call of auditArch and nr meets, or nil (not allowed).
func (s *filterSpec) ruleFor(auditArch, nr uint32) *sysRule {
	if a := s.abiFor(auditArch, nr); a != nil {
		return a.rules[nr]
	}
	return nil
}
