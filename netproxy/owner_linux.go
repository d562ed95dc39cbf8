package netproxy

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
)

// who is the process that owns a connection's client socket in the sandbox.
type who struct {
	Pid     int
	Exe     string
	Parents []string // executables from the parent up to the sandbox's root process
}

// owner finds the process in the sandbox namespace (root: a process in it, netns: its
// "net:[N]" link) holding the socket whose local address is loc and peer rem (rem zero: any
// peer, an unconnected UDP socket). It reads /proc/ROOT/net/PROTO{,6} for the socket's inode
// and then the fds of the processes in that namespace. A process gone meanwhile: zero who.
func owner(root int, netns, proto string, loc, rem netip.AddrPort) who {
	inode := ""
	for _, f := range []string{proto, proto + "6"} {
		if inode = findInode(fmt.Sprintf("/proc/%d/net/%s", root, f), loc, rem); inode != "" {
			break
		}
	}
	if inode == "" {
		return who{}
	}
	want := "socket:[" + inode + "]"
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return who{}
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ns, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", pid)); ns != netns {
			continue
		}
		fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		for _, fd := range fds {
			if l, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); l == want {
				return describe(pid, netns)
			}
		}
	}
	return who{}
}

// describe names pid's executable and its parents' while they are in the sandbox namespace.
func describe(pid int, netns string) who {
	w := who{Pid: pid}
	w.Exe, _ = os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	for p, i := ppid(pid), 0; p > 1 && i < 16; p, i = ppid(p), i+1 {
		if ns, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", p)); ns != netns {
			break
		}
		exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", p))
		w.Parents = append(w.Parents, exe)
	}
	return w
}

func ppid(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0
	}
	n, _ := strconv.Atoi(f[1])
	return n
}

// findInode returns the inode of the socket loc→rem in a /proc/net/{tcp,udp}{,6} table.
func findInode(path string, loc, rem netip.AddrPort) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 10 {
			continue
		}
		l, ok1 := parseProcAddr(fs[1])
		r, ok2 := parseProcAddr(fs[2])
		if !ok1 || !ok2 || l != loc {
			continue
		}
		if rem.IsValid() && r != rem && !(r.Port() == 0 && r.Addr().IsUnspecified()) {
			continue
		}
		return fs[9]
	}
	return ""
}

// parseProcAddr parses "0100007F:1F90" (IPv4) or 32 hex digits and a port (IPv6): the
// address in 32-bit words of host byte order. v4-mapped addresses come back as IPv4.
func parseProcAddr(s string) (netip.AddrPort, bool) {
	h, p, ok := strings.Cut(s, ":")
	if !ok {
		return netip.AddrPort{}, false
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return netip.AddrPort{}, false
	}
	raw, err := hex.DecodeString(h)
	if err != nil || (len(raw) != 4 && len(raw) != 16) {
		return netip.AddrPort{}, false
	}
	for i := 0; i+4 <= len(raw); i += 4 { // each word little-endian (x86, arm64)
		raw[i], raw[i+1], raw[i+2], raw[i+3] = raw[i+3], raw[i+2], raw[i+1], raw[i]
	}
	a, _ := netip.AddrFromSlice(raw)
	return netip.AddrPortFrom(a.Unmap(), uint16(port)), true
}
