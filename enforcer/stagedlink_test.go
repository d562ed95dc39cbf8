package enforcer

import (
	"slices"
	"testing"

	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/seccomp"
)

// A profile that links and writes (its plan may stage a directory) sends every link and linkat
// to the supervisor (which answers a cross-directory link out of a stage's lower layer EXDEV:
// stagedLink); one that writes nothing sends none.
func TestStagesSuperviseLinks(t *testing.T) {
	work := t.TempDir()
	env := Env{Vars: map[string]string{"WORKDIR": work, "HOME": t.TempDir(), "TMPDIR": "/tmp"}, Arch: "x86_64"}
	p := testProfile()
	for _, n := range []string{"link", "linkat"} {
		p.Syscalls.Allow = append(p.Syscalls.Allow, policy.Syscall{Name: n})
	}
	supervised := func(c *Compiled, name string) bool {
		a := c.spec.ABIs[0]
		r := a.Rules[uint32(a.Info.SyscallNames[name])]
		return r != nil && slices.ContainsFunc(r.Checks, func(ch seccomp.Check) bool { return ch.Why == seccomp.WhyLink })
	}
	c, err := Compile(p, env)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Stages) > 0 || supervised(c, "linkat") {
		t.Errorf("stages %v: linkat supervised in a profile that writes nothing", c.Stages)
	}
	// A file that does not exist yet in the work tree: its directory is staged.
	p.Filesystem.Write = rulesOf("$WORKDIR/notes.txt")
	if c, err = Compile(p, env); err != nil {
		t.Fatal(err)
	}
	if len(c.Stages) == 0 || !supervised(c, "linkat") || !supervised(c, "link") {
		t.Errorf("stages %v: link and linkat not supervised", c.Stages)
	}
}
