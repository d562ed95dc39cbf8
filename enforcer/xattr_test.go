package enforcer

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/report"
)

// aclValue encodes {tag, perm, id} triples as a POSIX ACL xattr.
func aclValue(es ...[3]uint32) []byte {
	b := binary.LittleEndian.AppendUint32(nil, 2)
	for _, e := range es {
		b = binary.LittleEndian.AppendUint16(b, uint16(e[0]))
		b = binary.LittleEndian.AppendUint16(b, uint16(e[1]))
		b = binary.LittleEndian.AppendUint32(b, e[2])
	}
	return b
}

// TestXattrRefusal: the supervisor answers, and records, what the kernel refuses inside the
// sandbox without a trace (issue 23 item 5) and what must never leave a run; everything else
// goes on to the kernel.
func TestXattrRefusal(t *testing.T) {
	const u = 0xffffffff
	userMap := "         0       1000          1\n"
	mapped := func(gid bool, id uint32) bool { return idMapped(userMap, id) }
	for _, c := range []struct {
		name  string
		value []byte
		want  unix.Errno
	}{
		{"security.capability", []byte{1, 0, 0, 2}, unix.EPERM},
		{"trusted.overlay.redirect", []byte("/etc"), unix.EPERM},
		{"trusted.foo", nil, unix.EPERM},
		{"user.overlay.metacopy", nil, unix.EPERM},
		{"system.posix_acl_access", aclValue([3]uint32{1, 6, u}, [3]uint32{2, 6, 1}, [3]uint32{4, 0, u}, [3]uint32{0x10, 6, u}, [3]uint32{0x20, 0, u}), unix.EINVAL},
		{"system.posix_acl_default", aclValue([3]uint32{1, 7, u}, [3]uint32{8, 7, 27}, [3]uint32{4, 5, u}, [3]uint32{0x10, 7, u}, [3]uint32{0x20, 5, u}), unix.EINVAL},
		{"system.posix_acl_access", []byte("junk"), unix.EINVAL},
		// Only the ids the sandbox maps (here its own, 0): the kernel takes it.
		{"system.posix_acl_access", aclValue([3]uint32{1, 6, u}, [3]uint32{2, 6, 0}, [3]uint32{4, 0, u}, [3]uint32{0x10, 6, u}, [3]uint32{0x20, 0, u}), 0},
		{"system.posix_acl_access", aclValue([3]uint32{1, 6, u}, [3]uint32{4, 0, u}, [3]uint32{0x20, 6, u}), 0},
		{"user.mime_type", []byte("text/plain"), 0},
		{"user.xdg.origin.url", []byte("https://x"), 0},
		{"security.selinux", []byte("x"), 0},
	} {
		got, why := xattrRefusal(c.name, c.value, mapped)
		if got != c.want {
			t.Errorf("%s %x: %v (%s), want %v", c.name, c.value, got, why, c.want)
		}
		if got != 0 && !strings.HasPrefix(why, "none: ") {
			t.Errorf("%s: why = %q: want a suggestion of no profile change", c.name, why)
		}
	}
	if idMapped(userMap, 1) || !idMapped(userMap, 0) || idMapped("", 0) {
		t.Error("idMapped reads uid_map wrong")
	}
}

// TestKernelRefusalsGoToTheSupervisor: under enforce the filter sends every setxattr, a device
// node made and a rename leaving a whiteout to the supervisor (which refuses and records what
// the kernel would refuse without a trace); a fifo, a file and an ordinary rename go through.
// A device node's denial suggests no profile change.
func TestKernelRefusalsGoToTheSupervisor(t *testing.T) {
	p := testProfile()
	for _, n := range []string{"setxattr", "fsetxattr", "lsetxattr", "mknod", "mknodat", "renameat2"} {
		p.Syscalls.Allow = append(p.Syscalls.Allow, policy.Syscall{Name: n})
	}
	c, err := compileSeccomp(p, "x86_64", true, supervise{})
	if err != nil {
		t.Fatal(err)
	}
	x86 := uint32(arch.X86_64.ID)
	nr := func(n string) uint32 { return uint32(arch.X86_64.SyscallNames[n]) }
	for _, tc := range []struct {
		call string
		args [6]uint64
		want uint32
	}{
		{"setxattr", [6]uint64{1, 2, 3, 4}, retNotify},
		{"fsetxattr", [6]uint64{3, 2, 3, 4}, retNotify},
		{"mknod", [6]uint64{1, unix.S_IFCHR | 0o600}, retNotify},
		{"mknodat", [6]uint64{unix.AT_FDCWD & 0xffffffff, 1, unix.S_IFBLK | 0o600}, retNotify},
		{"mknodat", [6]uint64{unix.AT_FDCWD & 0xffffffff, 1, unix.S_IFIFO | 0o600}, retAllow},
		{"mknod", [6]uint64{1, unix.S_IFREG | 0o644}, retAllow},
		{"renameat2", [6]uint64{0, 1, 0, 2, unix.RENAME_WHITEOUT}, retNotify},
		{"renameat2", [6]uint64{0, 1, 0, 2, unix.RENAME_NOREPLACE}, retAllow},
		{"renameat2", [6]uint64{0, 1, 0, 2, unix.RENAME_EXCHANGE}, retAllow},
	} {
		if got := c.spec.Eval(x86, nr(tc.call), tc.args); got != tc.want {
			t.Errorf("%s %v: %#x, want %#x", tc.call, tc.args, got, tc.want)
		}
	}
	var d report.Denial
	c.suggestDenial(&d, "x86_64", "mknod", x86, nr("mknod"), [6]uint64{1, unix.S_IFCHR})
	if d.Change != nil || !strings.HasPrefix(d.Suggest, "none: ") {
		t.Errorf("a device node's denial suggests %q (%+v): want no profile change", d.Suggest, d.Change)
	}
	// An export's filter (no supervisor) is not changed.
	if s, err := compileSeccomp(p, "x86_64", false, supervise{}); err != nil {
		t.Fatal(err)
	} else if got := s.spec.Eval(x86, nr("mknod"), [6]uint64{1, unix.S_IFCHR}); got != retAllow {
		t.Errorf("standalone mknod of a device: %#x, want the profile's allow", got)
	}
}

// TestInitStageAccessGoesToTheSupervisor: under a profile that learned ptrace,
// process_vm_readv/writev and kcmp (a debugger's), the same calls naming pid 1, the init
// stage, go to the supervisor (refused and recorded: the kernel refused them without a trace),
// with no profile change suggested; other pids go through.
func TestInitStageAccessGoesToTheSupervisor(t *testing.T) {
	p := testProfile()
	for _, n := range []string{"ptrace", "process_vm_readv", "process_vm_writev", "kcmp"} {
		p.Syscalls.Allow = append(p.Syscalls.Allow, policy.Syscall{Name: n})
	}
	c, err := compileSeccomp(p, "x86_64", true, supervise{})
	if err != nil {
		t.Fatal(err)
	}
	x86 := uint32(arch.X86_64.ID)
	nr := func(n string) uint32 { return uint32(arch.X86_64.SyscallNames[n]) }
	for _, tc := range []struct {
		call string
		args [6]uint64
		want uint32
	}{
		{"ptrace", [6]uint64{unix.PTRACE_ATTACH, 1}, retNotify},
		{"ptrace", [6]uint64{unix.PTRACE_SEIZE, 1}, retNotify},
		{"ptrace", [6]uint64{unix.PTRACE_ATTACH, 42}, retAllow},
		{"ptrace", [6]uint64{unix.PTRACE_TRACEME, 0}, retAllow},
		{"process_vm_readv", [6]uint64{1, 0, 1, 0, 1}, retNotify},
		{"process_vm_writev", [6]uint64{1, 0, 1, 0, 1}, retNotify},
		{"process_vm_readv", [6]uint64{42, 0, 1, 0, 1}, retAllow},
		{"kcmp", [6]uint64{1, 42, 0}, retNotify},
		{"kcmp", [6]uint64{42, 1, 0}, retNotify},
		{"kcmp", [6]uint64{42, 43, 0}, retAllow},
	} {
		if got := c.spec.Eval(x86, nr(tc.call), tc.args); got != tc.want {
			t.Errorf("%s %v: %#x, want %#x", tc.call, tc.args, got, tc.want)
		}
	}
	var d report.Denial
	c.suggestDenial(&d, "x86_64", "ptrace", x86, nr("ptrace"), [6]uint64{unix.PTRACE_ATTACH, 1})
	if d.Change != nil || !strings.HasPrefix(d.Suggest, "none: ") {
		t.Errorf("a ptrace of the init stage suggests %q (%+v): want no profile change", d.Suggest, d.Change)
	}
}
