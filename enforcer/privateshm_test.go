package enforcer

import (
	"bytes"
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
	"github.com/sysprof/sysprof/policy"
)

const unprivPrivateShmEnv = "SYSPROF_TEST_UNPRIVILEGED_PRIVATE_SHM"

// TestPrivateShmWithHostFile: a profile with a private /tmp that learned a write to a fixed
// name in /dev/shm, enforced while the host has a file of that name (another run's leftover,
// or one planted there), gives the command its own empty /dev/shm: it neither sees nor writes
// the host's (the parent staged over the private tmpfs showed it the host's whole /dev/shm).
// Root and an ordinary user.
func TestPrivateShmWithHostFile(t *testing.T) {
	testutil.RequireRoot(t)
	t.Run("root", func(t *testing.T) {
		if err := privateShmChecks(privateShmTree(t)); err != nil {
			t.Error(err)
		}
	})
	t.Run("ordinary user", func(t *testing.T) {
		dir := privateShmTree(t)
		self, _ := os.Executable()
		bin := filepath.Join(dir, "enforcer.test")
		if err := copyFile(self, bin, 0o755); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("chown", "-R", "65534:65534", filepath.Join(dir, "work")).CombinedOutput(); err != nil {
			t.Fatalf("chown: %v %s", err, out)
		}
		cmd := exec.Command(bin) // TestMain runs privateShmChecks when unprivPrivateShmEnv is set
		cmd.Env = append(os.Environ(), unprivPrivateShmEnv+"="+dir)
		cmd.Dir = dir
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("as nobody: %v\n%s", err, out)
		}
	})
}

// privateShmTree makes a 0755 directory with a work tree, and the host's files in /dev/shm
// (world-writable, as a leftover of another user's run may be): the one the profile names and
// another one.
func privateShmTree(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "sysprof-privateshm-")
	if err != nil {
		t.Fatal(err)
	}
	name, other := privateShmNames(dir)
	t.Cleanup(func() {
		os.RemoveAll(dir)
		os.Remove(name)
		os.Remove(other)
	})
	os.Chmod(dir, 0o755)
	if err := os.MkdirAll(filepath.Join(dir, "work"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{name, other} {
		if err := os.WriteFile(f, []byte("host\n"), 0o666); err != nil {
			t.Fatal(err)
		}
		os.Chmod(f, 0o666)
	}
	return dir
}

func privateShmNames(dir string) (name, other string) {
	b := "/dev/shm/sysprof-test-" + filepath.Base(dir)
	return b + "-named", b + "-other"
}

// privateShmChecks runs the checks of TestPrivateShmWithHostFile on a tree from privateShmTree,
// as whoever calls it, and returns what failed.
func privateShmChecks(dir string) error {
	work := filepath.Join(dir, "work")
	name, other := privateShmNames(dir)
	p := unprivilegedProfile()
	p.Filesystem = policy.Filesystem{
		Read:       rules("/usr", "/etc", "/lib", "/lib64", "/bin", name),
		Write:      rules("/dev/null", name),
		Exec:       rules("/usr/bin", "/bin", "/usr/lib", "/lib", "/lib64"),
		PrivateTmp: true,
	}
	script := fmt.Sprintf("ls -A /dev/shm; cat %[1]s %[2]s 2>/dev/null; echo sandbox > %[1]s && cat %[1]s", name, other)
	var out bytes.Buffer
	rep, code, err := Run(context.Background(), Options{Profile: p, Command: []string{"/bin/sh", "-c", script}, Dir: work,
		Vars: map[string]string{"HOME": work, "WORKDIR": work}, Env: []string{"PATH=/usr/bin:/bin", "HOME=" + work}, Stdout: &out, Stderr: &out})
	var errs []error
	if err != nil || code != 0 {
		var b strings.Builder
		if rep != nil {
			rep.WriteTable(&b)
		}
		errs = append(errs, fmt.Errorf("exit %d %v\n%s%s", code, err, out.String(), b.String()))
	} else if out.String() != "sandbox\n" {
		errs = append(errs, fmt.Errorf("the command's /dev/shm showed the host's, or its write failed: output %q, want %q", out.String(), "sandbox\n"))
	}
	for _, f := range []string{name, other} {
		if b, err := os.ReadFile(f); err != nil || string(b) != "host\n" {
			errs = append(errs, fmt.Errorf("the host's %s: %q %v, want it unchanged", f, b, err))
		}
	}
	if rep != nil && rep.Changes != nil {
		errs = append(errs, fmt.Errorf("the run left changes for the host: %+v", *rep.Changes))
	}
	return errors.Join(errs...)
}
