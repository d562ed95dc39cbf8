package e2e

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/elastic/go-seccomp-bpf/arch"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/policy"
)

// asArm64Learn rewrites an x86_64-learned profile as the arm64 learn of the same tool writes
// it: no call aarch64 lacks (arch_prctl, epoll_wait, open...), newfstatat under aarch64's name,
// metadata.learnedOn [aarch64].
func asArm64Learn(p *policy.Profile, learnedOn string) *policy.Profile {
	q := policy.Clone(p)
	q.Syscalls.Allow = nil
	for _, s := range p.Syscalls.Allow {
		if s.Name == "newfstatat" {
			s.Name = "fstatat"
		}
		if _, ok := arch.AARCH64.SyscallNames[s.Name]; ok {
			q.Syscalls.Allow = append(q.Syscalls.Allow, s)
		}
	}
	q.Metadata.LearnedOn = []string{learnedOn}
	return q
}

// TestProfileLearnedOnArm64EnforcedOnAmd64 (issue 24): the shipped gofmt profile as an arm64
// learn would write it enforces `gofmt -l .` here with no denial, as root and as an ordinary
// user: the compile maps its generic calls back to what x86_64's gofmt makes (epoll_pwait →
// epoll_wait, fstatat → newfstatat, and the arch_prctl every x86_64 process makes at start,
// which arm64 does by register). The same profile claimed as learned here (nothing mapped back)
// has arch_prctl refused and reported: the mapping, not the profile, makes the difference.
func TestProfileLearnedOnArm64EnforcedOnAmd64(t *testing.T) {
	testutil.RequireRoot(t)
	root := t.TempDir()
	b := newBox(t, root, "side", "home", "work", "gomod")
	testutil.RequireTools(t, b.Path, "gofmt", "setpriv")
	shipped, err := policy.Load(filepath.Join(testutil.RepoRoot(), "profiles", "gofmt.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(shipped.Syscalls.Allow, func(s policy.Syscall) bool { return s.Name == "arch_prctl" }) {
		t.Fatal("profiles/gofmt.yaml no longer lists arch_prctl: this test needs an x86_64-only call to drop")
	}
	for _, tc := range []struct {
		learnedOn string
		denied    []string
	}{
		{"aarch64", nil},
		{"x86_64", []string{"arch_prctl"}},
	} {
		prof := filepath.Join(root, "gofmt-"+tc.learnedOn+".yaml")
		if err := policy.Save(prof, asArm64Learn(shipped, tc.learnedOn)); err != nil {
			t.Fatal(err)
		}
		openForNobody(t, root)
		for _, as := range []struct {
			name string
			wrap []string
		}{{"root", nil}, {"ordinary-user", []string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"}}} {
			t.Run("learned-on-"+tc.learnedOn+"/"+as.name, func(t *testing.T) {
				rep := filepath.Join(root, tc.learnedOn+"-"+as.name+".json")
				argv := append(slicesClone(as.wrap), testutil.SysprofBin, "enforce", "-p", prof, "--report", rep, "--", "gofmt", "-l", ".")
				r := b.Run(t, argv...)
				var denied []string
				for _, d := range testutil.ReadReport(t, rep).Denials {
					denied = append(denied, d.Syscall)
				}
				if !slices.Equal(denied, tc.denied) {
					t.Errorf("denials %v, want %v\n%s", denied, tc.denied, r)
				}
				if tc.denied == nil && r.Code != 0 {
					t.Errorf("want exit 0: %s", r)
				}
			})
		}
	}
}
