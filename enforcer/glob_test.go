package enforcer

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sysprof/sysprof/policy"
)

// A write glob outside /tmp grants what matches now, not its whole directory: cargo's learned
// $WORKDIR/target* must not make the work tree writable once target exists.
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
	if got := c.Plan.Landlock.Write; !slices.Equal(got, []string{target}) {
		t.Errorf("landlock write = %v, want only the match %s", got, target)
	}
}
