package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sysprof/sysprof/internal/testutil"
)

// ioConditions are where a command's streams go in an ordinary run: at a terminal (its
// controlling terminal, 80x24, as a shell's job), into a file, /dev/null or a pipe, or with
// stdin and stdout closed (`cmd <&- >&-`). TERM is set at the terminal only, as in a CI job.
var ioConditions = []perturbation{
	{name: "tty", stdout: "tty", stdin: "tty", ctty: true, env: []string{"TERM=xterm"}},
	{name: "file", stdout: "file", stdin: "null"},
	{name: "null", stdout: "null", stdin: "null"},
	{name: "pipe", stdout: "pipe", stdin: "null"},
	{name: "closed", stdout: "pipe", stdin: "null", wrap: []string{"sh", "-c", `exec <&- >&- "$@"`, "sh"}},
}

// matrixCommand is an everyday command of the I/O matrix.
type matrixCommand struct {
	name  string
	need  []string
	argv  []string
	setup func(t *testing.T, b *testutil.Box)
	clean []string // removed (in the work dir) before each run
	// before readies the box for each run (git: an index racily clean again).
	before func(t *testing.T, b *testutil.Box)
}

var matrixCommands = []matrixCommand{
	// git pages with less at a terminal (GIT_PAGER unset: less -FRX, git's default).
	{name: "git-log-p", need: []string{"git", "less"}, argv: []string{"git", "log", "-p"}, setup: gitRepoPaged, before: racyIndex},
	{name: "git-status", need: []string{"git"}, argv: []string{"git", "status"}, setup: gitRepoPaged, before: racyIndex},
	{name: "sh-pipeline", need: []string{"sh", "cat", "sort", "head"}, argv: []string{"sh", "-c", "cat notes.txt | sort | head -n 2"}, setup: writeNotes},
	{name: "python3", need: []string{"python3"}, argv: []string{"python3", "-c", "import sys, os; print(sys.stdout is not None and sys.stdout.isatty()); print(os.get_terminal_size(2) if os.isatty(2) else 'no terminal', file=sys.stderr)"}},
	{name: "node", need: []string{"node"}, argv: []string{"node", "-e", "console.log('tty', Boolean(process.stdout.isTTY), process.stdout.columns || 0)"}},
	{name: "go-version", need: []string{"go"}, argv: []string{"go", "version"}},
	{name: "cc-c", need: []string{"cc"}, argv: []string{"cc", "-c", "hello.c", "-o", "hello.o"}, setup: helloC, clean: []string{"hello.o"}},
	{name: "less", need: []string{"less"}, argv: []string{"less", "-FRX", "notes.txt"}, setup: writeNotes},
	{name: "grep-color", need: []string{"grep"}, argv: []string{"grep", "--color=auto", "-n", "line", "notes.txt"}, setup: writeNotes},
	// bash opens /dev/tty at start and, where that fails (no controlling terminal in the
	// sandbox), asks ttyname(0): policy.TerminalCalls.
	{name: "bash", need: []string{"bash"}, argv: []string{"bash", "-c", "cd .. && echo ~ && ls >/dev/null"}},
}

// gitRepoPaged is gitRepo with git's default pager (less at a terminal).
func gitRepoPaged(t *testing.T, b *testutil.Box) {
	gitRepo(t, b)
	b.Extra = slices.DeleteFunc(b.Extra, func(kv string) bool { return strings.HasPrefix(kv, "GIT_PAGER=") })
}

// racyIndex gives the index and notes.txt one mtime, as a commit made in the second the file
// was written does: the entry is "racily clean", and a reading git command refreshes the index
// (a write into .git, by timing alone) unless told not to (GIT_OPTIONAL_LOCKS=0).
func racyIndex(t *testing.T, b *testutil.Box) {
	when := time.Unix(1700000000, 0)
	for _, p := range []string{"notes.txt", filepath.Join(".git", "index")} {
		if err := os.Chtimes(filepath.Join(b.Work, p), when, when); err != nil {
			t.Fatal(err)
		}
	}
}

func helloC(t *testing.T, b *testutil.Box) {
	testutil.WriteFile(t, filepath.Join(b.Work, "hello.c"), "int hello(void) { return 42; }\n", 0o644)
}

// TestIOMatrix (issue 24 items 4 and 8): each everyday command learned once under each I/O
// condition runs under every condition, enforced and drifted: the same exit status as
// unsandboxed, zero denials, and nothing that widens the profile. A profile learned at a
// terminal holds into a file, and the reverse; families close the same way whatever member a
// condition picked.
func TestIOMatrix(t *testing.T) {
	testutil.RequireRoot(t)
	for _, mc := range matrixCommands {
		t.Run(mc.name, func(t *testing.T) {
			for _, n := range mc.need {
				testutil.RequireTools(t, hostPath, n)
			}
			root := t.TempDir()
			b := newBox(t, root, "x", "alice", filepath.Join("src", "project"), "")
			if mc.setup != nil {
				mc.setup(t, b)
			}
			clean := func() {
				if mc.before != nil {
					mc.before(t, b)
				}
				for _, c := range mc.clean {
					if err := os.RemoveAll(filepath.Join(b.Work, c)); err != nil {
						t.Fatal(err)
					}
				}
			}
			run := func(pt perturbation, argv ...string) testutil.Result {
				clean()
				return runPerturbed(t, b, pt, append(slicesClone(pt.wrap), argv...))
			}
			// What each condition gives unsandboxed, once. Enforce hands the command a closed
			// stdin or stdout closed (internal/stdiofds); learn runs it with them on the
			// /dev/null Go's runtime opened over them before sysprof's main, so that it learns
			// the command's whole work (bash's echo into a closed stdout fails and stops
			// `echo ~ && ls`: a profile learned so denied ls's clone everywhere else).
			want, learnWant := map[string]int{}, map[string]int{}
			for _, pt := range ioConditions {
				want[pt.name] = run(pt, mc.argv...).Code
				learnWant[pt.name] = want[pt.name]
			}
			learnWant["closed"] = want["null"]
			for _, learned := range ioConditions {
				profile := filepath.Join(root, learned.name+".yaml")
				if r := run(learned, append([]string{testutil.SysprofBin, "learn", "-p", profile, "--"}, mc.argv...)...); r.Code != learnWant[learned.name] {
					t.Fatalf("learn at %s: exit %d, unsandboxed %d\n%s", learned.name, r.Code, learnWant[learned.name], r)
				}
				for _, pt := range ioConditions {
					rep := filepath.Join(root, "report.json")
					os.Remove(rep)
					r := run(pt, append([]string{testutil.SysprofBin, "enforce", "-p", profile, "--report", rep, "--"}, mc.argv...)...)
					if r.Code != want[pt.name] {
						t.Errorf("learned at %s, enforced at %s: exit %d, unsandboxed %d\n%s", learned.name, pt.name, r.Code, want[pt.name], r)
					}
					for _, d := range testutil.ReadReport(t, rep).Denials {
						t.Errorf("learned at %s, enforced at %s: denial [%s] %s by %s: suggest %q", learned.name, pt.name, d.Kind, d.What, d.Exe, d.Suggest)
					}
					dr := run(pt, append([]string{testutil.SysprofBin, "drift", "--fail-on", "low", "-p", profile, "--"}, mc.argv...)...)
					if dr.Code != 0 && !(dr.Code == want[pt.name] && dr.Code != 1) {
						t.Errorf("learned at %s, drifted at %s: exit %d:\n%s%s", learned.name, pt.name, dr.Code, dr.Stdout, dr.Stderr)
					}
				}
			}
		})
	}
}

// TestManLearnedAtTerminal: man learned at a terminal runs its page through `col -bpx` into a
// file, a pipe or /dev/null (paths.Companions): enforced there with zero denials and the
// unsandboxed run's output, and drift finds nothing new. (Learned into a file and run at a
// terminal, man hands the page to a pager the learn never saw: not closed.)
func TestManLearnedAtTerminal(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireTools(t, hostPath, "man", "col")
	root := t.TempDir()
	b := newBox(t, root, "x", "alice", filepath.Join("src", "project"), "")
	argv := []string{"man", "-P", "cat", "ls"}
	profile := filepath.Join(root, "man.yaml")
	learned := ioConditions[slices.IndexFunc(ioConditions, func(p perturbation) bool { return p.name == "tty" })]
	if r := runPerturbed(t, b, learned, append([]string{testutil.SysprofBin, "learn", "-p", profile, "--"}, argv...)); r.Code != 0 {
		t.Fatalf("learn at a terminal: %s", r)
	}
	for _, pt := range byName(ioConditions, "file", "pipe", "null") {
		want := runPerturbed(t, b, pt, argv)
		rep := filepath.Join(root, pt.name+"-report.json")
		got := runPerturbed(t, b, pt, append([]string{testutil.SysprofBin, "enforce", "-p", profile, "--report", rep, "--"}, argv...))
		if got.Code != want.Code || got.Stdout != want.Stdout {
			t.Errorf("enforced into %s: exit %d, unsandboxed %d; same output: %v\n%s", pt.name, got.Code, want.Code, got.Stdout == want.Stdout, got.Stderr)
		}
		for _, d := range testutil.ReadReport(t, rep).Denials {
			t.Errorf("enforced into %s: denial [%s] %s by %s: suggest %q", pt.name, d.Kind, d.What, d.Exe, d.Suggest)
		}
		if dr := runPerturbed(t, b, pt, append([]string{testutil.SysprofBin, "drift", "--fail-on", "low", "-p", profile, "--"}, argv...)); dr.Code != 0 {
			t.Errorf("drifted into %s: exit %d:\n%s", pt.name, dr.Code, dr.Stderr)
		}
	}
}
