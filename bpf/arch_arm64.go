//go:build arm64

package bpf

import "github.com/elastic/go-seccomp-bpf/arch"

// NativeArch is the syscall table of the ABI learn.c and guard.c call native (arch kind 0,
// the numbers in sc_ops, fops and guard events) on this build's architecture.
var NativeArch = arch.AARCH64

// ArchTables names learn.c's arch kinds on this build's architecture: kind 1 is AArch32
// (compat, arch.h's PSR_MODE32_BIT); arm64 has no x32.
var ArchTables = map[LearnArchKind]*arch.Info{
	LearnArchKindSCARCH_X8664: arch.AARCH64,
	LearnArchKindSCARCH_I386:  arch.ARM,
}

// NativeNumber is name's number in NativeArch, by its x86_64 name (the kernel's tracepoints
// are named so on every architecture: sys_exit_newfstatat): go-seccomp-bpf's aarch64 table
// calls newfstatat fstatat.
func NativeNumber(name string) (int, bool) {
	if name == "newfstatat" {
		name = "fstatat"
	}
	nr, ok := NativeArch.SyscallNames[name]
	return nr, ok
}
