package enforcer

import (
	"encoding/binary"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

func TestEncodeStandaloneReplacesNotify(t *testing.T) {
	prog := []bpf.RawInstruction{
		{Op: 0x20, K: 4},                        // ld [4]
		{Op: 0x15, Jt: 1, Jf: 0, K: 0xc000003e}, // jeq
		{Op: 0x06, K: retNotify},
		{Op: 0x06, K: retAllow},
	}
	b := encodeStandalone(prog)
	if len(b) != 8*len(prog) {
		t.Fatalf("len = %d, want %d", len(b), 8*len(prog))
	}
	if k := binary.LittleEndian.Uint32(b[2*8+4:]); k != retErrno(unix.EPERM) {
		t.Errorf("notify return became %#x, want ERRNO(EPERM) %#x", k, retErrno(unix.EPERM))
	}
	if k := binary.LittleEndian.Uint32(b[3*8+4:]); k != retAllow {
		t.Errorf("allow return changed to %#x", k)
	}
	if b[8+2] != 1 || b[8+3] != 0 {
		t.Errorf("jump offsets not kept: jt=%d jf=%d", b[8+2], b[8+3])
	}
}
