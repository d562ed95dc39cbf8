package enforcer

import (
	"encoding/binary"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/policy"
)

// StandaloneFilter compiles p's seccomp program for use without sysprof's supervisor (bwrap
// --seccomp, systemd, other runtimes): every USER_NOTIF answer becomes ERRNO(EPERM), since
// nothing would be listening, and opens for writing are not sent anywhere (a /proc/self write
// is the runtime's to allow). It returns struct sock_filter entries in host byte order. Only
// env.Arch is used: the program depends on nothing else of the host.
func StandaloneFilter(p *policy.Profile, env Env) ([]byte, error) {
	c, err := compileSeccomp(p, env.Arch, false)
	if err != nil {
		return nil, err
	}
	return encodeStandalone(c.Filter), nil
}

func encodeStandalone(prog []bpf.RawInstruction) []byte {
	const retOp = 0x06 // BPF_RET|BPF_K
	out := make([]byte, 0, 8*len(prog))
	for _, ins := range prog {
		if ins.Op == retOp && ins.K == retNotify {
			ins.K = retErrno(unix.EPERM)
		}
		out = binary.LittleEndian.AppendUint16(out, ins.Op)
		out = append(out, ins.Jt, ins.Jf)
		out = binary.LittleEndian.AppendUint32(out, ins.K)
	}
	return out
}
