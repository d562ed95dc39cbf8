package enforcer

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/report"
	"github.com/sysprof/sysprof/seccomp"
)

// risk drops the reason: a denial carries the class only.
func risk(r policy.Risk, _ string) report.Risk { return r }

// fileRisk rates what a file denial suggests: access (read, list, exec, write, create,
// delete, metadata) to the portable path in profile p, as diff and refine rate that change.
func fileRisk(p *policy.Profile, access, portable string) report.Risk {
	section := policy.SectionRead
	switch access {
	case "write", "create", "delete":
		section = policy.SectionWrite
	case "exec":
		section = policy.SectionExec
	case "list":
		section = policy.SectionList
	}
	return risk(policy.GrantRisk(p, policy.Grant{Section: section, Item: portable}))
}

// suggestDenial fills d's suggestion for a call the filter reported: the change (Change),
// the line it prints as (Suggest) and its risk.
func (c *Compiled) suggestDenial(d *report.Denial, abi, name string, auditArch, nr uint32, args [6]uint64) {
	g, text := c.suggest(abi, name, auditArch, nr, args)
	if g.Section == policy.SectionArgs && (c.failsOnly(auditArch, nr, args, seccomp.WhyInitSignal) || c.failsOnly(auditArch, nr, args, seccomp.WhyInitAccess)) {
		// The init stage is no process of the command's: no rule should let it be signalled.
		d.Change, d.Suggest, d.Risk = nil, "none: pid 1 is the sandbox's init stage, not the command's to signal, trace or read", policy.RiskCritical
		return
	}
	if g.Section == policy.SectionArgs && c.failsOnly(auditArch, nr, args, seccomp.WhyDevice) {
		// What the kernel refuses inside the sandbox anyway: no rule should ask for it.
		d.Change, d.Suggest, d.Risk = nil, "none: device nodes and whiteouts are never made inside the sandbox (a whiteout hides a host file from the run's changeset)", policy.RiskCritical
		return
	}
	d.Change, d.Suggest, d.Risk = &g, text, risk(policy.GrantRisk(c.profile, g))
}

// failsOnly reports whether an allowed call was sent to the supervisor by the checks marked
// why alone.
func (c *Compiled) failsOnly(auditArch, nr uint32, args [6]uint64, why string) bool {
	rule := c.spec.RuleFor(auditArch, nr)
	if rule == nil || rule.Ret != seccomp.RetAllow {
		return false
	}
	sent := false
	for i := range rule.Checks {
		chk := &rule.Checks[i]
		if !chk.Applies(args) || chk.OK(args[chk.Arg]) {
			continue
		}
		if chk.Why != why {
			return false
		}
		sent = true
	}
	return sent
}

// suggest returns the profile change that would allow a reported call, and how the report
// says it (the change as printed, but for MPTCP, whose better answer is an endpoint).
func (c *Compiled) suggest(abi, name string, auditArch, nr uint32, args [6]uint64) (policy.Grant, string) {
	spec := c.spec.ABIFor(auditArch, nr)
	if spec == nil {
		g := policy.Grant{Section: policy.SectionArchitectures, Item: abi}
		return g, g.String()
	}
	allow := policy.Grant{Section: policy.SectionSyscalls, Item: name}
	rule := spec.Rules[nr]
	if rule == nil {
		return allow, allow.String()
	}
	for i := range rule.Checks {
		chk := &rule.Checks[i]
		v := args[chk.Arg]
		if !chk.Applies(args) || chk.OK(v) {
			continue
		}
		if chk.Width32 {
			v &= 0xffffffff
		}
		bad := v & chk.Mask
		if chk.HasAllowedBits || chk.DenyBits != 0 {
			bad = v & chk.Mask &^ chk.AllowedBits
			if !chk.HasAllowedBits {
				bad = v & chk.DenyBits
			}
		}
		if chk.Why == seccomp.WhyOldMmap { // its registers hold no prot: the rule that lifts it
			bad = unix.PROT_EXEC
		}
		g := policy.ArgGrant(name, chk.Arg, bad)
		if name == "socket" && chk.Arg == 2 && v == seccomp.IPProtoMPTCP {
			return g, "network.connect: + ENDPOINT proto: mptcp (or " + g.String() + ")"
		}
		return g, g.String()
	}
	return allow, allow.String()
}

// rlimitName names resource r (RLIMIT_NOFILE), or gives its number.
func rlimitName(r uint64) string {
	names := []string{"RLIMIT_CPU", "RLIMIT_FSIZE", "RLIMIT_DATA", "RLIMIT_STACK", "RLIMIT_CORE", "RLIMIT_RSS",
		"RLIMIT_NPROC", "RLIMIT_NOFILE", "RLIMIT_MEMLOCK", "RLIMIT_AS", "RLIMIT_LOCKS", "RLIMIT_SIGPENDING",
		"RLIMIT_MSGQUEUE", "RLIMIT_NICE", "RLIMIT_RTPRIO", "RLIMIT_RTTIME"}
	if r < uint64(len(names)) {
		return names[r]
	}
	return "resource " + strconv.FormatUint(r, 10)
}

// pathArgs lists the arguments that are pathnames, by syscall (built when a denial is described).
var pathArgs = sync.OnceValue(func() map[string][]int {
	return map[string][]int{
		"open": {0}, "openat": {1}, "openat2": {1}, "creat": {0}, "execve": {0}, "execveat": {1},
		"stat": {0}, "lstat": {0}, "newfstatat": {1}, "statx": {1}, "access": {0}, "faccessat": {1},
		"faccessat2": {1}, "readlink": {0}, "readlinkat": {1}, "unlink": {0}, "unlinkat": {1},
		"mkdir": {0}, "mkdirat": {1}, "rmdir": {0}, "rename": {0, 1}, "renameat": {1, 3}, "renameat2": {1, 3},
		"link": {0, 1}, "linkat": {1, 3}, "symlink": {0, 1}, "symlinkat": {0, 2}, "chmod": {0},
		"fchmodat": {1}, "fchmodat2": {1}, "chown": {0}, "lchown": {0}, "fchownat": {1}, "truncate": {0},
		"chdir": {0}, "chroot": {0}, "mount": {0, 1, 2}, "umount2": {0}, "pivot_root": {0, 1}, "mknod": {0},
		"mknodat": {1}, "utimensat": {1}, "swapon": {0}, "swapoff": {0}, "acct": {0}, "statfs": {0},
		"name_to_handle_at": {1}, "open_tree": {1}, "move_mount": {1, 3}, "fsopen": {0}, "fspick": {1},
		"mount_setattr": {1}, "inotify_add_watch": {1}, "memfd_create": {0}, "setxattr": {0}, "getxattr": {0},
		"listxattr": {0}, "removexattr": {0}, "lsetxattr": {0}, "lgetxattr": {0}, "uselib": {0},
	}
})

// describeCall renders a denied call for the report: the syscall with its meaningful arguments
// decoded (symbols, paths read from the task's memory, socket addresses). Pointers and file
// descriptors are left out so that repeated calls aggregate.
func describeCall(pid int, name string, args [6]uint64) string {
	var parts []string
	switch name {
	case "socket", "socketpair":
		parts = []string{policy.FormatArg(name, 0, args[0]&0xffffffff), policy.FormatArg(name, 1, args[1]&0xffffffff), policy.FormatArg(name, 2, args[2]&0xffffffff)}
	case "clone":
		parts = []string{policy.FormatArg(name, 0, args[0]&0xffffffff)}
	case "unshare":
		parts = []string{policy.FormatArg(name, 0, args[0])}
	case "setns":
		parts = []string{policy.FormatArg(name, 1, args[1]&0xffffffff)}
	case "ptrace":
		parts = []string{policy.FormatArg(name, 0, args[0]), "pid " + strconv.FormatInt(int64(int32(args[1])), 10)}
	case "process_vm_readv", "process_vm_writev", "pidfd_open", "kcmp":
		parts = []string{"pid " + strconv.FormatInt(int64(int32(args[0])), 10)}
	case "kill", "tkill":
		parts = []string{"pid " + strconv.FormatInt(int64(int32(args[0])), 10), policy.FormatArg(name, 1, args[1]&0xff)}
	case "prlimit64": // another process's limits: which, and read or set
		op := "read"
		if args[2] != 0 {
			op = "set"
		}
		parts = []string{"pid " + strconv.FormatInt(int64(int32(args[0])), 10), rlimitName(args[1] & 0xffffffff), op}
	case "ioctl":
		parts = []string{policy.FormatArg(name, 1, args[1]&0xffffffff)}
	case "bpf", "keyctl", "prctl", "personality", "seccomp":
		parts = []string{strconv.FormatUint(args[0]&0xffffffff, 10)}
	case "connect", "bind", "sendto":
		ai, li := 1, 2
		if name == "sendto" {
			ai, li = 4, 5
		}
		if s := readSockaddr(pid, args[ai], args[li]); s != "" {
			parts = []string{s}
		}
	}
	for _, i := range pathArgs()[name] {
		if s, ok := readString(pid, args[i]); ok {
			parts = append(parts, strconv.Quote(s))
		}
	}
	return name + "(" + strings.Join(parts, ", ") + ")"
}

// readMem reads n bytes at addr of pid's memory (the task is stopped in the notification).
func readMem(pid int, addr uint64, n int) ([]byte, bool) {
	if addr == 0 || n <= 0 {
		return nil, false
	}
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/mem")
	if err != nil {
		return nil, false
	}
	defer f.Close()
	b := make([]byte, n)
	m, _ := f.ReadAt(b, int64(addr))
	return b[:m], m > 0
}

// readString reads a NUL-terminated string (a path) of pid's memory: one process_vm_readv of
// 512 bytes for the common short path (no open of /proc/PID/mem: the supervisor reads one for
// every open for writing of a profile with /proc writes), else the whole PATH_MAX through
// readMem.
func readString(pid int, addr uint64) (string, bool) {
	if addr == 0 {
		return "", false
	}
	var short [512]byte
	local := []unix.Iovec{{Base: &short[0], Len: uint64(len(short))}}
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(short)}}
	if n, err := unix.ProcessVMReadv(pid, local, remote, 0); err == nil && n > 0 {
		if i := bytes.IndexByte(short[:n], 0); i >= 0 {
			return string(short[:i]), true
		}
	}
	b, ok := readMem(pid, addr, unix.PathMax)
	if !ok {
		return "", false
	}
	if i := strings.IndexByte(string(b), 0); i >= 0 {
		return string(b[:i]), true
	}
	return string(b), true
}

// readSockaddr decodes a sockaddr: "127.0.0.1:80", "[::1]:80", "unix:/path", "unix:@name".
func readSockaddr(pid int, addr, length uint64) string {
	if length < 2 || length > 128 {
		return ""
	}
	b, ok := readMem(pid, addr, int(length))
	if !ok || len(b) < 2 {
		return ""
	}
	switch binary.NativeEndian.Uint16(b) {
	case unix.AF_INET:
		if len(b) < 8 {
			return ""
		}
		ip := netip.AddrFrom4([4]byte(b[4:8]))
		return netip.AddrPortFrom(ip, binary.BigEndian.Uint16(b[2:4])).String()
	case unix.AF_INET6:
		if len(b) < 24 {
			return ""
		}
		ip := netip.AddrFrom16([16]byte(b[8:24]))
		return netip.AddrPortFrom(ip, binary.BigEndian.Uint16(b[2:4])).String()
	case unix.AF_UNIX:
		p := b[2:]
		if len(p) > 0 && p[0] == 0 {
			return "unix:@" + strings.TrimRight(string(p[1:]), "\x00")
		}
		if i := strings.IndexByte(string(p), 0); i >= 0 {
			p = p[:i]
		}
		return "unix:" + string(p)
	}
	return ""
}
