package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/trace"
)

// TestLearnRecordsRecycledInodes: a command that deletes a file and then creates another one
// (ext4 and most file systems hand the freed inode number to the new file at once) must have
// both files in its trace and profile. This is what every compiler does with its temp files
// (gcc: $TMPDIR/cc*.s, cc*.res), and when the second file is lost the learned profile depends
// on inode reuse: privateTmp flips between learns of the same `make`, so drift on an unchanged
// project is not empty (TestDrift, TestDriftNewLoopbackPort fail now and then).
func TestLearnRecordsRecycledInodes(t *testing.T) {
	testutil.RequireRoot(t)
	requireTool(t, "sh")
	b := cliBox(t)
	p := filepath.Join(b.Home, "recycle.yaml")
	tr := filepath.Join(b.Home, "recycle.trace.json")
	// Six create/delete rounds: the file system hands a freed inode number out again at once
	// most of the time, so at least one round reuses one even with other work on the disk.
	r := sysprof(t, b, "learn", "-p", p, "--trace-out", tr, "--", "sh", "-c",
		`for i in 1 2 3 4 5 6; do echo $i > "f$i"; rm "f$i"; done; echo 2 > second`)
	mustCode(t, "learn", r, 0)
	if _, err := os.Stat(filepath.Join(b.Work, "second")); err != nil {
		t.Fatalf("the command did not create second: %v", err)
	}

	data, err := os.ReadFile(tr)
	if err != nil {
		t.Fatal(err)
	}
	var got trace.Trace
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	created := map[string]bool{}
	var seen []string
	for _, f := range got.Files {
		if strings.HasPrefix(f.Path, b.Work+"/") {
			seen = append(seen, f.Path+" "+f.Access)
			if f.OK && (f.Access == "create" || f.Access == "write") {
				created[filepath.Base(f.Path)] = true
			}
		}
	}
	var missing []string
	for _, n := range []string{"f1", "f2", "f3", "f4", "f5", "f6", "second"} {
		if !created[n] {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		t.Errorf("the trace has no create of %v in %s (each made after the previous file was deleted, with its inode number); accesses in the work dir:\n  %s",
			missing, b.Work, strings.Join(seen, "\n  "))
	}

	prof := loadProfile(t, p)
	var writes []string
	covered := false
	for _, w := range prof.Filesystem.Write {
		writes = append(writes, w.Path)
		switch w.Path {
		case "$WORKDIR/second", "$WORKDIR", "$WORKDIR/*":
			covered = true
		}
	}
	if !covered {
		t.Errorf("the profile does not allow writing $WORKDIR/second; filesystem.write: %v", writes)
	}
}

// TestLearnCredentialReadWhenTmpdirIsHome: a read of ~/.ssh is a credential read however the
// environment names the directories. With TMPDIR=$HOME (seen on CI runners and in some user
// setups) it must still be dropped with the "credential store touched" warning, never become a
// read rule (which diff would then rate low, as a temp file).
func TestLearnCredentialReadWhenTmpdirIsHome(t *testing.T) {
	testutil.RequireRoot(t)
	requireTool(t, "sh")
	b := cliBox(t)
	b.Tmp = b.Home
	testutil.WriteFile(t, filepath.Join(b.Home, ".ssh", "id_test"), "fake key\n", 0o600)
	p := filepath.Join(b.Home, "ssh.yaml")
	r := sysprof(t, b, "learn", "-p", p, "--", "sh", "-c", `read -r key < "$HOME/.ssh/id_test"; echo read`)
	mustCode(t, "learn", r, 0)
	prof := loadProfile(t, p)
	for _, rules := range [][]string{pathsOf(prof.Filesystem.Read), pathsOf(prof.Filesystem.Write), pathsOf(prof.Filesystem.List)} {
		for _, path := range rules {
			if strings.Contains(path, ".ssh") {
				t.Errorf("the profile allows %s: a read of $HOME/.ssh/id_test became an allowance", path)
			}
		}
	}
	if !strings.Contains(r.Stderr, "credential store") {
		t.Errorf("learn did not warn about the credential read:\n%s", r.Stderr)
	}
}

func pathsOf(rules []policy.PathRule) []string {
	var out []string
	for _, r := range rules {
		out = append(out, r.Path)
	}
	return out
}
