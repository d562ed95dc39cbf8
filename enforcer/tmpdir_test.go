package enforcer

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sysprof/sysprof/policy"
)

// A $TMPDIR below the private /tmp (pam_tmpdir's /tmp/user/UID) exists inside even when the
// profile has no rule there: node realpaths os.tmpdir() when loaded (pnpm died with ENOENT).
// It is bound read-only, and not at all when a rule below it is bound already (its mount point
// makes it exist, and the rest of it stays out).
func TestTmpdirInPrivateTmpExists(t *testing.T) {
	tmp, err := os.MkdirTemp("/tmp", "sysprof-tmpdir-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	testWriteFile(t, filepath.Join(tmp, "kept.txt"))
	env := Env{Vars: map[string]string{"HOME": t.TempDir(), "WORKDIR": t.TempDir(), "TMPDIR": tmp}, Arch: "x86_64"}

	p := testProfile()
	p.Filesystem.PrivateTmp = true
	c, err := Compile(p, env)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(c.Plan.ReadOnly, tmp) || slices.Contains(c.Plan.Writable, tmp) {
		t.Errorf("read-only %v, writable %v: want $TMPDIR %s bound read-only", c.Plan.ReadOnly, c.Plan.Writable, tmp)
	}

	p.Filesystem.Read = append(p.Filesystem.Read, policy.PathRule{Path: "$TMPDIR/kept.txt"})
	c, err = Compile(p, env)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(c.Plan.ReadOnly, tmp) || !slices.Contains(c.Plan.ReadOnly, filepath.Join(tmp, "kept.txt")) {
		t.Errorf("read-only %v: want only $TMPDIR/kept.txt, not all of %s", c.Plan.ReadOnly, tmp)
	}
}

func testWriteFile(t *testing.T, p string) {
	t.Helper()
	if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
}
