package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/report"
)

// TestRefineYesKeepsWhatNeedsAPerson: at every --max-risk, `refine --yes` leaves a git hook
// write, a new executable and a new host denied, while it accepts the benign low-risk syscall
// of the same report; --only naming the hook accepts just that.
func TestRefineYesKeepsWhatNeedsAPerson(t *testing.T) {
	b := cliBox(t)
	prof := &policy.Profile{APIVersion: policy.APIVersion, Kind: policy.Kind,
		Metadata:   policy.Metadata{Name: "tool", Command: []string{"tool"}, Runs: 1},
		Syscalls:   policy.Syscalls{Architectures: []string{"x86_64"}, Allow: []policy.Syscall{{Name: "read"}, {Name: "openat"}}},
		Filesystem: policy.Filesystem{Read: []policy.PathRule{{Path: "$WORKDIR"}}, Write: []policy.PathRule{{Path: "$WORKDIR/out"}}}}
	hook := filepath.Join(b.Work, ".git", "hooks", "pre-commit")
	rep := report.New([]string{"tool"}, "", false)
	rep.Denials = []report.Denial{
		{Kind: report.KindSyscall, Syscall: "utimensat", Arch: "x86_64", What: "utimensat()", Exe: "/usr/bin/tool", Suggest: "syscalls.allow: + utimensat", Risk: report.RiskLow},
		{Kind: report.KindFile, Path: hook, Access: "create", What: hook + " create", Exe: "/usr/bin/tool", Risk: report.RiskCritical},
		{Kind: report.KindFile, Path: "/usr/bin/curl", Access: "exec", What: "/usr/bin/curl exec", Exe: "/usr/bin/tool", Risk: report.RiskHigh},
		{Kind: report.KindNetwork, Syscall: "connect", Endpoint: "192.0.2.7:443", Host: "evil.example", Proto: "tcp", What: "connect 192.0.2.7:443 tcp", Exe: "/usr/bin/tool", Risk: report.RiskHigh},
	}
	repPath := filepath.Join(b.Home, "report.json")
	if err := rep.Save(repPath); err != nil {
		t.Fatal(err)
	}
	for _, risk := range []string{"low", "high", "critical"} {
		t.Run(risk, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "tool.yaml")
			if err := policy.Save(p, prof); err != nil {
				t.Fatal(err)
			}
			r := b.Sysprof(t, "refine", "-p", p, "--from", repPath, "--yes", "--max-risk", risk)
			testutil.MustCode(t, "refine --yes", r, 0)
			got := loadProfile(t, p)
			if !slices.ContainsFunc(got.Syscalls.Allow, func(s policy.Syscall) bool { return s.Name == "utimensat" }) {
				t.Errorf("the benign syscall was not accepted:\n%s", r)
			}
			for _, w := range got.Filesystem.Write {
				if strings.Contains(w.Path, ".git") {
					t.Errorf("--yes --max-risk %s accepted a hook write: %s\n%s", risk, w.Path, r)
				}
			}
			if len(got.Filesystem.Exec) > 0 || len(got.Network.Connect) > 0 {
				t.Errorf("--yes --max-risk %s accepted exec %v / connect %v\n%s", risk, got.Filesystem.Exec, got.Network.Connect, r)
			}
		})
	}
	// Naming the hook is the reviewer's explicit yes for that one change.
	p := filepath.Join(t.TempDir(), "tool.yaml")
	if err := policy.Save(p, prof); err != nil {
		t.Fatal(err)
	}
	r := b.Sysprof(t, "refine", "-p", p, "--from", repPath, "--workdir", b.Work, "--only", "$WORKDIR/.git/hooks/pre-commit")
	testutil.MustCode(t, "refine --only HOOK", r, 0)
	got := loadProfile(t, p)
	if !slices.ContainsFunc(got.Filesystem.Write, func(w policy.PathRule) bool { return w.Path == "$WORKDIR/.git/hooks/pre-commit" }) ||
		len(got.Filesystem.Exec) > 0 || len(got.Network.Connect) > 0 || len(got.Syscalls.Allow) != 2 {
		t.Errorf("--only naming the hook: want exactly the hook write, got write %v exec %v connect %v syscalls %v\n%s",
			got.Filesystem.Write, got.Filesystem.Exec, got.Network.Connect, got.Syscalls.Allow, r)
	}
}

// TestRefineExecAndPrivateTmpWrite (issue 15 item 5): refine fixes a write to the private /tmp
// and a new executable for good. Refine used to say the profile already allowed the /tmp write,
// and every run denied it again; it added the exec rule without its binaries: entry, so drift
// of the same command reported a new binary. Real enforce rounds (not --audit: audit lets the
// private /tmp write through without reporting it), each refined with --yes and the exec named.
func TestRefineExecAndPrivateTmpWrite(t *testing.T) {
	testutil.RequireRoot(t)
	root := t.TempDir()
	b := newBox(t, root, "x", "alice", filepath.Join("src", "project"), "")
	b.Extra = []string{"TMPDIR=/tmp"} // the private /tmp is $TMPDIR, as on most hosts
	testutil.WriteFile(t, filepath.Join(b.Work, "a.txt"), "a\n", 0o644)
	profile := filepath.Join(root, "profile.yaml")
	testutil.MustCode(t, "learn", b.Sysprof(t, "learn", "-p", profile, "--", "sh", "-c", "cat a.txt"), 0)
	if p := loadProfile(t, profile); !p.Filesystem.PrivateTmp || slices.ContainsFunc(p.Filesystem.Write, func(r policy.PathRule) bool { return strings.HasPrefix(r.Path, "$TMPDIR") }) {
		t.Fatalf("control: want a private /tmp and no write rule in it, got privateTmp %v, write %v", p.Filesystem.PrivateTmp, p.Filesystem.Write)
	}
	tmpFile := fmt.Sprintf("/tmp/sysprof-e2e-%d.txt", os.Getpid())
	// /bin/ls: on a merged-/usr host refine writes the /usr/bin/ls row learn would (one binary,
	// one row), which enforce allows through the link.
	more := []string{"sh", "-c", "cat a.txt && echo x >" + tmpFile + " && cat " + tmpFile + " && /bin/ls >/dev/null"}

	refinedTmp := false
	for round := 0; ; round++ {
		rep := filepath.Join(root, fmt.Sprintf("round%d.json", round))
		r := b.Sysprof(t, append([]string{"enforce", "--verify-binaries", "-p", profile, "--report", rep, "--"}, more...)...)
		ds := testutil.ReadReport(t, rep).Denials
		if len(ds) == 0 {
			testutil.MustCode(t, "enforce after refining", r, 0)
			break
		}
		if round == 6 {
			t.Fatalf("still denied after %d refine rounds: %s", round, r)
		}
		args := []string{"refine", "-p", profile, "--from", rep, "--yes", "--max-risk", "critical"}
		for _, d := range ds {
			if d.Path == tmpFile && refinedTmp {
				t.Fatalf("round %d: the private /tmp write is denied again after refine accepted it: %s", round, r)
			}
			refinedTmp = refinedTmp || d.Path == tmpFile
			if d.Access == "exec" {
				args = append(args, "--only", d.Path)
			}
		}
		rr := b.Sysprof(t, args...)
		testutil.MustCode(t, "refine --yes", rr, 0)
		if strings.Contains(rr.Stderr, "nothing to refine") {
			t.Fatalf("round %d: refine found nothing to change for denials it cannot fix: %s\n%s", round, rr, r)
		}
	}
	if !refinedTmp {
		t.Fatalf("control: no enforce run denied %s", tmpFile)
	}
	r := b.Sysprof(t, append([]string{"drift", "-p", profile, "--format", "json", "--"}, more...)...)
	for _, c := range widening(parseDiff(t, r.Stdout).Changes) {
		if c.Section == policy.SectionBinaries || c.Section == policy.SectionExec {
			t.Errorf("drift after refine: %s", c)
		}
	}
	if l, err := os.Readlink("/bin"); err == nil && strings.TrimPrefix(l, "/") == "usr/bin" {
		for _, e := range loadProfile(t, profile).Filesystem.Exec {
			if strings.HasPrefix(e.Path, "/bin/") {
				t.Errorf("merged-/usr host: refine wrote exec %s, not its /usr form", e.Path)
			}
		}
	}
}
