package export

import (
	"errors"
	"fmt"

	"github.com/sysprof/sysprof/policy"
)

// sockFilterSize is sizeof(struct sock_filter): u16 code, u8 jt, u8 jf, u32 k.
const sockFilterSize = 8

// renderBPF writes the raw filter the caller's compiler (the enforcer's) makes for this host:
// the struct sock_filter array `bwrap --seccomp FD` reads.
func renderBPF(p *policy.Profile, opts Options) (result, error) {
	if opts.BPFFilter == nil {
		return result{}, errors.New("the raw filter is compiled by the enforcer for this host: pass its compiler as Options.BPFFilter")
	}
	b, err := opts.BPFFilter(p)
	if err != nil {
		return result{}, fmt.Errorf("compile filter: %w", err)
	}
	if len(b) == 0 || len(b)%sockFilterSize != 0 {
		return result{}, fmt.Errorf("BUG: compiled filter is %d bytes, not a non-empty array of %d-byte struct sock_filter", len(b), sockFilterSize)
	}
	if n := len(b) / sockFilterSize; n > 4096 {
		return result{}, fmt.Errorf("compiled filter has %d instructions; the kernel accepts at most 4096", n)
	}
	return result{out: b, notes: notSeccompNotes(p)}, nil
}
