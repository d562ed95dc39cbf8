package enforcer

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/policy"
)

// tmpExecProfile is what `cargo test` with a doctest learns in the private /tmp: rustdoc
// writes $TMPDIR/rustdoctestXXXX/rust_out and runs it.
func tmpExecProfile() *policy.Profile {
	p := writesProfile("$TMPDIR/rustdoctest*", "$TMPDIR/cc*.res")
	p.Filesystem.Exec = append(p.Filesystem.Exec, policy.PathRule{Path: "$TMPDIR/rustdoctest*/rust_out"})
	p.Filesystem.Read = append(p.Filesystem.Read, policy.PathRule{Path: "$TMPDIR/rustdoctest*/rust_out"})
	p.Filesystem.PrivateTmp = true
	return p
}

// An exec (or read) rule under the private /tmp is widened to /tmp itself (a glob there cannot
// name an inode): that must never bind the host's /tmp read-only over the private one.
func TestPrivateTmpRootNeverBoundFromHost(t *testing.T) {
	home, work := t.TempDir(), t.TempDir()
	c, err := Compile(tmpExecProfile(), Env{Vars: map[string]string{"HOME": home, "WORKDIR": work, "TMPDIR": "/tmp"}, Arch: "x86_64"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range c.Plan.ReadOnly {
		if slices.Contains(privateTmpDirs, r) {
			t.Errorf("plan binds the host's %s read-only over the private one: %v", r, c.Plan.ReadOnly)
		}
	}
	if !slices.Contains(c.Plan.Landlock.Write, "/tmp") {
		t.Errorf("Landlock write %v: want the private /tmp", c.Plan.Landlock.Write)
	}
}

// TestPrivateTmpWritableBesideExecRules runs what rustdoc does under such a profile, as root
// and as an ordinary user: create a directory in /tmp, write a program there and run it, and
// write a file gcc would (cc*.res).
func TestPrivateTmpWritableBesideExecRules(t *testing.T) {
	testutil.RequireRoot(t)
	t.Run("root", func(t *testing.T) {
		work, home := writesTree(t, false)
		if err := tmpExecChecks(work, home); err != nil {
			t.Error(err)
		}
	})
	t.Run("ordinary user", func(t *testing.T) {
		work, home := writesTree(t, true)
		asNobodyEnv(t, "tmpexec", filepath.Dir(work), work, "HOME="+home)
	})
}

func init() {
	nobodyHelpers["tmpexec"] = func(_, work string) error { return tmpExecChecks(work, os.Getenv("HOME")) }
}

func tmpExecChecks(work, home string) error {
	rep, code, out, err := runScript(tmpExecProfile(), work, home, `set -e
d=$(mktemp -d /tmp/rustdoctestXXXXXX)
cp /bin/true "$d/rust_out"
"$d/rust_out"
echo x > /tmp/ccAbCd.res
echo done`)
	if err != nil || code != 0 || !strings.Contains(out, "done") {
		return fmt.Errorf("rustdoc-like run in the private /tmp: exit %d, err %v\n%s\ndenials: %+v", code, err, out, rep)
	}
	return nil
}
