package enforcer

import (
	"testing"

	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/seccomp"
)

// Short names for the seccomp package's values in this package's tests.
const (
	retAllow     = seccomp.RetAllow
	retNotify    = seccomp.RetNotify
	x32Bit       = seccomp.X32Bit
	ipprotoMPTCP = seccomp.IPProtoMPTCP
	x86          = uint32(0xc000003e)
	i386         = uint32(0x40000003)
	a64          = uint32(0xc00000b7)
)

func retErrno(e unix.Errno) uint32 { return seccomp.RetErrno(e) }
func actionName(r uint32) string   { return seccomp.ActionName(r) }
func nr64(name string) uint32      { return uint32(arch.X86_64.SyscallNames[name]) }
func nr32(name string) uint32      { return uint32(arch.I386.SyscallNames[name]) }
func nrx32(name string) uint32     { return uint32(arch.X32.SyscallNames[name]) | x32Bit }

type vmFilter struct{ vm *seccomp.VM }

func newVM(t testing.TB, raw []bpf.RawInstruction) vmFilter {
	t.Helper()
	vm, err := seccomp.NewVM(raw)
	if err != nil {
		t.Fatal(err)
	}
	return vmFilter{vm}
}

func (v vmFilter) run(t testing.TB, auditArch, nr uint32, args [6]uint64) uint32 {
	t.Helper()
	out, err := v.vm.Run(auditArch, nr, args)
	if err != nil {
		t.Fatalf("vm: %v", err)
	}
	return out
}

func testProfile() *policy.Profile {
	p := &policy.Profile{}
	for _, n := range []string{"read", "write", "openat", "close", "mmap", "execve", "clone", "clone3", "socket", "ioctl", "getpid", "exit_group", "prctl"} {
		p.Syscalls.Allow = append(p.Syscalls.Allow, policy.Syscall{Name: n})
	}
	p.Syscalls.Args = []policy.ArgRule{
		{Syscall: "socket", Arg: 0, Values: []string{"AF_UNIX", "AF_INET", "AF_INET6"}},
		{Syscall: "socket", Arg: 1, Mask: "0xf", Values: []string{"SOCK_STREAM", "SOCK_DGRAM"}},
		{Syscall: "mmap", Arg: 2, Flags: []string{"0x1", "0x2", "0x4"}, Errno: "EACCES"},
		{Syscall: "prctl", Arg: 0, Values: []string{"15", "16"}, Errno: "EINVAL"},
	}
	return p
}
