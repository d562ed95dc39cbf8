package profiler_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/profiler"
	"github.com/sysprof/sysprof/trace"
)

// env returns os.Environ with the given variables replaced.
func env(kv ...string) []string {
	out := os.Environ()
	for _, s := range kv {
		k, _, _ := strings.Cut(s, "=")
		out = slices.DeleteFunc(out, func(e string) bool { return strings.HasPrefix(e, k+"=") })
		out = append(out, s)
	}
	return out
}

func hasExe(tr *trace.Trace, base string) bool {
	return slices.ContainsFunc(tr.Processes, func(p trace.Process) bool { return filepath.Base(p.Exe) == base })
}

func baseNames(tr *trace.Trace) []string {
	var out []string
	for _, e := range exes(tr) {
		out = append(out, filepath.Base(e))
	}
	return out
}

// copyTree copies a small fixture directory so that the build does not write into testdata.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestGoBuild(t *testing.T) {
	testutil.RequireRoot(t)
	goBin := testutil.RequireTool(t, "go")
	tmp := t.TempDir()
	src := filepath.Join(tmp, "src")
	copyTree(t, testutil.Testdata("projects", "gomod"), src)
	tr := learn(t, withTimeout(t, 10*time.Minute), profiler.Options{
		Command: []string{goBin, "build", "-o", filepath.Join(tmp, "out"), "."},
		Dir:     src,
		Env: env("GOCACHE="+filepath.Join(tmp, "gocache"), "GOMODCACHE="+filepath.Join(tmp, "modcache"),
			"GOPROXY=off", "GOFLAGS=", "GOTOOLCHAIN=local", "CGO_ENABLED=0"),
	})
	if tr.ExitCode != 0 {
		t.Fatalf("go build exited %d", tr.ExitCode)
	}
	for _, want := range []string{"go", "compile", "link"} {
		if !hasExe(tr, want) {
			t.Errorf("no %s among the executables %q", want, baseNames(tr))
		}
	}
	if tr.Loss.Any() {
		t.Errorf("loss %+v", tr.Loss)
	}
	if findFile(tr, tr.Processes[0].Exe, filepath.Join(src, "go.mod"), trace.AccessRead, true) == nil {
		t.Errorf("go did not read %s/go.mod, it has %d file records", src, len(tr.Files))
	}
	if tr.Context["GOCACHE"] != filepath.Join(tmp, "gocache") || tr.Context["WORKDIR"] != src {
		t.Errorf("context %v", tr.Context)
	}
	t.Logf("%d processes, %d syscall rows, %d files, %d drops", len(tr.Processes), len(tr.Syscalls), len(tr.Files), tr.Loss.RingbufDrops)
}

func TestCargoBuild(t *testing.T) {
	testutil.RequireRoot(t)
	cargo := testutil.RequireTool(t, "cargo")
	tmp := t.TempDir()
	src := filepath.Join(tmp, "src")
	copyTree(t, testutil.Testdata("projects", "crate"), src)
	home, _ := os.UserHomeDir()
	cargoHome := os.Getenv("CARGO_HOME")
	if cargoHome == "" {
		cargoHome = filepath.Join(home, ".cargo")
	}
	rustupHome := os.Getenv("RUSTUP_HOME")
	if rustupHome == "" {
		rustupHome = filepath.Join(home, ".rustup")
	}
	tr := learn(t, withTimeout(t, 10*time.Minute), profiler.Options{
		Command: []string{cargo, "build", "--offline"},
		Dir:     src,
		Env: env("CARGO_TARGET_DIR="+filepath.Join(tmp, "target"), "CARGO_HOME="+cargoHome,
			"RUSTUP_HOME="+rustupHome, "CARGO_NET_OFFLINE=true"),
	})
	if tr.ExitCode != 0 {
		t.Fatalf("cargo build exited %d", tr.ExitCode)
	}
	names := baseNames(tr)
	if !slices.Contains(names, "cargo") || !slices.Contains(names, "rustc") {
		t.Errorf("no cargo and rustc among the executables %q", names)
	}
	if !slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "ld") || n == "collect2" }) {
		t.Errorf("no linker among the executables %q", names)
	}
	if tr.Loss.Any() {
		t.Errorf("loss %+v", tr.Loss)
	}
	t.Logf("executables %q", names)
}
