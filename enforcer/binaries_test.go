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
	"github.com/sysprof/sysprof/policy"
)

const binCheckEnv = "SYSPROF_TEST_BIN_CHECK" // run binariesCheck as nobody

// TestChangedBinaryReported: a binary swapped after learning is reported, and refused with
// VerifyBinaries, while an unchanged one runs with no warning (as root and as nobody).
func TestChangedBinaryReported(t *testing.T) {
	testutil.RequireRoot(t)
	base, err := os.MkdirTemp("", "sysprof-bin-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(base)
	os.Chmod(base, 0o755)
	self, _ := os.Executable()
	bin := filepath.Join(base, "enforcer.test")
	if err := copyFile(self, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	victim := testutil.BuildC(t, "escape/escape.c")
	for _, who := range []string{"root", "nobody"} {
		t.Run(who, func(t *testing.T) {
			dir := filepath.Join(base, who)
			os.MkdirAll(dir, 0o755)
			os.Chown(dir, 65534, 65534)
			if err := copyFile(victim, filepath.Join(dir, "tool"), 0o755); err != nil {
				t.Fatal(err)
			}
			os.Chown(filepath.Join(dir, "tool"), 65534, 65534)
			if who == "root" {
				if err := binariesCheck(dir); err != nil {
					t.Error(err)
				}
				return
			}
			cmd := exec.Command(bin)
			cmd.Env = append(os.Environ(), binCheckEnv+"="+dir, "HOME="+dir)
			cmd.Dir = dir
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("as nobody: %v\n%s", err, out)
			}
		})
	}
}

// binariesCheck learns dir/tool's hash, runs it unchanged (no warning), swaps its content and
// runs it again (warned and reported), then with VerifyBinaries (refused, not run).
func binariesCheck(dir string) error {
	old := binHashCache
	binHashCache = func() string { return filepath.Join(dir, "binhash") }
	defer func() { binHashCache = old }()
	tool := filepath.Join(dir, "tool")
	sum, err := hashFile(tool)
	if err != nil {
		return err
	}
	ld, _ := filepath.EvalSymlinks("/lib64/ld-linux-x86-64.so.2")
	p := victimProfile()
	p.Filesystem = policy.Filesystem{
		Read:  []policy.PathRule{{Path: "/usr"}, {Path: "/etc"}, {Path: dir}},
		Write: []policy.PathRule{{Path: "/dev/null"}},
		Exec:  []policy.PathRule{{Path: tool}, {Path: ld}},
	}
	p.Binaries = []policy.Binary{{Path: tool, SHA256: sum}}
	run := func(verify bool) (string, int, error, []string) {
		var out strings.Builder
		rep, code, err := Run(context.Background(), Options{Profile: p, Command: []string{tool, "ok"}, Dir: dir,
			Stdout: &out, Stderr: &out, VerifyBinaries: verify})
		var changed []string
		if rep != nil {
			for _, c := range rep.ChangedBinaries {
				changed = append(changed, c.Path)
			}
		}
		return out.String(), code, err, changed
	}
	var errs []error
	// Unchanged, twice (the second from the cache): runs, no warning, no entry.
	for i := range 2 {
		if out, code, err, changed := run(true); err != nil || code != 0 || out != "ok\n" || len(changed) > 0 {
			errs = append(errs, fmt.Errorf("unchanged binary (run %d): exit %d err %v changed %v output %q", i, code, err, changed, out))
		}
	}
	// Swapped after learning: same size and path, other content.
	b, _ := os.ReadFile(tool)
	b[len(b)-1] ^= 0xff
	if err := os.WriteFile(tool+".new", b, 0o755); err != nil {
		return err
	}
	if err := os.Rename(tool+".new", tool); err != nil {
		return err
	}
	out, code, err, changed := run(false)
	if err != nil || code != 0 || !strings.Contains(out, "warning: binary "+tool) || len(changed) != 1 {
		errs = append(errs, fmt.Errorf("swapped binary: exit %d err %v changed %v output %q: want it run, warned and reported", code, err, changed, out))
	}
	out, code, err, changed = run(true)
	var be *BinaryError
	if code != 125 || !errors.As(err, &be) || !strings.Contains(err.Error(), tool) || strings.Contains(out, "ok\n") || len(changed) != 1 {
		errs = append(errs, fmt.Errorf("swapped binary with VerifyBinaries: exit %d err %v output %q: want refused (125) naming it", code, err, out))
	}
	return errors.Join(errs...)
}

// BenchmarkCheckBinariesCached is the per-run cost of the sha256 check when nothing changed
// (every hash from the cache file): go test ./enforcer -run '^$' -bench CheckBinariesCached
func BenchmarkCheckBinariesCached(b *testing.B) {
	dir := b.TempDir()
	old := binHashCache
	binHashCache = func() string { return filepath.Join(dir, "binhash") }
	defer func() { binHashCache = old }()
	p := &policy.Profile{}
	for _, bin := range []string{"/usr/bin/make", "/usr/bin/gcc", "/usr/bin/git", "/bin/bash", "/usr/bin/ld", "/usr/bin/as", "/usr/bin/cc", "/bin/sh"} {
		if sum, err := hashFile(bin); err == nil {
			p.Binaries = append(p.Binaries, policy.Binary{Path: bin, SHA256: sum})
		}
	}
	checkBinaries(p, Env{}) // fills the cache
	b.ResetTimer()
	for range b.N {
		if c := checkBinaries(p, Env{}); len(c) > 0 {
			b.Fatal(c)
		}
	}
	b.ReportMetric(float64(len(p.Binaries)), "binaries")
}
