package seccomp

import (
	"fmt"
	"slices"

	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// seccomp return values used by the filter.
const (
	RetAllow  = unix.SECCOMP_RET_ALLOW
	RetNotify = unix.SECCOMP_RET_USER_NOTIF // sysprof's supervisor answers; EPERM where none listens
	RetKill   = unix.SECCOMP_RET_KILL_PROCESS
)

// RetErrno is the action that fails a call with e.
func RetErrno(e unix.Errno) uint32 { return unix.SECCOMP_RET_ERRNO | uint32(e)&unix.SECCOMP_RET_DATA }

// X32Bit marks x32-ABI syscall numbers on x86_64 (__X32_SYSCALL_BIT).
const X32Bit = 0x40000000

// offsets into struct seccomp_data (little-endian hosts: the low word of an argument comes first).
const (
	offNr   = 0
	offArch = 4
	offArgs = 16
)

func argLo(i int) uint32 { return uint32(offArgs + 8*i) }
func argHi(i int) uint32 { return uint32(offArgs + 8*i + 4) }

// Spec is the compiled syscall policy before it becomes BPF: per ABI, which syscall
// numbers are allowed, argument-checked or answered with an errno. A number the ABI's table
// knows but the spec does not list goes to the supervisor (USER_NOTIF); a number the table does
// not know (newer than sysprof's table) answers ENOSYS so libc fallbacks work.
type Spec struct {
	ABIs []*ABI // the native ABI first
}

// ABI is one syscall ABI: an audit arch plus, for x32, the number bit.
type ABI struct {
	Info    *arch.Info
	Allowed bool              // false: every known syscall of this ABI is reported (arch not in the profile)
	Rules   map[uint32]*Rule  // by number, x32 bit included
	Max     uint32            // highest number in the ABI's table, x32 bit included
	Known   map[uint32]string // number → name, x32 bit included
}

// Rule is what one allowed (or errno-answered) syscall compiles to: plain data, the same on
// every architecture, which the BPF code generator and every export read.
type Rule struct {
	Name   string
	Ret    uint32  // the action when every check passes (ALLOW, or ERRNO for compatibility answers)
	Checks []Check // in order; the first failing check decides
}

// Check is one condition on one argument. With v = arg & Mask (arg truncated to 32 bits when
// Width32, because the kernel reads that argument as an int): v must equal one of Values (when
// HasValues), have no bit outside AllowedBits (when HasAllowedBits), have no bit of
// DenyBits, and equal none of DenyValues. Otherwise the call gets Fail.
type Check struct {
	Arg            int
	Width32        bool
	Mask           uint64
	Values         []uint64
	HasValues      bool
	AllowedBits    uint64
	HasAllowedBits bool
	DenyBits       uint64
	DenyValues     []uint64
	Fail           uint32
	Why            string // for the supervisor and notes: "profile rule", "MPTCP", ...
	// When, if set, limits the check to calls whose argument When.Arg has a bit of When.Bits
	// (mmap's prot checked only for MAP_ANONYMOUS mappings); other calls pass it.
	When *Cond
}

// Cond is a precondition of a Check: argument Arg (its low 32 bits) has a bit of Bits set.
type Cond struct {
	Arg  int
	Bits uint32
}

// Applies reports whether the check applies to a call with args (see When).
func (c *Check) Applies(args [6]uint64) bool {
	return c.When == nil || uint32(args[c.When.Arg])&c.When.Bits != 0
}

// OK evaluates the check in plain Go (the reference the BPF is tested against).
func (c *Check) OK(arg uint64) bool {
	mask := c.Mask
	if c.Width32 {
		arg &= 0xffffffff
		mask &= 0xffffffff
	}
	v := arg & mask
	trunc := func(x uint64) uint64 {
		if c.Width32 {
			return x & 0xffffffff
		}
		return x
	}
	if c.HasValues && !slices.ContainsFunc(c.Values, func(x uint64) bool { return trunc(x) == v }) {
		return false
	}
	if c.HasAllowedBits && v&^c.AllowedBits != 0 {
		return false
	}
	if v&c.DenyBits != 0 {
		return false
	}
	if slices.ContainsFunc(c.DenyValues, func(x uint64) bool { return trunc(x) == v }) {
		return false
	}
	return true
}

// Eval is the plain-Go meaning of the spec for one call; the BPF program must agree with it.
func (s *Spec) Eval(auditArch, nr uint32, args [6]uint64) uint32 {
	for _, a := range s.ABIs {
		if uint32(a.Info.ID) != auditArch {
			continue
		}
		isX32 := a.Info.SeccompMask != 0
		if auditArch == uint32(arch.X86_64.ID) && (nr >= X32Bit) != isX32 {
			continue
		}
		if nr > a.Max {
			return RetErrno(unix.ENOSYS)
		}
		if _, ok := a.Known[nr]; !ok {
			return RetErrno(unix.ENOSYS)
		}
		r := a.Rules[nr]
		if !a.Allowed || r == nil {
			return RetNotify
		}
		for i := range r.Checks {
			if r.Checks[i].Applies(args) && !r.Checks[i].OK(args[r.Checks[i].Arg]) {
				return r.Checks[i].Fail
			}
		}
		return r.Ret
	}
	// An x32 number when x32 is not in the profile, or a foreign architecture: if the number
	// is a real syscall of that ABI, report it; anything else is ENOSYS.
	if auditArch == uint32(arch.X86_64.ID) && nr >= X32Bit {
		if _, ok := arch.X32.SyscallNumbers[int(nr&^X32Bit)]; ok {
			return RetNotify
		}
		return RetErrno(unix.ENOSYS)
	}
	return RetNotify
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

// Program turns the spec into BPF: arch check first, then a binary search over syscall numbers
// whose leaves return an action or run a syscall's argument checks.
func (s *Spec) Program() ([]bpf.RawInstruction, error) {
	a := &asm{}
	a.load(offArch)
	byArch := map[uint32][]*ABI{}
	var order []uint32
	for _, abi := range s.ABIs {
		id := uint32(abi.Info.ID)
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
	a.ret(RetNotify) // foreign architecture: report (e.g. int 0x80 when i386 is not in the profile)
	for _, id := range order {
		a.set(labels[id])
		a.load(offNr)
		abis := byArch[id]
		if id == uint32(arch.X86_64.ID) {
			var native, x32 *ABI
			for _, abi := range abis {
				if abi.Info.SeccompMask != 0 {
					x32 = abi
				} else {
					native = abi
				}
			}
			lx32 := a.newLabel()
			a.cond(bpf.JumpGreaterOrEqual, X32Bit, lx32, next)
			if native != nil {
				s.tree(a, native.ranges(0, X32Bit-1))
			} else {
				a.ret(RetNotify)
			}
			a.set(lx32)
			if x32 != nil {
				s.tree(a, x32.ranges(X32Bit, 0xffffffff))
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
	Ret    uint32
	rule   *Rule
}

// ranges covers [lo, hi] with the ABI's outcomes, merging neighbours with the same return.
func (abi *ABI) ranges(lo, hi uint32) []numRange {
	var out []numRange
	add := func(r numRange) {
		if n := len(out); n > 0 && out[n-1].rule == nil && r.rule == nil && out[n-1].Ret == r.Ret && out[n-1].hi+1 == r.lo {
			out[n-1].hi = r.hi
			return
		}
		out = append(out, r)
	}
	for nr := lo; nr <= abi.Max && nr <= hi; nr++ {
		r := numRange{lo: nr, hi: nr}
		switch rule := abi.Rules[nr]; {
		case abi.Known[nr] == "":
			r.Ret = RetErrno(unix.ENOSYS)
		case !abi.Allowed || rule == nil:
			r.Ret = RetNotify
		case len(rule.Checks) == 0:
			r.Ret = rule.Ret
		default:
			r.rule = rule
		}
		add(r)
	}
	if abi.Max < hi {
		add(numRange{lo: max(abi.Max+1, lo), hi: hi, Ret: RetErrno(unix.ENOSYS)})
	}
	return out
}

// foreignX32Ranges reports every real x32 syscall and answers ENOSYS to other numbers.
func foreignX32Ranges() []numRange {
	known := map[uint32]string{}
	var hi uint32
	for nr, name := range arch.X32.SyscallNumbers {
		known[uint32(nr)|X32Bit] = name
		hi = max(hi, uint32(nr)|X32Bit)
	}
	abi := &ABI{Info: arch.X32, Allowed: false, Known: known, Max: hi}
	return abi.ranges(X32Bit, 0xffffffff)
}

// tree emits a binary search over contiguous ranges (the first range's lo is implied).
func (s *Spec) tree(a *asm, rs []numRange) {
	if len(rs) == 1 {
		r := rs[0]
		if r.rule == nil {
			a.ret(r.Ret)
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
func emitChecks(a *asm, r *Rule) {
	fails := make([]label, len(r.Checks))
	for i := range r.Checks {
		c := &r.Checks[i]
		fails[i] = a.newLabel()
		fail := fails[i]
		skip := next
		if c.When != nil {
			skip = a.newLabel()
			a.load(argLo(c.When.Arg))
			a.cond(bpf.JumpBitsSet, c.When.Bits, next, skip)
		}
		mask := c.Mask
		lo, hi := uint32(mask), uint32(mask>>32)
		// Bits that must be clear: denied bits, and bits outside the allowed set.
		clear := c.DenyBits & mask
		if c.HasAllowedBits {
			clear |= mask &^ c.AllowedBits
		}
		if uint32(clear) != 0 {
			a.load(argLo(c.Arg))
			a.cond(bpf.JumpBitsSet, uint32(clear), fail, next)
		}
		if !c.Width32 && uint32(clear>>32) != 0 {
			a.load(argHi(c.Arg))
			a.cond(bpf.JumpBitsSet, uint32(clear>>32), fail, next)
		}
		// matchValue jumps to onMatch when arg&mask == v, else falls through.
		matchValue := func(v uint64, onMatch label) {
			miss := a.newLabel()
			a.load(argLo(c.Arg))
			if lo != 0xffffffff {
				a.and(lo)
			}
			if c.Width32 {
				a.cond(bpf.JumpEqual, uint32(v), onMatch, next)
			} else {
				a.cond(bpf.JumpEqual, uint32(v), next, miss)
				a.load(argHi(c.Arg))
				if hi != 0xffffffff {
					a.and(hi)
				}
				a.cond(bpf.JumpEqual, uint32(v>>32), onMatch, next)
			}
			a.set(miss)
		}
		for _, v := range c.DenyValues {
			matchValue(v, fail)
		}
		if c.HasValues {
			pass := a.newLabel()
			for _, v := range c.Values {
				matchValue(v, pass)
			}
			a.jmp(fail)
			a.set(pass)
		}
		if skip != next {
			a.set(skip)
		}
	}
	a.ret(r.Ret)
	for i := range r.Checks {
		a.set(fails[i])
		a.ret(r.Checks[i].Fail)
	}
}

// ABIFor is the ABI table a call of auditArch and nr is decided by, or nil (an architecture the
// filter has no table for).
func (s *Spec) ABIFor(auditArch, nr uint32) *ABI {
	isX32Call := auditArch == uint32(arch.X86_64.ID) && nr&X32Bit != 0
	for _, a := range s.ABIs {
		if uint32(a.Info.ID) == auditArch && (a.Info.SeccompMask != 0) == isX32Call {
			return a
		}
	}
	return nil
}

// RuleFor is the rule a call of auditArch and nr meets, or nil (not allowed).
func (s *Spec) RuleFor(auditArch, nr uint32) *Rule {
	if a := s.ABIFor(auditArch, nr); a != nil {
		return a.Rules[nr]
	}
	return nil
}
