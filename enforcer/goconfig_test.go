package enforcer

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/sysprof/sysprof/paths"
	"github.com/sysprof/sysprof/policy"
)

// TestGoConfigFollowsXDG: the go command's config directory ($GOCONFIG: telemetry, `go env -w`)
// is where $XDG_CONFIG_HOME puts it, created when missing as go would; its env file (GOFLAGS
// there runs at every later go build) stays read-only under a rule on the directory.
func TestGoConfigFollowsXDG(t *testing.T) {
	// Outside /tmp: a private /tmp would make the directory the command's own.
	uh, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(uh, ".cache"), 0o755); err != nil {
		t.Fatal(err)
	}
	root, err := os.MkdirTemp(filepath.Join(uh, ".cache"), "sysprof-goconfig-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	home, xdg, work := filepath.Join(root, "home"), filepath.Join(root, "xdg", "config"), filepath.Join(root, "work")
	for _, d := range []string{filepath.Join(home, ".config", "go"), work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(home, ".config", "go", "env"), []byte("GOFLAGS=-mod=mod\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := &policy.Profile{Syscalls: policy.Syscalls{Allow: []policy.Syscall{{Name: "read"}}}}
	p.Filesystem.Write = []policy.PathRule{{Path: "$GOCONFIG"}}
	for _, tc := range []struct {
		env  []string
		want string
	}{
		{[]string{"HOME=" + home}, filepath.Join(home, ".config", "go")},
		{[]string{"HOME=" + home, "XDG_CONFIG_HOME=" + xdg}, filepath.Join(xdg, "go")},
	} {
		c, err := Compile(p, Env{Vars: paths.Host(work, paths.EnvList(tc.env)), Arch: "x86_64"})
		if err != nil {
			t.Fatal(err)
		}
		if !paths.CoveredBy(tc.want, c.Plan.Landlock.Write) {
			t.Errorf("%q: landlock write %q, want %s", tc.env, c.Plan.Landlock.Write, tc.want)
		}
		if st, err := os.Stat(tc.want); err != nil || !st.IsDir() {
			t.Errorf("%q: %s not created: %v", tc.env, tc.want, err)
		}
		if env := filepath.Join(home, ".config", "go", "env"); tc.want == filepath.Dir(env) && !paths.CoveredBy(env, c.Plan.ReadOnly) {
			t.Errorf("%q: go's env file %s is writable (read-only %q, writable %q, staged %+v, notes %q)", tc.env, env, c.Plan.ReadOnly, c.Plan.Writable, c.Plan.Staged, c.Notes)
		}
	}
}
