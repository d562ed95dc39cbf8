//go:build 386 || amd64

package bpf

import "github.com/elastic/go-seccomp-bpf/arch"

// NativeArch is the syscall table of the ABI learn.c and guard.c call native (arch kind 0,
// the numbers in sc_ops, fops and guard events) on this build's architecture.
var NativeArch = arch.X86_64

// ArchTables names learn.c's arch kinds on this build's architecture.
var ArchTables = map[LearnArchKind]*arch.Info{
	LearnArchKindSCARCH_X8664: arch.X86_64,
	LearnArchKindSCARCH_I386:  arch.I386,
	LearnArchKindSCARCH_X32:   arch.X32,
}

// NativeNumber is name's number in NativeArch, by its x86_64 name (the kernel's tracepoints
// are named so on every architecture: sys_exit_newfstatat).
func NativeNumber(name string) (int, bool) {
	nr, ok := NativeArch.SyscallNames[name]
	return nr, ok
}
