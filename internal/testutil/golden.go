package testutil

import (
	"testing"

	"github.com/sysprof/sysprof/internal/golden"
)

// Golden compares got with the golden file at path, or writes got there when update is set
// (the package's own -update flag: `go test ./PKG -update` refreshes its golden files).
func Golden(t testing.TB, path string, got []byte, update bool) {
	t.Helper()
	golden.Check(t, path, got, update)
}
