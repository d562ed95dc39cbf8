package changeset

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/internal/testutil"
)

// newRun begins a run with one stage over a fresh work tree (made by setup) in a state
// directory of the test's own.
func newRun(t *testing.T, setup func(w string), keep []string) (*Run, string) {
	t.Helper()
	t.Setenv("SYSPROF_STATE_DIR", filepath.Join(t.TempDir(), "runs"))
	w := filepath.Join(t.TempDir(), "w")
	if err := os.Mkdir(w, 0o755); err != nil {
		t.Fatal(err)
	}
	if setup != nil {
		setup(w)
	}
	// Host files made before the run started must be older than it (ctime granularity).
	time.Sleep(20 * time.Millisecond)
	r, err := Begin(Run{Command: []string{"make"}, WorkDir: w})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.unlock() })
	var k []string
	for _, x := range keep {
		k = append(k, filepath.Join(w, x))
	}
	rules := Rules{Dir: w, Tree: w, Keep: k, Protected: []string{filepath.Join(w, ".git")},
		ExecOK: []string{filepath.Join(w, "build")}, Vars: map[string]string{"WORKDIR": w}}
	if _, err := r.AddStage(rules, os.Getuid(), os.Getgid()); err != nil {
		t.Fatal(err)
	}
	return r, w
}

// inOverlay runs script (sh) in dir with the run's first stage mounted over it as the enforcer
// mounts it (userxattr, volatile), in a mount namespace of its own.
func inOverlay(t *testing.T, r *Run, script string) {
	t.Helper()
	testutil.RequireRoot(t)
	s := r.Stages[0]
	opts := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s,userxattr,volatile", s.Rules.Dir, s.Upper, s.Work)
	cmd := exec.Command("unshare", "-m", "--propagation", "private", "sh", "-euc",
		`mount -t overlay overlay -o "$1" "$2"; cd "$2"; eval "$3"`, "sh", opts, s.Rules.Dir, script)
	out, err := cmd.CombinedOutput()
	testutil.RequireNoErr(t, "unshare + overlay mount", err)
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
}

func write(t *testing.T, p, content string, mode os.FileMode) {
	t.Helper()
	testutil.WriteFile(t, p, content, mode)
}

func byPath(cs []Change) map[string]Change {
	m := map[string]Change{}
	for _, c := range cs {
		m[c.Rel] = c
	}
	return m
}

func scan(t *testing.T, r *Run) map[string]Change {
	t.Helper()
	cs, err := r.Scan()
	if err != nil {
		t.Fatal(err)
	}
	return byPath(cs)
}

func wantClass(t *testing.T, m map[string]Change, rel string, op Op, class Class) {
	t.Helper()
	c, ok := m[rel]
	if !ok {
		t.Errorf("%s: no change; have %v", rel, keys(m))
		return
	}
	if c.Op != op || c.Class != class {
		t.Errorf("%s: %s %s (%s), want %s %s", rel, c.Op, c.Class, c.Reason, op, class)
	}
}

func keys(m map[string]Change) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func exists(p string) bool { _, err := os.Lstat(p); return err == nil }

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestOverlayScanApply: what a command does in a real overlay comes out as classified changes;
// learned ones apply, the rest stay held until named.
func TestOverlayScanApply(t *testing.T) {
	r, w := newRun(t, func(w string) {
		write(t, filepath.Join(w, "a.txt"), "a\n", 0o644)
		write(t, filepath.Join(w, "del.txt"), "gone\n", 0o644)
		write(t, filepath.Join(w, "mode.txt"), "same\n", 0o644)
		write(t, filepath.Join(w, "old/x"), "x\n", 0o644)
		write(t, filepath.Join(w, "build/stale.o"), "stale\n", 0o644)
		write(t, filepath.Join(w, ".git/HEAD"), "ref: refs/heads/main\n", 0o644)
	}, []string{"build/**"})
	inOverlay(t, r, `
		echo obj > build/a.o
		rm build/stale.o
		echo new > newfile.txt
		echo more >> a.txt
		rm del.txt
		chmod 600 mode.txt
		rm -r old
		mkdir -p builddir/sub && echo y > builddir/sub/y
		echo '#!/bin/sh' > build/tool && chmod 755 build/tool
		mkdir -p .git/hooks && echo '#!/bin/sh' > .git/hooks/pre-commit
		ln -s ../../../../etc/passwd build/passwd
		ln -s a.o build/latest
		echo ln > build/l1 && ln build/l1 build/l2
		mkfifo build/fifo
		cp /bin/true build/su && chmod 4755 build/su
		mkdir -p build/lib/site-packages && echo 'import os' > build/lib/site-packages/evil.pth
		echo 'echo hi' > script.sh && chmod +x script.sh
	`)
	m := scan(t, r)
	wantClass(t, m, "build/a.o", OpCreate, Learned)
	wantClass(t, m, "build/stale.o", OpDelete, Learned)
	wantClass(t, m, "build/tool", OpCreate, Learned)
	wantClass(t, m, "build/latest", OpSymlink, Learned)
	wantClass(t, m, "build/l1", OpCreate, Learned)
	wantClass(t, m, "build/l2", OpHardlink, Learned)
	wantClass(t, m, "newfile.txt", OpCreate, Held)
	wantClass(t, m, "a.txt", OpModify, Held)
	wantClass(t, m, "del.txt", OpDelete, Held)
	wantClass(t, m, "mode.txt", OpMode, Held)
	wantClass(t, m, "old", OpRmdir, Held)
	wantClass(t, m, "builddir", OpMkdir, Held)
	wantClass(t, m, "builddir/sub/y", OpCreate, Held)
	wantClass(t, m, ".git/hooks/pre-commit", OpCreate, Dangerous)
	wantClass(t, m, "build/passwd", OpSymlink, Dangerous)
	wantClass(t, m, "build/fifo", OpSpecial, Dangerous)
	wantClass(t, m, "build/su", OpCreate, Dangerous)
	wantClass(t, m, "build/lib/site-packages/evil.pth", OpCreate, Dangerous)
	wantClass(t, m, "script.sh", OpCreate, Dangerous)
	if _, ok := m["build"]; ok {
		t.Errorf("build (copied up, unchanged) reported as a change: %+v", m["build"])
	}

	res, err := r.Apply(ApplyLearned, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Errors) > 0 || len(res.Conflicts) > 0 {
		t.Fatalf("apply learned: %+v", res)
	}
	if got := readFile(t, filepath.Join(w, "build/a.o")); got != "obj\n" {
		t.Errorf("build/a.o = %q", got)
	}
	if exists(filepath.Join(w, "build/stale.o")) {
		t.Error("learned delete of build/stale.o not applied")
	}
	for _, p := range []string{"build/passwd", "build/fifo", "build/su", "build/lib/site-packages/evil.pth", "newfile.txt", "script.sh", ".git/hooks/pre-commit"} {
		if exists(filepath.Join(w, p)) {
			t.Errorf("%s reached the host under apply learned", p)
		}
	}
	if !exists(filepath.Join(w, "del.txt")) || readFile(t, filepath.Join(w, "a.txt")) != "a\n" {
		t.Error("held changes applied under apply learned")
	}
	var a, b unix.Stat_t
	if unix.Lstat(filepath.Join(w, "build/l1"), &a) != nil || unix.Lstat(filepath.Join(w, "build/l2"), &b) != nil || a.Ino != b.Ino {
		t.Error("hard link pair not applied as one inode")
	}

	// What stays is the held and dangerous rest, and only it.
	m = scan(t, r)
	for rel, c := range m {
		if c.Class == Learned {
			t.Errorf("%s: learned change still held after apply", rel)
		}
	}
	if _, ok := m["newfile.txt"]; !ok {
		t.Error("held newfile.txt lost by apply learned")
	}

	// Everything ordinary: held changes apply, dangerous ones stay.
	res, err = r.Apply(ApplyAll, nil)
	if err != nil || len(res.Errors) > 0 {
		t.Fatalf("apply all: %v %+v", err, res)
	}
	if readFile(t, filepath.Join(w, "newfile.txt")) != "new\n" || readFile(t, filepath.Join(w, "a.txt")) != "a\nmore\n" ||
		exists(filepath.Join(w, "del.txt")) || exists(filepath.Join(w, "old")) || readFile(t, filepath.Join(w, "builddir/sub/y")) != "y\n" {
		t.Error("held changes not applied by apply all")
	}
	if fi, err := os.Stat(filepath.Join(w, "mode.txt")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode.txt: %v %v, want 0600", fi.Mode(), err)
	}
	m = scan(t, r)
	if got := keys(m); !slices.Equal(got, []string{".git/hooks", ".git/hooks/pre-commit", "build/fifo", "build/lib/site-packages/evil.pth", "build/passwd", "build/su", "script.sh"}) {
		t.Errorf("left after apply all: %v, want only the dangerous ones", got)
	}
}

// TestApplySetuidStripped: a set-user-ID file never reaches the host with its bit, not even
// when named (the plant: a setuid binary in the work tree any local user could run).
func TestApplySetuidStripped(t *testing.T) {
	r, w := newRun(t, nil, []string{"build/**"})
	inOverlay(t, r, `mkdir build && cp /bin/true build/su && chmod 6755 build/su`)
	m := scan(t, r)
	wantClass(t, m, "build/su", OpCreate, Dangerous)
	res, err := r.Apply(ApplyAll, nil)
	if err != nil || exists(filepath.Join(w, "build/su")) {
		t.Fatalf("setuid file applied without being named: %v %+v", err, res)
	}
	res, err = r.Apply(ApplyNone, []string{filepath.Join(w, "build/su")})
	if err != nil || len(res.Applied) != 1 {
		t.Fatalf("named setuid file: %v %+v", err, res)
	}
	var st unix.Stat_t
	if err := unix.Stat(filepath.Join(w, "build/su"), &st); err != nil {
		t.Fatal(err)
	}
	if st.Mode&0o6000 != 0 {
		t.Fatalf("build/su installed with mode %o: set-id bits reached the host", st.Mode&0o7777)
	}
	if res.Applied[0].Stripped == "" {
		t.Error("stripping not reported")
	}
}

// TestApplyCapsStripped: file capabilities never reach the host.
func TestApplyCapsStripped(t *testing.T) {
	r, w := newRun(t, nil, []string{"build/**"})
	inOverlay(t, r, `mkdir build && cp /bin/true build/cap`)
	up := filepath.Join(r.Stages[0].Upper, "build/cap")
	// VFS_CAP_REVISION_2 with CAP_NET_RAW permitted+effective.
	capv2 := []byte{0x01, 0x00, 0x00, 0x02, 0x00, 0x20, 0x00, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	if err := unix.Setxattr(up, "security.capability", capv2, 0); err != nil {
		testutil.RequireNoErr(t, "set file capabilities", err)
	}
	m := scan(t, r)
	wantClass(t, m, "build/cap", OpCreate, Dangerous)
	res, err := r.Apply(ApplyNone, []string{filepath.Join(w, "build/cap")})
	if err != nil || len(res.Applied) != 1 {
		t.Fatalf("named file: %v %+v", err, res)
	}
	if n, err := unix.Getxattr(filepath.Join(w, "build/cap"), "security.capability", nil); err == nil && n > 0 {
		t.Fatal("file capabilities reached the host")
	}
}

// TestApplyACLStripped (issue 23): a POSIX ACL the run set (a grant to another local user,
// which ls shows only as a "+") never reaches the host with a learned file; the removal is on
// the record (Stripped).
func TestApplyACLStripped(t *testing.T) {
	r, w := newRun(t, nil, []string{"build/**"})
	inOverlay(t, r, `mkdir build && echo x > build/acl && chmod 600 build/acl`)
	up := filepath.Join(r.Stages[0].Upper, "build/acl")
	// user::rw- user:65534:rw- group::--- mask::rw- other::---
	acl := []byte{2, 0, 0, 0, 1, 0, 6, 0, 0xff, 0xff, 0xff, 0xff, 2, 0, 6, 0, 0xfe, 0xff, 0, 0, 4, 0, 0, 0, 0xff, 0xff, 0xff, 0xff,
		0x10, 0, 6, 0, 0xff, 0xff, 0xff, 0xff, 0x20, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}
	if err := unix.Setxattr(up, "system.posix_acl_access", acl, 0); err != nil {
		testutil.RequireNoErr(t, "set an ACL", err)
	}
	m := scan(t, r)
	wantClass(t, m, "build/acl", OpCreate, Learned)
	res, err := r.Apply(ApplyLearned, nil)
	if err != nil || len(res.Applied) != 2 {
		t.Fatalf("apply learned: %v %+v", err, res)
	}
	if n, err := unix.Getxattr(filepath.Join(w, "build/acl"), "system.posix_acl_access", nil); err == nil && n > 0 {
		t.Fatal("the run's ACL reached the host")
	}
	if !strings.Contains(res.Applied[1].Stripped, "ACL") {
		t.Errorf("the ACL's removal is not on the record: %q", res.Applied[1].Stripped)
	}
}

// TestApplyRefusesOutOfTreeSymlink: a learned output replaced by a symlink out of the tree (to
// ~/.bashrc) never lands, even when named.
func TestApplyRefusesOutOfTreeSymlink(t *testing.T) {
	r, w := newRun(t, func(w string) { write(t, filepath.Join(w, "build/out"), "real\n", 0o644) }, []string{"build/**"})
	inOverlay(t, r, `rm build/out && ln -s /root/.bashrc build/out`)
	m := scan(t, r)
	wantClass(t, m, "build/out", OpSymlink, Dangerous)
	res, err := r.Apply(ApplyAll, []string{filepath.Join(w, "build/out")})
	if err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(filepath.Join(w, "build/out"), &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		t.Fatalf("build/out on the host is no longer the regular file (err %v): the symlink landed", err)
	}
	if len(res.Refused) != 1 {
		t.Errorf("refusal not reported: %+v", res)
	}
}

// TestApplyPthHeld: a .pth dropped into a learned site-packages stays held.
func TestApplyPthHeld(t *testing.T) {
	r, w := newRun(t, func(w string) {
		write(t, filepath.Join(w, "venv/lib/python3.12/site-packages/pkg/__init__.py"), "", 0o644)
	}, []string{"venv/**"})
	inOverlay(t, r, `echo 'import os; os.system("id")' > venv/lib/python3.12/site-packages/zz.pth; echo x > venv/lib/python3.12/site-packages/pkg/mod.py`)
	res, err := r.Apply(ApplyLearned, nil)
	if err != nil {
		t.Fatal(err)
	}
	if exists(filepath.Join(w, "venv/lib/python3.12/site-packages/zz.pth")) {
		t.Fatal("the .pth start-up hook reached the host")
	}
	if !exists(filepath.Join(w, "venv/lib/python3.12/site-packages/pkg/mod.py")) {
		t.Errorf("the learned module did not: %+v", res)
	}
	if m := scan(t, r); m["venv/lib/python3.12/site-packages/zz.pth"].Class != Dangerous {
		t.Errorf("the .pth is not held as dangerous: %+v", m)
	}
}

// TestApplyBytecodeDropped: a bytecode cache the run wrote (a new __pycache__ and a .pyc
// replacing the host's) is never applied, though a Keep rule covers it and it is named or
// selected by --all, and it leaves the changeset; the source beside it is applied; the host's
// own .pyc stays as it was.
func TestApplyBytecodeDropped(t *testing.T) {
	r, w := newRun(t, func(w string) {
		write(t, filepath.Join(w, "gen/old.py"), "x = 1\n", 0o644)
		write(t, filepath.Join(w, "gen/__pycache__/old.cpython-311.pyc"), "host", 0o644)
	}, []string{"gen/**"})
	inOverlay(t, r, `mkdir -p gen/new/__pycache__; echo evil > gen/new/__pycache__/foo.cpython-311.pyc; echo evil > gen/__pycache__/old.cpython-311.pyc; echo y=2 > gen/new/foo.py`)
	m := scan(t, r)
	wantClass(t, m, "gen/new/__pycache__/foo.cpython-311.pyc", OpCreate, Dropped)
	wantClass(t, m, "gen/__pycache__/old.cpython-311.pyc", OpModify, Dropped)
	res, err := r.Apply(ApplyAll, []string{filepath.Join(w, "gen")})
	if err != nil {
		t.Fatal(err)
	}
	if exists(filepath.Join(w, "gen/new/__pycache__")) {
		t.Errorf("the run's bytecode cache reached the host: %+v", res)
	}
	if got := readFile(t, filepath.Join(w, "gen/__pycache__/old.cpython-311.pyc")); got != "host" {
		t.Errorf("the host's .pyc was replaced: %q", got)
	}
	if !exists(filepath.Join(w, "gen/new/foo.py")) {
		t.Errorf("the learned source did not reach the host: %+v", res)
	}
	if got := res.Report(r.ID).Dropped; got != 2 {
		t.Errorf("report: %d bytecode files dropped, want 2: %+v", got, res.Dropped)
	}
	if left := scan(t, r); len(left) != 0 {
		t.Errorf("the changeset still holds %v", keys(left))
	}
}

// TestApplyConflict: a host file that changed after the run started is never overwritten, and
// a file another writer created meanwhile is not replaced.
func TestApplyConflict(t *testing.T) {
	r, w := newRun(t, func(w string) {
		write(t, filepath.Join(w, "a.txt"), "before\n", 0o644)
		write(t, filepath.Join(w, "b.txt"), "before\n", 0o644)
	}, []string{"**"})
	inOverlay(t, r, `echo run > a.txt; echo run > b.txt; echo run > c.txt`)
	write(t, filepath.Join(w, "a.txt"), "user edit\n", 0o644) // the user, meanwhile
	write(t, filepath.Join(w, "c.txt"), "other run\n", 0o644) // another run, meanwhile
	res, err := r.Apply(ApplyLearned, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(w, "a.txt")); got != "user edit\n" {
		t.Errorf("a.txt = %q: the user's edit was overwritten", got)
	}
	if got := readFile(t, filepath.Join(w, "c.txt")); got != "other run\n" {
		t.Errorf("c.txt = %q: the other run's file was overwritten", got)
	}
	if got := readFile(t, filepath.Join(w, "b.txt")); got != "run\n" {
		t.Errorf("b.txt = %q: the unconflicted change was not applied", got)
	}
	if len(res.Conflicts) != 2 {
		t.Errorf("conflicts %+v, want a.txt and c.txt", res.Conflicts)
	}
	if m := scan(t, r); len(m) != 2 {
		t.Errorf("conflicting changes not kept held: %v", keys(m))
	}
}

// TestBeginManifest: Begin and AddStage leave a run List and Open find, with its layers on
// disk, and Finish removes a run that holds nothing.
func TestBeginManifest(t *testing.T) {
	r, w := newRun(t, nil, nil)
	runs, err := List()
	if err != nil || len(runs) != 1 || runs[0].ID != r.ID || runs[0].State != StateRunning {
		t.Fatalf("List = %v, %v; want the running run", runs, err)
	}
	o, err := Open("")
	if err != nil || o.ID != r.ID || len(o.Stages) != 1 || o.Stages[0].Rules.Dir != w {
		t.Fatalf("Open = %+v, %v", o, err)
	}
	if _, err := o.Apply(ApplyAll, nil); !errors.Is(err, ErrBusy) {
		t.Fatalf("Apply of a run its enforce still holds: %v, want ErrBusy", err)
	}
	for _, d := range []string{r.Stages[0].Upper, r.Stages[0].Work} {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			t.Fatalf("layer %s: %v", d, err)
		}
	}
	if err := r.Finish(); err != nil {
		t.Fatal(err)
	}
	if runs, _ := List(); len(runs) != 0 || exists(r.Dir()) || exists(r.Stages[0].Top) {
		t.Fatalf("an empty run was kept: %v", runs)
	}
}

// TestAddStageSameFS: the layers lie on the staged directory's file system (apply renames).
func TestAddStageSameFS(t *testing.T) {
	r, w := newRun(t, nil, nil)
	var a, b unix.Stat_t
	if unix.Stat(w, &a) != nil || unix.Stat(r.Stages[0].Upper, &b) != nil {
		t.Fatal("stat")
	}
	if a.Dev != b.Dev {
		t.Errorf("upper %s is not on %s's file system", r.Stages[0].Upper, w)
	}
	if strings.HasPrefix(r.Stages[0].Upper, w+"/") {
		t.Errorf("upper %s inside the staged directory", r.Stages[0].Upper)
	}
}

// TestTwoRunsOneTree: two runs of one tree at once each keep their own changeset; whichever
// applies second finds the first's write as a conflict and overwrites nothing, also when both
// apply at the same time.
func TestTwoRunsOneTree(t *testing.T) {
	r1, w := newRun(t, func(w string) { write(t, filepath.Join(w, "x"), "host\n", 0o644) }, []string{"**"})
	r2, err := Begin(Run{Command: []string{"make"}, WorkDir: w})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r2.unlock)
	if _, err := r2.AddStage(r1.Stages[0].Rules, os.Getuid(), os.Getgid()); err != nil {
		t.Fatal(err)
	}
	if r1.Stages[0].Upper == r2.Stages[0].Upper {
		t.Fatal("two runs share an upper layer")
	}
	inOverlay(t, r1, `echo one > x; echo one > only1`)
	inOverlay(t, r2, `echo two > x; echo two > only2`)
	type out struct {
		res Result
		err error
	}
	ch := make(chan out, 2)
	for _, r := range []*Run{r1, r2} {
		go func() { res, err := r.Apply(ApplyLearned, nil); ch <- out{res, err} }()
	}
	conflicts, applied := 0, 0
	for range 2 {
		o := <-ch
		if o.err != nil || len(o.res.Errors) > 0 {
			t.Fatalf("apply: %v %+v", o.err, o.res)
		}
		conflicts += len(o.res.Conflicts)
		applied += len(o.res.Applied)
	}
	if got := readFile(t, filepath.Join(w, "x")); conflicts != 1 || applied != 3 || got != "one\n" && got != "two\n" {
		t.Fatalf("x = %q, %d conflicts, %d applied: want one run's x, the other's a conflict", got, conflicts, applied)
	}
	if readFile(t, filepath.Join(w, "only1")) != "one\n" || readFile(t, filepath.Join(w, "only2")) != "two\n" {
		t.Error("a run's own file was lost")
	}
}

// TestOverlayReplacements: a directory removed and made again (opaque), a file replaced by a
// directory and a directory by a file come out as the host-level changes they are, and apply
// to exactly the tree the command saw.
func TestOverlayReplacements(t *testing.T) {
	r, w := newRun(t, func(w string) {
		write(t, filepath.Join(w, "gen/old1"), "1\n", 0o644)
		write(t, filepath.Join(w, "gen/keep"), "k\n", 0o644)
		write(t, filepath.Join(w, "gen/sub/deep"), "d\n", 0o644)
		write(t, filepath.Join(w, "f2d"), "file\n", 0o644)
		write(t, filepath.Join(w, "d2f/x"), "x\n", 0o644)
	}, []string{"**"})
	inOverlay(t, r, `rm -rf gen && mkdir gen && echo new > gen/keep && echo n > gen/new
		rm f2d && mkdir f2d && echo in > f2d/in
		rm -r d2f && echo now-a-file > d2f`)
	m := scan(t, r)
	wantClass(t, m, "gen", OpMkdir, Learned)
	wantClass(t, m, "gen/old1", OpDelete, Learned)
	wantClass(t, m, "gen/sub", OpRmdir, Learned)
	wantClass(t, m, "gen/keep", OpModify, Learned)
	wantClass(t, m, "gen/new", OpCreate, Learned)
	wantClass(t, m, "f2d", OpMkdir, Learned)
	wantClass(t, m, "d2f", OpModify, Learned)
	res, err := r.Apply(ApplyLearned, nil)
	if err != nil || len(res.Errors)+len(res.Conflicts)+len(res.Refused) > 0 {
		t.Fatalf("apply: %v %+v", err, res)
	}
	var got []string
	_ = filepath.WalkDir(w, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(p)
			rel, _ := filepath.Rel(w, p)
			got = append(got, rel+"="+strings.TrimSpace(string(b)))
		}
		return nil
	})
	slices.Sort(got)
	if want := []string{"d2f=now-a-file", "f2d/in=in", "gen/keep=new", "gen/new=n"}; !slices.Equal(got, want) {
		t.Fatalf("host tree %v, want %v", got, want)
	}
	if m := scan(t, r); len(m) != 0 {
		t.Errorf("left: %v", keys(m))
	}
}

// TestApplyRaceSetuid: a command still running that sets the set-user-ID bit again (or swaps
// the file) between Apply's checks and its rename still leaves no set-id file on the host.
func TestApplyRaceSetuid(t *testing.T) {
	r, w := newRun(t, nil, []string{"**"})
	write(t, filepath.Join(r.Stages[0].Upper, "tool"), "#!/bin/sh\n", 0o644)
	testHookBeforeMove = func(up int, name string) {
		fd, err := unix.Openat(up, name, unix.O_RDONLY, 0)
		if err == nil {
			_ = unix.Fchmod(fd, 0o4755)
			unix.Close(fd)
		}
	}
	t.Cleanup(func() { testHookBeforeMove = nil })
	res, err := r.Apply(ApplyLearned, nil)
	if err != nil || len(res.Applied) != 1 {
		t.Fatalf("apply: %v %+v", err, res)
	}
	var st unix.Stat_t
	if err := unix.Stat(filepath.Join(w, "tool"), &st); err != nil || st.Mode&0o6000 != 0 {
		t.Fatalf("tool on the host: mode %o, %v: a set-id bit set during apply reached the host", st.Mode&0o7777, err)
	}
}

// TestApplyRefusesProtectedLinkOutOfTree: a symlink at a protected path (a hook) that points out
// of the tree is refused even when named, like any link leaving its tree.
func TestApplyRefusesProtectedLinkOutOfTree(t *testing.T) {
	r, w := newRun(t, func(w string) { write(t, filepath.Join(w, ".git/HEAD"), "ref\n", 0o644) }, []string{"build/**"})
	inOverlay(t, r, `mkdir -p .git/hooks && ln -s /root/.ssh/id_rsa .git/hooks/pre-commit`)
	m := scan(t, r)
	wantClass(t, m, ".git/hooks/pre-commit", OpSymlink, Dangerous)
	res, err := r.Apply(ApplyAll, []string{filepath.Join(w, ".git/hooks/pre-commit")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(w, ".git/hooks/pre-commit")); err == nil {
		t.Fatal("the hook symlink out of the tree was placed on the host")
	}
	if len(res.Refused) != 1 {
		t.Errorf("refusal not reported: %+v", res)
	}
}

// TestApplyFileOverEditedDirIsConflict: a file the run put where the host has a directory never
// removes what the host changed inside that directory meanwhile.
func TestApplyFileOverEditedDirIsConflict(t *testing.T) {
	r, w := newRun(t, func(w string) { write(t, filepath.Join(w, "d/deep/keep.txt"), "v1\n", 0o644) }, []string{"**"})
	inOverlay(t, r, `rm -rf d && echo file > d`)
	write(t, filepath.Join(w, "d/deep/keep.txt"), "the user's edit\n", 0o644) // meanwhile
	res, err := r.Apply(ApplyLearned, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(w, "d/deep/keep.txt")); got != "the user's edit\n" {
		t.Fatalf("the user's edit inside the replaced directory is gone (%q): %+v", got, res)
	}
	if len(res.Conflicts) != 1 {
		t.Errorf("conflicts %+v, want d", res.Conflicts)
	}
}

// TestHardLinkNamesApplyTogether: the names of one file the command made apply together. A
// mode that selects one name only (build/l1 learned, l1.txt held) holds both and says why;
// naming one name applies both, as one inode. Applying one name alone would move the file out
// of the changeset and leave the other refused for good (a link with names outside it).
func TestHardLinkNamesApplyTogether(t *testing.T) {
	r, w := newRun(t, func(w string) {
		write(t, filepath.Join(w, "build/keep"), "k\n", 0o644)
	}, []string{"build/**"})
	inOverlay(t, r, `echo ln > build/l1 && ln build/l1 l1.txt`)
	m := scan(t, r)
	wantClass(t, m, "build/l1", OpCreate, Learned)
	wantClass(t, m, "l1.txt", OpHardlink, Held)
	if got := m["l1.txt"].Names; len(got) != 1 || got[0] != filepath.Join(w, "build/l1") {
		t.Errorf("l1.txt's other names = %v, want build/l1", got)
	}

	res, err := r.Apply(ApplyLearned, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Applied) != 0 || len(res.Held) != 2 || exists(filepath.Join(w, "build/l1")) {
		t.Fatalf("apply learned placed one name of a hard link: %+v", res)
	}
	for _, c := range res.Held {
		if !strings.Contains(c.Reason, "a hard link applies with all its names") {
			t.Errorf("%s held without saying why: %q", c.Path, c.Reason)
		}
	}

	res, err = r.Apply(ApplyNone, []string{filepath.Join(w, "build/l1")})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Applied) != 2 || len(res.Refused)+len(res.Held)+len(res.Conflicts)+len(res.Errors) != 0 {
		t.Fatalf("naming build/l1: want both names applied, got %+v", res)
	}
	var a, b unix.Stat_t
	if unix.Lstat(filepath.Join(w, "build/l1"), &a) != nil || unix.Lstat(filepath.Join(w, "l1.txt"), &b) != nil || a.Ino != b.Ino {
		t.Error("the two names are not one file on the host")
	}
	if left := scan(t, r); len(left) != 0 {
		t.Errorf("left in the changeset: %v", keys(left))
	}
}

// TestReplacedHardLinksApply: cargo keeps its binary under two names (target/debug/app and
// deps/app-HASH, one inode), and a rebuild replaces both with a new file of two names. Placing
// the first name takes a name of the host's old inode, which sets its ctime: the second name
// must not read as a host change (a conflict). A host file of two names that the user edited
// after the run started still is one.
func TestReplacedHardLinksApply(t *testing.T) {
	r, w := newRun(t, func(w string) {
		write(t, filepath.Join(w, "build/deps/app-1"), "old\n", 0o755)
		write(t, filepath.Join(w, "build/x-1"), "old\n", 0o644)
		for _, l := range [][2]string{{"build/deps/app-1", "build/app"}, {"build/x-1", "build/x"}} {
			if err := os.Link(filepath.Join(w, l[0]), filepath.Join(w, l[1])); err != nil {
				t.Fatal(err)
			}
		}
	}, []string{"build"})
	inOverlay(t, r, `rm -rf build && mkdir -p build/deps && echo new > build/deps/app-1 && chmod 755 build/deps/app-1 && ln build/deps/app-1 build/app
echo new > build/x-1.tmp && mv build/x-1.tmp build/x-1 && ln -f build/x-1 build/x`)
	write(t, filepath.Join(w, "build/x-1"), "user edit\n", 0o644) // the user, meanwhile (both names)
	res, err := r.Apply(ApplyLearned, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"build/app", "build/deps/app-1"} {
		if got := readFile(t, filepath.Join(w, n)); got != "new\n" {
			t.Errorf("%s = %q, want the run's new file", n, got)
		}
	}
	var a, b unix.Stat_t
	if unix.Lstat(filepath.Join(w, "build/app"), &a) != nil || unix.Lstat(filepath.Join(w, "build/deps/app-1"), &b) != nil || a.Ino != b.Ino {
		t.Error("build/app and build/deps/app-1 are not one file on the host")
	}
	for _, n := range []string{"build/x", "build/x-1"} {
		if got := readFile(t, filepath.Join(w, n)); got != "user edit\n" {
			t.Errorf("%s = %q: the user's edit was overwritten", n, got)
		}
	}
	var conflicts []string
	for _, c := range res.Conflicts {
		conflicts = append(conflicts, c.Rel)
	}
	slices.Sort(conflicts)
	if !slices.Equal(conflicts, []string{"build/x", "build/x-1"}) {
		t.Errorf("conflicts %v, want only the user's edited build/x and build/x-1", conflicts)
	}
}
