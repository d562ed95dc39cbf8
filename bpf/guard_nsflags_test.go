package bpf

import (
	"os"
	"regexp"
	"strconv"
	"testing"

	"github.com/sysprof/sysprof/seccomp"
)

// TestGuardNamespaceFlags: guard.c's NS_FLAGS (the clone3 flags it reports) are the flags the
// filter denies clone (seccomp.NamespaceFlags), so the guard reports what clone's rule refuses.
func TestGuardNamespaceFlags(t *testing.T) {
	src, err := os.ReadFile("guard.c")
	if err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`(?m)^#define NS_FLAGS (.*)$`).FindSubmatch(src)
	if line == nil {
		t.Fatal("guard.c defines no NS_FLAGS")
	}
	var got uint64
	for _, h := range regexp.MustCompile(`0x[0-9a-fA-F]+`).FindAll(line[1], -1) {
		v, err := strconv.ParseUint(string(h[2:]), 16, 64)
		if err != nil {
			t.Fatal(err)
		}
		got |= v
	}
	if got != seccomp.NamespaceFlags {
		t.Errorf("guard.c NS_FLAGS = %#x, seccomp.NamespaceFlags = %#x", got, seccomp.NamespaceFlags)
	}
}
