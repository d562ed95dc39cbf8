package enforcer

import (
	"testing"

	"github.com/elastic/go-seccomp-bpf/arch"

	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/seccomp"
)

// TestEnforcedFilterIsCacheServed: the program enforce installs (compileSeccomp with the
// supervisor's additions) lets the kernel's action cache answer every x86_64 syscall it allows
// without an argument check; only those with one run it. With a granted /proc write, opens
// gain a check (the supervisor sees opens for writing) and the rest keep the cache.
func TestEnforcedFilterIsCacheServed(t *testing.T) {
	p := &policy.Profile{}
	for _, n := range []string{"read", "write", "openat", "close", "getppid", "mmap", "mprotect", "futex", "newfstatat", "execve", "mkdir"} {
		p.Syscalls.Allow = append(p.Syscalls.Allow, policy.Syscall{Name: n})
	}
	for _, withProc := range []bool{false, true} {
		if withProc {
			p.Filesystem.Write = []policy.PathRule{{Path: "/proc/self/oom_score_adj"}}
		}
		c, err := compileSeccomp(p, "x86_64", true, supervise{})
		if err != nil {
			t.Fatal(err)
		}
		abi := c.spec.ABIFor(uint32(arch.X86_64.ID), 0)
		for nr := uint32(0); nr <= abi.Max; nr++ {
			miss := abi.CacheMiss(nr)
			if got := seccomp.ConstAllow(c.Filter, uint32(arch.X86_64.ID), nr); got != (miss == "") {
				t.Errorf("proc write %v: %s: served by the action cache %v (%q)", withProc, abi.Known[nr], got, miss)
			}
		}
		// (mmap and mprotect are not here: executable-memory checks may give them an argument check.)
		for _, n := range []string{"read", "write", "close", "getppid", "futex", "newfstatat", "execve"} {
			if !seccomp.ConstAllow(c.Filter, uint32(arch.X86_64.ID), uint32(arch.X86_64.SyscallNames[n])) {
				t.Errorf("proc write %v: %s runs the filter", withProc, n)
			}
		}
	}
}
