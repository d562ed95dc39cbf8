package enforcer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/policy"
)

const unprivLoaderEnv = "SYSPROF_TEST_UNPRIVILEGED_LOADER_ENV"

// TestStageWithoutLoaderVariables: the init stage, PID 1 of the sandbox, runs before any layer
// with the host's mounts, so the caller's LD_PRELOAD must never reach it (a dynamically linked
// stage, sysprof without the embedded program or this test binary, ran libfaketime there: it
// made /dev/shm/faketime_shm_1 in the host's /dev/shm as RootUID). The command still gets
// every loader variable. Root and an ordinary user; early and late stages.
func TestStageWithoutLoaderVariables(t *testing.T) {
	testutil.RequireRoot(t)
	lib := testutil.BuildC(t, "victim/preloadmark.c", "-shared", "-fPIC")
	t.Run("root", func(t *testing.T) {
		if err := loaderEnvChecks(loaderEnvTree(t, lib)); err != nil {
			t.Error(err)
		}
	})
	t.Run("ordinary user", func(t *testing.T) {
		dir := loaderEnvTree(t, lib)
		self, _ := os.Executable()
		bin := filepath.Join(dir, "enforcer.test")
		if err := copyFile(self, bin, 0o755); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("chown", "-R", "65534:65534", filepath.Join(dir, "work")).CombinedOutput(); err != nil {
			t.Fatalf("chown: %v %s", err, out)
		}
		cmd := exec.Command(bin) // TestMain runs loaderEnvChecks when unprivLoaderEnv is set
		cmd.Env = append(os.Environ(), unprivLoaderEnv+"="+dir)
		cmd.Dir = dir
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("as nobody: %v\n%s", err, out)
		}
	})
}

// loaderEnvTree makes a 0755 directory with the library and a work tree, and removes what the
// library marked in the host's /dev/shm.
func loaderEnvTree(t *testing.T, lib string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "sysprof-loaderenv-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		os.RemoveAll(dir)
		m, _ := filepath.Glob(loaderEnvMark(dir) + ".*")
		for _, p := range m {
			os.Remove(p)
		}
	})
	os.Chmod(dir, 0o755)
	if err := os.MkdirAll(filepath.Join(dir, "work"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := copyFile(lib, filepath.Join(dir, "preloadmark.so"), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// loaderEnvMark is where the library marks the processes that load it: the host's /dev/shm.
func loaderEnvMark(dir string) string {
	return "/dev/shm/sysprof-test-" + filepath.Base(dir)
}

// loaderEnvChecks runs the checks of TestStageWithoutLoaderVariables on a tree from
// loaderEnvTree, as whoever calls it, and returns what failed.
func loaderEnvChecks(dir string) error {
	lib := filepath.Join(dir, "preloadmark.so")
	work := filepath.Join(dir, "work")
	mark := loaderEnvMark(dir)
	env := []string{"PATH=/usr/bin:/bin", "HOME=" + work, "LD_PRELOAD=" + lib, "GLIBC_TUNABLES=glibc.malloc.check=0", "SYSPROF_TEST_MARK=" + mark}
	p := unprivilegedProfile()
	p.Filesystem = policy.Filesystem{
		Read:       rules("/usr", "/etc", "/lib", "/lib64", "/bin", dir),
		Write:      rules("/dev/null"),
		Exec:       rules("/usr/bin", "/bin", "/usr/lib", "/lib", "/lib64", dir),
		PrivateTmp: true,
	}
	var errs []error
	for _, early := range []bool{false, true} {
		var out bytes.Buffer
		opts := Options{Profile: p, Command: []string{"/usr/bin/printenv", "LD_PRELOAD", "GLIBC_TUNABLES"}, Dir: work,
			Vars: map[string]string{"HOME": work, "WORKDIR": work}, Env: env, Stdout: &out, Stderr: &out}
		if early {
			e := StartEarly(opts)
			if e == nil {
				errs = append(errs, errors.New("StartEarly: nil"))
				continue
			}
			defer e.Close()
			opts.Early = e
			b, err := os.ReadFile("/proc/" + strconv.Itoa(e.st.pid) + "/environ")
			if err != nil {
				errs = append(errs, fmt.Errorf("the early init stage's environment: %w", err))
			}
			for _, kv := range strings.Split(string(b), "\x00") {
				if strings.HasPrefix(kv, "LD_") || strings.HasPrefix(kv, "GLIBC_TUNABLES=") {
					errs = append(errs, fmt.Errorf("the init stage was started with %s", kv))
				}
			}
		}
		rep, code, err := Run(context.Background(), opts)
		if err != nil || code != 0 {
			var b strings.Builder
			if rep != nil {
				rep.WriteTable(&b)
			}
			errs = append(errs, fmt.Errorf("early %v: exit %d %v\n%s%s", early, code, err, out.String(), b.String()))
			continue
		}
		if want := lib + "\nglibc.malloc.check=0\n"; out.String() != want {
			errs = append(errs, fmt.Errorf("early %v: the command's loader variables %q, want %q", early, out.String(), want))
		}
		// What loaded the library in the host's mount namespace left its pid there (the init
		// stage: .1); the command's /dev/shm is its own.
		if m, _ := filepath.Glob(mark + ".*"); len(m) > 0 {
			errs = append(errs, fmt.Errorf("early %v: the caller's LD_PRELOAD ran with the host's /dev/shm: %s", early, strings.Join(m, " ")))
		}
	}
	return errors.Join(errs...)
}
