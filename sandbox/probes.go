package sandbox

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// UserNamespaces reports whether an ordinary user may create a user namespace in which it holds
// the capabilities the init stage needs (what enforcing as non-root requires). nil means
// available; an *UnsupportedError (wrapping ErrNotSupported) names the sysctl that forbids it
// and how to change it; a *ProbeError means it could not tell. It reads sysctls only and
// creates nothing.
func UserNamespaces() error {
	max, err := readSysctlInt("/proc/sys/user/max_user_namespaces")
	if errors.Is(err, os.ErrNotExist) {
		return &UnsupportedError{Feature: "user namespaces", Reason: "the kernel is built without CONFIG_USER_NS"}
	}
	if err != nil {
		return &ProbeError{Feature: "user namespaces", Err: err}
	}
	if max == 0 {
		return &UnsupportedError{Feature: "user namespaces", Reason: "user.max_user_namespaces is 0: raise it with sysctl, or enforce as root"}
	}
	// Debian and Ubuntu kernels have extra switches; absent elsewhere.
	if v, err := readSysctlInt("/proc/sys/kernel/unprivileged_userns_clone"); err == nil && v == 0 {
		return &UnsupportedError{Feature: "user namespaces", Reason: "kernel.unprivileged_userns_clone is 0: set it to 1, or enforce as root"}
	}
	if v, err := readSysctlInt("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"); err == nil && v != 0 {
		return &UnsupportedError{Feature: "user namespaces", Reason: "AppArmor restricts unprivileged user namespaces " +
			"(kernel.apparmor_restrict_unprivileged_userns=1): give sysprof an AppArmor profile with the userns permission, or enforce as root"}
	}
	return nil
}

func readSysctlInt(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("parse %s: %w", path, err)
	}
	return n, nil
}
