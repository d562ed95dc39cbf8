package enforcer

import (
	"encoding/binary"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
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
