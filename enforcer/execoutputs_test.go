package enforcer

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/paths"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/seccomp"
)

// In a fresh checkout an exec rule's output directory (target/, out/, node_modules/) does not
// exist yet, so the work tree is staged for it and Landlock can only grant exec on the work
// tree. The staged work tree is then noexec as a whole: the output directories are bound exec
// when the command makes them (ExecOutputs), a shipped file an exec rule names stays
// exec-mappable (ExecKeep), and nothing else the tree has is. The guard's view of exec is the
// mounts' (an execve of ./evil refused by noexec is the sandbox's denial, not a file mode's).
// A program written right in an existing directory (go build -o app && ./app) is bound exec,
// the file alone, when the command execs it (ExecFiles: every execve goes to the supervisor);
// a library written so (the loader maps it, no exec the supervisor sees) keeps the stage exec,
// noted.
func TestFreshOutputDirsAreBoundExecWhenMade(t *testing.T) {
	work, home := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "configure"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(work, "web"), 0o755)
	env := Env{Vars: map[string]string{"WORKDIR": work, "HOME": home, "TMPDIR": "/tmp"}, Arch: "x86_64"}
	p := testProfile()
	p.Filesystem.Write = rulesOf("$WORKDIR/target", "$WORKDIR/node_modules", "$WORKDIR/out/app", "$WORKDIR/web/build/gen/**")
	p.Filesystem.Exec = append(p.Filesystem.Exec, rulesOf(
		"$WORKDIR/target/debug/build/app-*/build-script-build", "$WORKDIR/target/debug/deps/*",
		"$WORKDIR/node_modules/.bin/*", // npm: learned in a fresh checkout
		"$WORKDIR/out/app",             // learned in a warm tree: the file itself
		"$WORKDIR/web/build/gen/tool",  // a deeper output below an existing directory
		"$WORKDIR/configure")...)       // shipped, run by the build
	c, err := Compile(p, env)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(stageDirsOf(c.Stages), []string{work}) {
		t.Fatalf("stages %v, want the work tree", stageDirsOf(c.Stages))
	}
	if !slices.Contains(c.Plan.NoExec, work) {
		t.Errorf("noexec %v: the staged work tree must be noexec (its shipped files must not map executable)", c.Plan.NoExec)
	}
	want := []string{filepath.Join(work, "node_modules"), filepath.Join(work, "out"), filepath.Join(work, "target"), filepath.Join(work, "web/build")}
	if !slices.Equal(c.Plan.ExecOutputs, want) {
		t.Errorf("exec outputs %v, want %v", c.Plan.ExecOutputs, want)
	}
	if !slices.Contains(c.Plan.ExecKeep, filepath.Join(work, "configure")) {
		t.Errorf("exec keep %v: the shipped configure an exec rule names must stay executable", c.Plan.ExecKeep)
	}
	ll := c.stageExec.mountExec(c.Plan.Landlock)
	if slices.ContainsFunc(ll.Exec, func(e string) bool { return paths.Within(work, e) }) {
		t.Errorf("the guard's exec view %v covers the work tree", ll.Exec)
	}
	if !slices.Contains(ll.Exec, filepath.Join(work, "target")) {
		t.Errorf("the guard's exec view %v lacks target/", ll.Exec)
	}

	// A program right in the work tree: that file alone, at its exec.
	execSupervised := func(c *Compiled) bool {
		a := c.spec.ABIs[0]
		r := a.Rules[uint32(a.Info.SyscallNames["execve"])]
		return r != nil && slices.ContainsFunc(r.Checks, func(ch seccomp.Check) bool { return ch.Why == seccomp.WhyExec })
	}
	if execSupervised(c) {
		t.Error("execve supervised without exec output files")
	}
	p.Filesystem.Write = append(p.Filesystem.Write, rulesOf("$WORKDIR/app")...)
	p.Filesystem.Exec = append(p.Filesystem.Exec, rulesOf("$WORKDIR/app")...)
	p.Binaries = append(p.Binaries, policy.Binary{Path: "$WORKDIR/app"})
	if c, err = Compile(p, env); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(c.Plan.NoExec, work) || !slices.Equal(c.Plan.ExecFiles, []string{filepath.Join(work, "app")}) || !execSupervised(c) {
		t.Errorf("noexec %v, exec files %v, execve supervised %v: a program right in the work tree is bound alone at its exec", c.Plan.NoExec, c.Plan.ExecFiles, execSupervised(c))
	}
	if ll := c.stageExec.mountExec(c.Plan.Landlock); slices.ContainsFunc(ll.Exec, func(e string) bool { return paths.Within(filepath.Join(work, "app"), e) }) {
		t.Errorf("the guard's exec view %v covers the program: a refusal of it would not be on the record", ll.Exec)
	}

	// A library right in the work tree: the stage stays exec as before, and says so.
	p.Filesystem.Write = append(p.Filesystem.Write, rulesOf("$WORKDIR/lib.so")...)
	p.Filesystem.Exec = append(p.Filesystem.Exec, rulesOf("$WORKDIR/lib.so")...)
	c, err = Compile(p, env)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(c.Plan.NoExec, work) || len(c.Plan.ExecOutputs)+len(c.Plan.ExecFiles) > 0 {
		t.Errorf("noexec %v, exec outputs %v, files %v: a library right in the work tree cannot be narrowed", c.Plan.NoExec, c.Plan.ExecOutputs, c.Plan.ExecFiles)
	}
	if !slices.ContainsFunc(c.Notes, func(n string) bool { return strings.Contains(n, "stays mappable executable as a whole") }) {
		t.Errorf("notes %q: the wide exec is not said", c.Notes)
	}
}

func TestMissingOutputDir(t *testing.T) {
	w := t.TempDir()
	os.MkdirAll(filepath.Join(w, "web"), 0o755)
	for _, c := range []struct{ x, k, want string }{
		{w + "/target/debug/deps/*", w + "/target", w + "/target"},
		{w + "/out/app", w + "/out/app", w + "/out"},
		{w + "/web/build/a/b", w + "/web/build/a", w + "/web/build"},
		{w + "/target/x", w + "/target/**", w + "/target"},
		{w + "/app", w + "/app", ""},                                // right in the work tree
		{w + "/web/x", w + "/web", ""},                              // exists
		{w + "/target/debug/deps/*", w + "/target*", w + "/target"}, // cargo learned in a fresh checkout
		{w + "/target-x", w + "/target*", ""},                       // a file right in the work tree
		{w + "/web/build/a/b", w + "/web/*/a", w + "/web/build"},
		{w + "/web/x/y", w + "/web/**", w + "/web/x"},
	} {
		if got := missingOutputDir(c.x, c.k); got != c.want {
			t.Errorf("missingOutputDir(%s, %s) = %q, want %q", c.x, c.k, got, c.want)
		}
	}
}

// With exec outputs in the plan every mkdir and mkdirat goes to the supervisor (which has the
// init stage make an output directory and bind it before the call returns); without, none does.
func TestExecOutputsSuperviseMkdirs(t *testing.T) {
	work := t.TempDir()
	env := Env{Vars: map[string]string{"WORKDIR": work, "HOME": t.TempDir(), "TMPDIR": "/tmp"}, Arch: "x86_64"}
	p := testProfile()
	for _, n := range []string{"mkdir", "mkdirat"} {
		p.Syscalls.Allow = append(p.Syscalls.Allow, policy.Syscall{Name: n})
	}
	p.Filesystem.Write = rulesOf("$WORKDIR/out")
	supervised := func(c *Compiled) bool {
		a := c.spec.ABIs[0]
		r := a.Rules[uint32(a.Info.SyscallNames["mkdirat"])]
		return r != nil && slices.ContainsFunc(r.Checks, func(ch seccomp.Check) bool { return ch.Why == seccomp.WhyMkdir })
	}
	c, err := Compile(p, env)
	if err != nil {
		t.Fatal(err)
	}
	if supervised(c) {
		t.Error("mkdirat supervised without exec outputs")
	}
	p.Filesystem.Exec = append(p.Filesystem.Exec, rulesOf("$WORKDIR/out/app")...)
	if c, err = Compile(p, env); err != nil {
		t.Fatal(err)
	}
	if len(c.Plan.ExecOutputs) == 0 || !supervised(c) {
		t.Errorf("exec outputs %v: mkdirat not supervised", c.Plan.ExecOutputs)
	}
}
