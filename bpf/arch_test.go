//go:build 386 || amd64 || arm64

package bpf

import (
	"runtime"
	"testing"

	"github.com/elastic/go-seccomp-bpf/arch"
)

// TestNativeArch: the table learn.c's and guard.c's numbers are read with is this build's
// architecture's, and sc_ops' x86_64 names resolve on it (newfstatat is aarch64's fstatat).
func TestNativeArch(t *testing.T) {
	want, err := arch.GetInfo(runtime.GOARCH)
	if err != nil {
		t.Fatal(err)
	}
	if NativeArch != want || ArchTables[LearnArchKindSCARCH_X8664] != want {
		t.Errorf("NativeArch %s, ArchTables[0] %s, want %s", NativeArch.Name, ArchTables[LearnArchKindSCARCH_X8664].Name, want.Name)
	}
	for _, n := range []string{"openat", "newfstatat", "execve", "clone", "mmap"} {
		if nr, ok := NativeNumber(n); !ok || want.SyscallNumbers[nr] == "" {
			t.Errorf("NativeNumber(%s) = %d, %v", n, nr, ok)
		}
	}
}
