package enforcer

import (
	"testing"

	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/synth"
	"github.com/sysprof/sysprof/trace"
)

// learnedOnX86 synthesizes a profile from an x86_64 run that used x86-only syscalls (open, stat,
// dup2, pipe, poll: what a tool built for an older libc calls).
func learnedOnX86(t *testing.T, opts synth.Options) *policy.Profile {
	t.Helper()
	tr := &trace.Trace{Version: trace.Version, Command: []string{"tool"}, Host: trace.Host{Arch: trace.ArchX86_64},
		Context: map[string]string{"WORKDIR": "/w", "HOME": "/h", "TMPDIR": "/tmp"}}
	for _, n := range []string{"open", "stat", "read", "write", "dup2", "pipe", "poll", "close", "mmap", "exit_group", "brk"} {
		tr.Syscalls = append(tr.Syscalls, trace.SyscallCount{Exe: "/usr/bin/tool", Arch: trace.ArchX86_64, Name: n, Nr: arch.X86_64.SyscallNames[n], Count: 1})
	}
	res, err := synth.Synthesize(tr, opts)
	if err != nil {
		t.Fatal(err)
	}
	return res.Profile
}

func nrA64(name string) uint32 {
	nr, ok := arch.AARCH64.SyscallNames[name]
	if !ok {
		panic("no aarch64 syscall " + name)
	}
	return uint32(nr)
}

// A profile learned on x86_64 compiles to arm64's own numbers and lets the arm64 build of the
// same tool do what it did (openat for open, fstatat for stat, dup3, pipe2, ppoll), checked in
// the BPF interpreter with arm64's audit arch and numbers.
func TestLearnedOnX86RunsOnArm64(t *testing.T) {
	p := learnedOnX86(t, synth.Options{})
	env := HostEnv(t.TempDir())
	env.Arch = "aarch64"
	c, err := Compile(p, env)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Dropped) > 0 {
		t.Errorf("x86_64 names in a two-architecture profile are not losses on arm64: dropped %q", c.Dropped)
	}
	vm := newVM(t, c.Filter)
	var none [6]uint64
	for _, tc := range []struct {
		name string
		want uint32
	}{
		{"openat", retAllow}, {"fstatat", retAllow}, {"dup3", retAllow}, {"pipe2", retAllow},
		{"ppoll", retAllow}, {"read", retAllow}, {"write", retAllow}, {"exit_group", retAllow},
		{"ptrace", retNotify}, {"mount", retNotify}, {"bpf", retNotify},
	} {
		if got := vm.run(t, a64, nrA64(tc.name), none); got != tc.want {
			t.Errorf("aarch64 %s: %s, want %s", tc.name, actionName(got), actionName(tc.want))
		}
	}
	// The x86_64 audit arch is not this machine's: denied, not allowed by name.
	if got := vm.run(t, x86, nr64("read"), none); got == retAllow {
		t.Errorf("x86_64 audit arch on an arm64 filter: ALLOW")
	}

	// The same profile on x86_64: no arm64 name is reported as dropped, and the learned open works.
	c86, err := Compile(p, Env{Vars: env.Vars, Arch: "x86_64"})
	if err != nil {
		t.Fatal(err)
	}
	if len(c86.Dropped) > 0 {
		t.Errorf("arm64 names in a two-architecture profile are not losses on x86_64: dropped %q", c86.Dropped)
	}
	vm86 := newVM(t, c86.Filter)
	if got := vm86.run(t, x86, nr64("open"), none); got != retAllow {
		t.Errorf("x86_64 open: %s", actionName(got))
	}
	if got := vm86.run(t, a64, nrA64("openat"), none); got == retAllow {
		t.Errorf("aarch64 audit arch on an x86_64 filter: ALLOW")
	}
}

// With --arch x86_64 the profile names only x86_64, and --exact keeps the learned set: the
// arm64 mapping and the families are gone (the control for the test above).
func TestExactSingleArchHasNoEquivalents(t *testing.T) {
	p := learnedOnX86(t, synth.Options{Exact: true, Architectures: []string{trace.ArchX86_64}})
	for _, s := range p.Syscalls.Allow {
		switch s.Name {
		case "openat", "fstatat", "dup3", "pipe2", "copy_file_range":
			t.Errorf("--exact --arch x86_64 allowed %s (family %q)", s.Name, s.Family)
		}
	}
	if got := p.Syscalls.Architectures; len(got) != 1 || got[0] != "x86_64" {
		t.Errorf("architectures %v, want [x86_64]", got)
	}
}

// Families are on by default: a profile learned with output to a file (copy_file_range only)
// may write to a terminal or a pipe, and the terminal probes are allowed without the rest of
// ioctl (TIOCSTI stays denied, and so does any request the tool never made).
func TestFamiliesCoverTheIOEnvironment(t *testing.T) {
	tr := &trace.Trace{Version: trace.Version, Command: []string{"cat"}, Host: trace.Host{Arch: trace.ArchX86_64},
		Context: map[string]string{"WORKDIR": "/w", "HOME": "/h", "TMPDIR": "/tmp"}}
	for _, n := range []string{"openat", "read", "copy_file_range", "close", "exit_group", "newfstatat"} {
		tr.Syscalls = append(tr.Syscalls, trace.SyscallCount{Exe: "/usr/bin/cat", Arch: trace.ArchX86_64, Name: n, Nr: arch.X86_64.SyscallNames[n], Count: 1})
	}
	res, err := synth.Synthesize(tr, synth.Options{})
	if err != nil {
		t.Fatal(err)
	}
	env := HostEnv(t.TempDir())
	env.Arch = "x86_64"
	c, err := Compile(res.Profile, env)
	if err != nil {
		t.Fatal(err)
	}
	vm := newVM(t, c.Filter)
	a := func(xs ...uint64) (r [6]uint64) { copy(r[:], xs); return }
	for _, tc := range []struct {
		name string
		args [6]uint64
		want uint32
	}{
		{"write", a(1), retAllow},
		{"writev", a(1), retAllow},
		{"sendfile", a(1), retAllow},
		{"fstat", a(1), retAllow},
		{"setitimer", a(0), retAllow},
		{"ioctl", a(1, unix.TCGETS), retAllow},
		{"ioctl", a(1, unix.TIOCGWINSZ), retAllow},
		{"ioctl", a(1, unix.TIOCSTI), retNotify},
		{"ioctl", a(1, unix.TIOCSCTTY), retNotify},
		{"ptrace", a(0), retNotify},
		{"socket", a(unix.AF_INET, unix.SOCK_STREAM), retNotify},
	} {
		if got := vm.run(t, x86, nr64(tc.name), tc.args); got != tc.want {
			t.Errorf("%s %x: %s, want %s", tc.name, tc.args[1], actionName(got), actionName(tc.want))
		}
	}
}
