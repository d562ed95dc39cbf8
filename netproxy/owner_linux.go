package netproxy

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// who is a process that holds a connection's client socket in the sandbox.
type who struct {
	Pid     int
	Exe     string
	Parents []string // executables from the parent up to the sandbox's root process
	ppids   []int    // their pids, in the same order
	id      fileID   // the file the process runs (its /proc/PID/exe), zero when unknown
	pids    []fileID // the files its parents run, in Parents' order
	// connector: the process that made a connect, as the supervisor saw it then. A transport
	// helper passes for it only when order says its parents' files ran it: order[0] the
	// parent's file ran this process's (it was forked while the parent ran that file and
	// exec'd at most once since), order[i] likewise the parent at i-1 and the one at i. The
	// kernel says so (exec ids, a root run's guard); nil: not known, and no helper passes
	// (a helper forked before its parent exec'd the rule's binary has that binary's ancestry).
	connector bool
	order     []bool
	tgid      int // the connector's process (Pid is the thread that called connect)
}

// fileID is a file's identity. A rule's binary and what a process runs are compared by it,
// not by name: a copy of the binary's bytes elsewhere is another file, a hard link the same.
type fileID struct{ dev, ino uint64 }

// exeID is the identity of the file pid runs (zero when it is gone or cannot be read).
func exeID(pid int) fileID {
	var st unix.Stat_t
	if unix.Stat(fmt.Sprintf("/proc/%d/exe", pid), &st) != nil {
		return fileID{}
	}
	return fileID{st.Dev, st.Ino}
}

// fileIn is the identity of path as the sandbox sees it: resolved beneath the root of root
// (a process of the sandbox), absolute symlinks included, so that the host's file of the same
// name, or a mount the command made in a namespace of its own, is not what is compared.
func fileIn(root int, path string) (fileID, bool) {
	dir, err := unix.Open(fmt.Sprintf("/proc/%d/root", root), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fileID{}, false
	}
	defer unix.Close(dir)
	fd, err := unix.Openat2(dir, path, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS})
	if errors.Is(err, unix.ENOSYS) { // before 5.6: an absolute symlink on the way resolves on the host
		fd, err = unix.Openat(dir, strings.TrimLeft(path, "/"), unix.O_PATH|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		return fileID{}, false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fileID{}, false
	}
	return fileID{st.Dev, st.Ino}, true
}

// first is the holder a denial or a log line names: the one nearest the sandbox's root.
func first(hs []who) who {
	if len(hs) == 0 {
		return who{}
	}
	return hs[0]
}

// mayUse reports whether a connection whose client socket hs hold may use a rule learned by
// the binary by (at finds a path's file in the sandbox); when not, the holder that may not.
// Every holder must pass, for it can write on the socket: a process passes when it runs by's
// very file, or runs one of by's transport helpers (transportHelpers) under by with only
// helpers between them; and it did not inherit the socket from an ancestor holding it that
// runs another file (a child the binary gives its socket borrows it; a forked copy of the same
// program, ssh's mux, does not). What else runs under by (a hook, a build script, a process
// forked before its parent exec'd by) does not pass.
func mayUse(hs []who, by string, at func(string) (fileID, bool)) (who, bool) {
	if len(hs) == 0 {
		return who{}, false
	}
	b, ok := at(by)
	if !ok || b == (fileID{}) {
		return first(hs), false
	}
	helper := isHelper(by, at)
	for _, h := range hs {
		if h.id == b {
			continue
		}
		k, under := underVia(h, b, helper)
		if h.id == (fileID{}) || !helper(h.id) || !under || h.connector && !ranBy(h, k) {
			return h, false
		}
		for _, o := range hs {
			if o.id != h.id && slices.Contains(h.ppids, o.Pid) {
				return h, false
			}
		}
	}
	return who{}, true
}

// underVia reports whether h runs under the file b with only helpers between them, and at
// which of its parents b is.
func underVia(h who, b fileID, helper func(fileID) bool) (int, bool) {
	for i, p := range h.pids {
		if p == b {
			return i, true
		}
		if p == (fileID{}) || !helper(p) {
			return 0, false
		}
	}
	return 0, false
}

// ranBy reports whether the kernel said that each of h's parents up to the one at k ran the
// file of the process below it (who.order).
func ranBy(h who, k int) bool {
	if len(h.order) <= k {
		return false
	}
	return !slices.Contains(h.order[:k+1], false)
}

// isHelper returns whether a file is one of the transport helpers of the tool at by, found
// in helperDirs (at: the proxy's fileOf, which resolved them when the run started).
func isHelper(by string, at func(string) (fileID, bool)) func(fileID) bool {
	names := helpersOf(by)
	var ids []fileID
	looked := false
	return func(id fileID) bool {
		if !looked {
			looked = true
			for _, n := range names {
				for _, d := range helperDirs {
					if f, ok := at(d + "/" + n); ok {
						ids = append(ids, f)
					}
				}
			}
		}
		return id != (fileID{}) && slices.Contains(ids, id)
	}
}

// diag is a NETLINK_SOCK_DIAG socket created in the sandbox's namespace.
type diag struct {
	mu sync.Mutex
	f  *os.File
}

// inode asks the kernel for the socket loc→rem (exact lookup, not a dump).
func (d *diag) inode(proto uint8, loc, rem netip.AddrPort) (uint32, bool) {
	ino, _, ok := d.lookup(proto, loc, rem)
	return ino, ok
}

// lookup asks the kernel for the socket loc→rem: its inode and its cookie (the one a cgroup
// BPF program's bpf_get_socket_cookie gives).
func (d *diag) lookup(proto uint8, loc, rem netip.AddrPort) (uint32, uint64, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	fd := int(d.f.Fd())
	for _, family := range []uint8{unix.AF_INET, unix.AF_INET6} {
		if family == unix.AF_INET && (!loc.Addr().Is4() || !rem.Addr().Is4()) {
			continue
		}
		req := make([]byte, unix.SizeofNlMsghdr+56)
		ne := binary.NativeEndian
		ne.PutUint32(req[0:], uint32(len(req)))
		ne.PutUint16(req[4:], unix.SOCK_DIAG_BY_FAMILY)
		ne.PutUint16(req[6:], unix.NLM_F_REQUEST)
		r := req[unix.SizeofNlMsghdr:]
		r[0], r[1] = family, proto
		ne.PutUint32(r[4:], ^uint32(0)) // every state
		id := r[8:]
		binary.BigEndian.PutUint16(id[0:], loc.Port())
		binary.BigEndian.PutUint16(id[2:], rem.Port())
		put := func(b []byte, a netip.Addr) {
			if family == unix.AF_INET {
				a4 := a.As4()
				copy(b, a4[:])
			} else {
				a16 := a.As16() // v4 addresses as v4-mapped
				copy(b, a16[:])
			}
		}
		put(id[4:20], loc.Addr())
		put(id[20:36], rem.Addr())
		ne.PutUint32(id[40:], ^uint32(0)) // INET_DIAG_NOCOOKIE
		ne.PutUint32(id[44:], ^uint32(0))
		if _, err := unix.Write(fd, req); err != nil {
			return 0, 0, false
		}
		buf := make([]byte, 8192)
		n, err := unix.Read(fd, buf)
		if err != nil || n < unix.SizeofNlMsghdr {
			continue
		}
		typ := ne.Uint16(buf[4:])
		if typ == unix.SOCK_DIAG_BY_FAMILY && n >= unix.SizeofNlMsghdr+72 {
			m := buf[unix.SizeofNlMsghdr:]
			cookie := uint64(ne.Uint32(m[44:])) | uint64(ne.Uint32(m[48:]))<<32 // idiag_cookie[0], [1]
			return ne.Uint32(m[68:]), cookie, true
		}
	}
	return 0, 0, false
}

// owner finds who holds the client socket loc→rem in the sandbox: sock_diag first, the
// /proc tables when that fails. nil: nobody (the client has gone).
func (p *Proxy) owner(proto string, loc, rem netip.AddrPort) []who {
	if p.diag != nil {
		num, l, r := uint8(unix.IPPROTO_TCP), loc, rem
		if proto == "udp" {
			// udp_diag looks up as for a datagram arriving from id.src at id.dst: swap.
			num, l, r = unix.IPPROTO_UDP, rem, loc
		}
		if ino, ok := p.diag.inode(num, l, r); ok && ino != 0 {
			if hs := holders(p.root, p.netns, strconv.FormatUint(uint64(ino), 10)); len(hs) > 0 {
				return hs
			}
		}
	}
	return owner(p.root, p.netns, proto, loc, rem)
}

// owner finds the processes in the sandbox namespace (root: a process in it, netns: its
// "net:[N]" link) holding the socket whose local address is loc and peer rem (rem zero: any
// peer, an unconnected UDP socket). It reads /proc/ROOT/net/PROTO{,6} for the socket's inode
// and then the fds of the processes in that namespace. A process gone meanwhile: none.
func owner(root int, netns, proto string, loc, rem netip.AddrPort) []who {
	inode := ""
	for _, f := range []string{proto, proto + "6"} {
		if inode = findInode(fmt.Sprintf("/proc/%d/net/%s", root, f), loc, rem); inode != "" {
			break
		}
	}
	if inode == "" {
		return nil
	}
	return holders(root, netns, inode)
}

// holders finds every process in the sandbox's process tree holding the socket with inode,
// nearest the root first (breadth first). root is PID 1 of the sandbox's PID namespace, so
// every process of the sandbox is in its tree (orphans are reparented to it); only when
// none holds it (a process outside the tree: tests) is the rest of the namespace searched,
// for one holder.
func holders(root int, netns, inode string) []who {
	want := "socket:[" + inode + "]"
	holds := func(pid int) bool {
		fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		for _, fd := range fds {
			if l, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); l == want {
				return true
			}
		}
		return false
	}
	// The sandbox's process tree first (a few processes; all of /proc costs tens of ms on
	// a busy host), then every process in the namespace (one reparented out of the tree).
	seen := map[int]bool{}
	var out []who
	for queue := []int{root}; len(queue) > 0; queue = queue[1:] {
		pid := queue[0]
		if seen[pid] {
			continue
		}
		seen[pid] = true
		if holds(pid) {
			out = append(out, describe(pid, netns))
		}
		queue = append(queue, children(pid)...)
	}
	if len(out) > 0 {
		return out
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || seen[pid] {
			continue
		}
		if ns, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", pid)); ns != netns {
			continue
		}
		if holds(pid) {
			return []who{describe(pid, netns)}
		}
	}
	return nil
}

// children lists pid's child processes (/proc/PID/task/TID/children of each thread).
func children(pid int) []int {
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	var out []int
	for _, t := range tasks {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, t.Name()))
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// describe names pid's executable and its parents' while they are in the sandbox namespace.
func describe(pid int, netns string) who {
	w := who{Pid: pid, id: exeID(pid)}
	w.Exe, _ = os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	for p, i := ppid(pid), 0; p > 1 && i < 16; p, i = ppid(p), i+1 {
		if ns, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", p)); ns != netns || sandboxInit(p) {
			break // the sandbox's init stage (its PID 1) is sysprof's, not the command's
		}
		exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", p))
		w.Parents = append(w.Parents, exe)
		w.ppids = append(w.ppids, p)
		w.pids = append(w.pids, exeID(p))
	}
	return w
}

// sandboxInit reports whether pid is PID 1 of its innermost PID namespace (the init stage).
func sandboxInit(pid int) bool {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, "NSpid:"); ok {
			f := strings.Fields(rest)
			return len(f) > 1 && f[len(f)-1] == "1"
		}
	}
	return false
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
