package sandbox

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"syscall"

	"golang.org/x/sys/unix"
)

// ConfiguredAddrs are put on the sandbox's lo beside 127.0.0.1 and ::1, so that glibc's
// AI_ADDRCONFIG (getent ahostsv4/ahostsv6, node, Python's flag) sees an IPv4 and an IPv6
// address configured, as on the host the command was learned on: it counts neither 127.0.0.1
// nor ::1, and with nothing counted a lookup of one family answers "no such name" (a name from
// the hosts file, or one the DNS stub answers with an address of that family). Both lie in
// ranges this namespace treats as its own (127/8; a unique local /128 no name is given).
var ConfiguredAddrs = []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32"), netip.MustParsePrefix("fd00:5359:5351::1/128")}

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
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFINDEX, ifr); err != nil {
		return fmt.Errorf("lo's index: %w", err)
	}
	for _, a := range ConfiguredAddrs {
		// IPv6 may be off in the kernel (then no lookup asks for it): only IPv4 must work.
		if err := addAddr(int(ifr.Uint32()), a); err != nil && a.Addr().Is4() {
			return fmt.Errorf("add %s to lo: %w", a, err)
		}
	}
	return nil
}

// addAddr adds prefix a to the interface with index idx (rtnetlink RTM_NEWADDR).
func addAddr(idx int, a netip.Prefix) error {
	family, raw := unix.AF_INET, a.Addr().AsSlice()
	if a.Addr().Is6() {
		family = unix.AF_INET6
	}
	attr := 4 + len(raw)
	msg := make([]byte, unix.SizeofNlMsghdr+unix.SizeofIfAddrmsg+2*attr)
	ne := binary.NativeEndian
	ne.PutUint16(msg[4:], unix.RTM_NEWADDR)
	ifa := msg[unix.SizeofNlMsghdr:]
	ifa[0] = byte(family)
	ifa[1] = byte(a.Bits())
	ifa[2] = unix.IFA_F_PERMANENT | unix.IFA_F_NODAD
	ifa[3] = unix.RT_SCOPE_HOST
	ne.PutUint32(ifa[4:], uint32(idx))
	at := ifa[unix.SizeofIfAddrmsg:]
	for i, typ := range []uint16{unix.IFA_LOCAL, unix.IFA_ADDRESS} {
		ne.PutUint16(at[i*attr:], uint16(attr))
		ne.PutUint16(at[i*attr+2:], typ)
		copy(at[i*attr+4:], raw)
	}
	return RouteRequest(msg)
}

// RouteRequest sends one rtnetlink request that creates something (msg: its header's type
// set, room for the rest; length, flags and sequence are filled here) and waits for its
// acknowledgement, in the calling thread's network namespace.
func RouteRequest(msg []byte) error {
	s, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return err
	}
	defer unix.Close(s)
	ne := binary.NativeEndian
	ne.PutUint32(msg[0:], uint32(len(msg)))
	ne.PutUint16(msg[6:], unix.NLM_F_REQUEST|unix.NLM_F_ACK|unix.NLM_F_CREATE|unix.NLM_F_EXCL)
	ne.PutUint32(msg[8:], 1)
	if err := unix.Sendto(s, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return err
	}
	buf := make([]byte, 4096)
	n, _, err := unix.Recvfrom(s, buf, 0)
	if err != nil {
		return err
	}
	msgs, err := syscall.ParseNetlinkMessage(buf[:n])
	if err != nil {
		return err
	}
	for _, m := range msgs {
		if m.Header.Type == unix.NLMSG_ERROR && len(m.Data) >= 4 {
			if code := int32(ne.Uint32(m.Data)); code != 0 {
				return fmt.Errorf("rtnetlink: %w", syscall.Errno(-code))
			}
			return nil
		}
	}
	return errors.New("rtnetlink: no acknowledgement")
}
