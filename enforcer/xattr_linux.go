package enforcer

import (
	"encoding/binary"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/internal/kernrun"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/report"
	"github.com/sysprof/sysprof/seccomp"
)

// xattrArgs are, per setxattr call, the arguments naming the file (-1: an fd only), the
// attribute's name, its value and its size (setxattrat: the value and size are in struct
// xattr_args at argument 4).
var xattrArgs = map[string][4]int{"setxattr": {0, 1, 2, 3}, "lsetxattr": {0, 1, 2, 3}, "fsetxattr": {-1, 1, 2, 3}, "setxattrat": {1, 3, 4, 5}}

// xattrSet answers a setxattr the filter sent only for seccomp.WhyXattr and reports whether it
// did: refused and recorded when xattrRefusal says so, else it goes on.
func (s *supervisor) xattrSet(n *seccompNotif) bool {
	name, _ := SyscallName(n.Data.Arch, uint32(n.Data.Nr))
	args, ok := xattrArgs[name]
	if !ok || !s.compiled.onlyFails(n, seccomp.WhyXattr) {
		return false
	}
	pid := int(n.Pid)
	resp := seccompNotifResp{ID: n.ID, Flags: unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE}
	attr, ok := readString(pid, n.Data.Args[args[1]])
	var value []byte
	if ok && (attr == "system.posix_acl_access" || attr == "system.posix_acl_default") {
		addr, size := n.Data.Args[args[2]], n.Data.Args[args[3]]
		if name == "setxattrat" { // struct xattr_args { __aligned_u64 value; __u32 size; __u32 flags; }
			b, _ := readMem(pid, addr, 16)
			if len(b) < 16 {
				addr, size = 0, 0
			} else {
				addr, size = binary.LittleEndian.Uint64(b), uint64(binary.LittleEndian.Uint32(b[8:]))
			}
		}
		if size > 0 && size <= 1<<16 {
			value, _ = readMem(pid, addr, int(size))
		}
	}
	var errno unix.Errno
	var why string
	if ok {
		errno, why = xattrRefusal(attr, value, func(gid bool, id uint32) bool { // only an ACL asks
			m := "/uid_map"
			if gid {
				m = "/gid_map"
			}
			idMap, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + m)
			return idMapped(string(idMap), id)
		})
	}
	if errno == 0 || !notifIDValid(s.listener, n.ID) { // what was read belongs to this task
		_ = notifSend(s.listener, &resp)
		return true
	}
	d := report.Denial{Kind: report.KindSyscall, Syscall: name, First: time.Now().UTC(), Count: 1,
		Exe: kernrun.ExeOf(pid), Suggest: why, Risk: report.Risk(policy.RiskCritical)}
	_, d.Arch = SyscallName(n.Data.Arch, uint32(n.Data.Nr))
	file := "fd " + strconv.Itoa(int(int32(n.Data.Args[0])))
	if args[0] >= 0 {
		dirfd := int64(unix.AT_FDCWD)
		if name == "setxattrat" {
			dirfd = int64(int32(n.Data.Args[0]))
		}
		if p, ok := taskPath(pid, dirfd, n.Data.Args[args[0]]); ok {
			file = strconv.Quote(p)
		}
	} else if p, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/fd/" + strconv.Itoa(int(int32(n.Data.Args[0])))); err == nil {
		file = strconv.Quote(p)
	}
	d.What = name + "(" + file + ", " + strconv.Quote(attr) + ")"
	if !s.known(d) {
		d.Parents = s.parents(pid)
	}
	if s.audit {
		d.Allowed = true
	} else {
		resp.Flags, resp.Error = 0, -int32(errno)
	}
	_ = notifSend(s.listener, &resp)
	s.record(d)
	return true
}
