package testutil

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// BuildSysprof builds ./cmd/sysprof into dir as make does (scripts/build.sh: its init stage
// program embedded) and returns the binary's path: end-to-end tests run the real CLI as a
// subprocess.
func BuildSysprof(dir string) (string, error) {
	bin := filepath.Join(dir, "sysprof")
	build := exec.Command("./scripts/build.sh", bin)
	build.Dir = RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("scripts/build.sh %s: %v\n%s", bin, err, out)
	}
	return bin, nil
}

// CopyTree copies the regular files and directories of src into dst.
func CopyTree(t testing.TB, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		t.Fatalf("copy %s: %v", src, err)
	}
}

// WriteFile writes content to path with exactly mode, creating its directory.
func WriteFile(t testing.TB, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // the mode exactly, whatever the umask
		t.Fatal(err)
	}
}
