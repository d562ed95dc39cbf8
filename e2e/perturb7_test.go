package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/internal/testutil"
)

// The seventh perturbation round (issue 24, what the hidden matrices may hold that the other
// tables lack): how the command is scheduled (ionice, taskset, ulimit -s unlimited), its stdin
// closed and its stderr into a file, where TMPDIR is (unset, a path with spaces), PATH with
// relative entries, a locale the host lacks by its everyday name (en_US.UTF-8), colour forced
// by CLICOLOR_FORCE, a checkout ~250 bytes deep, and its files dated an hour back (a second
// run at another hour); each learned into a file and at a terminal, enforced and drifted.
// Not here: the clock set back (faketime: TestPerturbationsEight) and systemd-run --scope (the
// machines run no systemd).

var perturb7Dims = []perturbation{
	{name: "ionice-idle", stdout: "pipe", stdin: "null", wrap: []string{"ionice", "-c", "3"}},
	{name: "taskset-one-cpu", stdout: "pipe", stdin: "null", wrap: []string{"taskset", "-c", "0"}},
	{name: "ulimit-s-unlimited", stdout: "pipe", stdin: "null", wrap: shWrap("ulimit -s unlimited")},
	{name: "stdin-closed", stdout: "pipe", stdin: "closed"},
	{name: "stderr-to-file", stdout: "pipe", stdin: "null", wrap: []string{"sh", "-c", `f=$(mktemp) && exec 2>"$f" "$@"`, "sh"}},
	{name: "tmpdir-unset", stdout: "pipe", stdin: "null", unset: []string{"TMPDIR"}},
	{name: "tmpdir-spaces", stdout: "pipe", stdin: "null", envf: func(b *testutil.Box) []string {
		// Outside the tree (a listing of it stays the same), the tree owner's.
		d := filepath.Join(filepath.Dir(b.Work), "my temp files")
		var st unix.Stat_t
		if err := os.MkdirAll(d, 0o755); err != nil || unix.Stat(b.Work, &st) != nil || os.Lchown(d, int(st.Uid), int(st.Gid)) != nil {
			panic("make TMPDIR with spaces: " + d)
		}
		return []string{"TMPDIR=" + d}
	}},
	{name: "path-relative", stdout: "pipe", stdin: "null", envf: func(b *testutil.Box) []string {
		// node_modules/.bin, bin and the empty entry (the cwd) first, as a project's shell
		// setup adds them.
		path := os.Getenv("PATH")
		for _, kv := range b.Environ() {
			if v, ok := strings.CutPrefix(kv, "PATH="); ok {
				path = v
			}
		}
		return []string{"PATH=node_modules/.bin:bin::" + path}
	}},
	{name: "lang-en-us", stdout: "pipe", stdin: "null", env: []string{"LANG=en_US.UTF-8"}},
	{name: "clicolor-force", stdout: "pipe", stdin: "null", env: []string{"CLICOLOR_FORCE=1", "CLICOLOR=1"}},
	{name: "long-cwd", stdout: "pipe", stdin: "null", place: "long"},
	{name: "past-mtimes", stdout: "pipe", stdin: "null"},
}

// perturb7Edit readies a run's state: past-mtimes dates every file of the tree an hour back.
func perturb7Edit(t *testing.T, b *testutil.Box, pt perturbation) {
	t.Helper()
	if pt.name != "past-mtimes" {
		return
	}
	when := time.Now().Add(-time.Hour)
	err := filepath.Walk(b.Work, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.Mode()&os.ModeSymlink != 0 {
			return err
		}
		return os.Chtimes(p, when, when)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// perturb7Commands: the light commands of treeEnvCommands and go version (Go's scheduler
// sleeps by timing: the sleep family is in every profile).
var perturb7Commands = append(byNameEveryday(treeEnvCommands, "git-status", "git-log", "cc", "python3", "node"),
	everyday{name: "go-version", need: []string{"go"}, argv: []string{"go", "version"}, setup: gitTree(writeNotes)})

func byNameEveryday(eds []everyday, names ...string) []everyday {
	var out []everyday
	for _, ed := range eds {
		if slices.Contains(names, ed.name) {
			out = append(out, ed)
		}
	}
	return out
}

// TestPerturbationsSeven: each command learned once into a file and once at a terminal, then
// run under this round's dimensions unsandboxed and enforced: the same exit code and output,
// zero denials, and drift finds nothing that widens the profile.
func TestPerturbationsSeven(t *testing.T) {
	testutil.RequireRoot(t)
	for _, ed := range perturb7Commands {
		t.Run(ed.name, func(t *testing.T) {
			h := perturbHooks{edit: perturb7Edit, output: func(t *testing.T, b *testutil.Box, r testutil.Result) testutil.Result {
				r.Stdout = dropSysprofLines(r.Stdout)
				return ed.output(t, b, r)
			}}
			t.Run("learned-to-file", func(t *testing.T) { learnThenPerturb(t, ed, perturb7Dims, h) })
			th := h
			th.learn = &learnedAtTTY
			t.Run("learned-at-tty", func(t *testing.T) { learnThenPerturb(t, ed, perturb7Dims, th) })
		})
	}
}
