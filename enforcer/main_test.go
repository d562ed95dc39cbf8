package enforcer

import (
	"os"
	"testing"
)

// TestMain lets the test binary be its own init stage: Run re-executes /proc/self/exe.
func TestMain(m *testing.M) {
	MaybeInit()
	os.Exit(m.Run())
}
