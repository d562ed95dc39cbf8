package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sysprof/sysprof/internal/testutil"
)

// copyDir copies the regular files of a fixture directory tree.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		out := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(out, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(out, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func runInitCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(append([]string{"init"}, args...), strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func TestInitGolden(t *testing.T) {
	for _, tc := range []struct {
		kind, fixture string
		steps         []string
	}{
		{"gomod", testutil.Testdata("projects", "gomod"), []string{"vet", "build", "test"}},
		{"crate", testutil.Testdata("projects", "crate"), []string{"build", "test"}},
		{"cproj", testutil.Testdata("projects", "cproj"), []string{"make"}},
		{"npm", testutil.Testdata("gates", "npm"), []string{"install", "test"}},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			dir := newProjectDir(t, "")
			copyDir(t, tc.fixture, dir)
			code, _, stderr := runInitCLI(t)
			if code != 0 {
				t.Fatalf("init: status %d: %s", code, stderr)
			}
			got, err := os.ReadFile(filepath.Join(dir, projectFile))
			if err != nil {
				t.Fatal(err)
			}
			golden := testutil.Testdata("gates", "init", tc.kind+".golden.yaml")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./cmd/sysprof -run TestInitGolden -update)", err)
			}
			if d := cmp.Diff(string(want), string(got)); d != "" {
				t.Errorf("%s differs (-want +got):\n%s", golden, d)
			}

			// What init writes loads, with the steps it announced.
			cfg, err := loadConfig(configCmd(t))
			if err != nil {
				t.Fatalf("the starter file does not load: %v", err)
			}
			if d := cmp.Diff(tc.steps, gateNames(cfg.Project.Steps)); d != "" {
				t.Errorf("steps (-want +got):\n%s", d)
			}
			if !strings.Contains(stderr, "sudo sysprof learn --all") {
				t.Errorf("stderr does not say what to do next:\n%s", stderr)
			}
		})
	}
}

func TestInitRefusesToOverwrite(t *testing.T) {
	dir := newProjectDir(t, "version: 1\n# mine\n")
	copyDir(t, testutil.Testdata("projects", "cproj"), dir)
	code, _, stderr := runInitCLI(t)
	if code != exitSysprof || !strings.Contains(stderr, "use --force") {
		t.Fatalf("status %d, stderr %s", code, stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, projectFile)); string(b) != "version: 1\n# mine\n" {
		t.Fatalf("file was changed: %s", b)
	}
	code, stdout, _ := runInitCLI(t, "--stdout")
	if code != 0 || !strings.Contains(stdout, "command: [make]") {
		t.Fatalf("--stdout: status %d: %s", code, stdout)
	}
	if code, _, stderr := runInitCLI(t, "--force"); code != 0 {
		t.Fatalf("--force: status %d: %s", code, stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, projectFile)); !strings.Contains(string(b), "command: [make]") {
		t.Fatalf("--force did not write: %s", b)
	}
}

func TestInitNothingFound(t *testing.T) {
	newProjectDir(t, "")
	code, _, stderr := runInitCLI(t)
	if code != exitSysprof || !strings.Contains(stderr, "no go.mod, Cargo.toml, package.json or Makefile") {
		t.Fatalf("status %d, stderr %s", code, stderr)
	}
}

func TestInitFlags(t *testing.T) {
	dir := newProjectDir(t, "")
	var got initOptions
	err := execSeam(t, newInitCmd(streams{}, func(_ context.Context, o *initOptions) error {
		got = *o
		return nil
	}), "init", "--force", "--stdout")
	if err != nil {
		t.Fatal(err)
	}
	if got.Dir != dir || !got.Force || !got.Stdout {
		t.Errorf("options: %+v", got)
	}
	if err := execSeam(t, newInitCmd(streams{}, runInit), "init", "extra"); err == nil {
		t.Error("init accepted an argument")
	}
}
