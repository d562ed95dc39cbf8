package e2e

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/report"
)

// TestCargoTestDoctest is issue 22's "an exec rule under $TMPDIR turns the whole private /tmp
// read-only": `cargo test` of a crate with a doctest (rustdoc writes and runs
// $TMPDIR/rustdoctest*/rust_out) and a unit test writing in std::env::temp_dir(), with TMPDIR
// unset as most users have it, learned then enforced: exit 0, no denials, both tests ran.
func TestCargoTestDoctest(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireTools(t, hostPath, "cargo")
	root := t.TempDir()
	b := newBox(t, root, "x", "alice", filepath.Join("src", "project"), "doctest")
	b.Extra = append(b.Extra, "TMPDIR=/tmp") // the default: the private /tmp is $TMPDIR
	profile := filepath.Join(root, "cargo-test.yaml")
	argv := []string{"cargo", "test", "--offline"}
	testutil.MustCode(t, "learn", b.Sysprof(t, append([]string{"learn", "-p", profile, "--"}, argv...)...), 0)
	b.Sh(t, "rm -rf target")
	rep := filepath.Join(root, "report.json")
	r := b.Sysprof(t, append([]string{"enforce", "-p", profile, "--report", rep, "--"}, argv...)...)
	testutil.MustCode(t, "enforce", r, 0)
	testutil.RequireNoDenials(t, "enforce", rep, r)
	for _, want := range []string{"test tests::writes_temp_dir ... ok", "src/lib.rs - add_one (line 6) ... ok"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("enforce: %q missing from the output:\n%s", want, r.Stdout)
		}
	}
}

// gitRebaseRepo makes b's work tree a git repository on branch topic (one commit adding
// topic.txt) over main, whose last commit adds newfile.txt (add) or changes README.
func gitRebaseRepo(t *testing.T, b *testutil.Box, add bool) {
	t.Helper()
	b.Extra = append(b.Extra, "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=T", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=T", "GIT_COMMITTER_EMAIL=t@example.com",
		"GIT_AUTHOR_DATE=2026-01-02T03:04:05Z", "GIT_COMMITTER_DATE=2026-01-02T03:04:05Z")
	last := `echo v2 > README && git commit -qam two`
	if add {
		last = `echo new > newfile.txt && git add newfile.txt && git commit -qm add`
	}
	b.Sh(t, `set -e; git init -q -b main .; echo v1 > README; git add README; git commit -qm one
git checkout -qb topic; echo t > topic.txt; git add topic.txt; git commit -qm topic
git checkout -q main; `+last+`; git checkout -q topic`)
}

// TestGitRebaseAddedFileIsHeld is issue 22's data loss: `git rebase` that adds a file the learn
// run did not add. The file is held (not discarded, not rated a denial), the run is listed by
// `sysprof changes`, `sysprof changes apply --all` restores it and `git status` is clean. As
// root and as an ordinary user (the learn runs as root).
func TestGitRebaseAddedFileIsHeld(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireTools(t, hostPath, "git", "setpriv")
	for _, user := range []string{"root", "ordinary-user"} {
		t.Run(user, func(t *testing.T) {
			root := t.TempDir()
			learner := newBox(t, root, "x", "alice", "project", "")
			gitRebaseRepo(t, learner, false)
			profile := filepath.Join(root, "git-rebase.yaml")
			argv := []string{"git", "rebase", "-q", "main"}
			// git writes .git: a protected path, pending until accepted (issue 23 item 4).
			testutil.MustCode(t, "learn", learner.Sysprof(t, append([]string{"learn", "--accept-risky", "-p", profile, "--"}, argv...)...), 0)

			b := newBox(t, root, "y", "bob", "project", "")
			gitRebaseRepo(t, b, true)
			var wrap []string
			if user != "root" {
				chownTree(t, root, 65534)
				openForNobody(t, root)
				wrap = []string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"}
			}
			sysprof := func(args ...string) testutil.Result {
				return b.Run(t, append(append(slices.Clone(wrap), testutil.SysprofBin), args...)...)
			}
			rep := filepath.Join(root, "report.json")
			r := sysprof(append([]string{"enforce", "-p", profile, "--report", rep, "--"}, argv...)...)
			testutil.MustCode(t, "enforce", r, 0)
			newfile := filepath.Join(b.Work, "newfile.txt")
			ch := testutil.ReadReport(t, rep).Changes
			if ch == nil || ch.Run == "" || !slices.ContainsFunc(ch.Held, func(h report.Change) bool {
				return h.Path == newfile && h.Class == "held" && h.Change != nil && h.Change.Item == "$WORKDIR/newfile.txt"
			}) {
				t.Fatalf("enforce: newfile.txt is not held with its write rule in the report: %+v\n%s", ch, r)
			}
			if !strings.Contains(r.Stderr, "sysprof changes diff "+ch.Run) {
				t.Errorf("enforce: stderr does not name `sysprof changes diff %s`:\n%s", ch.Run, r.Stderr)
			}
			if _, err := os.Lstat(newfile); err == nil {
				t.Fatalf("newfile.txt reached the work tree without review")
			}
			if l := sysprof("changes"); l.Code != 0 || !strings.Contains(l.Stdout, ch.Run) {
				t.Fatalf("sysprof changes does not list run %s: %s", ch.Run, l)
			}
			if a := sysprof("changes", "apply", ch.Run, "--all"); a.Code != 0 {
				t.Fatalf("changes apply: %s", a)
			}
			if bs, err := os.ReadFile(newfile); err != nil || string(bs) != "new\n" {
				t.Fatalf("changes apply did not restore newfile.txt: %q %v", bs, err)
			}
			st := b.Run(t, append(slices.Clone(wrap), "git", "status", "--short")...)
			if st.Code != 0 || st.Stdout != "" {
				t.Errorf("git status after changes apply: want clean, got %s", st)
			}
		})
	}
}

// TestKilledEnforceLeavesItsChanges: sysprof killed with SIGKILL while the command runs (its
// sandbox dies with it) loses nothing: `sysprof changes` lists the run as interrupted and
// `sysprof changes apply RUN --all` puts the command's outputs on the host. The writes sit in
// the stage's bounded tmpfs while the command runs; the sandbox's PID 1 copies them into the
// run's layers when sysprof dies (limits.writeMiB).
func TestKilledEnforceLeavesItsChanges(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireTools(t, hostPath, "sh", "sleep")
	root := t.TempDir()
	b := newBox(t, root, "x", "alice", "project", "")
	profile := filepath.Join(root, "p.yaml")
	testutil.MustCode(t, "learn", b.Sysprof(t, "learn", "-p", profile, "--", "sh", "-c", "echo out > out.txt; echo x > ready; sleep 0"), 0)
	b.Sh(t, "rm out.txt ready")
	cmd, _ := b.Command(t, testutil.SysprofBin, "enforce", "-p", profile, "--", "sh", "-c", "echo out > out.txt; echo x > ready; echo ready; sleep 300")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The command wrote its files into the run's stage (not the host's tree) once it says
	// ready; the layers lie in the run directory under the state dir ($HOME/.local/state).
	if line, err := bufio.NewReader(stdout).ReadString('\n'); line != "ready\n" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the command never said ready: %q %v", line, err)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	runs := filepath.Join(b.Home, ".local", "state", "sysprof", "runs")
	// The sandbox's PID 1 copies the stage out once sysprof is gone (the run is busy, still
	// "running", until it is done).
	var ready []string
	var l testutil.Result
	for range 200 {
		l = b.Sysprof(t, "changes", "--format", "json")
		if strings.Contains(l.Stdout, "interrupted") {
			ready, _ = filepath.Glob(filepath.Join(runs, "*", "stage-*", "upper", "ready"))
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if l.Code != 0 || len(ready) == 0 {
		t.Fatalf("sysprof changes does not list the killed run as interrupted with its files (%v): %s", ready, l)
	}
	if _, err := os.Lstat(filepath.Join(b.Work, "out.txt")); err == nil {
		t.Fatalf("out.txt is on the host before any apply")
	}
	id := filepath.Base(filepath.Dir(filepath.Dir(filepath.Dir(ready[0]))))
	if a := b.Sysprof(t, "changes", "apply", id, "--all"); a.Code != 0 {
		t.Fatalf("changes apply: %s", a)
	}
	if bs, err := os.ReadFile(filepath.Join(b.Work, "out.txt")); err != nil || string(bs) != "out\n" {
		t.Fatalf("changes apply did not restore out.txt: %q %v", bs, err)
	}
}
