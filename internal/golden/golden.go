// Package golden compares test output with golden files. It imports nothing of sysprof, so
// that every package's tests can use it, policy's included (testutil imports policy).
package golden

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Check compares got with the golden file at path, or writes got there when update is set
// (the package's own -update flag: `go test ./PKG -update` refreshes its golden files).
func Check(t testing.TB, path string, got []byte, update bool) {
	t.Helper()
	if update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the test with -update to create it)", err)
	}
	if d := cmp.Diff(string(want), string(got)); d != "" {
		t.Errorf("%s differs (-want +got); refresh it with -update if intended:\n%s", path, d)
	}
}
