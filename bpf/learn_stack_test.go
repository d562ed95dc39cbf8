package bpf

import (
	"testing"

	"github.com/cilium/ebpf/asm"
)

// TestLearnCallChainStack checks, without a kernel, that no chain of bpf-to-bpf calls (and
// bpf_loop callbacks) in learn.c's programs needs more than the verifier's 512 bytes of stack,
// with frames as the compiler laid them out (the verifier counts only the slots it sees used,
// so this bound is the safe side). A 6.18.44 kernel refused sys_exit_path ("combined stack size
// of 2 calls is 560"): emit_path's frame was 408 bytes, its inode spans 224 of them.
func TestLearnCallChainStack(t *testing.T) {
	spec, err := LoadLearn()
	if err != nil {
		t.Fatal(err)
	}
	for name, prog := range spec.Programs {
		funcs, order := splitFuncs(prog.Instructions)
		var depth func(f string, seen map[string]bool) int
		depth = func(f string, seen map[string]bool) int {
			if seen[f] {
				t.Fatalf("%s: recursion through %s", name, f)
			}
			seen[f] = true
			defer delete(seen, f)
			deepest := 0
			for _, callee := range calls(funcs[f]) {
				if _, ok := funcs[callee]; ok {
					deepest = max(deepest, depth(callee, seen))
				}
			}
			return roundUp16(frameSize(funcs[f])) + deepest
		}
		if d := depth(order[0], map[string]bool{}); d > 512 {
			t.Errorf("%s: a call chain needs %d bytes of stack, the verifier allows 512", name, d)
		} else {
			t.Logf("%s: deepest call chain %d bytes", name, d)
		}
	}
}

// splitFuncs cuts a program's instructions into its functions, at each symbol.
func splitFuncs(insns asm.Instructions) (map[string]asm.Instructions, []string) {
	funcs := map[string]asm.Instructions{}
	var order []string
	cur := ""
	for _, ins := range insns {
		if sym := ins.Symbol(); sym != "" {
			cur = sym
			order = append(order, sym)
		}
		funcs[cur] = append(funcs[cur], ins)
	}
	return funcs, order
}

// calls lists the functions f calls or hands to a helper as a callback (bpf_loop).
func calls(f asm.Instructions) []string {
	var out []string
	for _, ins := range f {
		if ins.IsFunctionReference() {
			if ref := ins.Reference(); ref != "" {
				out = append(out, ref)
			}
		}
	}
	return out
}

// frameSize is the deepest stack byte f addresses: loads and stores off r10, and pointers
// made from it (rX = r10; rX += -N).
func frameSize(f asm.Instructions) int {
	deepest := 0
	fromFP := map[asm.Register]bool{}
	for _, ins := range f {
		op := ins.OpCode
		switch {
		case op.Class().IsLoad() || op.Class().IsStore():
			if (ins.Src == asm.RFP || ins.Dst == asm.RFP) && ins.Offset < 0 {
				deepest = max(deepest, -int(ins.Offset))
			}
		case op.Class().IsALU() && op.ALUOp() == asm.Mov && op.Source() == asm.RegSource:
			fromFP[ins.Dst] = ins.Src == asm.RFP
		case op.Class().IsALU() && op.ALUOp() == asm.Add && op.Source() == asm.ImmSource && fromFP[ins.Dst]:
			if ins.Constant < 0 {
				deepest = max(deepest, -int(ins.Constant))
			}
		}
	}
	return deepest
}

func roundUp16(n int) int { return (n + 15) &^ 15 }
