package sandbox

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// bringUpLoopback sets IFF_UP on lo with SIOCSIFFLAGS (needs CAP_NET_ADMIN in the network
// namespace's user namespace, so it works unprivileged in a user namespace). lo that is already
// up means this is not a fresh network namespace: a missing CLONE_NEWNET must not leave the tool
// on the host's network, so that is an error.
func bringUpLoopback() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socket for ioctl: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("get lo flags: %w", err)
	}
	flags := ifr.Uint16()
	if flags&unix.IFF_UP != 0 {
		return errors.New("BUG: lo is already up: not a fresh network namespace (start the init stage with CLONE_NEWNET)")
	}
	ifr.SetUint16(flags | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bring lo up: %w", err)
	}
	return nil
}
