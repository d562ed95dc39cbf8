package enforcer

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/changeset"
	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/report"
)

// The sweep of a bound directory is the defence behind the syscall layer's set-id refusal
// (a set-id file that got there some other way, a hard-linked set-id binary): it strips set-id
// bits of what the run changed and queues links out of the tree; older entries stay as they are.
func TestSweepBoundStripsSetIDAndQueuesLinks(t *testing.T) {
	testutil.RequireRoot(t) // a set-uid file owned by another user needs root to make
	work := t.TempDir()
	dir := filepath.Join(work, "out")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(dir, "old-suid")
	testutil.WriteFile(t, old, "x", 0o755)
	if err := unix.Chmod(old, 0o4755); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // ctime granularity: old-suid predates the run
	started := time.Now().Add(sweepSlack)
	time.Sleep(1100 * time.Millisecond)
	fresh := filepath.Join(dir, "suid")
	testutil.WriteFile(t, fresh, "x", 0o755)
	if err := unix.Chmod(fresh, 0o6755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "out-link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("suid", filepath.Join(dir, "in-link")); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := sweepBound(dir, started, Env{Vars: map[string]string{"WORKDIR": work, "HOME": t.TempDir()}}, nil)
	if st, err := os.Stat(fresh); err != nil || st.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
		t.Errorf("the run's set-id file keeps its bits: %v %v", st.Mode(), err)
	}
	if len(f.stripped) != 1 || f.stripped[0].Path != fresh {
		t.Errorf("stripped = %+v, want the run's set-id file said", f.stripped)
	}
	if st, _ := os.Stat(old); st.Mode()&os.ModeSetuid == 0 {
		t.Errorf("a set-id file older than the run was touched")
	}
	if !slices.Equal(f.held, []string{"fifo", "out-link"}) {
		t.Errorf("held = %v, want the fifo and out-link only", f.held)
	}
}

// A git repository nested in a bound directory (a vendored one in out/, a `cargo new` inside
// target/) runs its hooks and config when the user works there later: what the run wrote there
// is queued to be held (new or rewritten in place), samples and objects are not, nor what the
// run did not touch, nor the work tree's own .git (its covers are the plan's).
func TestSweepBoundHoldsNestedRepositoryHooks(t *testing.T) {
	work := t.TempDir()
	dir := filepath.Join(work, "out")
	for _, d := range []string{"out/vendor/.git/hooks", "out/old/.git", ".git"} {
		if err := os.MkdirAll(filepath.Join(work, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	testutil.WriteFile(t, filepath.Join(dir, "vendor/.git/config"), "[core]\n", 0o644)
	testutil.WriteFile(t, filepath.Join(dir, "old/.git/config"), "[core]\n", 0o644)
	testutil.WriteFile(t, filepath.Join(work, ".git/config"), "[core]\n", 0o644)
	time.Sleep(1100 * time.Millisecond) // ctime granularity: the repositories predate the run
	started := time.Now().Add(sweepSlack)
	time.Sleep(1100 * time.Millisecond)
	// Appended in place: the directory's ctime does not change.
	for _, p := range []string{filepath.Join(dir, "vendor/.git/config"), filepath.Join(work, ".git/config")} {
		f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString("\tfsmonitor = ./evil\n")
		f.Close()
	}
	for _, d := range []string{"sub/.git/hooks", "sub/.git/objects/ab", "bare.git/hooks"} {
		os.MkdirAll(filepath.Join(dir, d), 0o755)
	}
	testutil.WriteFile(t, filepath.Join(dir, "sub/.git/hooks/pre-commit"), "#!/bin/sh\n", 0o755)
	testutil.WriteFile(t, filepath.Join(dir, "sub/.git/hooks/pre-commit.sample"), "#!/bin/sh\n", 0o755)
	testutil.WriteFile(t, filepath.Join(dir, "sub/.git/objects/ab/cdef"), "x", 0o444)
	testutil.WriteFile(t, filepath.Join(dir, "bare.git/config"), "[core]\n", 0o644)
	testutil.WriteFile(t, filepath.Join(dir, "sub/main.rs"), "fn main() {}\n", 0o644)
	// The work tree's own .git bound whole: a submodule's hooks are held, its config and
	// sample hooks (what clone writes) are git's.
	for _, d := range []string{".git/modules/lib/hooks", ".git/modules/a/modules/b/hooks"} {
		os.MkdirAll(filepath.Join(work, d), 0o755)
	}
	testutil.WriteFile(t, filepath.Join(work, ".git/modules/lib/hooks/post-checkout"), "#!/bin/sh\n", 0o755)
	testutil.WriteFile(t, filepath.Join(work, ".git/modules/lib/hooks/pre-push.sample"), "#!/bin/sh\n", 0o755)
	testutil.WriteFile(t, filepath.Join(work, ".git/modules/lib/config"), "[core]\n", 0o644)
	testutil.WriteFile(t, filepath.Join(work, ".git/modules/a/modules/b/hooks/pre-commit"), "#!/bin/sh\n", 0o755)
	env := Env{Vars: map[string]string{"WORKDIR": work, "HOME": t.TempDir()}}
	if f := sweepBound(filepath.Join(work, ".git"), started, env, nil); !slices.Equal(f.held, []string{"modules/a/modules/b/hooks/pre-commit", "modules/lib/hooks/post-checkout"}) {
		t.Errorf("bound .git: held = %v, want the submodules' hooks", f.held)
	}
	f := sweepBound(dir, started, env, nil)
	slices.Sort(f.held)
	if want := []string{"bare.git/config", "sub/.git/hooks/pre-commit", "vendor/.git/config"}; !slices.Equal(f.held, want) {
		t.Errorf("held = %v, want %v", f.held, want)
	}
	// The work tree bound whole: its own .git is not a nested repository.
	if f := sweepBound(work, started, env, nil); slices.ContainsFunc(f.held, func(h string) bool { return h == ".git/config" }) {
		t.Errorf("the work tree's own .git/config is held: %v", f.held)
	}
}

// TestSweepBoundGitConfig (issue 23): under a profile that writes the work tree's .git whole,
// a config that gained core.fsmonitor is put back as it was and the run's file held as a
// dangerous change of the run's changeset; git's ordinary writes (remote add, a submodule's
// config) stay on the host. The host's config is the snapshot's, not the run's.
func TestSweepBoundGitConfig(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	t.Setenv("SYSPROF_STATE_DIR", "")
	work := t.TempDir()
	g := filepath.Join(work, ".git")
	for _, d := range []string{"hooks", "modules/lib"} {
		if err := os.MkdirAll(filepath.Join(g, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	orig := "[core]\n\tbare = false\n"
	testutil.WriteFile(t, filepath.Join(g, "config"), orig, 0o644)
	testutil.WriteFile(t, filepath.Join(g, "modules/lib/config"), orig, 0o644)
	testutil.WriteFile(t, filepath.Join(g, "modules/lib/HEAD"), "ref: refs/heads/main\n", 0o644)
	env := Env{Vars: map[string]string{"WORKDIR": work, "HOME": t.TempDir()}}
	snaps := snapshotGitConfigs([]string{g}, []string{filepath.Join(g, "hooks")}, env)
	started := time.Now()

	// The run: git's way (config.lock renamed over config) for the payload, in place for
	// remote add.
	evil := orig + "[core]\n\tfsmonitor = \"sh -c 'touch /tmp/pwned'\"\n"
	testutil.WriteFile(t, filepath.Join(g, "config.lock"), evil, 0o644)
	if err := os.Rename(filepath.Join(g, "config.lock"), filepath.Join(g, "config")); err != nil {
		t.Fatal(err)
	}
	benign := orig + "[remote \"up\"]\n\turl = https://example.invalid/u.git\n"
	testutil.WriteFile(t, filepath.Join(g, "modules/lib/config"), benign, 0o644)

	f := sweepBound(g, started, env, snaps)
	if !slices.Equal(f.held, []string{"config"}) {
		t.Fatalf("held = %v, want [config]", f.held)
	}
	run := holdInRun(t, work, f, "git", "commit")
	if b, _ := os.ReadFile(filepath.Join(g, "config")); string(b) != orig {
		t.Errorf("host .git/config = %q, want it put back: %q", b, orig)
	}
	if b, _ := os.ReadFile(filepath.Join(g, "modules/lib/config")); string(b) != benign {
		t.Errorf("a submodule's ordinary config write did not stay: %q", b)
	}
	cs, err := run.Scan()
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 1 || cs[0].Path != filepath.Join(g, "config") || cs[0].Class != changeset.Dangerous || !strings.Contains(cs[0].Reason, "core.fsmonitor") {
		t.Fatalf("changeset = %+v, want .git/config held dangerous for core.fsmonitor", cs)
	}
}

// TestSweepBoundGitConfigWorktree: in a `git worktree` the run's bound .git is the git
// directory its .git file names: a config.worktree it makes there with core.fsmonitor is held
// (git reads it under extensions.worktreeConfig), none is left on the host.
func TestSweepBoundGitConfigWorktree(t *testing.T) {
	root := t.TempDir()
	common := filepath.Join(root, "main", ".git")
	gitdir := filepath.Join(common, "worktrees", "wt")
	work := filepath.Join(root, "wt")
	for _, d := range []string{gitdir, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	testutil.WriteFile(t, filepath.Join(work, ".git"), "gitdir: ../main/.git/worktrees/wt\n", 0o644)
	testutil.WriteFile(t, filepath.Join(gitdir, "commondir"), "../..\n", 0o644)
	testutil.WriteFile(t, filepath.Join(common, "config"), "[extensions]\n\tworktreeConfig = true\n", 0o644)
	env := Env{Vars: map[string]string{"WORKDIR": work, "HOME": t.TempDir()}}
	snaps := snapshotGitConfigs([]string{gitdir}, []string{filepath.Join(common, "config")}, env)
	testutil.WriteFile(t, filepath.Join(gitdir, "config.worktree"), "[core]\n\tfsmonitor = ./evil\n", 0o644)
	f := sweepBound(gitdir, time.Now(), env, snaps)
	if !slices.Equal(f.held, []string{"config.worktree"}) || f.restore[filepath.Join(gitdir, "config.worktree")] != nil {
		t.Fatalf("held = %v, restore = %v: want config.worktree held, none put back", f.held, f.restore)
	}
	for p, old := range f.restore {
		if err := putBack(p, old); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Lstat(filepath.Join(gitdir, "config.worktree")); err == nil {
		t.Error("the run's config.worktree is still on the host")
	}
}

// TestSweepBoundGitAttributes: inside a bound .git, info/ is git's (init writes info/exclude,
// gc's update-server-info info/refs) and stays; an info/attributes the run makes picks the
// drivers git runs: it is held dangerous and none is left on the host.
func TestSweepBoundGitAttributes(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	t.Setenv("SYSPROF_STATE_DIR", "")
	work := t.TempDir()
	g := filepath.Join(work, ".git")
	if err := os.MkdirAll(filepath.Join(g, "info"), 0o755); err != nil {
		t.Fatal(err)
	}
	testutil.WriteFile(t, filepath.Join(g, "config"), "[core]\n\tbare = false\n", 0o644)
	env := Env{Vars: map[string]string{"WORKDIR": work, "HOME": t.TempDir()}}
	snaps := snapshotGitConfigs([]string{g}, nil, env)
	started := time.Now()
	testutil.WriteFile(t, filepath.Join(g, "info/exclude"), "*.o\n", 0o644)
	testutil.WriteFile(t, filepath.Join(g, "info/refs"), "abc\trefs/heads/main\n", 0o644)
	testutil.WriteFile(t, filepath.Join(g, "info/attributes"), "* filter=lfs diff=x\n", 0o644)

	f := sweepBound(g, started, env, snaps)
	if !slices.Equal(f.held, []string{"info/attributes"}) {
		t.Fatalf("held = %v, want [info/attributes]", f.held)
	}
	run := holdInRun(t, work, f, "git", "gc")
	if _, err := os.Lstat(filepath.Join(g, "info/attributes")); !os.IsNotExist(err) {
		t.Errorf("info/attributes stayed on the host: %v", err)
	}
	for _, n := range []string{"info/exclude", "info/refs"} {
		if _, err := os.Stat(filepath.Join(g, n)); err != nil {
			t.Errorf("git's own %s did not stay: %v", n, err)
		}
	}
	cs, err := run.Scan()
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 1 || cs[0].Path != filepath.Join(g, "info/attributes") || cs[0].Class != changeset.Dangerous {
		t.Fatalf("changeset = %+v, want .git/info/attributes held dangerous", cs)
	}
}

// TestSweepBoundGitConfigLink (issue 23): under a profile that writes the work tree's .git
// whole, a file the sweep judges by content (config, info/attributes) replaced by something
// git would read otherwise (a symlink to a file holding core.fsmonitor, a fifo git would hang
// on, a directory) is held once, as a dangerous change, and the host gets its file back as it
// was: git works after the run and runs nothing the run chose.
func TestSweepBoundGitConfigLink(t *testing.T) {
	orig := "[core]\n\tbare = false\n"
	origAttr := "*.c diff=cpp\n"
	for _, tc := range []struct {
		name, rel string
		replace   func(t *testing.T, p string)
	}{
		{"config-symlink", "config", func(t *testing.T, p string) {
			testutil.WriteFile(t, filepath.Join(filepath.Dir(filepath.Dir(p)), "evil.cfg"), "[core]\n\tfsmonitor = ./evil\n", 0o644)
			os.Remove(p)
			if err := os.Symlink("../evil.cfg", p); err != nil {
				t.Fatal(err)
			}
		}},
		{"config-fifo", "config", func(t *testing.T, p string) {
			os.Remove(p)
			if err := unix.Mkfifo(p, 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"config-dir", "config", func(t *testing.T, p string) {
			os.Remove(p)
			if err := os.MkdirAll(filepath.Join(p, "x"), 0o755); err != nil {
				t.Fatal(err)
			}
		}},
		{"config-dir-with-link", "config", func(t *testing.T, p string) {
			// The walk holds the link inside on its own: it moves with the directory, once.
			os.Remove(p)
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("/etc/passwd", filepath.Join(p, "evil")); err != nil {
				t.Fatal(err)
			}
		}},
		{"config-symlink-out-of-tree", "config", func(t *testing.T, p string) {
			// Both passes hold it: the config sweep and the walk's link pass.
			os.Remove(p)
			if err := os.Symlink("/etc/passwd", p); err != nil {
				t.Fatal(err)
			}
		}},
		{"info-symlink", "info", func(t *testing.T, p string) {
			d := filepath.Join(filepath.Dir(filepath.Dir(p)), "evilinfo")
			testutil.WriteFile(t, filepath.Join(d, "attributes"), "* filter=evil\n", 0o644)
			os.RemoveAll(p)
			if err := os.Symlink("../evilinfo", p); err != nil {
				t.Fatal(err)
			}
		}},
		{"commondir", "commondir", func(t *testing.T, p string) {
			// git reads the config and hooks of the directory it names.
			testutil.WriteFile(t, p, "x\n", 0o644)
		}},
		{"attributes-symlink", "info/attributes", func(t *testing.T, p string) {
			testutil.WriteFile(t, filepath.Join(filepath.Dir(filepath.Dir(filepath.Dir(p))), "evil.attr"), "* filter=evil\n", 0o644)
			os.Remove(p)
			if err := os.Symlink("../../evil.attr", p); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("XDG_STATE_HOME", t.TempDir())
			t.Setenv("SYSPROF_STATE_DIR", "")
			work := t.TempDir()
			g := filepath.Join(work, ".git")
			if err := os.MkdirAll(filepath.Join(g, "info"), 0o755); err != nil {
				t.Fatal(err)
			}
			testutil.WriteFile(t, filepath.Join(g, "config"), orig, 0o644)
			testutil.WriteFile(t, filepath.Join(g, "info/attributes"), origAttr, 0o644)
			want, wantPath := map[string]string{"config": orig, "info": origAttr, "info/attributes": origAttr}[tc.rel], filepath.Join(g, tc.rel)
			if tc.rel == "info" {
				wantPath = filepath.Join(g, "info/attributes")
			}
			env := Env{Vars: map[string]string{"WORKDIR": work, "HOME": t.TempDir()}}
			snaps := snapshotGitConfigs([]string{g}, nil, env)
			started := time.Now()
			p := filepath.Join(g, tc.rel)
			tc.replace(t, p)

			f := sweepBound(g, started, env, snaps)
			if !slices.Equal(f.held, []string{tc.rel}) {
				t.Fatalf("held = %v, want [%s] once", f.held, tc.rel)
			}
			run := holdInRun(t, work, f, "git", "commit")
			if want == "" { // none before the run: none after
				if _, err := os.Lstat(wantPath); err == nil {
					t.Errorf("host %s is still there after the run", tc.rel)
				}
			} else if fi, err := os.Lstat(wantPath); err != nil || !fi.Mode().IsRegular() {
				t.Fatalf("host %s after the run: %v %v, want the regular file put back", wantPath, fi, err)
			} else if b, _ := os.ReadFile(wantPath); string(b) != want {
				t.Errorf("host %s = %q, want it put back: %q", wantPath, b, want)
			}
			cs, err := run.Scan()
			if err != nil {
				t.Fatal(err)
			}
			// One held change (a directory's entries come with it).
			if len(cs) == 0 || cs[0].Path != p || cs[0].Class != changeset.Dangerous ||
				slices.ContainsFunc(cs[1:], func(c changeset.Change) bool { return !strings.HasPrefix(c.Path, p+"/") }) {
				t.Fatalf("changeset = %+v, want %s held dangerous once", cs, tc.rel)
			}
		})
	}
}

// holdInRun begins a changeset for command in work (a state directory of the test's: the
// caller sets XDG_STATE_HOME), dropped when the test ends, and holds what f holds in it.
func holdInRun(t *testing.T, work string, f boundFinding, command ...string) *changeset.Run {
	t.Helper()
	run, err := changeset.Begin(changeset.Run{Command: command, WorkDir: work})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { run.Drop() })
	notes, err := holdBoundLinks(run, f, os.Getuid(), os.Getgid())
	if err != nil {
		t.Fatal(err)
	}
	for p := range f.restore {
		if !slices.ContainsFunc(notes, func(n string) bool { return strings.HasPrefix(n, p+" ") && strings.Contains(n, "held as dangerous") }) {
			t.Errorf("no note says %s's run file is held: %q", p, notes)
		}
	}
	return run
}

// TestSweepBoundGitConfigHostLinks: a .git whose config and info/ were links before the run
// (git-new-workdir links them to the main repository's) keeps them: they are the host's, not
// the run's, and the sweep neither holds them nor puts a file in their place.
func TestSweepBoundGitConfigHostLinks(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	t.Setenv("SYSPROF_STATE_DIR", "")
	root := t.TempDir()
	main, work := filepath.Join(root, "main", ".git"), filepath.Join(root, "wt")
	testutil.WriteFile(t, filepath.Join(main, "config"), "[remote \"origin\"]\n\turl = x\n", 0o644)
	testutil.WriteFile(t, filepath.Join(main, "info/attributes"), "*.c diff=cpp\n", 0o644)
	testutil.WriteFile(t, filepath.Join(main, "info/exclude"), "*.o\n", 0o644)
	g := filepath.Join(work, ".git")
	if err := os.MkdirAll(g, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"config", "info"} {
		if err := os.Symlink(filepath.Join(main, n), filepath.Join(g, n)); err != nil {
			t.Fatal(err)
		}
	}
	env := Env{Vars: map[string]string{"WORKDIR": work, "HOME": t.TempDir()}}
	snaps := snapshotGitConfigs([]string{g}, nil, env)
	time.Sleep(1100 * time.Millisecond) // ctime granularity: the links predate the run
	started := time.Now().Add(sweepSlack)
	time.Sleep(1100 * time.Millisecond)
	testutil.WriteFile(t, filepath.Join(g, "HEAD"), "ref: refs/heads/main\n", 0o644) // the run

	f := sweepBound(g, started, env, snaps)
	if len(f.held) != 0 || len(f.restore) != 0 {
		t.Fatalf("held = %v, restore = %v: want the host's links left alone", f.held, f.restore)
	}
	for _, n := range []string{"config", "info"} {
		if fi, err := os.Lstat(filepath.Join(g, n)); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("the host's .git/%s link: %v %v", n, fi, err)
		}
	}
}

// TestCopyHeldKeepsHoles: what the sweep holds across file systems is made again in the
// changeset; a sparse file (a nested repository's hook of 8 GiB of holes) takes there about
// the blocks of its data, not 8 GiB of zeros.
func TestCopyHeldKeepsHoles(t *testing.T) {
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "post-checkout"), filepath.Join(dir, "held")
	testutil.WriteFile(t, src, "#!/bin/sh\n", 0o755)
	if err := os.Truncate(src, 8<<30); err != nil {
		t.Fatal(err)
	}
	if err := copyHeld(src, dst); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Stat(dst, &st); err != nil || st.Size != 8<<30 {
		t.Fatalf("held copy: %v, size %d", err, st.Size)
	}
	if used := st.Blocks * 512; used > 1<<20 {
		t.Errorf("the held copy allocates %d bytes for a file of 10 bytes of data: its holes were written", used)
	}
	f, err := os.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if b := make([]byte, 10); func() error { _, err := f.ReadAt(b, 0); return err }() != nil || string(b) != "#!/bin/sh\n" {
		t.Errorf("the held copy's data: %q", b)
	}
}

// TestSweepBoundGitConfigLarge: a host config larger than the sweep parses (1 MiB: many
// remotes and branches) that the run leaves alone stays as it was, whole; one the run adds
// core.fsmonitor to is held and the host's file put back byte for byte, not cut at 1 MiB.
func TestSweepBoundGitConfigLarge(t *testing.T) {
	orig := "[core]\n\tbare = false\n" + strings.Repeat("# a comment line of the host's own config\n", 30000)
	for _, payload := range []string{"", "[core]\n\tfsmonitor = ./evil\n"} {
		t.Setenv("XDG_STATE_HOME", t.TempDir())
		t.Setenv("SYSPROF_STATE_DIR", "")
		work := t.TempDir()
		g := filepath.Join(work, ".git")
		config := filepath.Join(g, "config")
		testutil.WriteFile(t, config, orig, 0o644)
		env := Env{Vars: map[string]string{"WORKDIR": work, "HOME": t.TempDir()}}
		snaps := snapshotGitConfigs([]string{g}, nil, env)
		started := time.Now()
		if payload != "" {
			testutil.WriteFile(t, config, orig+payload, 0o644)
		}
		f := sweepBound(g, started, env, snaps)
		if want := map[bool][]string{false: nil, true: {"config"}}[payload != ""]; !slices.Equal(f.held, want) {
			t.Errorf("payload %q: held = %v, want %v", payload, f.held, want)
		}
		if len(f.held) > 0 {
			holdInRun(t, work, f, "git", "commit")
		}
		if b, _ := os.ReadFile(config); string(b) != orig {
			t.Errorf("payload %q: host .git/config is %d bytes, want the host's %d as they were", payload, len(b), len(orig))
		}
	}
}

// TestSweepBoundStripsACL (issue 23): the sweep of a directory bound writable strips ACLs by
// Apply's rule (changeset.Strip): a file whose ACL the run set (a grant beyond the mode) and a
// directory given a default ACL of the run's (every later file there) lose them, said; a file
// made in a host directory with a default ACL keeps what that gives it.
func TestSweepBoundStripsACL(t *testing.T) {
	work := t.TempDir()
	dir := filepath.Join(work, "out")
	team := filepath.Join(dir, "team")
	if err := os.MkdirAll(team, 0o755); err != nil {
		t.Fatal(err)
	}
	u := func(tag, perm uint16, id uint32) []byte {
		return []byte{byte(tag), byte(tag >> 8), byte(perm), 0, byte(id), byte(id >> 8), byte(id >> 16), byte(id >> 24)}
	}
	aclOf := func(es ...[]byte) []byte { return append([]byte{2, 0, 0, 0}, slices.Concat(es...)...) }
	const undef = 0xffffffff
	// team/: default user::rwx user:65534:rwx group::r-x mask::rwx other::r-x (the host's)
	def := aclOf(u(1, 7, undef), u(2, 7, 65534), u(4, 5, undef), u(0x10, 7, undef), u(0x20, 5, undef))
	testutil.RequireNoErr(t, "set a default ACL", unix.Setxattr(team, changeset.ACLDefault, def, 0))
	time.Sleep(1100 * time.Millisecond)
	started := time.Now().Add(sweepSlack)
	time.Sleep(1100 * time.Millisecond)
	testutil.WriteFile(t, filepath.Join(team, "kept"), "x", 0o644) // inherits team/'s default
	granted := filepath.Join(dir, "granted")
	testutil.WriteFile(t, granted, "x", 0o600)
	// user::rw- group::--- mask::rw- other::rw-: the run's grant beyond its mode
	testutil.RequireNoErr(t, "set an ACL", unix.Setxattr(granted, changeset.ACLAccess, aclOf(u(1, 6, undef), u(4, 0, undef), u(0x10, 6, undef), u(0x20, 6, undef)), 0))
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	testutil.RequireNoErr(t, "set a default ACL", unix.Setxattr(sub, changeset.ACLDefault, def, 0))
	f := sweepBound(dir, started, Env{Vars: map[string]string{"WORKDIR": work, "HOME": t.TempDir()}}, nil)
	if n, err := unix.Getxattr(granted, changeset.ACLAccess, nil); err == nil && n > 0 {
		t.Errorf("the run's ACL on %s stayed on the host", granted)
	}
	if n, err := unix.Getxattr(sub, changeset.ACLDefault, nil); err == nil && n > 0 {
		t.Errorf("the run's default ACL on %s stayed on the host", sub)
	}
	if n, err := unix.Getxattr(filepath.Join(team, "kept"), changeset.ACLAccess, nil); err != nil || n == 0 {
		t.Errorf("team/kept lost the ACL the host's directory gives it: %v", err)
	}
	var said []string
	for _, c := range f.stripped {
		said = append(said, c.Path+": "+c.Reason)
	}
	for _, p := range []string{granted, sub} {
		if !slices.ContainsFunc(f.stripped, func(c report.Change) bool { return c.Path == p && strings.Contains(c.Reason, "ACL") }) {
			t.Errorf("the removal of %s's ACL is not on the record: %q", p, said)
		}
	}
	if len(f.stripped) != 2 {
		t.Errorf("stripped: %q: want granted and sub only", said)
	}
}

// TestSweepBoundGitConfigNoChangeset (issue 23): when no changeset can hold a config that
// gained core.fsmonitor (none could be begun, or the host's $TMPDIR), the host's config is
// still put back and the run's file is not lost: it is kept beside it, where git reads
// nothing, and the note says where (it said "held" while the file was overwritten).
func TestSweepBoundGitConfigNoChangeset(t *testing.T) {
	work := t.TempDir()
	g := filepath.Join(work, ".git")
	if err := os.MkdirAll(filepath.Join(g, "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	orig := "[core]\n\tbare = false\n"
	testutil.WriteFile(t, filepath.Join(g, "config"), orig, 0o644)
	env := Env{Vars: map[string]string{"WORKDIR": work, "HOME": t.TempDir()}}
	snaps := snapshotGitConfigs([]string{g}, []string{filepath.Join(g, "hooks")}, env)
	started := time.Now()
	evil := orig + "[core]\n\tfsmonitor = \"touch PWNED\"\n"
	testutil.WriteFile(t, filepath.Join(g, "config"), evil, 0o644)
	f := sweepBound(g, started, env, snaps)
	notes := f.keepAside(errors.New("no state directory"))
	if b, _ := os.ReadFile(filepath.Join(g, "config")); string(b) != orig {
		t.Errorf("host .git/config = %q, want it put back", b)
	}
	kept, _ := filepath.Glob(filepath.Join(g, "config.sysprof-run-*"))
	if len(kept) != 1 {
		t.Fatalf("the run's config was not kept beside the host's: %v", kept)
	}
	if b, _ := os.ReadFile(kept[0]); string(b) != evil {
		t.Errorf("%s = %q, want the run's file", kept[0], b)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "kept as "+kept[0]) || strings.Contains(notes[0], "held") {
		t.Errorf("notes = %q: want one saying where the run's file is kept, not that it is held", notes)
	}
}
