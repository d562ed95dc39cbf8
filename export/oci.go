package export

import (
	"encoding/json"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/sysprof/sysprof/policy"
)

// renderOCI writes the seccomp JSON of the OCI runtime spec (linux.seccomp), the file Docker
// (--security-opt seccomp=FILE), Podman, containerd, runc and Kubernetes localhost profiles read.
func renderOCI(p *policy.Profile, opts Options) (result, error) {
	sp, err := buildSeccomp(p, "oci", opts)
	if err != nil {
		return result{}, err
	}
	eperm := uint(errnoEPERM)
	out := specs.LinuxSeccomp{
		DefaultAction:   specs.ActErrno,
		DefaultErrnoRet: &eperm,
	}
	for _, a := range sp.Architectures {
		out.Architectures = append(out.Architectures, specs.Arch(a))
	}
	for _, e := range sp.Entries {
		s := specs.LinuxSyscall{Names: e.Names, Action: specs.LinuxSeccompAction(e.Action), ErrnoRet: e.ErrnoRet}
		for _, a := range e.Args {
			s.Args = append(s.Args, specs.LinuxSeccompArg{Index: a.Index, Value: a.Value, ValueTwo: a.ValueTwo, Op: specs.LinuxSeccompOperator(a.Op)})
		}
		out.Syscalls = append(out.Syscalls, s)
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return result{}, err
	}
	return result{out: append(b, '\n'), notes: append(sp.Notes, notSeccompNotes(p)...)}, nil
}
