// Package testutil holds the helpers tests share: the rule for privileged tests (skip with a
// reason on a laptop when the host lacks a feature or permission, fail under CI=true, fail
// everywhere on any other error), building the victim programs in testdata, listeners on
// loopback or unix sockets (Listen, LoopbackTCP, LoopbackUDP, and Record, a TCP "attacker" that
// keeps what it receives), and the one CLI test harness of e2e/, shipped/ and cmd/sysprof: the
// built binary (MainWithSysprof), a Box with its own work directory, HOME, TMPDIR and hermetic
// environment to run it and the tools in (Box.Run, Box.Sysprof; Run and Command anywhere), how a
// run ended (Result) and its report (ReadReport, RequireNoDenials); Golden, the one golden-file
// check.
package testutil

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/sysprof/sysprof/internal/feature"
)

// InCI reports whether the tests run in CI, where a missing capability is a failure.
func InCI() bool { return os.Getenv("CI") != "" }

// RequireRoot skips the test when not root, unless CI is set: then it fails.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if InCI() {
		t.Fatalf("this test needs root (BPF, namespaces, seccomp) and CI=true: run the suite as root")
	}
	t.Skip("needs root (BPF, namespaces, seccomp); run as root or set CI=true to make this a failure")
}

// RequireNoErr is for capability probes: when err says the host lacks something (Missing) the
// test skips with the reason on a laptop and fails under CI=true; any other error fails the
// test everywhere, so that a broken probe or setup never passes as a skip.
func RequireNoErr(t testing.TB, what string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	switch {
	case InCI():
		t.Fatalf("%s: %v (CI=true: a missing capability is a failure)", what, err)
	case !Missing(err):
		t.Fatalf("%s: %v (not a missing feature or permission: a failure, not a skip)", what, err)
	default:
		t.Skipf("%s not available here: %v", what, err)
	}
}

// Missing reports whether err says this host lacks a feature, a permission or a program rather
// than that something failed: sysprof's ErrNotSupported (sandbox, hostcheck), cilium/ebpf's,
// errors.ErrUnsupported (ENOSYS, EOPNOTSUPP), os.ErrPermission (EPERM, EACCES),
// exec.ErrNotFound and fs.ErrNotExist (a file or program this host does not have).
func Missing(err error) bool {
	for _, target := range []error{feature.ErrNotSupported, ebpf.ErrNotSupported, errors.ErrUnsupported, os.ErrPermission, exec.ErrNotFound, fs.ErrNotExist} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

// NotAvailable is the error a test passes to RequireNoErr for a condition it found itself
// (an old Landlock ABI, no ELF interpreter): it matches feature.ErrNotSupported.
func NotAvailable(format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), feature.ErrNotSupported)
}

// RequireTool skips (or fails in CI) when a program the test drives is missing.
func RequireTool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	RequireNoErr(t, "tool "+name, err)
	return p
}

// RepoRoot returns the repository's top directory.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// Testdata returns a path under the repository's testdata directory.
func Testdata(elem ...string) string {
	return filepath.Join(append([]string{RepoRoot(), "testdata"}, elem...)...)
}

var (
	buildMu    sync.Mutex
	buildCache = map[string]string{}
)

// BuildC compiles testdata/<rel> (a C file) with cc into a temp dir once per test binary and
// returns the executable's path. extra are additional compiler flags.
func BuildC(t testing.TB, rel string, extra ...string) string {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	if p, ok := buildCache[rel]; ok {
		return p
	}
	cc := RequireTool(t, "cc")
	dir, err := os.MkdirTemp("", "sysprof-victim-")
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, filepath.Base(rel[:len(rel)-len(filepath.Ext(rel))]))
	args := append([]string{"-O1", "-Wall", "-o", out, Testdata(rel)}, extra...)
	args = append(args, "-lpthread")
	if b, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", rel, err, b)
	}
	buildCache[rel] = out
	return out
}
