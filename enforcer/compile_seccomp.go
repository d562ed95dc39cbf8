package enforcer

import (
	"io"
	"slices"

	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/seccomp"
)

// The pure half of Compile: the profile's syscall section compiled by package seccomp, the one
// compiler enforce and every export share. Nothing here looks at the host: StandaloneFilter
// (`export --format bpf`) calls this half alone.

// CompileSeccomp is the pure half of Compile: the seccomp program of p for architecture
// archName (a go-seccomp-bpf name; "" is this machine's), with its notes and dropped rules. It
// looks at nothing on the host, so `export --format bpf` and StandaloneFilter do not pay for (or
// depend on) the host walk. The result has no plan.
func CompileSeccomp(p *policy.Profile, archName string) (*Compiled, error) {
	return compileSeccomp(p, archName, true, supervise{})
}

// supervise is what compileSeccomp sends to the supervisor beyond its own checks: every mkdir
// (a plan with exec output directories), every execve (a plan with exec output files), every
// link (a plan with stages: stagedlink_linux.go), every connect (a per-binary network rule:
// egress_linux.go).
type supervise struct{ mkdirs, execs, links, connects bool }

// compileSeccomp is CompileSeccomp; supervised adds what only sysprof's supervisor answers (the
// opens for writing of a profile with /proc/self writes, procwrite.go), and what sup names
// (execoutputs.go).
func compileSeccomp(p *policy.Profile, archName string, supervised bool, sup supervise) (*Compiled, error) {
	c := &Compiled{profile: p}
	if supervised {
		c.ProcWrites = procWrites(p)
	}
	f, err := seccomp.Compile(p, archName, seccomp.Options{
		SupervisedOpenWrites: slices.ContainsFunc(c.ProcWrites, func(w ProcWrite) bool { return w.Granted }),
		ResolverStub:         supervised, // enforce's runs resolve through the DNS stub
		SupervisedMkdirs:     supervised && sup.mkdirs,
		SupervisedExecs:      supervised && sup.execs,
		SupervisedLinks:      supervised && sup.links,
		RecordKernelRefusals: supervised,
		SupervisedConnects:   supervised && sup.connects,
		InitStage:            supervised,
	})
	if err != nil {
		return nil, err
	}
	c.Arch, c.Filter, c.spec = f.Arch, f.Program, f.Spec
	c.Notes = append(c.Notes, f.Notes...)
	c.Dropped = append(c.Dropped, f.Dropped...)
	return c, nil
}

// SyscallName names syscall nr of the ABI given by an audit arch value (x32 included).
func SyscallName(auditArch, nr uint32) (name, abi string) { return seccomp.SyscallName(auditArch, nr) }

// Dump writes the seccomp program as readable BPF, one instruction a line (for --debug).
func (c *Compiled) Dump(w io.Writer) error { return seccomp.Dump(w, c.Filter) }
