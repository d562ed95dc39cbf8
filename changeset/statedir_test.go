package changeset

import (
	"os/user"
	"path/filepath"
	"testing"
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
