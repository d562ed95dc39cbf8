package enforcer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/policy"
)

const unprivEnv = "SYSPROF_TEST_UNPRIVILEGED_VICTIM"

// Enforcing must not need root: the test binary runs itself as nobody (user namespace, no
// capabilities on the host) and enforces a profile with every layer on the escape victim.
func TestEnforceAsOrdinaryUser(t *testing.T) {
	testutil.RequireRoot(t)
	if _, err := os.Stat("/proc/sys/kernel/unprivileged_userns_clone"); err == nil {
		if b, _ := os.ReadFile("/proc/sys/kernel/unprivileged_userns_clone"); strings.TrimSpace(string(b)) == "0" {
			testutil.RequireNoErr(t, "unprivileged user namespaces", os.ErrPermission)
		}
	}
	// Everything nobody needs must be readable by it: copy the test binary and the victim
	// into a 0755 directory.
	dir, err := os.MkdirTemp("", "sysprof-unpriv-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	self, _ := os.Executable()
	bin := filepath.Join(dir, "enforcer.test")
	victim := filepath.Join(dir, "escape")
	for src, dst := range map[string]string{self: bin, testutil.BuildC(t, "escape/escape.c"): victim} {
		if err := copyFile(src, dst, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	work := filepath.Join(dir, "work")
	boundOut(t, work, filepath.Join(dir, "out"), 65534, 65534)
	os.WriteFile(filepath.Join(work, "src.txt"), []byte("x"), 0o644)
	cmd := exec.Command(bin) // TestMain runs unprivilegedHelper when unprivEnv is set
	cmd.Env = append(os.Environ(), unprivEnv+"="+victim, "HOME="+dir, "SYSPROF_TEST_WORK="+work)
	cmd.Dir = work
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("as nobody: %v\n%s", err, out)
	}
}

// unprivilegedHelper is TestEnforceAsOrdinaryUser's half that runs as nobody (TestMain calls it
// when unprivEnv names the victim): it enforces and checks, and its error fails the parent.
func unprivilegedHelper(victim string) error {
	work := os.Getenv("SYSPROF_TEST_WORK")
	ld, _ := filepath.EvalSymlinks("/lib64/ld-linux-x86-64.so.2")
	p := victimProfile()
	p.Filesystem = policy.Filesystem{
		Read:  []policy.PathRule{{Path: "/usr"}, {Path: "/etc"}, {Path: "/proc"}, {Path: "$WORKDIR"}},
		Write: []policy.PathRule{{Path: filepath.Join(filepath.Dir(victim), "out")}, {Path: "/dev/null"}}, // boundOut's
		Exec:  []policy.PathRule{{Path: victim}, {Path: ld}},
	}
	// Twice: with an init stage started for the profile, and with one started before it was
	// known (the CLI's way: the stage enters its network namespace itself, inside the user
	// namespace).
	var errs []error
	for _, early := range []bool{false, true} {
		var stdout strings.Builder
		opts := Options{Profile: p, Command: []string{victim, "write=src.txt", "write=out/ok.txt", "sysinfo", "ok"},
			Dir: work, Stdout: &stdout, Stderr: &stdout}
		var e *Early
		if early {
			if e = StartEarly(opts); e == nil {
				return errors.New("StartEarly: nil")
			}
			opts.Early = e
		}
		rep, code, err := Run(context.Background(), opts)
		e.Close()
		if err != nil || code != 0 {
			return fmt.Errorf("early %v: exit %d err %v\n%s", early, code, err, stdout.String())
		}
		if early && !e.taken {
			errs = append(errs, errors.New("Run did not take the early stage"))
		}
		if want := "write: EROFS\nwrite: ok\nsysinfo: EPERM\nok\n"; stdout.String() != want {
			errs = append(errs, fmt.Errorf("early %v: output %q, want %q", early, stdout.String(), want))
		}
		found := false
		for _, d := range rep.Denials {
			found = found || d.Syscall == "sysinfo"
		}
		if !found {
			errs = append(errs, fmt.Errorf("early %v: sysinfo not reported: %+v", early, rep.Denials))
		}
		for _, l := range rep.Layers {
			if l.State != "applied" {
				errs = append(errs, fmt.Errorf("early %v: layer %s %s: %s", early, l.Name, l.State, l.Detail))
			}
		}
	}
	return errors.Join(errs...)
}

func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
