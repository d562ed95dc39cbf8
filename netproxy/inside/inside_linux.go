// Package inside is the init stage's side of egress by name (package netproxy): in the
// sandbox's fresh network namespace it makes every destination local, opens the DNS stub's and
// the proxy's listening sockets and mounts the generated resolv.conf and hosts. It is apart from
// netproxy so that the init stage, a small program of its own, does not carry the proxy (HTTP,
// TLS) with it.
package inside

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"

	"github.com/sysprof/sysprof/internal/hostsfile"
	"github.com/sysprof/sysprof/sandbox"
	"golang.org/x/sys/unix"
)

// Inside is what the init stage sets up in the sandbox's network namespace (Setup).
type Inside struct {
	DNS   netip.AddrPort `json:"dns"`
	Ports []uint16       `json:"ports,omitempty"` // TCP ports to listen on (all addresses)
	// UDP are the exact UDP destinations relayed (netproxy's udp.go): a socket bound to each.
	UDP        []netip.AddrPort `json:"udp,omitempty"`
	ResolvConf string           `json:"resolv_conf"`
}

// Setup runs in the init stage, on the thread that execs the command, in the sandbox's
// fresh network namespace with lo up and before capabilities are dropped: it makes every
// destination local, opens the stub's and the proxy's listening sockets and mounts the
// generated resolv.conf. It returns the sockets' fds (the DNS socket first, then one per
// port in in.Ports' order, then a sock_diag netlink socket, then raw ICMP and ICMPv6 sockets
// that see the datagrams no socket took, when CAP_NET_RAW allows them), close-on-exec; the
// enforcer takes them with pidfd_getfd.
//
// Requires Linux 5.2 (fsopen/fsmount/move_mount).
func Setup(in Inside) ([]int, error) {
	if err := localRoute(unix.AF_INET); err != nil {
		return nil, fmt.Errorf("egress: make every IPv4 destination local in the sandbox: %w", err)
	}
	v6 := localRoute(unix.AF_INET6) == nil // without it IPv6 connects fail unseen (ENETUNREACH)
	var fds []int
	fail := func(err error) ([]int, error) {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return nil, err
	}
	dns, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fail(fmt.Errorf("egress: dns stub socket: %w", err))
	}
	fds = append(fds, dns)
	if err := unix.Bind(dns, &unix.SockaddrInet4{Port: int(in.DNS.Port()), Addr: in.DNS.Addr().As4()}); err != nil {
		return fail(fmt.Errorf("egress: dns stub: bind %s: %w", in.DNS, err))
	}
	for _, port := range in.Ports {
		fd, err := listenTCP(port, v6)
		if err != nil {
			return fail(fmt.Errorf("egress: proxy: listen on port %d: %w", port, err))
		}
		fds = append(fds, fd)
	}
	for _, dst := range in.UDP {
		fd, err := bindUDP(dst)
		if err != nil {
			return fail(fmt.Errorf("egress: udp relay: bind %s: %w", dst, err))
		}
		fds = append(fds, fd)
	}
	// sock_diag bound to this namespace: the proxy looks up who owns a connection by its
	// addresses in O(1) (reading /proc/PID/net/tcp walks the host's whole socket table).
	diag, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return fail(fmt.Errorf("egress: sock_diag socket: %w", err))
	}
	fds = append(fds, diag)
	for _, family := range []int{unix.AF_INET, unix.AF_INET6} {
		if family == unix.AF_INET6 && !v6 {
			continue
		}
		fd, err := icmpObserver(family)
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
			continue // no CAP_NET_RAW here: datagrams go unrecorded (the report says so)
		}
		if err != nil {
			return fail(fmt.Errorf("egress: ICMP observer: %w", err))
		}
		fds = append(fds, fd)
	}
	if err := mountOver("/etc/resolv.conf", in.ResolvConf); err != nil {
		return fail(fmt.Errorf("egress: resolv.conf: %w", err))
	}
	// Names the host's /etc/hosts gives (internal registries, CI service containers) would
	// otherwise skip the stub and dial their raw address: only the loopback lines stay, and
	// the stub resolves the rest on the host, where the file still counts.
	if hosts, err := os.ReadFile(hostsfile.Path); err == nil {
		if err := mountOver(hostsfile.Path, hostsfile.LoopbackOnly(string(hosts))); err != nil {
			return fail(fmt.Errorf("egress: hosts: %w", err))
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fail(fmt.Errorf("egress: read %s (names in it must resolve through the DNS stub): %w", hostsfile.Path, err))
	}
	return fds, nil
}

// icmpObserver opens a raw socket of family that receives only "destination unreachable"
// (the kernel's answer to a datagram no socket took; see icmp.go).
func icmpObserver(family int) (int, error) {
	proto, level := unix.IPPROTO_ICMP, unix.SOL_RAW
	if family == unix.AF_INET6 {
		proto, level = unix.IPPROTO_ICMPV6, unix.IPPROTO_ICMPV6
	}
	fd, err := unix.Socket(family, unix.SOCK_RAW|unix.SOCK_CLOEXEC, proto)
	if err != nil {
		return -1, err
	}
	// ICMP_FILTER (a 32-bit mask) and ICMP6_FILTER (256 bits): a set bit blocks that type.
	filter := make([]byte, 4)
	binary.NativeEndian.PutUint32(filter, ^uint32(1<<3))
	if family == unix.AF_INET6 {
		filter = make([]byte, 32)
		for i := 0; i < 8; i++ {
			binary.NativeEndian.PutUint32(filter[4*i:], ^uint32(0))
		}
		binary.NativeEndian.PutUint32(filter, ^uint32(1<<1))
	}
	if err := unix.SetsockoptString(fd, level, 1 /* ICMP_FILTER, ICMP6_FILTER */, string(filter)); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("filter: %w", err)
	}
	return fd, nil
}

// bindUDP binds a datagram socket to dst, an address of this namespace like every other
// (localRoute): the command's datagrams to dst arrive on it.
func bindUDP(dst netip.AddrPort) (int, error) {
	family, sa := unix.AF_INET, unix.Sockaddr(&unix.SockaddrInet4{Port: int(dst.Port()), Addr: dst.Addr().Unmap().As4()})
	if a := dst.Addr(); a.Is6() && !a.Is4In6() {
		family, sa = unix.AF_INET6, &unix.SockaddrInet6{Port: int(dst.Port()), Addr: a.As16()}
	}
	fd, err := unix.Socket(family, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	// IPv6 addresses of a local route are not "assigned": bind needs freebind.
	_ = unix.SetsockoptInt(fd, unix.SOL_IP, unix.IP_FREEBIND, 1)
	if err := unix.Bind(fd, sa); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// listenTCP listens on every address of the namespace on port: dual-stack when IPv6 works.
func listenTCP(port uint16, v6 bool) (int, error) {
	family := unix.AF_INET
	if v6 {
		family = unix.AF_INET6
	}
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1)
	var sa unix.Sockaddr = &unix.SockaddrInet4{Port: int(port)}
	if v6 {
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, 0); err != nil {
			unix.Close(fd)
			return -1, err
		}
		sa = &unix.SockaddrInet6{Port: int(port)}
	}
	if err := unix.Bind(fd, sa); err != nil {
		unix.Close(fd)
		return -1, err
	}
	if err := unix.Listen(fd, 4096); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// localRoute adds "local 0.0.0.0/0 dev lo table local" (or ::/0) with rtnetlink: every
// address is then this namespace's own, and a connect to any of them reaches the proxy's
// wildcard listener with the address dialled intact.
func localRoute(family int) error {
	lo, err := ifIndex("lo")
	if err != nil {
		return err
	}
	msg := make([]byte, unix.SizeofNlMsghdr+unix.SizeofRtMsg+8)
	ne := binary.NativeEndian
	ne.PutUint16(msg[4:], unix.RTM_NEWROUTE)
	rt := msg[unix.SizeofNlMsghdr:]
	rt[0] = byte(family)
	rt[1] = 0 // dst_len: the whole family
	rt[4] = unix.RT_TABLE_LOCAL
	rt[5] = unix.RTPROT_BOOT
	rt[6] = unix.RT_SCOPE_HOST
	rt[7] = unix.RTN_LOCAL
	attr := rt[unix.SizeofRtMsg:]
	ne.PutUint16(attr[0:], 8)
	ne.PutUint16(attr[2:], unix.RTA_OIF)
	ne.PutUint32(attr[4:], uint32(lo))
	return sandbox.RouteRequest(msg)
}

func ifIndex(name string) (int, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		return 0, err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFINDEX, ifr); err != nil {
		return 0, fmt.Errorf("index of %s: %w", name, err)
	}
	return int(ifr.Uint32()), nil
}

// mountOver mounts a read-only file with content over path (its symlink target, when it is
// one), from a detached tmpfs: nothing is written on the host.
func mountOver(path, content string) error {
	target, err := filepath.EvalSymlinks(path)
	if err != nil {
		return fmt.Errorf("find %s in the sandbox (tools read their resolver from it): %w", path, err)
	}
	fsfd, err := unix.Fsopen("tmpfs", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return fmt.Errorf("fsopen tmpfs: %w", err)
	}
	defer unix.Close(fsfd)
	if err := unix.FsconfigSetString(fsfd, "size", "64k"); err != nil {
		return fmt.Errorf("fsconfig: %w", err)
	}
	if err := unix.FsconfigCreate(fsfd); err != nil {
		return fmt.Errorf("fsconfig create: %w", err)
	}
	mfd, err := unix.Fsmount(fsfd, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_NOEXEC|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV)
	if err != nil {
		return fmt.Errorf("fsmount: %w", err)
	}
	defer unix.Close(mfd)
	f, err := unix.Openat(mfd, "file", unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	_, err = unix.Write(f, []byte(content))
	unix.Close(f)
	if err != nil {
		return fmt.Errorf("write: %w", err)
	}
	tfd, err := unix.OpenTree(mfd, "file", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return fmt.Errorf("open_tree: %w", err)
	}
	defer unix.Close(tfd)
	if err := unix.MountSetattr(tfd, "", unix.AT_EMPTY_PATH, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}); err != nil {
		return fmt.Errorf("read-only: %w", err)
	}
	if err := unix.MoveMount(tfd, "", unix.AT_FDCWD, target, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("mount over %s: %w", target, err)
	}
	return nil
}
