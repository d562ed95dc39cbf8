package enforcer

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/netproxy"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/sandbox"
	"github.com/sysprof/sysprof/seccomp"
)

// What enforce does about a per-binary rule's binary the profile's writes reach, as show says
// it: a directory it lies in is bound writable around it (the binary is bound read-only), a
// rule naming the file itself (exactly or by a glob) keeps it writable (said); the rest is
// neither.
func TestRuleBinaryWrites(t *testing.T) {
	for _, c := range []struct {
		writes []string
		want   string
	}{
		{nil, ""},
		{[]string{"$WORKDIR/out"}, ""},
		{[]string{"$WORKDIR/bin"}, "in a writable path: bound read-only under enforce"},
		{[]string{"$WORKDIR/bin/tool"}, "the profile writes that file: a program the run writes there passes as it"},
		{[]string{"$WORKDIR/bin/**"}, "the profile writes that file: a program the run writes there passes as it"},
		{[]string{"$WORKDIR/bin", "$WORKDIR/bin/t*"}, "the profile writes that file: a program the run writes there passes as it"},
	} {
		p := &policy.Profile{}
		for _, w := range c.writes {
			p.Filesystem.Write = append(p.Filesystem.Write, policy.PathRule{Path: w})
		}
		if got := RuleBinaryWrites(p, "$WORKDIR/bin/tool"); got != c.want {
			t.Errorf("writes %q: %q, want %q", c.writes, got, c.want)
		}
	}
}

// A profile with a per-binary network rule sends every connect to the supervisor (which tells
// the proxy who made it, then lets it go on), also when the profile has its own rule on the
// socket argument; one without leaves connect to the filter alone.
func TestConnectsSupervisedForPerBinaryRules(t *testing.T) {
	p := testProfile()
	p.Syscalls.Allow = append(p.Syscalls.Allow, policy.Syscall{Name: "connect"})
	p.Syscalls.Args = append(p.Syscalls.Args, policy.ArgRule{Syscall: "connect", Arg: 0, Values: []string{"3"}})
	p.Network.Connect = []policy.Endpoint{{Endpoint: "registry.test:443", Proto: "tcp", Provenance: policy.Provenance{By: "/usr/bin/node"}}}
	if !connectsByBinary(p) {
		t.Fatal("a per-binary connect rule does not supervise connects")
	}
	for _, sup := range []bool{true, false} {
		c, err := compileSeccomp(p, "x86_64", true, supervise{connects: sup})
		if err != nil {
			t.Fatal(err)
		}
		args := [6]uint64{3}
		if got := newVM(t, c.Filter).run(t, x86, nr64("connect"), args); (got == retNotify) != sup {
			t.Errorf("supervised %v: connect answered %s", sup, actionName(got))
		}
		if sup && !c.failsOnly(x86, nr64("connect"), args, seccomp.WhyConnect) {
			t.Error("the supervisor does not take the connect as only WhyConnect's")
		}
	}
	p.Network.Connect[0].By = "any"
	if connectsByBinary(p) {
		t.Error("by: any supervises connects")
	}
}

// A rule's (or credential's) binary in a writable path is bound read-only over itself, unless
// the profile writes that file itself (then a note says so); one outside every writable path,
// or missing, is left alone.
func TestHoldRuleBinaries(t *testing.T) {
	dir := t.TempDir()
	tool, other, made := filepath.Join(dir, "bin", "tool"), filepath.Join(dir, "bin", "other"), filepath.Join(dir, "bin", "later")
	for _, f := range []string{tool, other} {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte("x"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	env := Env{Vars: map[string]string{"WORKDIR": dir}}
	p := &policy.Profile{}
	p.Filesystem.Write = []policy.PathRule{{Path: "$WORKDIR/bin"}, {Path: "$WORKDIR/bin/other"}}
	c := &Compiled{profile: p}
	plan := &sandbox.Plan{Writable: []string{filepath.Join(dir, "bin")}}
	c.holdRuleBinaries(plan, []netproxy.Rule{
		{By: tool, Endpoint: "a.test:443"}, {By: other, Endpoint: "b.test:443"}, {By: made, Endpoint: "c.test:443"},
		{By: "/usr/bin/true", Endpoint: "d.test:443"}, {By: "any", Endpoint: "e.test:443"},
	}, env)
	if !slices.Equal(plan.ReadOnly, []string{tool}) {
		t.Errorf("bound read-only: %q, want only %s", plan.ReadOnly, tool)
	}
	if !slices.ContainsFunc(c.Notes, func(n string) bool {
		return strings.Contains(n, "b.test:443: by "+other+": the profile writes that file ($WORKDIR/bin/other)")
	}) {
		t.Errorf("no note says %s stays writable: %q", other, c.Notes)
	}
}
