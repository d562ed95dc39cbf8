package export

import (
	"fmt"

	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/seccomp"
)

// renderBPF writes the program sysprof enforce loads (package seccomp's compiler) for
// Options.Arch, as the struct sock_filter array `bwrap --seccomp FD` reads, with bwrap's
// runtime set added: every USER_NOTIF answer (sysprof's supervisor) is EPERM, since nothing
// listens there.
func renderBPF(p *policy.Profile, opts Options) (result, error) {
	f, err := seccomp.Compile(p, opts.Arch, seccomp.Options{Extra: runtimeSyscalls["bwrap"]})
	if err != nil {
		return result{}, fmt.Errorf("compile filter: %w", err)
	}
	notes := append([]string{}, f.Notes...)
	for _, d := range f.Dropped {
		notes = append(notes, "left out, as sysprof enforce does: "+d)
	}
	notes = append(notes, "runtime: + wait4 (bwrap's init, pid 1 of its pid namespace, runs under the filter and reaps the command; allowed to the command too)")
	notes = append(notes, "denied calls fail with EPERM (sysprof enforce reports them through its supervisor; bwrap has none)")
	return result{out: seccomp.Standalone(f.Program), notes: append(notes, notSeccompNotes(p)...)}, nil
}
