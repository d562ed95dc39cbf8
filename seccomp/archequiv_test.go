package seccomp

import (
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/elastic/go-seccomp-bpf/arch"

	"github.com/sysprof/sysprof/policy"
)

// learnedOn is an --exact profile (no families: only what the table brings) learned on one
// architecture: names allowed, architectures [on].
func learnedOn(on string, names ...string) *policy.Profile {
	p := &policy.Profile{Syscalls: policy.Syscalls{Architectures: []string{on}}}
	p.Metadata.Exact = true
	p.Metadata.LearnedOn = []string{on}
	for _, n := range names {
		p.Syscalls.Allow = append(p.Syscalls.Allow, policy.Syscall{Name: n, Provenance: policy.Provenance{By: "/usr/bin/tool", Seen: 1}})
	}
	return p
}

// allowedOn are the names whose calls the filter for target allows (some checks aside).
func allowedOn(t *testing.T, p *policy.Profile, target string) []string {
	t.Helper()
	f, err := Compile(p, target, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for name, r := range f.Rules {
		if r.Ret == RetAllow {
			if _, ok := f.Spec.ABIs[0].Info.SyscallNames[name]; ok {
				out = append(out, name)
			}
		}
	}
	sort.Strings(out)
	return out
}

// gained are the names p allows on target beyond what the empty profile allows there.
func gained(t *testing.T, p *policy.Profile, target string) []string {
	t.Helper()
	base := allowedOn(t, learnedOn(p.Syscalls.Architectures[0]), target)
	var out []string
	for _, n := range allowedOn(t, p, target) {
		if !slices.Contains(base, n) {
			out = append(out, n)
		}
	}
	return out
}

// TestAcrossArchitectures (issue 24): a profile learned on amd64 compiled for arm64 allows
// exactly the generic equivalents of its legacy calls, and one learned on arm64 compiled for
// amd64 exactly the legacy calls of its generic ones (a static binary's fork, an older
// runtime's open), nothing else. Fails when the compile stops mapping (policy.AcrossArchs).
func TestAcrossArchitectures(t *testing.T) {
	for _, tc := range []struct {
		from, to string
		learned  string
		want     []string // besides learned itself, where the target has it
	}{
		// amd64 → arm64
		{"x86_64", "aarch64", "open", []string{"openat"}},
		{"x86_64", "aarch64", "creat", []string{"openat"}},
		{"x86_64", "aarch64", "stat", []string{"fstatat"}},
		{"x86_64", "aarch64", "lstat", []string{"fstatat"}},
		{"x86_64", "aarch64", "newfstatat", []string{"fstatat"}},
		{"x86_64", "aarch64", "fork", []string{"clone"}},
		{"x86_64", "aarch64", "vfork", []string{"clone"}},
		{"x86_64", "aarch64", "dup2", []string{"dup3"}},
		{"x86_64", "aarch64", "pipe", []string{"pipe2"}},
		{"x86_64", "aarch64", "poll", []string{"ppoll"}},
		{"x86_64", "aarch64", "select", []string{"pselect6"}},
		{"x86_64", "aarch64", "epoll_wait", []string{"epoll_pwait"}},
		{"x86_64", "aarch64", "epoll_create", []string{"epoll_create1"}},
		{"x86_64", "aarch64", "access", []string{"faccessat"}},
		{"x86_64", "aarch64", "readlink", []string{"readlinkat"}},
		{"x86_64", "aarch64", "rename", []string{"renameat", "renameat2"}},
		{"x86_64", "aarch64", "unlink", []string{"unlinkat"}},
		{"x86_64", "aarch64", "rmdir", []string{"unlinkat"}},
		{"x86_64", "aarch64", "mkdir", []string{"mkdirat"}},
		{"x86_64", "aarch64", "mknod", []string{"mknodat"}},
		{"x86_64", "aarch64", "chmod", []string{"fchmodat"}},
		{"x86_64", "aarch64", "chown", []string{"fchownat"}},
		{"x86_64", "aarch64", "lchown", []string{"fchownat"}},
		{"x86_64", "aarch64", "link", []string{"linkat"}},
		{"x86_64", "aarch64", "symlink", []string{"symlinkat"}},
		{"x86_64", "aarch64", "getdents", []string{"getdents64"}},
		{"x86_64", "aarch64", "utimes", []string{"utimensat"}},
		{"x86_64", "aarch64", "inotify_init", []string{"inotify_init1"}},
		{"x86_64", "aarch64", "eventfd", []string{"eventfd2"}},
		{"x86_64", "aarch64", "signalfd", []string{"signalfd4"}},
		{"x86_64", "aarch64", "pause", []string{"ppoll", "rt_sigsuspend"}},
		{"x86_64", "aarch64", "openat", nil}, // both have it: nothing more
		// arm64 → amd64
		{"aarch64", "x86_64", "openat", []string{"creat", "open"}},
		{"aarch64", "x86_64", "fstatat", []string{"lstat", "newfstatat", "stat"}},
		{"aarch64", "x86_64", "clone", []string{"fork", "vfork"}},
		{"aarch64", "x86_64", "dup3", []string{"dup2"}},
		{"aarch64", "x86_64", "pipe2", []string{"pipe"}},
		{"aarch64", "x86_64", "ppoll", []string{"pause", "poll"}},
		{"aarch64", "x86_64", "pselect6", []string{"select"}},
		{"aarch64", "x86_64", "epoll_pwait", []string{"epoll_wait"}},
		{"aarch64", "x86_64", "faccessat", []string{"access"}},
		{"aarch64", "x86_64", "readlinkat", []string{"readlink"}},
		{"aarch64", "x86_64", "renameat", []string{"rename"}},
		{"aarch64", "x86_64", "unlinkat", []string{"rmdir", "unlink"}},
		{"aarch64", "x86_64", "mkdirat", []string{"mkdir"}},
		{"aarch64", "x86_64", "fchownat", []string{"chown", "lchown"}},
		{"aarch64", "x86_64", "getdents64", []string{"getdents"}},
		{"aarch64", "x86_64", "read", nil},
	} {
		got := gained(t, learnedOn(tc.from, tc.learned), tc.to)
		want := slices.Clone(tc.want)
		if info, _ := arch.GetInfo(tc.to); info != nil {
			if _, ok := info.SyscallNames[tc.learned]; ok {
				want = append(want, tc.learned)
			}
		}
		sort.Strings(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s learned on %s, compiled for %s: allows %v more, want %v", tc.learned, tc.from, tc.to, got, want)
		}
	}
}

// TestAcrossArchitecturesPinsWhatTheLegacyCallFixes: on arm64, open's openat has its dirfd
// AT_FDCWD, unlink's unlinkat no AT_REMOVEDIR (rmdir is not unlink), fork's clone SIGCHLD
// alone; each implied argument changed goes to the supervisor. For every row of the table.
func TestAcrossArchitecturesPinsWhatTheLegacyCallFixes(t *testing.T) {
	for _, e := range policy.ArchEquivalents {
		if _, ok := arch.AARCH64.SyscallNames[e.Legacy]; ok {
			continue // the other direction (fstatat → newfstatat on x86_64)
		}
		if _, ok := arch.AARCH64.SyscallNames[e.Generic]; !ok {
			continue
		}
		f, err := Compile(learnedOn("x86_64", e.Legacy), "aarch64", Options{})
		if err != nil {
			t.Fatal(err)
		}
		vm := newVM(t, f.Program)
		nr := uint32(arch.AARCH64.SyscallNames[e.Generic])
		var args [6]uint64
		for a, v := range e.Implied {
			args[a] = v
		}
		if got := vm.run(t, a64, nr, args); got != RetAllow {
			t.Errorf("%s → %s%v: %s, want ALLOW", e.Legacy, e.Generic, args, actionName(got))
		}
		for a, v := range e.Implied {
			other := args
			other[a] = v ^ 0x80000 // O_CLOEXEC, AT_EMPTY_PATH's neighbour: any other value
			if v == 0xffffff9c {
				other[a] = 3 // a directory fd
			}
			if got := vm.run(t, a64, nr, other); got != RetNotify {
				t.Errorf("%s → %s with arg %d %#x (not the %#x it fixes): %s, want NOTIFY", e.Legacy, e.Generic, a, other[a], v, actionName(got))
			}
		}
	}
}

// TestAcrossArchitecturesMovesRules: a rule on open's flags (arg 1) is a rule on openat's flags
// (arg 2) on arm64 and back; a rule on clone's flags (arg 0 on both: arm64's CLONE_BACKWARDS
// swaps only tls and child_tid) decides whether fork is one of its calls on x86_64.
func TestAcrossArchitecturesMovesRules(t *testing.T) {
	const oRDWR, oCreat = 2, 0x40
	p := learnedOn("x86_64", "open")
	p.Syscalls.Args = []policy.ArgRule{{Syscall: "open", Arg: 1, Mask: "0x3", Values: []string{"0"}}}
	f, err := Compile(p, "aarch64", Options{})
	if err != nil {
		t.Fatal(err)
	}
	vm := newVM(t, f.Program)
	openat := uint32(arch.AARCH64.SyscallNames["openat"])
	if got := vm.run(t, a64, openat, [6]uint64{0xffffff9c, 0x1000, 0}); got != RetAllow {
		t.Errorf("openat(AT_FDCWD, p, O_RDONLY) = %s, want ALLOW", actionName(got))
	}
	if got := vm.run(t, a64, openat, [6]uint64{0xffffff9c, 0x1000, oRDWR}); got != RetNotify {
		t.Errorf("openat(AT_FDCWD, p, O_RDWR) = %s, want NOTIFY (open's rule allows O_RDONLY only)", actionName(got))
	}

	q := learnedOn("aarch64", "openat")
	q.Syscalls.Args = []policy.ArgRule{{Syscall: "openat", Arg: 2, Mask: "0x3", Values: []string{"0"}}}
	f, err = Compile(q, "x86_64", Options{})
	if err != nil {
		t.Fatal(err)
	}
	vm = newVM(t, f.Program)
	if got := vm.run(t, x86, nr64("open"), [6]uint64{0x1000, 0}); got != RetAllow {
		t.Errorf("open(p, O_RDONLY) = %s, want ALLOW", actionName(got))
	}
	if got := vm.run(t, x86, nr64("open"), [6]uint64{0x1000, oRDWR}); got != RetNotify {
		t.Errorf("open(p, O_RDWR) = %s, want NOTIFY (openat's rule moved to open's arg 1)", actionName(got))
	}
	// creat is openat(..., O_CREAT|O_WRONLY|O_TRUNC): the rule does not admit it.
	if got := vm.run(t, x86, nr64("creat"), [6]uint64{0x1000, 0o644}); got != RetNotify {
		t.Errorf("creat = %s, want NOTIFY (O_WRONLY is not O_RDONLY)", actionName(got))
	}
	_ = oCreat

	threads := learnedOn("aarch64", "clone")
	threads.Syscalls.Args = []policy.ArgRule{{Syscall: "clone", Arg: 0, Flags: []string{"CLONE_VM", "CLONE_FS", "CLONE_FILES", "CLONE_SIGHAND", "CLONE_THREAD", "CLONE_SYSVSEM", "CLONE_SETTLS", "CLONE_PARENT_SETTID", "CLONE_CHILD_CLEARTID"}}}
	if got := gained(t, threads, "x86_64"); !slices.Equal(got, []string{"clone"}) {
		t.Errorf("clone for threads only (no SIGCHLD): allows %v, want [clone] (fork is clone(SIGCHLD), not one of its calls)", got)
	}
}

// TestAcrossArchitecturesNoted: the compile says what it added and why.
func TestAcrossArchitecturesNoted(t *testing.T) {
	f, err := Compile(learnedOn("x86_64", "open", "fork"), "aarch64", Options{})
	if err != nil {
		t.Fatal(err)
	}
	notes := strings.Join(f.Notes, "\n")
	if !strings.Contains(notes, "clone (fork)") || !strings.Contains(notes, "openat (open)") {
		t.Errorf("notes %q: want clone (fork) and openat (open)", notes)
	}
}

// TestAcrossArchitecturesOnThisMachine compiles an amd64-learned profile for the machine the
// test runs on ("": under `make test-arm64`, aarch64 in qemu-user) and runs it with that
// machine's audit arch and numbers: open's call is allowed as this machine makes it, and a
// call the profile never made is not.
func TestAcrossArchitecturesOnThisMachine(t *testing.T) {
	f, err := Compile(learnedOn("x86_64", "open", "fork", "read"), "", Options{})
	if err != nil {
		t.Fatal(err)
	}
	info, err := arch.GetInfo(runtime.GOARCH)
	if err != nil {
		t.Fatal(err)
	}
	vm := newVM(t, f.Program)
	audit := uint32(info.ID)
	call := map[*arch.Info]struct {
		name string
		args [6]uint64
	}{
		arch.X86_64:  {"open", [6]uint64{0x1000, 0}},
		arch.AARCH64: {"openat", [6]uint64{0xffffff9c, 0x1000, 0}},
	}[info]
	if call.name == "" {
		t.Fatalf("no case for %s: add its open-like call to this table", info.Name)
	}
	if got := vm.run(t, audit, uint32(info.SyscallNames[call.name]), call.args); got != RetAllow {
		t.Errorf("%s on %s = %s, want ALLOW", call.name, info.Name, actionName(got))
	}
	if got := vm.run(t, audit, uint32(info.SyscallNames["ptrace"]), [6]uint64{}); got != RetNotify {
		t.Errorf("ptrace on %s = %s, want NOTIFY", info.Name, actionName(got))
	}
}

// TestAcrossArchitecturesThreadPointer: a profile learned on arm64 never saw arch_prctl (arm64
// sets the thread pointer by register), which every process on x86_64 calls at start: it gets
// the thread-pointer and shadow-stack codes, not the others.
func TestAcrossArchitecturesThreadPointer(t *testing.T) {
	const archSetFS, archSetCPUID = 0x1002, 0x1012
	f, err := Compile(learnedOn("aarch64", "read"), "x86_64", Options{})
	if err != nil {
		t.Fatal(err)
	}
	vm := newVM(t, f.Program)
	if got := vm.run(t, x86, nr64("arch_prctl"), [6]uint64{archSetFS, 0x7f0000000000}); got != RetAllow {
		t.Errorf("arch_prctl(ARCH_SET_FS) = %s, want ALLOW", actionName(got))
	}
	if got := vm.run(t, x86, nr64("arch_prctl"), [6]uint64{archSetCPUID, 0}); got != RetNotify {
		t.Errorf("arch_prctl(ARCH_SET_CPUID) = %s, want NOTIFY", actionName(got))
	}
	f, err = Compile(learnedOn("x86_64", "read"), "x86_64", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := newVM(t, f.Program).run(t, x86, nr64("arch_prctl"), [6]uint64{archSetFS, 0}); got != RetNotify {
		t.Errorf("learned on x86_64 without arch_prctl: arch_prctl(ARCH_SET_FS) = %s, want NOTIFY (learned where it is made)", actionName(got))
	}
}
