package refine

import (
	"testing"

	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/report"
	"github.com/sysprof/sysprof/seccomp"
)

// TestArgRuleAddedWhenNoneExists: a call the filter's own check refused (prlimit64 on another
// pid, clone with a namespace flag, PROT_EXEC on anonymous memory) has no learned rule to
// widen. Accepting its suggestion adds the rule that lets that value through besides what the
// check let through (pid 0, plain clones), and nothing else: it used to change nothing, and
// the next run was refused again.
func TestArgRuleAddedWhenNoneExists(t *testing.T) {
	p := base()
	p.Syscalls.Allow = append(p.Syscalls.Allow, policy.Syscall{Name: "prlimit64"}, policy.Syscall{Name: "clone"}, policy.Syscall{Name: "mprotect"})
	r := rep(
		report.Denial{Kind: report.KindSyscall, Syscall: "prlimit64", Exe: cargo, Suggest: "syscalls.args: prlimit64 arg 0: + 4242"},
		report.Denial{Kind: report.KindSyscall, Syscall: "clone", Exe: cargo, Suggest: "syscalls.args: clone arg 0: + CLONE_NEWUSER"},
		report.Denial{Kind: report.KindSyscall, Syscall: "mprotect", Exe: cargo, Suggest: "syscalls.args: mprotect arg 2: + PROT_EXEC"},
	)
	props, err := Propose(p, r, aliceEnv)
	if err != nil {
		t.Fatal(err)
	}
	var ds []Decision
	for _, pr := range props {
		ds = append(ds, Decision{pr, AllowExact})
	}
	if len(ds) != 3 {
		t.Fatalf("want 3 proposals, got %d: %+v", len(ds), props)
	}
	out, err := Apply(p, ds)
	if err != nil {
		t.Fatal(err)
	}
	const x86 = uint32(0xc000003e)
	nr := func(name string) uint32 { return uint32(arch.X86_64.SyscallNames[name]) }
	allow, notify := uint32(seccomp.RetAllow), uint32(seccomp.RetNotify)
	cases := []struct {
		name        string
		nr          uint32
		args        [6]uint64
		before, now uint32
	}{
		{"prlimit64 own (pid 0)", nr("prlimit64"), [6]uint64{0, unix.RLIMIT_NOFILE}, allow, allow},
		{"prlimit64 the accepted pid", nr("prlimit64"), [6]uint64{4242, unix.RLIMIT_NOFILE}, notify, allow},
		{"prlimit64 another pid", nr("prlimit64"), [6]uint64{4243, unix.RLIMIT_NOFILE}, notify, notify},
		{"clone plain", nr("clone"), [6]uint64{uint64(unix.SIGCHLD)}, allow, allow},
		{"clone CLONE_NEWUSER", nr("clone"), [6]uint64{unix.CLONE_NEWUSER | uint64(unix.SIGCHLD)}, notify, allow},
		{"clone CLONE_NEWNS", nr("clone"), [6]uint64{unix.CLONE_NEWNS | uint64(unix.SIGCHLD)}, notify, notify},
		{"mprotect rw", nr("mprotect"), [6]uint64{0, 4096, unix.PROT_READ | unix.PROT_WRITE}, allow, allow},
		{"mprotect rx", nr("mprotect"), [6]uint64{0, 4096, unix.PROT_READ | unix.PROT_EXEC}, notify, allow},
	}
	for i, prof := range []*policy.Profile{p, out} {
		f, err := seccomp.Compile(prof, "x86_64", seccomp.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cases {
			want := c.before
			if i == 1 {
				want = c.now
			}
			if got := f.Spec.Eval(x86, c.nr, c.args); got != want {
				t.Errorf("refined=%v %s: %#x, want %#x (rules %+v)", i == 1, c.name, got, want, prof.Syscalls.Args)
			}
		}
	}
	// A suggestion the filter's check cannot be lifted for by a rule says so.
	m := base()
	m.Syscalls.Allow = append(m.Syscalls.Allow, policy.Syscall{Name: "memfd_create"})
	_, err = Apply(m, []Decision{{Proposal{Exact: Patch{Grant: policy.Grant{Section: policy.SectionArgs, Syscall: "memfd_create", Arg: 1, Item: "0x1"}}, Choices: []Choice{AllowExact}}, AllowExact}})
	if err == nil {
		t.Errorf("memfd_create's flags: a rule was added that would skip the supervisor")
	}
}
