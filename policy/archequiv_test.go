package policy

import (
	"slices"
	"testing"

	"github.com/elastic/go-seccomp-bpf/arch"
)

// TestArchEquivalentsTable: each row names a syscall of one 64-bit architecture that the other
// lacks (or a name the two number differently) and one that architecture has, or two calls
// x86_64 has both of (stat → newfstatat: for a profile learned on arm64); argument
// indexes are 0..5 and an implied argument is none the legacy call sets.
func TestArchEquivalentsTable(t *testing.T) {
	known := func(info *arch.Info, n string) bool { _, ok := info.SyscallNames[n]; return ok }
	for _, e := range ArchEquivalents {
		if !IsSyscall(e.Legacy) || !IsSyscall(e.Generic) {
			t.Errorf("%s → %s: not a syscall name", e.Legacy, e.Generic)
		}
		lacking := slices.ContainsFunc(nativeArchs, func(i *arch.Info) bool { return !known(i, e.Legacy) && known(i, e.Generic) })
		if !lacking && !(known(arch.X86_64, e.Legacy) && known(arch.X86_64, e.Generic)) {
			t.Errorf("%s → %s: no architecture lacks %s and has %s", e.Legacy, e.Generic, e.Legacy, e.Generic)
		}
		for i, a := range e.Args {
			if a < -1 || a > 5 {
				t.Errorf("%s → %s: argument %d maps to %d", e.Legacy, e.Generic, i, a)
			}
			if _, ok := e.Implied[a]; ok {
				t.Errorf("%s → %s: argument %d is both moved and implied", e.Legacy, e.Generic, a)
			}
		}
	}
}

// crossProfile is a profile of the same tool learned on one architecture, as learn lists them.
func crossProfile(names ...string) *Profile {
	p := &Profile{Syscalls: Syscalls{Architectures: []string{"aarch64", "x86_64"}}}
	for _, n := range names {
		p.Syscalls.Allow = append(p.Syscalls.Allow, Syscall{Name: n, Provenance: Provenance{By: "/usr/bin/tool", Seen: 1}})
	}
	return p
}

// TestDriftAcrossArchitectures (issue 24): the same tool learned on amd64 (legacy calls) and
// on arm64 (their generic equivalents) drifts with 0 widenings either way, and a syscall that
// is no equivalent still widens.
func TestDriftAcrossArchitectures(t *testing.T) {
	amd64 := crossProfile("open", "stat", "lstat", "fork", "dup2", "pipe", "poll", "epoll_wait", "access",
		"readlink", "rename", "unlink", "mkdir", "rmdir", "getdents", "read", "write", "close", "arch_prctl")
	arm64 := crossProfile("openat", "fstatat", "clone", "dup3", "pipe2", "ppoll", "epoll_pwait", "faccessat",
		"readlinkat", "renameat", "unlinkat", "mkdirat", "getdents64", "read", "write", "close")
	amd64.Metadata.LearnedOn = []string{"x86_64"}
	arm64.Metadata.LearnedOn = []string{"aarch64"}
	for _, tc := range []struct {
		name     string
		old, new *Profile
	}{
		{"amd64 profile, drift on arm64", amd64, arm64},
		{"arm64 profile, drift on amd64", arm64, amd64},
	} {
		for _, c := range Diff(tc.old, tc.new) {
			if c.Widens {
				t.Errorf("%s: %s %s %s widens", tc.name, c.Kind, c.Section, c.Item)
			}
		}
	}
	more := crossProfile("openat", "fstatat", "clone", "dup3", "pipe2", "ppoll", "epoll_pwait", "faccessat",
		"readlinkat", "renameat", "unlinkat", "mkdirat", "getdents64", "read", "write", "close", "ptrace")
	if !slices.ContainsFunc(Diff(amd64, more), func(c Change) bool { return c.Widens && c.Item == "ptrace" }) {
		t.Errorf("ptrace, no equivalent of anything amd64's profile allows, does not widen")
	}
}

// TestAcrossArchsBackwardOnlyForAnotherArchitecture: a profile learned on x86_64 (or, not
// recorded, listing only x86_64) gets no legacy calls for its generic ones on x86_64: it was
// learned there and made none. One learned on aarch64 does, whatever it lists.
func TestAcrossArchsBackwardOnlyForAnotherArchitecture(t *testing.T) {
	names := map[string]bool{"openat": true, "clone": true}
	for _, tc := range []struct {
		listed, learnedOn []string
		want              bool
	}{
		{[]string{"x86_64"}, nil, false},
		{[]string{"aarch64", "x86_64"}, []string{"x86_64"}, false},
		{[]string{"aarch64", "x86_64"}, nil, true},
		{[]string{"aarch64", "x86_64"}, []string{"aarch64"}, true},
		{[]string{"x86_64"}, []string{"aarch64"}, true}, // learn --arch x86_64 on an arm64 machine
		{[]string{"aarch64", "x86_64"}, []string{"aarch64", "x86_64"}, true},
	} {
		p := &Profile{Metadata: Metadata{LearnedOn: tc.learnedOn}, Syscalls: Syscalls{Architectures: tc.listed}}
		added, _ := AcrossArchs(p, arch.X86_64, names, nil)
		for _, n := range []string{"open", "creat", "fork", "vfork"} {
			if _, ok := added[n]; ok != tc.want {
				t.Errorf("listing %v, learned on %v, on x86_64: %s added %v, want %v", tc.listed, tc.learnedOn, n, ok, tc.want)
			}
		}
	}
}
