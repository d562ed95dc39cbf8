package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
)

// TestEnforceInChroot (issue 24 item 12): inside a chroot (sbuild, pbuilder and mock's chroot
// modes) the kernel refuses the user namespace enforce makes; the error says so and what to do
// instead of a bare "fork/exec /proc/self/exe: operation not permitted", and exits 125.
func TestEnforceInChroot(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireTools(t, hostPath, "unshare", "chroot", "true")
	root := t.TempDir()
	b := newBox(t, root, "x", "alice", filepath.Join("src", "project"), "")
	profile := filepath.Join(root, "profile.yaml")
	testutil.MustCode(t, "learn", b.Sysprof(t, "learn", "-p", profile, "--", "true"), 0)
	mnt := filepath.Join(root, "newroot")
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	// The whole host, /proc included, as a chroot builder sets it up.
	script := `mount --rbind / "$1" && cd / && exec chroot "$1" "$2" enforce -p "$3" -- true`
	r := b.Run(t, "unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh", mnt, testutil.SysprofBin, profile)
	if r.Code != 125 || !strings.Contains(r.Stderr, "chroot") || !strings.Contains(r.Stderr, "pivot_root") {
		t.Errorf("enforce in a chroot: want exit 125 naming the chroot and what to use instead, got %s", r)
	}
}
