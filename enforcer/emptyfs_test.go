package enforcer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
)

const emptyFSEnv = "SYSPROF_TEST_EMPTYFS"

// TestEmptyFilesystemIsBaseOnly: a profile without a filesystem section is enforced as
// "nothing readable, writable or executable beyond the base", as root and as an ordinary user:
// reading a file in the work tree or in $HOME is refused, writing one is refused, running
// another binary is refused; the base works (reading /etc/ld.so.cache, the command itself,
// /bin/true as the command).
func TestEmptyFilesystemIsBaseOnly(t *testing.T) {
	testutil.RequireRoot(t)
	// Outside /tmp: the private /tmp would hide a work tree or home there anyway, and the
	// point is what Landlock and the read-only root refuse.
	dir, err := os.MkdirTemp("/var/lib", "sysprof-emptyfs-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	self, _ := os.Executable()
	bin, victim := filepath.Join(dir, "enforcer.test"), filepath.Join(dir, "escape")
	for src, dst := range map[string]string{self: bin, testutil.BuildC(t, "escape/escape.c"): victim} {
		if err := copyFile(src, dst, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	work, home := filepath.Join(dir, "work"), filepath.Join(dir, "home")
	for _, d := range []string{filepath.Join(work, "out"), home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		os.Chown(d, 65534, 65534)
	}
	os.WriteFile(filepath.Join(work, "src.txt"), []byte("source\n"), 0o644)
	os.WriteFile(filepath.Join(home, "notes.txt"), []byte("notes\n"), 0o644)

	t.Run("root", func(t *testing.T) {
		if err := emptyFSCheck(victim, work, home); err != nil {
			t.Error(err)
		}
	})
	t.Run("ordinary user", func(t *testing.T) {
		cmd := exec.Command(bin) // TestMain runs emptyFSCheck when emptyFSEnv is set
		cmd.Env = append(os.Environ(), unprivEnv+"="+victim, emptyFSEnv+"=1", "HOME="+home, "SYSPROF_TEST_WORK="+work)
		cmd.Dir = work
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("as nobody: %v\n%s", err, out)
		}
	})
}

// emptyFSCheck enforces victimProfile (no filesystem section) on the victim and on /bin/true.
func emptyFSCheck(victim, work, home string) error {
	vars := map[string]string{"HOME": home, "WORKDIR": work}
	var out strings.Builder
	p := victimProfile()
	out.Reset()
	_, code, err := Run(context.Background(), Options{Profile: p, Dir: work, Vars: vars, Stdout: &out, Stderr: &out,
		Command: []string{victim, "read=/etc/ld.so.cache", "read=" + filepath.Join(work, "src.txt"), "read=" + filepath.Join(home, "notes.txt"),
			"write=" + filepath.Join(work, "out", "new.txt"), "exec=/usr/bin/true", "ok"}})
	if err != nil || code != 0 {
		return fmt.Errorf("victim: exit %d err %v\n%s", code, err, out.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var errs []error
	want := []string{"read: ok", "read: EACCES", "read: EACCES", "write: E", "exec: EACCES", "ok"}
	if len(lines) != len(want) {
		return fmt.Errorf("victim output %q, want %q", lines, want)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			errs = append(errs, fmt.Errorf("line %d: %q, want %q (the base readable, nothing else)", i+1, lines[i], w))
		}
	}
	if _, err := os.Stat(filepath.Join(work, "out", "new.txt")); err == nil {
		errs = append(errs, errors.New("the write reached the host"))
	}
	out.Reset()
	_, code, err = Run(context.Background(), Options{Profile: victimProfile(), Dir: work, Vars: vars, Stdout: &out, Stderr: &out, Command: []string{"/bin/true"}})
	if err != nil || code != 0 {
		errs = append(errs, fmt.Errorf("/bin/true under the base: exit %d err %v\n%s", code, err, out.String()))
	}
	return errors.Join(errs...)
}
