package changeset

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"
)

// What never leaves a run, one rule for both ways out: what Apply places from a stage and what
// the sweep of a directory bound writable finds there (enforcer/bound_linux.go). Set-id bits
// and file capabilities go; a POSIX ACL stays only as the host had it: a replaced entry's own
// ACL, or what the host directory's default ACL gives a new entry (a file made in such a
// directory, copied in across file systems, or created in the run in a copy of it). Any
// other ACL (an entry for another user or group, a changed group entry, a default ACL of its
// own on a directory) is the run's grant to others.

// POSIX ACL xattr format (include/uapi/linux/posix_acl_xattr.h): a version, then entries of
// tag, perm and id, little-endian.
const (
	aclVersion  = 2
	aclUserObj  = 0x01
	aclUser     = 0x02
	aclGroupObj = 0x04
	aclGroup    = 0x08
	aclMask     = 0x10
	aclOther    = 0x20
)

// ACLAccess and ACLDefault are the xattrs that hold a POSIX ACL.
const (
	ACLAccess  = "system.posix_acl_access"
	ACLDefault = "system.posix_acl_default"
)

// ACLEntry is one entry of a POSIX ACL.
type ACLEntry struct {
	Tag  uint16
	Perm uint16
	ID   uint32
}

// ParseACL reads a POSIX ACL xattr value; ok is false when it is not one.
func ParseACL(b []byte) (entries []ACLEntry, ok bool) {
	if len(b) < 4 || (len(b)-4)%8 != 0 || binary.LittleEndian.Uint32(b) != aclVersion {
		return nil, false
	}
	for b = b[4:]; len(b) > 0; b = b[8:] {
		entries = append(entries, ACLEntry{Tag: binary.LittleEndian.Uint16(b), Perm: binary.LittleEndian.Uint16(b[2:]), ID: binary.LittleEndian.Uint32(b[4:])})
	}
	return entries, true
}

// NamedIDs are the user (tag ACL_USER) and group (ACL_GROUP) ids an ACL names.
func NamedIDs(entries []ACLEntry) (uids, gids []uint32) {
	for _, e := range entries {
		switch e.Tag {
		case aclUser:
			uids = append(uids, e.ID)
		case aclGroup:
			gids = append(gids, e.ID)
		}
	}
	return uids, gids
}

// InheritedACL reports whether access ACL acc (an entry's) is what default ACL def (its
// directory's; nil: none) gives a new entry: the same named entries and, where def has a mask,
// the same owning group entry (the kernel's posix_acl_create ANDs only the owner, mask and
// other entries with the create mode: those a chmod sets, and a chmod is the run's anyway).
func InheritedACL(acc, def []ACLEntry) bool {
	if def == nil {
		return false
	}
	keep := func(es []ACLEntry) []ACLEntry {
		hasMask := slices.ContainsFunc(es, func(e ACLEntry) bool { return e.Tag == aclMask })
		var out []ACLEntry
		for _, e := range es {
			switch e.Tag {
			case aclUserObj, aclMask, aclOther: // what a chmod sets
			case aclGroupObj:
				if hasMask {
					out = append(out, ACLEntry{Tag: e.Tag, Perm: e.Perm})
				}
			default: // named entries, and anything unknown
				out = append(out, e)
			}
		}
		return out
	}
	return slices.Equal(keep(acc), keep(def))
}

// Before is what the host entry a change replaces had before the run.
type Before struct {
	Existed         bool       // false: the run made the entry
	Access, Default []ACLEntry // its ACLs (nil: none)
}

// ReadBefore reads what entry fd (O_PATH will do) has now, as its Before.
func ReadBefore(fd int) Before {
	p := "/proc/self/fd/" + strconv.Itoa(fd)
	return Before{Existed: true, Access: readACL(p, ACLAccess), Default: readACL(p, ACLDefault)}
}

// Strip removes from entry fd (a regular file or directory, opened O_PATH or otherwise; st its
// stat) what never leaves a run: set-id bits and file capabilities of a file, and an ACL but
// the host's (b: the entry it replaces, or the one dirfd's default ACL gives, dirfd the host
// directory it lies or will lie in). It returns what it removed ("set-id bits", "file
// capabilities", "ACL", "default ACL").
func Strip(fd int, st *unix.Stat_t, dirfd int, path string, b Before) ([]string, error) {
	proc := "/proc/self/fd/" + strconv.Itoa(fd) // works on an O_PATH descriptor too
	var stripped []string
	isDir := st.Mode&unix.S_IFMT == unix.S_IFDIR
	if !isDir && st.Mode&(unix.S_ISUID|unix.S_ISGID) != 0 {
		if err := unix.Chmod(proc, st.Mode&0o1777); err != nil {
			return nil, fmt.Errorf("strip set-id bits of %s: %w", path, err)
		}
		stripped = append(stripped, "set-id bits")
	}
	if !isDir {
		if n, err := unix.Getxattr(proc, "security.capability", nil); err == nil && n > 0 {
			if err := unix.Removexattr(proc, "security.capability"); err != nil {
				return nil, fmt.Errorf("strip the file capabilities of %s: %w", path, err)
			}
			stripped = append(stripped, "file capabilities")
		}
	}
	parentDef := readACL("/proc/self/fd/"+strconv.Itoa(dirfd), ACLDefault)
	acc := readACL(proc, ACLAccess)
	if acc != nil && !(b.Existed && sameACL(acc, b.Access) || InheritedACL(acc, parentDef)) {
		if err := unix.Removexattr(proc, ACLAccess); err != nil {
			return nil, fmt.Errorf("strip the ACL of %s: %w", path, err)
		}
		stripped = append(stripped, "ACL")
	}
	// A directory made in one with a default ACL takes that default ACL as its own.
	if b.Existed {
		parentDef = b.Default
	}
	if def := readACL(proc, ACLDefault); isDir && def != nil && (parentDef == nil || !slices.Equal(def, parentDef)) {
		if err := unix.Removexattr(proc, ACLDefault); err != nil {
			return nil, fmt.Errorf("strip the default ACL of %s: %w", path, err)
		}
		stripped = append(stripped, "default ACL")
	}
	return stripped, nil
}

// sameACL reports whether ACL a is b but for what a chmod sets (the owner, mask and other
// entries): a chmod of the entry is the run's anyway.
func sameACL(a, b []ACLEntry) bool {
	return b != nil && InheritedACL(a, b)
}

// readACL reads ACL xattr name of p; nil when it has none. One that cannot be read or parsed
// counts as the run's: an entry no ACL has, which nothing inherits.
func readACL(p, name string) []ACLEntry {
	buf := make([]byte, 4+8*64)
	n, err := unix.Getxattr(p, name, buf)
	if err == unix.ERANGE {
		if n, err = unix.Getxattr(p, name, nil); err == nil {
			buf = make([]byte, n)
			n, err = unix.Getxattr(p, name, buf)
		}
	}
	if err != nil || n == 0 {
		if err != nil && err != unix.ENODATA && err != unix.EOPNOTSUPP {
			return unreadableACL
		}
		return nil
	}
	es, ok := ParseACL(buf[:n])
	if !ok {
		return unreadableACL
	}
	if es == nil {
		es = []ACLEntry{}
	}
	return es
}

// unreadableACL stands for an ACL that could not be read or parsed.
var unreadableACL = []ACLEntry{{Tag: 0xffff}}
