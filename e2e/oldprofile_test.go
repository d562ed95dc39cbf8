package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/policy"
)

// TestOlderProfileFamiliesClosed (issue 24 item 8): a profile learned before the behaviour
// families existed lists only the syscalls its run made. `sh -c 'cat in.txt'` learned into
// /dev/null, with its family members taken out as an older sysprof wrote it, is enforced and
// drifted with its output to a file (cat then calls copy_file_range): enforce and drift close
// the families as learn does, so nothing is denied and nothing widens. The control: the same
// profile marked learned --exact is held to what it lists (a denial, a widening).
func TestOlderProfileFamiliesClosed(t *testing.T) {
	testutil.RequireRoot(t)
	root := t.TempDir()
	b := newBox(t, root, "x", "alice", filepath.Join("src", "project"), "")
	testutil.WriteFile(t, filepath.Join(b.Work, "in.txt"), "some input\n", 0o644)
	argv := []string{"sh", "-c", "cat in.txt"}
	profile := filepath.Join(root, "older.yaml")
	null := perturbation{name: "null", stdout: "null", stdin: "null"}
	file := perturbation{name: "file", stdout: "file", stdin: "null"}
	if r := runPerturbed(t, b, null, append([]string{testutil.SysprofBin, "learn", "-p", profile, "--"}, argv...)); r.Code != 0 {
		t.Fatalf("learn into /dev/null: %s", r)
	}
	p := loadProfile(t, profile)
	families := map[string]bool{}
	for _, f := range policy.Families {
		families[f.Name] = true
	}
	p.Syscalls.Allow = slices.DeleteFunc(p.Syscalls.Allow, func(s policy.Syscall) bool { return families[s.Family] })
	if slices.ContainsFunc(p.Syscalls.Allow, func(s policy.Syscall) bool { return s.Name == "copy_file_range" }) {
		t.Fatalf("the learn into /dev/null made copy_file_range itself: this test shows nothing here")
	}
	for _, exact := range []bool{false, true} {
		p.Metadata.Exact = exact
		if err := policy.Save(profile, p); err != nil {
			t.Fatal(err)
		}
		rep := filepath.Join(root, "report.json")
		r := runPerturbed(t, b, file, append([]string{testutil.SysprofBin, "enforce", "-p", profile, "--report", rep, "--"}, argv...))
		denials := testutil.ReadReport(t, rep).Denials
		dr := driftIntoFile(t, b, append([]string{testutil.SysprofBin, "drift", "--fail-on", "low", "-p", profile, "--"}, argv...))
		if exact {
			if len(denials) == 0 {
				t.Errorf("control: an --exact profile without copy_file_range ran cat into a file with no denial")
			}
			if dr.Code != 1 {
				t.Errorf("control: drift of an --exact profile without copy_file_range exited %d, want 1 (a widening)\n%s%s", dr.Code, dr.Stdout, dr.Stderr)
			}
			continue
		}
		if r.Code != 0 || r.Stdout != "some input\n" {
			t.Errorf("enforce of the older profile into a file: exit %d, output %q\n%s", r.Code, r.Stdout, r)
		}
		for _, d := range denials {
			t.Errorf("enforce of the older profile into a file: denial [%s] %s by %s", d.Kind, d.What, d.Exe)
		}
		if dr.Code != 0 {
			t.Errorf("drift of the older profile into a file widened (exit %d):\n%s%s", dr.Code, dr.Stdout, strings.TrimSpace(dr.Stderr))
		}
	}
}

// driftIntoFile runs a drift with sysprof's stdout and stderr both to one file: drift gives the
// command sysprof's stderr as its stdout, so that the command's output goes to a file too.
func driftIntoFile(t *testing.T, b *testutil.Box, argv []string) testutil.Result {
	t.Helper()
	out := filepath.Join(t.TempDir(), "drift.out")
	f, err := os.OpenFile(out, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd, ctx := testutil.Command(t, b.Work, b.Environ(), argv...)
	cmd.Stdout, cmd.Stderr = f, f
	err = cmd.Run()
	bs, rerr := os.ReadFile(out)
	if rerr != nil {
		t.Fatal(rerr)
	}
	return testutil.Finish(t, ctx, cmd, err, string(bs), "")
}
