package seccomp

import (
	"encoding/binary"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// Standalone encodes prog for a consumer with no sysprof supervisor (bwrap --seccomp, a
// runtime's raw filter): every USER_NOTIF answer becomes ERRNO(EPERM), since nothing would be
// listening. It returns struct sock_filter entries in host (little-endian) byte order.
func Standalone(prog []bpf.RawInstruction) []byte {
	const retOp = 0x06 // BPF_RET|BPF_K
	out := make([]byte, 0, 8*len(prog))
	for _, ins := range prog {
		if ins.Op == retOp && ins.K == RetNotify {
			ins.K = RetErrno(unix.EPERM)
		}
		out = binary.LittleEndian.AppendUint16(out, ins.Op)
		out = append(out, ins.Jt, ins.Jf)
		out = binary.LittleEndian.AppendUint32(out, ins.K)
	}
	return out
}
