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

// TestControllingTerminalLearnedWithoutOne (issue 15): a tool that opens /dev/tty only at a
// terminal (git's credential prompt, less's keyboard), learned in CI, is enforced at a
// terminal with zero denials. The sandbox's session has no controlling terminal, so the open
// fails with ENXIO as in a learn run without one; before, Landlock refused it first and the
// run reported a denial the learn could not have seen.
func TestControllingTerminalLearnedWithoutOne(t *testing.T) {
	testutil.RequireRoot(t)
	root := t.TempDir()
	b := newBox(t, root, "x", "alice", filepath.Join("src", "project"), "")
	writeNotes(t, b)
	profile := filepath.Join(root, "profile.yaml")
	script := `cat notes.txt 2>/dev/null; if [ -t 1 ]; then ( : </dev/tty ) 2>/dev/null; fi; echo done`
	learn := perturbation{name: "learn", stdout: "file", stdin: "null"}
	if r := runPerturbed(t, b, learn, []string{testutil.SysprofBin, "learn", "-p", profile, "--", "sh", "-c", script}); r.Code != 0 {
		t.Fatalf("learn: %s", r)
	}
	if p := loadProfile(t, profile); !strings.Contains(string(mustRead(t, profile)), "/dev/tty") {
		t.Fatalf("control: the profile has no /dev/tty rule (the terminal family): %v", p.Filesystem.Write)
	}
	rep := filepath.Join(root, "tty-report.json")
	tty := perturbation{name: "tty", stdout: "tty", stdin: "tty"}
	r := runPerturbed(t, b, tty, []string{testutil.SysprofBin, "enforce", "-p", profile, "--report", rep, "--", "sh", "-c", script})
	testutil.MustCode(t, "enforce at a terminal", r, 0)
	if !strings.Contains(r.Stdout, "done") {
		t.Errorf("enforce at a terminal: output lacks done:\n%s", r)
	}
	for _, d := range testutil.ReadReport(t, rep).Denials {
		t.Errorf("denial at a terminal: [%s] %s by %s: suggest %q", d.Kind, d.What, d.Exe, d.Suggest)
	}
}

// TestPagerHistoryLearnedAtATerminal (issue 15): less saves its history through
// $HOME/.lesshsQ renamed to $HOME/.lesshst; learned (git log at a terminal), that write made
// every enforce exit 125 for a HOME outside /tmp ("its directory is too broad"). Here the save
// is done by hand, as less does it, by a user whose HOME is not under /tmp.
func TestPagerHistoryLearnedAtATerminal(t *testing.T) {
	testutil.RequireRoot(t)
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		t.Fatal(err)
	}
	root, err := os.MkdirTemp(cache, "sysprof-e2e-pager-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	b := newBox(t, root, "x", "alice", filepath.Join("src", "project"), "")
	writeNotes(t, b)
	profile := filepath.Join(root, "profile.yaml")
	script := `cat notes.txt && echo '.less-history-file:' >"$HOME/.lesshsQ" && mv "$HOME/.lesshsQ" "$HOME/.lesshst"; echo done`
	testutil.MustCode(t, "learn", b.Sysprof(t, "learn", "-p", profile, "--", "sh", "-c", script), 0)
	for _, w := range loadProfile(t, profile).Filesystem.Write {
		if strings.Contains(w.Path, "lesshs") {
			t.Errorf("learn granted the pager history: write %s", w.Path)
		}
	}
	rep := filepath.Join(root, "report.json")
	r := b.Sysprof(t, "enforce", "-p", profile, "--report", rep, "--", "sh", "-c", script)
	if r.Code == 125 {
		t.Fatalf("enforce refused the profile: %s", r)
	}
	if !strings.Contains(r.Stdout, "done") {
		t.Errorf("enforce: output lacks done:\n%s", r)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestPagerAtATerminal (issue 24 item 4): git log -p at a terminal pages through less, which
// reads $HOME/.lesshst and saves it through $HOME/.lesshsQ. Learned once at a terminal, the
// next runs at a terminal have zero denials: learn and the sandbox run less with
// LESSHISTFILE=- (it reads and saves none), so the profile asks for nothing in $HOME.
func TestPagerAtATerminal(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireTools(t, hostPath, "git")
	testutil.RequireTools(t, hostPath, "less")
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		t.Fatal(err)
	}
	root, err := os.MkdirTemp(cache, "sysprof-e2e-less-") // a HOME outside /tmp, as a user's is
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	b := newBox(t, root, "x", "alice", filepath.Join("src", "project"), "")
	gitRepo(t, b)
	profile := filepath.Join(root, "profile.yaml")
	// git pages with less (LESS=FRX: it prints and exits when the text fits the screen).
	tty := perturbation{name: "tty", stdout: "tty", stdin: "tty", env: []string{"GIT_PAGER=less", "TERM=xterm"}}
	argv := []string{"git", "log", "-p"}
	if r := runPerturbed(t, b, tty, append([]string{testutil.SysprofBin, "learn", "-p", profile, "--"}, argv...)); r.Code != 0 {
		t.Fatalf("learn at a terminal: %s", r)
	}
	// learn runs less as enforce does, without a history (paths.LearnEnv): the control is that
	// it paged at all.
	if p := loadProfile(t, profile); !slices.ContainsFunc(p.Filesystem.Exec, func(r policy.PathRule) bool { return strings.HasSuffix(r.Path, "/less") }) {
		t.Fatalf("control: less did not run in the learn run: the test does not page: %v", p.Filesystem.Exec)
	}
	if _, err := os.Stat(filepath.Join(b.Home, ".lesshst")); err == nil {
		t.Errorf("learn let less save a history in $HOME (LESSHISTFILE=- is learn's too)")
	}
	for i := range 2 {
		rep := filepath.Join(root, "report.json")
		r := runPerturbed(t, b, tty, append([]string{testutil.SysprofBin, "enforce", "-p", profile, "--report", rep, "--"}, argv...))
		testutil.MustCode(t, "enforce at a terminal", r, 0)
		if !strings.Contains(r.Stdout, "notes") {
			t.Errorf("run %d: the log is not in the output:\n%s", i, r)
		}
		for _, d := range testutil.ReadReport(t, rep).Denials {
			t.Errorf("run %d: denial at a terminal: [%s] %s by %s: suggest %q", i, d.Kind, d.What, d.Exe, d.Suggest)
		}
	}
}

// TestNodeReopensItsTerminal (issue 24 item 4): node at a terminal reopens it by name
// (/dev/pts/N, a number no profile can know) and puts the new descriptor over its stdio with
// dup3. Learned with its output to a file, it runs at a terminal with zero denials and the same
// output, as root and as an ordinary user on a terminal of its own (script).
func TestNodeReopensItsTerminal(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireTools(t, hostPath, "node")
	testutil.RequireTools(t, hostPath, "script")
	testutil.RequireTools(t, hostPath, "setpriv")
	root := t.TempDir()
	b := newBox(t, root, "x", "alice", filepath.Join("src", "project"), "")
	testutil.WriteFile(t, filepath.Join(b.Work, "a.js"), "console.log('tty', Boolean(process.stdout.isTTY))\n", 0o644)
	profile := filepath.Join(root, "profile.yaml")
	argv := []string{"node", "a.js"}
	learn := perturbation{name: "learn", stdout: "file", stdin: "null"}
	if r := runPerturbed(t, b, learn, append([]string{testutil.SysprofBin, "learn", "-p", profile, "--"}, argv...)); r.Code != 0 {
		t.Fatalf("learn: %s", r)
	}
	openForNobody(t, root)
	tty := perturbation{name: "tty", stdout: "tty", stdin: "tty"}
	rep := filepath.Join(root, "root-report.json")
	r := runPerturbed(t, b, tty, append([]string{testutil.SysprofBin, "enforce", "-p", profile, "--report", rep, "--"}, argv...))
	testutil.MustCode(t, "enforce at a terminal", r, 0)
	if !strings.Contains(r.Stdout, "tty true") {
		t.Errorf("enforce at a terminal: node did not see its terminal:\n%s", r)
	}
	for _, d := range testutil.ReadReport(t, rep).Denials {
		t.Errorf("root at a terminal: denial [%s] %s by %s: suggest %q", d.Kind, d.What, d.Exe, d.Suggest)
	}
	// An ordinary user's own terminal (script makes one owned by it), running the test's build.
	if err := os.Chmod(filepath.Dir(testutil.SysprofBin), 0o755); err != nil {
		t.Fatal(err)
	}
	chownTree(t, b.Work, 65534)
	chownTree(t, b.Home, 65534)
	rep = filepath.Join(root, "user-report.json")
	enforce := strings.Join([]string{testutil.SysprofBin, "enforce", "-p", profile, "--report", rep, "--", "node", "a.js"}, " ")
	pipe := perturbation{name: "user-tty", stdout: "pipe", stdin: "null"}
	r = runPerturbed(t, b, pipe, []string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "script", "-qec", enforce, "/dev/null"})
	testutil.MustCode(t, "enforce at an ordinary user's terminal", r, 0)
	if !strings.Contains(r.Stdout, "tty true") {
		t.Errorf("enforce at an ordinary user's terminal: node did not see its terminal:\n%s", r)
	}
	for _, d := range testutil.ReadReport(t, rep).Denials {
		t.Errorf("ordinary user at a terminal: denial [%s] %s by %s: suggest %q", d.Kind, d.What, d.Exe, d.Suggest)
	}
}

// TestPagerLearnedWithoutATerminal (issue 24 item 4): git log -p learned with its output to a
// file never pages; at a terminal git would start less through a pipe (pipe2, fork, exec: a
// denial every run). The profile runs no pager, so the sandbox gives git GIT_PAGER=cat: the log
// goes to the terminal as it went to the file, with zero denials.
func TestPagerLearnedWithoutATerminal(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireTools(t, hostPath, "git")
	root := t.TempDir()
	b := newBox(t, root, "x", "alice", filepath.Join("src", "project"), "")
	gitRepo(t, b)
	b.Extra = slices.DeleteFunc(b.Extra, func(kv string) bool { return strings.HasPrefix(kv, "GIT_PAGER=") })
	profile := filepath.Join(root, "profile.yaml")
	argv := []string{"git", "log", "-p"}
	learn := perturbation{name: "learn", stdout: "file", stdin: "null"}
	if r := runPerturbed(t, b, learn, append([]string{testutil.SysprofBin, "learn", "-p", profile, "--"}, argv...)); r.Code != 0 {
		t.Fatalf("learn: %s", r)
	}
	rep := filepath.Join(root, "report.json")
	tty := perturbation{name: "tty", stdout: "tty", stdin: "tty", env: []string{"TERM=xterm"}}
	r := runPerturbed(t, b, tty, append([]string{testutil.SysprofBin, "enforce", "-p", profile, "--report", rep, "--"}, argv...))
	testutil.MustCode(t, "enforce at a terminal", r, 0)
	if !strings.Contains(r.Stdout, "notes") {
		t.Errorf("the log is not in the output:\n%s", r)
	}
	for _, d := range testutil.ReadReport(t, rep).Denials {
		t.Errorf("denial at a terminal: [%s] %s by %s: suggest %q", d.Kind, d.What, d.Exe, d.Suggest)
	}
}
