package changeset

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/internal/testutil"
)

// acl encodes POSIX ACL entries {tag, perm, id} as the kernel's xattr.
func acl(entries ...ACLEntry) []byte {
	b := binary.LittleEndian.AppendUint32(nil, aclVersion)
	for _, e := range entries {
		b = binary.LittleEndian.AppendUint16(b, e.Tag)
		b = binary.LittleEndian.AppendUint16(b, e.Perm)
		b = binary.LittleEndian.AppendUint32(b, e.ID)
	}
	return b
}

const undef = 0xffffffff

// ownACL: user::rw- user:1:r-- group::--- mask::r-- other::---
var ownACL = acl(ACLEntry{aclUserObj, 6, undef}, ACLEntry{aclUser, 4, 1}, ACLEntry{aclGroupObj, 0, undef}, ACLEntry{aclMask, 4, undef}, ACLEntry{aclOther, 0, undef})

// shared is a team directory's default ACL: user::rwx user:65534:rwx group::r-x mask::rwx other::r-x.
var shared = []ACLEntry{{aclUserObj, 7, undef}, {aclUser, 7, 65534}, {aclGroupObj, 5, undef}, {aclMask, 7, undef}, {aclOther, 5, undef}}

func TestInheritedACL(t *testing.T) {
	for _, c := range []struct {
		name     string
		acc, def []ACLEntry
		want     bool
	}{
		{"no default ACL", []ACLEntry{{aclUserObj, 6, undef}, {aclGroupObj, 0, undef}, {aclMask, 6, undef}, {aclOther, 6, undef}}, nil, false},
		// posix_acl_create with mode 0644: owner, mask and other ANDed.
		{"inherited", []ACLEntry{{aclUserObj, 6, undef}, {aclUser, 7, 65534}, {aclGroupObj, 5, undef}, {aclMask, 4, undef}, {aclOther, 4, undef}}, shared, true},
		{"chmod g+rwx after", []ACLEntry{{aclUserObj, 7, undef}, {aclUser, 7, 65534}, {aclGroupObj, 5, undef}, {aclMask, 7, undef}, {aclOther, 7, undef}}, shared, true},
		{"another user added", []ACLEntry{{aclUserObj, 6, undef}, {aclUser, 7, 65534}, {aclUser, 7, 1}, {aclGroupObj, 5, undef}, {aclMask, 7, undef}, {aclOther, 4, undef}}, shared, false},
		{"the named user widened", []ACLEntry{{aclUserObj, 6, undef}, {aclUser, 7, 65533}, {aclGroupObj, 5, undef}, {aclMask, 7, undef}, {aclOther, 4, undef}}, shared, false},
		{"owning group widened", []ACLEntry{{aclUserObj, 6, undef}, {aclUser, 7, 65534}, {aclGroupObj, 7, undef}, {aclMask, 7, undef}, {aclOther, 4, undef}}, shared, false},
		{"a group added", []ACLEntry{{aclUserObj, 6, undef}, {aclUser, 7, 65534}, {aclGroupObj, 5, undef}, {aclGroup, 7, 0}, {aclMask, 7, undef}, {aclOther, 4, undef}}, shared, false},
		{"unreadable", unreadableACL, []ACLEntry{{aclUserObj, 7, undef}, {aclGroupObj, 5, undef}, {aclOther, 5, undef}}, false},
	} {
		if got := InheritedACL(c.acc, c.def); got != c.want {
			t.Errorf("%s: InheritedACL = %v, want %v", c.name, got, c.want)
		}
		if es, ok := ParseACL(acl(c.acc...)); c.acc[0].Tag != 0xffff && (!ok || len(es) != len(c.acc)) {
			t.Errorf("%s: ParseACL of its encoding: %v %v", c.name, es, ok)
		}
	}
}

// TestApplyKeepsInheritedACLOnly (issue 23): in a host directory with a default ACL (a team's
// shared directory), a file renamed in keeps the ACL that default ACL gives it, a host file the
// run edits keeps its own, and one whose ACL the run widened (another user named) loses it, said: one rule, Strip, which the sweep of
// a directory bound writable shares (enforcer's TestSweepBoundStripsACL).
func TestApplyKeepsInheritedACLOnly(t *testing.T) {
	r, w := newRun(t, func(w string) {
		if err := os.Mkdir(filepath.Join(w, "shared"), 0o755); err != nil {
			t.Fatal(err)
		}
		testutil.RequireNoErr(t, "set a default ACL", unix.Setxattr(filepath.Join(w, "shared"), ACLDefault, acl(shared...), 0))
		// The host's own file with an ACL of its own (user 1 may read it): the run edits it.
		write(t, filepath.Join(w, "shared/own"), "old\n", 0o640)
		testutil.RequireNoErr(t, "set an ACL", unix.Setxattr(filepath.Join(w, "shared/own"), ACLAccess, ownACL, 0))
	}, []string{"**"})
	inOverlay(t, r, `echo x > shared/kept && echo x > shared/widened && chmod 644 shared/kept shared/widened && echo new > shared/own`)
	up := filepath.Join(r.Stages[0].Upper, "shared")
	inherited := acl(ACLEntry{aclUserObj, 6, undef}, ACLEntry{aclUser, 7, 65534}, ACLEntry{aclGroupObj, 5, undef}, ACLEntry{aclMask, 4, undef}, ACLEntry{aclOther, 4, undef})
	widened := acl(ACLEntry{aclUserObj, 6, undef}, ACLEntry{aclUser, 7, 65534}, ACLEntry{aclUser, 6, 1}, ACLEntry{aclGroupObj, 5, undef}, ACLEntry{aclMask, 6, undef}, ACLEntry{aclOther, 4, undef})
	testutil.RequireNoErr(t, "set an ACL", unix.Setxattr(filepath.Join(up, "kept"), ACLAccess, inherited, 0))
	testutil.RequireNoErr(t, "set an ACL", unix.Setxattr(filepath.Join(up, "widened"), ACLAccess, widened, 0))
	res, err := r.Apply(ApplyAll, nil)
	if err != nil {
		t.Fatalf("apply: %v %+v", err, res)
	}
	if n, err := unix.Getxattr(filepath.Join(w, "shared/kept"), ACLAccess, nil); err != nil || n == 0 {
		t.Errorf("shared/kept lost the ACL the host's directory gives its files: %v", err)
	}
	if b := make([]byte, 256); true {
		n, err := unix.Getxattr(filepath.Join(w, "shared/own"), ACLAccess, b)
		if err != nil || string(b[:n]) != string(ownACL) {
			t.Errorf("shared/own, edited by the run, lost the host's own ACL: %v", err)
		}
	}
	if n, err := unix.Getxattr(filepath.Join(w, "shared/widened"), ACLAccess, nil); err == nil && n > 0 {
		t.Errorf("the run's widened ACL reached the host")
	}
	for _, c := range res.Applied {
		switch filepath.Base(c.Path) {
		case "kept", "own":
			if c.Stripped != "" {
				t.Errorf("%s: %q: the host's inherited ACL is not the run's", c.Path, c.Stripped)
			}
		case "widened":
			if !strings.Contains(c.Stripped, "ACL") {
				t.Errorf("%s: the ACL's removal is not on the record: %q", c.Path, c.Stripped)
			}
		}
	}
}
