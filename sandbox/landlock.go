package sandbox

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// landlockABI is what Apply asks; tests of the degrade path replace it in their init stage.
var landlockABI = LandlockABI

var (
	abiOnce sync.Once
	abiVal  int
	abiErr  error
)

// LandlockABI reports the Landlock ABI version of the running kernel. The answer is one of:
// available (abi > 0, nil); not available (0, an *UnsupportedError that wraps ErrNotSupported,
// with the reason); could not tell (0, a *ProbeError, e.g. when an outer seccomp filter denies
// the probe). The result is cached for the life of the process. Requires Linux 5.13.
func LandlockABI() (int, error) {
	abiOnce.Do(func() { abiVal, abiErr = probeLandlockABI() })
	return abiVal, abiErr
}

func probeLandlockABI() (int, error) {
	r, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	switch e {
	case 0:
		return int(r), nil
	case unix.ENOSYS:
		return 0, &UnsupportedError{Feature: "landlock", MinimumABI: 1,
			Reason: "the kernel has no Landlock (older than 5.13 or built without CONFIG_SECURITY_LANDLOCK)"}
	case unix.EOPNOTSUPP:
		return 0, &UnsupportedError{Feature: "landlock", MinimumABI: 1,
			Reason: "Landlock is built in but disabled: add landlock to the lsm= kernel boot parameter"}
	default:
		return 0, &ProbeError{Feature: "landlock", Err: fmt.Errorf("landlock_create_ruleset(VERSION): %w", e)}
	}
}

// Kernel structs (include/uapi/linux/landlock.h). landlock_path_beneath_attr is packed: the
// kernel reads 12 bytes, the Go struct's trailing padding is never read.
type llRulesetAttr struct {
	handledAccessFS  uint64
	handledAccessNet uint64
	scoped           uint64
}

type llPathBeneathAttr struct {
	allowedAccess uint64
	parentFd      int32
}

type llNetPortAttr struct {
	allowedAccess uint64
	port          uint64
}

const (
	llRulePathBeneath = 1
	llRuleNetPort     = 2
)

// applyLandlock restricts the calling thread (and what it execs) with l. Paths that do not exist
// are skipped and recorded in res. It fails with a *DegradedError when the kernel cannot enforce
// all of l, unless degrade is set.
func applyLandlock(l *Landlock, degrade bool, res *Result) error {
	abi, err := landlockABI()
	if err != nil && !errors.Is(err, ErrNotSupported) {
		return err // could not tell: fail closed even when degrading
	}
	res.LandlockABI = abi
	kept, dropped := Downgrade(l, abi)
	res.Dropped = append(res.Dropped, dropped...)
	if len(dropped) > 0 && !degrade {
		if err != nil {
			return err
		}
		return &DegradedError{ABI: abi, Dropped: dropped}
	}
	if kept == nil {
		return nil
	}
	rs := compile(kept, abi)
	res.LandlockHandledFS = fsRightsString(rs.HandledFS)

	attr := llRulesetAttr{handledAccessFS: rs.HandledFS, handledAccessNet: rs.HandledNet, scoped: rs.Scoped}
	r, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if e != 0 {
		return fmt.Errorf("landlock_create_ruleset: %w", e)
	}
	rulesetFd := int(r)
	defer unix.Close(rulesetFd)

	implied, notes := interpreterRules(rs.Paths, rightsExec&rs.HandledFS)
	res.Implied = append(res.Implied, notes...)
	paths, skipped := splitForHidden(append(rs.Paths, implied...), kept.Hidden, isMountRoot, listDir)
	res.Skipped = append(res.Skipped, skipped...)
	paths = append(paths, coverReads(kept.Hidden, rightsRead&rs.HandledFS, isCover)...)
	for _, pr := range paths {
		if err := addPathRule(rulesetFd, pr, res); err != nil {
			return err
		}
	}
	if kept.MemfdTmpfs > 0 {
		a := llPathBeneathAttr{allowedAccess: (fsReadFile | fsWriteFile | fsTruncate) & rs.HandledFS, parentFd: int32(kept.MemfdTmpfs)}
		if _, _, e := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(rulesetFd), llRulePathBeneath, uintptr(unsafe.Pointer(&a)), 0, 0, 0); e != 0 {
			return fmt.Errorf("landlock_add_rule memfd tmpfs: %w", e)
		}
	}
	for _, pr := range rs.Ports {
		a := llNetPortAttr{allowedAccess: pr.Access, port: uint64(pr.Port)}
		_, _, e := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(rulesetFd), llRuleNetPort, uintptr(unsafe.Pointer(&a)), 0, 0, 0)
		if e != 0 {
			return fmt.Errorf("landlock_add_rule port %d: %w", pr.Port, e)
		}
	}
	// no_new_privs: required by landlock_restrict_self without CAP_SYS_ADMIN, and keeps a
	// setuid binary from giving the tool back what the sandbox took (per thread, like Landlock).
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("set no_new_privs: %w", err)
	}
	if _, _, e := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(rulesetFd), 0, 0); e != 0 {
		return fmt.Errorf("landlock_restrict_self: %w", e)
	}
	return nil
}

func addPathRule(rulesetFd int, pr pathRule, res *Result) error {
	fd, err := unix.Open(pr.Path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
			res.skip(LayerLandlock, pr.Path, pr.Role+" path does not exist")
			return nil
		}
		if errors.Is(err, unix.EACCES) {
			res.skip(LayerLandlock, pr.Path, pr.Role+" path not reachable (permission denied)")
			return nil
		}
		return fmt.Errorf("open %s path %s: %w", pr.Role, pr.Path, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("stat %s path %s: %w", pr.Role, pr.Path, err)
	}
	access := pr.Access
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		access &= fsFileRights
	}
	if access == 0 {
		return nil
	}
	a := llPathBeneathAttr{allowedAccess: access, parentFd: int32(fd)}
	_, _, e := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(rulesetFd), llRulePathBeneath, uintptr(unsafe.Pointer(&a)), 0, 0, 0)
	if e != 0 {
		return fmt.Errorf("landlock_add_rule %s %s %s: %w", pr.Role, pr.Path, fsRightsString(access), e)
	}
	return nil
}
