package seccomp

import "golang.org/x/net/bpf"

// Classic BPF opcodes the kernel's action-cache emulator understands (linux/filter.h).
const (
	opLdAbsW = 0x20 // BPF_LD|BPF_W|BPF_ABS
	opRetK   = 0x06 // BPF_RET|BPF_K
	opJa     = 0x05 // BPF_JMP|BPF_JA
	opJeqK   = 0x15 // BPF_JMP|BPF_JEQ|BPF_K
	opJgtK   = 0x25 // BPF_JMP|BPF_JGT|BPF_K
	opJgeK   = 0x35 // BPF_JMP|BPF_JGE|BPF_K
	opJsetK  = 0x45 // BPF_JMP|BPF_JSET|BPF_K
	opAndK   = 0x54 // BPF_ALU|BPF_AND|BPF_K
)

// ConstAllow reports whether the kernel's seccomp action cache serves calls of nr on auditArch:
// it is kernel/seccomp.c's seccomp_is_const_allow, which runs each filter once per arch and
// number when the filter is installed, with only nr and arch known. A path that reaches RET
// ALLOW without loading anything else (an argument, the instruction pointer) puts nr in the
// cache's bitmap, and such calls never run the program again. Any other instruction on the
// path (a load of an argument, scratch memory, an X-register jump) leaves nr uncached.
//
// The kernel keeps the bitmap for the native arch and its compat arch only (x86_64 and i386),
// for numbers below their syscall counts; x32 numbers always run the program.
func ConstAllow(prog []bpf.RawInstruction, auditArch, nr uint32) bool {
	var reg uint32
	for pc := 0; pc < len(prog); pc++ {
		ins := prog[pc]
		switch ins.Op {
		case opLdAbsW:
			switch ins.K {
			case offNr:
				reg = nr
			case offArch:
				reg = auditArch
			default:
				return false
			}
		case opRetK:
			return ins.K == RetAllow
		case opJa:
			pc += int(ins.K)
		case opJeqK, opJgtK, opJgeK, opJsetK:
			var ok bool
			switch ins.Op {
			case opJeqK:
				ok = reg == ins.K
			case opJgtK:
				ok = reg > ins.K
			case opJgeK:
				ok = reg >= ins.K
			default:
				ok = reg&ins.K != 0
			}
			if ok {
				pc += int(ins.Jt)
			} else {
				pc += int(ins.Jf)
			}
		case opAndK:
			reg &= ins.K
		default:
			return false
		}
	}
	return false // ran off the end (the kernel warns)
}

// CacheMiss names why calls of nr on the ABI a run the program rather than the kernel's action
// cache: "" when they are served by it (ALLOW whatever the arguments), else the rule's first
// argument check, or the action that is not ALLOW. It is the spec's side of ConstAllow: the
// program must agree (TestArgFreeAllowsAreCached).
func (a *ABI) CacheMiss(nr uint32) string {
	r := a.Rules[nr]
	switch {
	case a.Known[nr] == "":
		return "unknown number (ENOSYS)"
	case !a.Allowed || r == nil:
		return "not allowed (supervisor)"
	case len(r.Checks) > 0:
		return "argument check: " + r.Checks[0].Why
	case r.Ret != RetAllow:
		return "answered " + ActionName(r.Ret)
	}
	return ""
}
