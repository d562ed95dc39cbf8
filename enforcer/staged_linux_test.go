package enforcer

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/paths"
	"github.com/sysprof/sysprof/report"
)

// copyBack installs exactly what the rules cover from an overlay's upper layer: new files,
// changed files (mode and mtime kept), a new directory tree a glob names, deletions (whiteouts)
// of learned paths; and reports the rest without touching the host. The upper layer sits on
// another file system than the host tree (/dev/shm vs the test's temp dir) when it can, so the
// copy fallback runs, and on the same one otherwise.
func TestCopyBackKeepsOnlyLearnedOutputs(t *testing.T) {
	testutil.RequireRoot(t) // whiteouts are character devices 0/0
	for _, cross := range []bool{false, true} {
		host := t.TempDir()
		upperRoot := t.TempDir()
		if cross {
			d, err := os.MkdirTemp("/dev/shm", "sysprof-upper-")
			if err != nil {
				testutil.RequireNoErr(t, "a tmpfs at /dev/shm", err)
			}
			t.Cleanup(func() { os.RemoveAll(d) })
			upperRoot = d
		}
		must := func(err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
		}
		// The host tree before the run.
		must(os.MkdirAll(filepath.Join(host, ".git", "hooks"), 0o755))
		must(os.WriteFile(filepath.Join(host, "app"), []byte("old"), 0o755))
		must(os.WriteFile(filepath.Join(host, "stale.o"), []byte("o"), 0o644))
		must(os.WriteFile(filepath.Join(host, "src.c"), []byte("src"), 0o644))
		// What the command left in the upper layer.
		up := func(p string) string { return filepath.Join(upperRoot, p) }
		must(os.MkdirAll(up(".git/hooks"), 0o755))
		must(os.MkdirAll(up("target/debug"), 0o755))
		must(os.MkdirAll(up("evil"), 0o755))
		must(os.WriteFile(up("app"), []byte("new"), 0o700))
		mtime := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
		must(os.Chtimes(up("app"), mtime, mtime))
		must(os.WriteFile(up("target/debug/bin"), []byte("bin"), 0o755))
		must(os.WriteFile(up(".git/hooks/pre-commit"), []byte("evil"), 0o755))
		must(os.WriteFile(up("src.c"), []byte("hacked"), 0o644))
		must(os.WriteFile(up("evil/a"), []byte("a"), 0o644))
		must(os.WriteFile(up("evil/b"), []byte("b"), 0o644))
		must(unix.Mknod(up("stale.o"), unix.S_IFCHR, 0))

		cb := copyBack{spec: StageSpec{Dir: host,
			Keep:      []string{filepath.Join(host, "app"), filepath.Join(host, "*.o"), filepath.Join(host, "target*")},
			Protected: []string{filepath.Join(host, ".git")}},
			upper: upperRoot, env: Env{Vars: map[string]string{"WORKDIR": host}}}
		cb.walk("")
		if len(cb.errs) > 0 {
			t.Fatalf("cross %v: %v", cross, cb.errs)
		}
		read := func(p string) string { b, _ := os.ReadFile(filepath.Join(host, p)); return string(b) }
		if read("app") != "new" || read("target/debug/bin") != "bin" {
			t.Errorf("cross %v: learned outputs not installed: app %q, target/debug/bin %q", cross, read("app"), read("target/debug/bin"))
		}
		if st, err := os.Stat(filepath.Join(host, "app")); err != nil || st.Mode().Perm() != 0o700 || !st.ModTime().Equal(mtime) {
			t.Errorf("cross %v: app lost its mode or mtime: %v %v", cross, st.Mode(), st.ModTime())
		}
		if _, err := os.Lstat(filepath.Join(host, "stale.o")); err == nil {
			t.Errorf("cross %v: a learned deletion (stale.o) was not applied", cross)
		}
		if read("src.c") != "src" || read(".git/hooks/pre-commit") != "" {
			t.Errorf("cross %v: an unlearned write reached the host", cross)
		}
		if _, err := os.Lstat(filepath.Join(host, "evil")); err == nil {
			t.Errorf("cross %v: an unlearned directory reached the host", cross)
		}
		var denied []string
		for _, d := range cb.denials {
			if d.Kind != report.KindFile || d.Suggest == "" {
				t.Errorf("cross %v: denial %+v: want a file denial with a suggestion", cross, d)
			}
			denied = append(denied, d.Path)
		}
		slices.Sort(denied)
		want := []string{filepath.Join(host, ".git/hooks/pre-commit"), filepath.Join(host, "evil"), filepath.Join(host, "src.c")}
		if !slices.Equal(denied, want) {
			t.Errorf("cross %v: denials %v, want %v", cross, denied, want)
		}
	}
}

// A stage's layers never go inside the staged directory nor on overlayfs (a container's root,
// which cannot be an upper layer).
func TestStageParent(t *testing.T) {
	testutil.RequireRoot(t) // mounts an overlay
	dir := t.TempDir()
	if p := stageParent(dir); p == "" || paths.Within(p, dir) {
		t.Fatalf("stageParent(%s) = %q", dir, p)
	}
	// $TMPDIR inside the staged directory: another candidate.
	t.Setenv("TMPDIR", filepath.Join(dir, "tmp"))
	os.Mkdir(filepath.Join(dir, "tmp"), 0o755)
	if p := stageParent(dir); p == "" || paths.Within(p, dir) {
		t.Errorf("with TMPDIR inside the stage: %q", p)
	}
	// $TMPDIR on overlayfs: another candidate.
	ov := t.TempDir()
	for _, d := range []string{"l", "u", "w", "m"} {
		os.Mkdir(filepath.Join(ov, d), 0o755)
	}
	err := unix.Mount("overlay", filepath.Join(ov, "m"), "overlay", 0, "lowerdir="+filepath.Join(ov, "l")+",upperdir="+filepath.Join(ov, "u")+",workdir="+filepath.Join(ov, "w"))
	testutil.RequireNoErr(t, "an overlay mount", err)
	defer unix.Unmount(filepath.Join(ov, "m"), unix.MNT_DETACH)
	// A work tree on the overlay and $TMPDIR on the same overlay (one file system: the
	// candidate copy-back would prefer).
	work, tmp := filepath.Join(ov, "m", "work"), filepath.Join(ov, "m", "tmp")
	os.Mkdir(work, 0o755)
	os.Mkdir(tmp, 0o755)
	t.Setenv("TMPDIR", tmp)
	if p := stageParent(work); p == "" || paths.Within(p, filepath.Join(ov, "m")) {
		t.Errorf("with TMPDIR on overlayfs: %q", p)
	}
}
