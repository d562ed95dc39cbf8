package seccomp

import (
	"encoding/binary"
	"errors"
	"fmt"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// VM runs a program in x/net/bpf's interpreter, as the kernel runs it for one call: how the
// compiler and every export are tested without a kernel.
type VM struct{ vm *bpf.VM }

// NewVM loads prog into the interpreter.
func NewVM(prog []bpf.RawInstruction) (*VM, error) {
	insns, ok := bpf.Disassemble(prog)
	if !ok {
		return nil, errors.New("the program has instructions x/net/bpf cannot decode")
	}
	vm, err := bpf.NewVM(insns)
	if err != nil {
		return nil, fmt.Errorf("bpf.NewVM: %w", err)
	}
	return &VM{vm}, nil
}

// Run is the action for one call.
func (v *VM) Run(auditArch, nr uint32, args [6]uint64) (uint32, error) {
	out, err := v.vm.Run(vmInput(auditArch, nr, args))
	return uint32(out), err
}

// vmInput encodes struct seccomp_data for x/net/bpf's VM. The kernel loads words in host
// (little-endian) order; the VM loads them big-endian, so each 32-bit word is written
// big-endian at the offset where the kernel would find it.
func vmInput(auditArch, nr uint32, args [6]uint64) []byte {
	b := make([]byte, 64)
	binary.BigEndian.PutUint32(b[offNr:], nr)
	binary.BigEndian.PutUint32(b[offArch:], auditArch)
	for i, a := range args {
		binary.BigEndian.PutUint32(b[argLo(i):], uint32(a))
		binary.BigEndian.PutUint32(b[argHi(i):], uint32(a>>32))
	}
	return b
}

// Decode reads struct sock_filter entries in little-endian order (Standalone's output).
func Decode(b []byte) ([]bpf.RawInstruction, error) {
	if len(b)%8 != 0 {
		return nil, fmt.Errorf("%d bytes are not an array of 8-byte struct sock_filter", len(b))
	}
	raw := make([]bpf.RawInstruction, 0, len(b)/8)
	for i := 0; i < len(b); i += 8 {
		raw = append(raw, bpf.RawInstruction{Op: binary.LittleEndian.Uint16(b[i:]), Jt: b[i+2], Jf: b[i+3], K: binary.LittleEndian.Uint32(b[i+4:])})
	}
	return raw, nil
}

// ActionName prints an action: ALLOW, NOTIFY, KILL, ERRNO(EPERM).
func ActionName(r uint32) string {
	switch {
	case r == RetAllow:
		return "ALLOW"
	case r == RetNotify:
		return "NOTIFY"
	case r == RetKill:
		return "KILL"
	case r&unix.SECCOMP_RET_ACTION_FULL == unix.SECCOMP_RET_ERRNO:
		return "ERRNO(" + unix.ErrnoName(unix.Errno(r&unix.SECCOMP_RET_DATA)) + ")"
	}
	return fmt.Sprintf("0x%08x", r)
}
