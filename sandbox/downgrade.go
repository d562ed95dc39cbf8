package sandbox

import (
	"maps"
	"slices"
	"strings"
)

// Landlock access rights (include/uapi/linux/landlock.h). Defined here so the pure code in this
// file (Downgrade, compile) does not depend on golang.org/x/sys/unix.
const (
	fsExecute    uint64 = 1 << 0  // ABI 1
	fsWriteFile  uint64 = 1 << 1  // ABI 1
	fsReadFile   uint64 = 1 << 2  // ABI 1
	fsReadDir    uint64 = 1 << 3  // ABI 1
	fsRemoveDir  uint64 = 1 << 4  // ABI 1
	fsRemoveFile uint64 = 1 << 5  // ABI 1
	fsMakeChar   uint64 = 1 << 6  // ABI 1
	fsMakeDir    uint64 = 1 << 7  // ABI 1
	fsMakeReg    uint64 = 1 << 8  // ABI 1
	fsMakeSock   uint64 = 1 << 9  // ABI 1
	fsMakeFifo   uint64 = 1 << 10 // ABI 1
	fsMakeBlock  uint64 = 1 << 11 // ABI 1
	fsMakeSym    uint64 = 1 << 12 // ABI 1
	fsRefer      uint64 = 1 << 13 // ABI 2
	fsTruncate   uint64 = 1 << 14 // ABI 3
	fsIoctlDev   uint64 = 1 << 15 // ABI 5

	netBindTCP    uint64 = 1 << 0 // ABI 4
	netConnectTCP uint64 = 1 << 1 // ABI 4

	scopeAbstractUnix uint64 = 1 << 0 // ABI 6
	scopeSignal       uint64 = 1 << 1 // ABI 6
)

// MaxKnownABI is the newest Landlock ABI whose rights this package handles. A newer kernel is
// used at this level (rights it adds, like ABI 9's resolve_unix, are not handled).
const MaxKnownABI = 7

const (
	// fsFileRights are the rights that apply to a non-directory; a rule on a file with any other
	// right is rejected by the kernel (EINVAL).
	fsFileRights = fsExecute | fsWriteFile | fsReadFile | fsTruncate | fsIoctlDev

	rightsRead   = fsReadFile | fsReadDir
	rightsExec   = fsExecute | fsReadFile
	rightsDevice = fsReadFile | fsWriteFile | fsIoctlDev | fsTruncate
	// rightsWrite is everything but execute: a writable directory is not an exec allowance
	// (W^X). A tool that runs what it built there (go test, cargo build scripts, configure
	// checks) needs that directory in Exec too.
	rightsWrite = fsWriteFile | fsReadFile | fsReadDir | fsRemoveDir | fsRemoveFile |
		fsMakeChar | fsMakeDir | fsMakeReg | fsMakeSock | fsMakeFifo | fsMakeBlock | fsMakeSym |
		fsRefer | fsTruncate | fsIoctlDev
)

// fsRightsForABI is the set of filesystem rights a kernel with Landlock ABI abi can handle,
// capped at MaxKnownABI.
func fsRightsForABI(abi int) uint64 {
	switch {
	case abi <= 0:
		return 0
	case abi == 1:
		return 1<<13 - 1
	case abi == 2:
		return 1<<14 - 1
	case abi <= 4:
		return 1<<15 - 1
	default:
		return 1<<16 - 1
	}
}

func netRightsForABI(abi int) uint64 {
	if abi >= 4 {
		return netBindTCP | netConnectTCP
	}
	return 0
}

func scopesForABI(abi int) uint64 {
	if abi >= 6 {
		return scopeAbstractUnix | scopeSignal
	}
	return 0
}

// Downgrade decides what of l a kernel with Landlock ABI abi can enforce. It is pure: l is not
// modified. kept is what can be applied (nil when nothing can, or l is nil); dropped names every
// requested restriction that will not be enforced, in a fixed order, each a sentence a user can
// read. It never forbids something l allows: where the only way to honour an allowance would be
// to drop the whole layer (ABI 1 denies every cross-directory rename and link, which Write paths
// allow), the whole layer is dropped and said so.
func Downgrade(l *Landlock, abi int) (kept *Landlock, dropped []string) {
	if l == nil {
		return nil, nil
	}
	if abi <= 0 {
		return nil, []string{"landlock (ABI 1): no filesystem, TCP or scope restriction is enforced"}
	}
	if abi < 2 && len(l.Write) > 0 {
		// Without the refer right (ABI 2), Landlock denies every rename and link across
		// directories; Write paths allow them, so the layer cannot be applied without denying
		// what the plan allows.
		return nil, []string{"landlock refer (ABI 2): Write paths need cross-directory rename/link, which ABI 1 always denies; no filesystem, TCP or scope restriction is enforced"}
	}
	k := cloneLandlock(l)
	if abi < 3 {
		dropped = append(dropped, "landlock truncate (ABI 3): truncating files outside Write is not restricted")
	}
	if abi < 4 && k.RestrictTCP {
		dropped = append(dropped, "landlock tcp (ABI 4): TCP connect and bind ports are not restricted")
		k.RestrictTCP, k.ConnectTCP, k.BindTCP = false, nil, nil
	}
	if abi < 5 {
		dropped = append(dropped, "landlock ioctl_dev (ABI 5): ioctl on device files is not restricted")
	}
	if abi < 6 && k.ScopeSignals {
		dropped = append(dropped, "landlock scope signal (ABI 6): signals to processes outside the sandbox are not blocked")
		k.ScopeSignals = false
	}
	if abi < 6 && k.ScopeAbstractUnix {
		dropped = append(dropped, "landlock scope abstract unix (ABI 6): connecting to abstract unix sockets outside the sandbox is not blocked")
		k.ScopeAbstractUnix = false
	}
	return k, dropped
}

func cloneLandlock(l *Landlock) *Landlock {
	c := *l
	c.Read = slices.Clone(l.Read)
	c.Write = slices.Clone(l.Write)
	c.Exec = slices.Clone(l.Exec)
	c.List = slices.Clone(l.List)
	c.Devices = slices.Clone(l.Devices)
	c.Hidden = slices.Clone(l.Hidden)
	c.ConnectTCP = slices.Clone(l.ConnectTCP)
	c.BindTCP = slices.Clone(l.BindTCP)
	return &c
}

// ruleset is a Landlock layer compiled for one ABI: plain data, no file descriptors.
type ruleset struct {
	HandledFS  uint64
	HandledNet uint64
	Scoped     uint64
	Paths      []pathRule // in plan order: Read, Write, Exec, List, Devices
	Ports      []portRule
}

type pathRule struct {
	Path   string
	Role   string // "read", "write", "exec", "list", "device"
	Access uint64 // for a directory; a file gets Access & fsFileRights
}

type portRule struct {
	Port   uint16
	Access uint64
}

// compile turns an already downgraded layer into the ruleset for abi. Every right is masked to
// what the ABI handles, so a right the kernel cannot restrict is never passed to it.
func compile(l *Landlock, abi int) ruleset {
	if abi > MaxKnownABI {
		abi = MaxKnownABI
	}
	fs := fsRightsForABI(abi)
	rs := ruleset{HandledFS: fs}
	add := func(role string, paths []string, access uint64) {
		for _, p := range paths {
			rs.Paths = append(rs.Paths, pathRule{Path: p, Role: role, Access: access & fs})
		}
	}
	add("read", l.Read, rightsRead)
	add("write", l.Write, rightsWrite)
	add("exec", l.Exec, rightsExec)
	add("list", l.List, fsReadDir)
	add("device", l.Devices, rightsDevice)
	if l.RestrictTCP {
		rs.HandledNet = netRightsForABI(abi)
		ports := map[uint16]uint64{}
		for _, p := range l.ConnectTCP {
			ports[p] |= netConnectTCP
		}
		for _, p := range l.BindTCP {
			ports[p] |= netBindTCP
		}
		for _, p := range slices.Sorted(maps.Keys(ports)) {
			rs.Ports = append(rs.Ports, portRule{Port: p, Access: ports[p] & rs.HandledNet})
		}
	}
	if l.ScopeSignals {
		rs.Scoped |= scopeSignal & scopesForABI(abi)
	}
	if l.ScopeAbstractUnix {
		rs.Scoped |= scopeAbstractUnix & scopesForABI(abi)
	}
	return rs
}

var fsRightNames = []string{"execute", "write_file", "read_file", "read_dir", "remove_dir",
	"remove_file", "make_char", "make_dir", "make_reg", "make_sock", "make_fifo", "make_block",
	"make_sym", "refer", "truncate", "ioctl_dev"}

// fsRightsString prints a set of filesystem rights the way go-landlock does: {read_file,read_dir}.
func fsRightsString(a uint64) string {
	var names []string
	for i, n := range fsRightNames {
		if a&(1<<i) != 0 {
			names = append(names, n)
		}
	}
	return "{" + strings.Join(names, ",") + "}"
}
