package enforcer

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sysprof/sysprof/policy"
)

// A write glob outside /tmp grants what matches now, not its whole directory: cargo's learned
// $WORKDIR/target* must not make the work tree writable once target exists. target/ is an
// output directory in the work tree (cargo clean removes it): the work tree is staged for it,
// and only target/ is learned.
func TestWriteGlobGrantsMatches(t *testing.T) {
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(home, ".cache")
	if err := os.MkdirAll(base, 0o755); err != nil {
		t.Fatal(err)
	}
	wd, err := os.MkdirTemp(base, "sysprof-glob-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(wd) })
	p := testProfile()
	p.Filesystem = policy.Filesystem{Write: []policy.PathRule{{Path: "$WORKDIR/target*"}}}
	env := Env{Vars: map[string]string{"HOME": home, "WORKDIR": wd, "TMPDIR": "/tmp"}, Arch: "x86_64"}

	c, err := Compile(p, env)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(c.Plan.Landlock.Write, wd) {
		t.Errorf("nothing matches yet: want the glob's directory %s writable, got %v", wd, c.Plan.Landlock.Write)
	}

	target := filepath.Join(wd, "target")
	if err := os.Mkdir(target, 0o755); err != nil {
		t.Fatal(err)
	}
	c, err = Compile(p, env)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Plan.Writable) != 0 || len(c.Stages) != 1 || c.Stages[0].Dir != wd || !slices.Equal(c.Stages[0].Keep, []string{target}) {
		t.Errorf("writable %v, stages %+v: want %s staged with only the match %s learned", c.Plan.Writable, c.Stages, wd, target)
	}
}

// A build output that does not exist yet keeps its exec rule on the nearest existing directory
// of the work tree, and a missing tool cache is created rather than widened to $HOME.
func TestMissingExecAndCacheRules(t *testing.T) {
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(home, ".cache")
	if err := os.MkdirAll(base, 0o755); err != nil {
		t.Fatal(err)
	}
	root, err := os.MkdirTemp(base, "sysprof-missing-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	wd := filepath.Join(root, "work")
	fakeHome := filepath.Join(root, "home")
	for _, d := range []string{wd, fakeHome} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	gocache := filepath.Join(fakeHome, ".cache", "go-build")
	p := testProfile()
	p.Filesystem = policy.Filesystem{
		Exec:  []policy.PathRule{{Path: "$WORKDIR/target"}, {Path: "/usr/bin/no-such-tool"}},
		Write: []policy.PathRule{{Path: "$GOCACHE"}},
	}
	env := Env{Vars: map[string]string{"HOME": fakeHome, "WORKDIR": wd, "TMPDIR": "/tmp", "GOCACHE": gocache}, Arch: "x86_64"}
	c, err := Compile(p, env)
	if err != nil {
		t.Fatal(err)
	}
	// Never widened to the work tree (issue 14 item 3): the rule stays as is until target exists.
	if slices.Contains(c.Plan.Landlock.Exec, wd) {
		t.Errorf("exec = %v: a missing $WORKDIR/target must not widen exec to the work tree %s", c.Plan.Landlock.Exec, wd)
	}
	if slices.Contains(c.Plan.Landlock.Exec, "/usr") || slices.Contains(c.Plan.Landlock.Exec, "/usr/bin") {
		t.Errorf("a missing system binary must not widen exec: %v", c.Plan.Landlock.Exec)
	}
	if st, err := os.Stat(gocache); err != nil || !st.IsDir() {
		t.Fatalf("missing $GOCACHE not created: %v", err)
	}
	if !slices.Contains(c.Plan.Landlock.Write, gocache) || len(c.Unenforceable) != 0 {
		t.Errorf("write = %v unenforceable = %v, want exactly the created cache", c.Plan.Landlock.Write, c.Unenforceable)
	}
}

// The hidden globs of one compile share their directory listings: the second walk of the work
// tree lists nothing again and finds what a walk of its own finds.
func TestGlobMatchesShareListings(t *testing.T) {
	work := t.TempDir()
	for _, p := range []string{".env", ".env.local", "a/.env", "a/b/.env.prod", "a/b/c/keep", "d/.env/x"} {
		full := filepath.Join(work, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	shared := &dirListings{}
	patterns := []string{work + "/**/.env", work + "/**/.env.*", work + "/.env.*", work + "/a/*/.env.prod"}
	for i, pat := range patterns {
		before := shared.listed()
		got, _ := globMatches(pat, 20000, shared)
		if want, _ := globMatches(pat, 20000, &dirListings{}); !slices.Equal(got, want) {
			t.Errorf("%s with shared listings: %v, alone: %v", pat, got, want)
		}
		if i > 0 && shared.listed() != before {
			t.Errorf("%s listed %d directories again", pat, shared.listed()-before)
		}
	}
	want := []string{filepath.Join(work, ".env"), filepath.Join(work, "a/.env"), filepath.Join(work, "d/.env")}
	if got, _ := globMatches(work+"/**/.env", 20000, shared); !slices.Equal(got, want) {
		t.Errorf("**/.env = %v, want %v", got, want)
	}
}

// Past its limit a glob stops, says so, and has found the nearest matches first: a .env at
// the top of the tree is hidden even when a big dependency tree sorts before it.
func TestGlobMatchesNearestFirst(t *testing.T) {
	work := t.TempDir()
	for i := range 50 {
		p := filepath.Join(work, "aaa", fmt.Sprintf("d%02d", i), "f")
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, nil, 0o600)
	}
	os.MkdirAll(filepath.Join(work, "zzz"), 0o755)
	os.WriteFile(filepath.Join(work, "zzz", ".env"), nil, 0o600)
	got, cut := globMatches(work+"/**/.env", 60, &dirListings{})
	if !slices.Contains(got, filepath.Join(work, "zzz", ".env")) || !cut {
		t.Errorf("limited **/.env = %v, stopped %v; want zzz/.env found and the stop reported", got, cut)
	}
	if got, cut := globMatches(work+"/**/.env", 20000, &dirListings{}); cut || len(got) != 1 {
		t.Errorf("unlimited **/.env = %v, stopped %v", got, cut)
	}
}

// go test -bench HiddenGlobWalk ./enforcer: the two default hidden globs over a work tree
// (SYSPROF_BENCH_TREE, default this repository), as one compile walks them.
func BenchmarkHiddenGlobWalk(b *testing.B) {
	root := os.Getenv("SYSPROF_BENCH_TREE")
	if root == "" {
		root, _ = filepath.Abs("..")
	}
	for b.Loop() {
		d := &dirListings{}
		globMatches(root+"/**/.env", globLimit, d)
		globMatches(root+"/**/.env.*", globLimit, d)
	}
}
