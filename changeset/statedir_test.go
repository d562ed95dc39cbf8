package changeset

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/internal/testutil"
)

// TestStateDirWithoutHome: with $HOME unset (a cron job, `env -u HOME`) the runs live in the
// password database's home, as paths.Host finds $HOME: enforce does not refuse to run.
func TestStateDirWithoutHome(t *testing.T) {
	for _, k := range []string{"HOME", "XDG_STATE_HOME", "SYSPROF_STATE_DIR", "SUDO_UID", "SUDO_GID"} {
		t.Setenv(k, "")
	}
	u, err := user.Current()
	if err != nil || !filepath.IsAbs(u.HomeDir) {
		t.Fatalf("no home in the password database: %v", err)
	}
	got, err := StateDir()
	if want := filepath.Join(u.HomeDir, ".local", "state", "sysprof", "runs"); err != nil || got != want {
		t.Errorf("StateDir() = %q, %v; want %q", got, err, want)
	}
}

// TestStateDirHomeReadOnly: with a home sysprof cannot write (a read-only mount here; `sudo -u
// nobody`'s /nonexistent) the runs live in a directory of the user's own under the fallback
// root, and Begin refuses one that another user made first or that is a link.
func TestStateDirHomeReadOnly(t *testing.T) {
	testutil.RequireRoot(t)
	home := t.TempDir()
	testutil.RequireNoErr(t, "mount a read-only tmpfs", unix.Mount("tmpfs", home, "tmpfs", unix.MS_RDONLY, "mode=0755"))
	t.Cleanup(func() { _ = unix.Unmount(home, unix.MNT_DETACH) })
	for _, k := range []string{"XDG_STATE_HOME", "SYSPROF_STATE_DIR", "SUDO_UID", "SUDO_GID"} {
		t.Setenv(k, "")
	}
	t.Setenv("HOME", home)
	old := fallbackRoot
	fallbackRoot = t.TempDir()
	t.Cleanup(func() { fallbackRoot = old })
	own := filepath.Join(fallbackRoot, fmt.Sprintf("sysprof-%d", os.Geteuid()))
	got, err := StateDir()
	if want := filepath.Join(own, "runs"); err != nil || got != want {
		t.Fatalf("StateDir() = %q, %v; want %q", got, err, want)
	}
	run, err := Begin(Run{Command: []string{"true"}})
	if err != nil {
		t.Fatalf("Begin with a read-only home: %v", err)
	}
	_ = run.Drop()
	if st, err := os.Lstat(own); err != nil || st.Mode().Perm()&0o077 != 0 {
		t.Errorf("%s: %v, mode %v: want this user's alone", own, err, st.Mode())
	}
	// Squatted: a link to a directory someone else controls.
	if err := os.RemoveAll(own); err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()
	if err := os.Chmod(other, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(other, own); err != nil {
		t.Fatal(err)
	}
	if run, err := Begin(Run{Command: []string{"true"}}); err == nil {
		_ = run.Drop()
		t.Errorf("Begin used %s, a link to a directory others may write", own)
	}
}
