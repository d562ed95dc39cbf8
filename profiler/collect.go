package profiler

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"maps"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
	"unsafe"

	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/dns/dnsmessage"

	"github.com/sysprof/sysprof/bpf"
	"github.com/sysprof/sysprof/internal/hostsfile"
	"github.com/sysprof/sysprof/netproxy"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/trace"
)

// collector turns ring buffer events into the parts of a Trace. It is used from one goroutine
// (the reader) during the run and from the caller after the reader is done.
type collector struct {
	mono0 uint64    // CLOCK_MONOTONIC at wall0, ns
	wall0 time.Time // wall clock at mono0

	exePath map[uint64]string // exe key -> path of the executable
	// memfdCode counts, by executable, memfds mapped executable or executed (enforce makes
	// memfds non-executable unless learn saw this: the profile's memfd_create rule).
	memfdCode map[string]uint64
	procs     []trace.Process
	tgids     map[uint32]tgidState
	// The file accesses: the paths, interned (a path is hashed once per event, then everything
	// is numbers: a map[fileKey] with the path in the key cost a third of the reader's time in
	// a find(1) run), and the records, by path id, executable, access and errno.
	paths     []string
	pathIDs   map[uint64]uint32 // maphash of a path -> its index in paths
	pathsMore map[string]uint32 // paths whose hash another path has
	// pathOrder holds the indexes of paths[:len(pathOrder)] in sorted order: the reader sorts
	// new paths while it waits for the ring (sortNewPaths), so that the trace's sort at the end
	// only has the last few to sort and merge (a find(1) run interns 18k paths).
	pathOrder []uint32
	seed      maphash.Seed
	fileRecs  []fileRec
	files     map[uint64]uint32  // packed fileKey -> index in fileRecs
	filesWide map[fileKey]uint32 // the keys that do not pack (an exe index or errno too large)
	nets      map[netKey]*trace.NetworkAccess
	dns       map[string]*dnsName // name -> addresses
	addrTo    map[string]string   // address -> the name it was resolved from
	// {exe, address, port} of a TCP connection -> the names its first bytes named (TLS SNI,
	// HTTP Host): the name a binary connected to, DNS answer seen or not.
	sniffed map[sniffKey]map[string]bool
	// {exe, address, port} of a connection to a forward proxy -> the destinations its first
	// request asked the proxy for (netproxy.ProxyTarget): connected to through it.
	proxied map[sniffKey]map[proxyTarget]bool
	// tcpAsked are the names asked over TCP (tcpQuery); lookup resolves them on the host.
	tcpAsked map[string]bool
	lookup   func(ctx context.Context, name string) ([]netip.Addr, error)
	dirs     map[string]string // directory -> with symlinks resolved (a bounded cache)
	exeIDs   map[string]uint32 // exe path -> index for fileKey
	exeNames []string          // index -> exe path
	lastExe  string            // the exe of the previous addFile, and its index
	lastID   uint32
	// Directories by the def_id of the file event that sent their path: learn.c sends a
	// directory's path once per thread and then its id (struct base_cache).
	bases  dirIDs
	hasher *hasher
	// hostsPath is the hosts file (hostsfile.Path): a connection to an address a tool that
	// read it got from it is named by the file's names for that address.
	hostsPath string

	undecodable uint64 // events too short or of an unknown kind (a BUG if ever non-zero)
}

type tgidState struct {
	procID int  // ID of the trace.Process that this tgid runs (or inherited by fork); 0 none
	own    bool // the tgid exec'd procID itself (so its exit is procID's exit)
}

// fileKey identifies a file access.
type fileKey struct {
	path   uint32 // index in paths
	exe    uint32 // index in exeNames
	errno  int32
	access accessID
}

// fileRec is one trace.FileAccess while collecting.
type fileRec struct {
	fileKey
	dir   bool
	count uint64
}

// accessID is a trace.Access* name as a small number; the numbers sort like the names.
type accessID uint8

var accessByID = slices.Sorted(slices.Values(trace.Accesses))

var accessIDs = func() map[string]accessID {
	m := map[string]accessID{}
	for i, a := range accessByID {
		m[a] = accessID(i)
	}
	return m
}()

// accessOf maps learn.c's access kinds to accessIDs (ok false for an unknown kind).
var accessOf = func() map[bpf.LearnAccessKind]accessID {
	m := map[bpf.LearnAccessKind]accessID{}
	for k, name := range accessNames {
		m[k] = accessIDs[name]
	}
	return m
}()

// proxyTarget is a destination asked of a forward proxy: a name or an address, and a port.
type proxyTarget struct {
	host string
	port int
}

type sniffKey struct {
	exe, addr string
	port      int
}

type netKey struct {
	exe, op, family, proto, addr, path string
	port                               int
	ok                                 bool
}

type dnsName struct {
	addrs  map[string]bool
	server string
}

func newCollector(mono0 uint64, wall0 time.Time) *collector {
	return &collector{
		mono0:     mono0,
		wall0:     wall0,
		exePath:   map[uint64]string{},
		memfdCode: map[string]uint64{},
		tgids:     map[uint32]tgidState{},
		pathIDs:   make(map[uint64]uint32, 1024),
		seed:      maphash.MakeSeed(),
		files:     make(map[uint64]uint32, 1024),
		nets:      map[netKey]*trace.NetworkAccess{},
		dns:       map[string]*dnsName{},
		addrTo:    map[string]string{},
		sniffed:   map[sniffKey]map[string]bool{},
		proxied:   map[sniffKey]map[proxyTarget]bool{},
		tcpAsked:  map[string]bool{},
		lookup: func(ctx context.Context, name string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", name)
		},
		dirs:   map[string]string{},
		exeIDs: map[string]uint32{},
		hasher: newHasher(),

		hostsPath: hostsfile.Path,
	}
}

func (c *collector) wall(ts uint64) time.Time {
	return c.wall0.Add(time.Duration(int64(ts - c.mono0)))
}

// decode reads a fixed-size header of type T from the start of raw. T is one of the bpf2go
// event structs: plain little-endian integers and arrays laid out like the C structs (the
// objects are built for little-endian hosts only), so a byte copy is the decoding
// (binary.Decode walked them with reflection, a tenth of the reader's time in a find run).
func decode[T any](raw []byte) (T, []byte, bool) {
	var v T
	n := int(unsafe.Sizeof(v))
	if len(raw) < n {
		return v, nil, false
	}
	copy(unsafe.Slice((*byte)(unsafe.Pointer(&v)), n), raw)
	return v, raw[n:], true
}

func (c *collector) handle(raw []byte) {
	if len(raw) < 4 {
		c.undecodable++
		return
	}
	ok := true
	switch bpf.LearnEvKind(binary.LittleEndian.Uint32(raw)) {
	case bpf.LearnEvKindEV_EXEC:
		var e bpf.LearnExecEvent
		var rest []byte
		if e, rest, ok = decode[bpf.LearnExecEvent](raw); ok {
			ok = c.exec(e, rest)
		}
	case bpf.LearnEvKindEV_FORK:
		var e bpf.LearnForkEvent
		if e, _, ok = decode[bpf.LearnForkEvent](raw); ok {
			c.fork(e)
		}
	case bpf.LearnEvKindEV_EXIT:
		var e bpf.LearnExitEvent
		if e, _, ok = decode[bpf.LearnExitEvent](raw); ok {
			c.exit(e)
		}
	case bpf.LearnEvKindEV_FILE:
		var e bpf.LearnFileEvent
		var rest []byte
		if e, rest, ok = decode[bpf.LearnFileEvent](raw); ok {
			ok = c.file(e, rest)
		}
	case bpf.LearnEvKindEV_UNIX:
		var e bpf.LearnUnixEvent
		if e, _, ok = decode[bpf.LearnUnixEvent](raw); ok {
			c.unix(e)
		}
	case bpf.LearnEvKindEV_NET:
		var e bpf.LearnNetEvent
		if e, _, ok = decode[bpf.LearnNetEvent](raw); ok {
			c.net(e)
		}
	case bpf.LearnEvKindEV_DNS:
		var e bpf.LearnDnsEvent
		if e, _, ok = decode[bpf.LearnDnsEvent](raw); ok {
			c.dnsPacket(e)
		}
	case bpf.LearnEvKindEV_SNIFF:
		var e bpf.LearnSniffEvent
		if e, _, ok = decode[bpf.LearnSniffEvent](raw); ok {
			c.sniff(e)
		}
	default:
		ok = false
	}
	if !ok {
		c.undecodable++
	}
}

// joinComponents turns the leaf-first, NUL-separated components of a dentry walk into an
// absolute path.
func joinComponents(b []byte) string {
	b = bytes.TrimRight(b, "\x00")
	if len(b) == 0 {
		return "/"
	}
	buf := make([]byte, 0, len(b)+1) // a slash per component, a NUL between two
	for end := len(b); ; {
		i := bytes.LastIndexByte(b[:end], 0)
		buf = append(buf, '/')
		buf = append(buf, b[i+1:end]...)
		if i < 0 {
			break
		}
		end = i
	}
	return unsafe.String(unsafe.SliceData(buf), len(buf))
}

// joinUnder is joinComponents(b) for components that end at directory dir instead of the root.
func joinUnder(dir string, b []byte) string {
	rel := joinComponents(b)
	if rel == "/" {
		return dir
	}
	if dir == "/" {
		return rel
	}
	return dir + rel
}

// joinName is filepath.Join(dir, name) for an absolute dir from a dentry walk, without
// cleaning when name is a single plain component (the common case: fstatat(dirfd, "name")).
func joinName(dir, name string) string {
	if name == "" || name == "." || name == ".." || strings.IndexByte(name, '/') >= 0 ||
		strings.Contains(dir, "//") || len(dir) > 1 && dir[len(dir)-1] == '/' { // an empty dentry name: Clean it as before
		return filepath.Join(dir, name)
	}
	if dir == "/" {
		return "/" + name
	}
	return dir + "/" + name
}

func cstring(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

func (c *collector) exe(key uint64) string {
	if p, ok := c.exePath[key]; ok {
		return p
	}
	return fmt.Sprintf("<unknown exe %#x>", key)
}

func (c *collector) exec(e bpf.LearnExecEvent, rest []byte) bool {
	if int(e.ExeLen)+int(e.Argv0Len)+int(e.FnameLen)+int(e.CwdLen) > len(rest) {
		return false
	}
	path := joinComponents(rest[:e.ExeLen])
	rest = rest[e.ExeLen:]
	argv0 := cstring(rest[:e.Argv0Len])
	rest = rest[e.Argv0Len:]
	if int(e.FnameLen)+int(e.CwdLen) > len(rest) {
		return false
	}
	// The name given to execve: when it is not the binary that runs (a #! script), the script
	// was executed too.
	if fname := cstring(rest[:e.FnameLen]); fname != "" {
		if !strings.HasPrefix(fname, "/") {
			fname = filepath.Join(joinComponents(rest[e.FnameLen:int(e.FnameLen)+int(e.CwdLen)]), fname)
		}
		fname = filepath.Clean(fname)
		if r, err := filepath.EvalSymlinks(fname); err == nil {
			fname = r
		}
		if fname != path && !strings.HasPrefix(fname, "/dev/fd/") && !strings.HasPrefix(fname, "/proc/") {
			c.addFile(fname, accessIDs[trace.AccessExec], 0, false, path)
		}
	}
	c.exePath[e.ExeKey] = path
	// A memfd has no name to walk up to: its exe path reads "/" (or "/memfd:..." where the
	// kernel names it); by whoever ran it.
	if unnamedFile(path) {
		by := path
		if st, ok := c.tgids[e.Tgid]; ok && st.procID != 0 {
			by = c.procs[st.procID-1].Exe
		}
		c.memfdCode[by]++
	}
	p := trace.Process{ID: len(c.procs) + 1, PID: int(e.Tgid), Exe: path, Argv0: argv0, Start: c.wall(e.Ts)}
	if st, ok := c.tgids[e.Tgid]; ok && st.procID != 0 {
		p.Parent = st.procID
		p.ExecOf = st.own
	}
	c.procs = append(c.procs, p)
	c.tgids[e.Tgid] = tgidState{procID: p.ID, own: true}
	c.hasher.add(path)
	c.addFile(path, accessIDs[trace.AccessExec], 0, false, path)
	return true
}

func (c *collector) fork(e bpf.LearnForkEvent) {
	st := c.tgids[e.ParentTgid]
	c.tgids[e.Tgid] = tgidState{procID: st.procID}
}

func (c *collector) exit(e bpf.LearnExitEvent) {
	st, ok := c.tgids[e.Tgid]
	delete(c.tgids, e.Tgid)
	if !ok || !st.own || st.procID == 0 {
		return
	}
	p := &c.procs[st.procID-1]
	code := int(e.ExitCode>>8) & 0xff
	if sig := int(e.ExitCode & 0x7f); sig != 0 {
		p.Signal = sig
		code = 128 + sig
	}
	p.ExitCode = &code
}

var accessNames = map[bpf.LearnAccessKind]string{
	bpf.LearnAccessKindACC_READ:     trace.AccessRead,
	bpf.LearnAccessKindACC_WRITE:    trace.AccessWrite,
	bpf.LearnAccessKindACC_CREATE:   trace.AccessCreate,
	bpf.LearnAccessKindACC_DELETE:   trace.AccessDelete,
	bpf.LearnAccessKindACC_EXEC:     trace.AccessExec,
	bpf.LearnAccessKindACC_LIST:     trace.AccessList,
	bpf.LearnAccessKindACC_METADATA: trace.AccessMetadata,
}

func (c *collector) file(e bpf.LearnFileEvent, rest []byte) bool {
	if int(e.PathLen)+int(e.BaseLen) > len(rest) {
		return false
	}
	mapped := bpf.LearnAccessKind(e.Access) == bpf.LearnAccessKindACC_MAP
	access, ok := accessOf[bpf.LearnAccessKind(e.Access)]
	if mapped {
		access, ok = accessIDs[trace.AccessMap], true
	}
	if !ok {
		return false
	}
	var path string
	if e.Resolved == 1 {
		if e.RefId != 0 { // the components end at a directory sent before
			dir, ok := c.bases.get(e.RefId)
			if !ok {
				return false
			}
			path = joinUnder(dir, rest[:e.PathLen])
		} else {
			path = joinComponents(rest[:e.PathLen])
		}
		if e.DefId != 0 {
			c.bases.set(e.DefId, path)
		}
	} else {
		b := rest[:e.PathLen]
		if i := bytes.IndexByte(b, 0); i >= 0 {
			b = b[:i]
		}
		// s only lives while this event is handled (rest is the reader's buffer): every
		// path made from it below is a new string.
		s := unsafe.String(unsafe.SliceData(b), len(b))
		switch {
		case strings.HasPrefix(s, "/"):
			path = strings.Clone(filepath.Clean(s))
		case e.RefId != 0:
			dir, ok := c.bases.get(e.RefId)
			if !ok {
				return false
			}
			path = joinName(dir, s)
		case e.BaseLen > 0:
			dir := joinComponents(rest[e.PathLen : int(e.PathLen)+int(e.BaseLen)])
			if e.DefId != 0 {
				c.bases.set(e.DefId, dir)
			}
			path = joinName(dir, s)
		default:
			return true // relative to a dirfd that was not open: nothing to record
		}
		if strings.Contains(s, "/") { // else the directory is the base, resolved by the kernel
			path = c.resolveParent(path)
		}
	}
	// A path event carries no file type: a create by mkdir (or mknod: a fifo, a socket) made
	// the node itself, which is what its rule must name (open's create names its directory).
	dir := e.IsDir == 1 || access == accessIDs[trace.AccessCreate] && (e.Op == uint32(bpf.LearnScOpSCOP_MKDIR) || e.Op == uint32(bpf.LearnScOpSCOP_MKDIRAT))
	if mapped && !mappedCode(path) {
		if unnamedFile(path) {
			c.memfdCode[c.exe(e.ExeKey)]++
		}
		return true
	}
	c.addFile(path, access, int(e.Err), dir, c.exe(e.ExeKey))
	return true
}

// dirIDs holds directories by the id learn.c sent their path under. learn.c hands ids out in
// order from 1 each run (path_state.next_id), so they index a slice: a map's insert per
// directory was ~18% of the reader's time in a learn of find /usr (perf). An id far past the
// end (not one learn.c makes) goes to a map rather than growing the slice.
type dirIDs struct {
	byID []string // "" : no directory (a path is never empty)
	far  map[uint32]string
}

// dirIDsAhead is how far past the slice's end an id may be and still extend it.
const dirIDsAhead = 1 << 16

func (d *dirIDs) get(id uint32) (string, bool) {
	if int(id) < len(d.byID) {
		return d.byID[id], d.byID[id] != ""
	}
	dir, ok := d.far[id]
	return dir, ok
}

func (d *dirIDs) set(id uint32, dir string) {
	switch {
	case int(id) < len(d.byID):
	case int(id) < len(d.byID)+dirIDsAhead:
		d.byID = append(d.byID, make([]string, int(id)+1-len(d.byID))...)
	default:
		if d.far == nil {
			d.far = map[uint32]string{}
		}
		d.far[id] = dir
		return
	}
	d.byID[id] = dir
}

// mappedCode reports whether a file mapped executable is recorded as code the command runs (a
// map access): one outside the system trees (a venv's .so, a node addon, a rustc proc-macro, a
// toolchain's library in $HOME), which enforce keeps mappable inside its noexec trees. A system
// library needs no record (the system trees are never noexec), and a memfd has no path to name.
func mappedCode(path string) bool {
	return !policy.SystemCodePath(path) && !unnamedFile(path) && filepath.IsAbs(path)
}

// unnamedFile reports the path a memfd resolves to: "/" (its dentry has no parent to walk up
// to) or "/memfd:..." where the kernel names it.
func unnamedFile(path string) bool { return path == "/" || strings.HasPrefix(path, "/memfd:") }

// resolveParent resolves symlinks in the directory part of a path the kernel did not resolve
// for us (the string of a stat, unlink, failed open...), the way the kernel walked it, so that
// /bin/foo and /usr/bin/foo are one path. The last component is kept: lstat, readlink and unlink
// act on the link itself. Best effort: a directory that is gone by now stays as it was.
func (c *collector) resolveParent(path string) string {
	dir, base := filepath.Split(path)
	if dir == "/" || base == "" {
		return path
	}
	r, ok := c.dirs[dir]
	if !ok {
		var err error
		if r, err = filepath.EvalSymlinks(dir); err != nil {
			r = filepath.Clean(dir)
		}
		if len(c.dirs) >= 8192 {
			clear(c.dirs)
		}
		c.dirs[dir] = r
	}
	return filepath.Join(r, base)
}

func (c *collector) addFile(path string, access accessID, errno int, dir bool, exe string) {
	if exe != c.lastExe || len(c.exeIDs) == 0 {
		id, ok := c.exeIDs[exe]
		if !ok {
			id = uint32(len(c.exeNames))
			c.exeIDs[exe] = id
			c.exeNames = append(c.exeNames, exe)
		}
		c.lastExe, c.lastID = exe, id
	}
	k := fileKey{path: c.pathID(path), exe: c.lastID, errno: int32(errno), access: access}
	var i uint32
	var ok bool
	// One uint64 when it fits (a map of them hashes and compares faster than of the struct).
	packed := k.exe < 1<<16 && k.errno >= 0 && k.errno < 1<<12 && k.access < 1<<4
	pk := uint64(k.path)<<32 | uint64(k.exe)<<16 | uint64(k.errno)<<4 | uint64(k.access)
	if packed {
		i, ok = c.files[pk]
	} else {
		i, ok = c.filesWide[k]
	}
	if ok {
		f := &c.fileRecs[i]
		f.count++
		f.dir = f.dir || dir
		return
	}
	i = uint32(len(c.fileRecs))
	if packed {
		c.files[pk] = i
	} else {
		if c.filesWide == nil {
			c.filesWide = map[fileKey]uint32{}
		}
		c.filesWide[k] = i
	}
	c.fileRecs = append(c.fileRecs, fileRec{fileKey: k, dir: dir, count: 1})
}

// pathID interns path.
func (c *collector) pathID(path string) uint32 {
	h := maphash.String(c.seed, path)
	if id, ok := c.pathIDs[h]; ok {
		if c.paths[id] == path {
			return id
		}
		if id, ok := c.pathsMore[path]; ok {
			return id
		}
		if c.pathsMore == nil {
			c.pathsMore = map[string]uint32{}
		}
		c.pathsMore[path] = uint32(len(c.paths))
	} else {
		c.pathIDs[h] = uint32(len(c.paths))
	}
	c.paths = append(c.paths, path)
	return uint32(len(c.paths) - 1)
}

var sockTypes = map[uint16]string{1: "stream", 2: "dgram", 3: "raw", 5: "seqpacket"}

var netOps = map[bpf.LearnScOp]string{
	bpf.LearnScOpSCOP_CONNECT: trace.OpConnect,
	bpf.LearnScOpSCOP_BIND:    trace.OpBind,
	bpf.LearnScOpSCOP_SENDTO:  trace.OpSend,
	bpf.LearnScOpSCOP_SENDMSG: trace.OpSend,
}

func (c *collector) unix(e bpf.LearnUnixEvent) {
	n := min(int(e.PathLen), len(e.Path))
	raw := make([]byte, n)
	for i := range n {
		raw[i] = byte(e.Path[i])
	}
	var path string
	if e.Abstract == 1 {
		path = "@" + strings.TrimRight(string(raw[min(1, n):]), "\x00")
	} else {
		path = cstring(raw)
	}
	proto := sockTypes[e.SockType]
	if proto == "" {
		proto = fmt.Sprintf("type%d", e.SockType)
	}
	exe := c.exe(e.ExeKey)
	op := netOps[bpf.LearnScOp(e.Op)]
	c.addNet(netKey{exe: exe, op: op, family: "unix", proto: proto, path: path, ok: e.Err == 0})
	if op == trace.OpBind && strings.HasPrefix(path, "/") {
		c.addFile(c.resolveParent(filepath.Clean(path)), accessIDs[trace.AccessCreate], int(e.Err), false, exe) // the socket file
	}
}

func ipProto(typ, protocol uint32) string {
	switch {
	case protocol == 262:
		return "mptcp"
	case typ == 1 && (protocol == 0 || protocol == 6):
		return "tcp"
	case typ == 2 && (protocol == 0 || protocol == 17):
		return "udp"
	case protocol == 1 || protocol == 58:
		return "icmp"
	case typ == 3:
		return "raw"
	}
	return fmt.Sprintf("proto%d", protocol)
}

func (c *collector) net(e bpf.LearnNetEvent) {
	var addr netip.Addr
	family := "inet"
	if e.Family == 10 {
		family = "inet6"
		addr = netip.AddrFrom16(e.Addr)
		if addr.Is4In6() {
			addr = addr.Unmap()
		}
	} else {
		addr = netip.AddrFrom4([4]byte(e.Addr[:4]))
	}
	op := netOps[bpf.LearnScOp(e.Op)]
	c.addNet(netKey{exe: c.exe(e.ExeKey), op: op, family: family, proto: ipProto(e.Type, e.Protocol),
		addr: addr.String(), port: int(e.Port), ok: true})
}

// sniff records the name a connection's first bytes named.
func (c *collector) sniff(e bpf.LearnSniffEvent) {
	data := e.Data[:min(int(e.Len), len(e.Data))]
	if e.Dport == 53 {
		c.tcpQuery(data)
		return
	}
	addr := netip.AddrFrom4([4]byte(e.Daddr[:4]))
	if e.Family == 10 {
		addr = netip.AddrFrom16(e.Daddr).Unmap()
	}
	k := sniffKey{exe: c.exe(e.ExeKey), addr: addr.String(), port: int(e.Dport)}
	// A request to a forward proxy (http_proxy): the connection keeps the proxy's name, and
	// its target is a destination of its own (enforce checks it the same way).
	if host, port, ok := netproxy.ProxyTarget(data); ok {
		if c.proxied[k] == nil {
			c.proxied[k] = map[proxyTarget]bool{}
		}
		c.proxied[k][proxyTarget{host, int(port)}] = true
		return
	}
	name := netproxy.FirstName(data)
	if name == "" {
		return
	}
	if _, err := netip.ParseAddr(name); err == nil {
		return // an address as the SNI or Host: no name
	}
	if c.sniffed[k] == nil {
		c.sniffed[k] = map[string]bool{}
	}
	c.sniffed[k][name] = true
}

// tcpQuery records the name a DNS query over TCP asked (its first bytes: a 2-byte length and
// the message): options use-vc, or a retry after a truncated answer. The answer is not seen
// (only UDP payloads are), so fill asks the host's resolver for the name.
func (c *collector) tcpQuery(data []byte) {
	if len(data) < 2 {
		return
	}
	var p dnsmessage.Parser
	if h, err := p.Start(data[2:]); err != nil || h.Response {
		return
	}
	q, err := p.Question()
	if err != nil {
		return
	}
	if name := strings.TrimSuffix(q.Name.String(), "."); name != "" {
		c.tcpAsked[name] = true
	}
}

// resolveTCPAsked asks the host's resolver for the names asked over TCP that no UDP answer
// gave addresses: the tool got them over TCP, so its connections are named as after a UDP
// answer.
func (c *collector) resolveTCPAsked() {
	for name := range c.tcpAsked {
		if d := c.dns[name]; d != nil && len(d.addrs) > 0 {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		addrs, err := c.lookup(ctx, name)
		cancel()
		if err != nil {
			continue
		}
		d := c.dns[name]
		if d == nil {
			d = &dnsName{addrs: map[string]bool{}}
			c.dns[name] = d
		}
		for _, a := range addrs {
			s := a.Unmap().String()
			d.addrs[s] = true
			c.addrTo[s] = name
		}
	}
}

func (c *collector) addNet(k netKey) {
	if n, ok := c.nets[k]; ok {
		n.Count++
		return
	}
	c.nets[k] = &trace.NetworkAccess{Exe: k.exe, Op: k.op, Family: k.family, Proto: k.proto, Addr: k.addr,
		Port: k.port, Path: k.path, OK: k.ok, Count: 1}
}

func (c *collector) dnsPacket(e bpf.LearnDnsEvent) {
	if e.Len > uint32(len(e.Data)) {
		return
	}
	var p dnsmessage.Parser
	h, err := p.Start(e.Data[:e.Len])
	if err != nil {
		return
	}
	qs, err := p.AllQuestions()
	if err != nil || len(qs) == 0 {
		return
	}
	name := strings.TrimSuffix(qs[0].Name.String(), ".")
	if name == "" {
		return
	}
	d := c.dns[name]
	if d == nil {
		d = &dnsName{addrs: map[string]bool{}}
		c.dns[name] = d
	}
	addr := func(b [16]byte, port uint16) string {
		a := netip.AddrFrom16(b)
		if e.Family == 2 {
			a = netip.AddrFrom4([4]byte(b[:4]))
		}
		return netip.AddrPortFrom(a, port).String()
	}
	if e.Egress == 1 {
		if d.server == "" {
			d.server = addr(e.Daddr, e.Dport)
		}
		return
	}
	if !h.Response {
		return
	}
	if d.server == "" {
		d.server = addr(e.Saddr, e.Sport)
	}
	for {
		rh, err := p.AnswerHeader()
		if err != nil {
			return
		}
		switch rh.Type {
		case dnsmessage.TypeA:
			r, err := p.AResource()
			if err != nil {
				return
			}
			a := netip.AddrFrom4(r.A).String()
			d.addrs[a] = true
			c.addrTo[a] = name
		case dnsmessage.TypeAAAA:
			r, err := p.AAAAResource()
			if err != nil {
				return
			}
			a := netip.AddrFrom16(r.AAAA).String()
			d.addrs[a] = true
			c.addrTo[a] = name
		default:
			if err := p.SkipAnswer(); err != nil {
				return
			}
		}
	}
}

// fill writes the collected events into t, sorted deterministically.
func (c *collector) fill(t *trace.Trace) {
	t.Processes = c.procs
	for i := range t.Processes {
		t.Processes[i].SHA256 = c.hasher.sum(t.Processes[i].Exe)
	}
	t.Files = c.sortedFiles()
	c.resolveTCPAsked()
	fromHosts := c.hostsNames(t)
	for _, n := range c.nets {
		if n.Addr != "" {
			n.Host = c.addrTo[n.Addr]
		}
		// What the binary asked a forward proxy for, through this connection: a connect to
		// the target by its name (no address: the proxy resolved it) or its address.
		if n.Op == trace.OpConnect {
			for _, pt := range slices.SortedFunc(maps.Keys(c.proxied[sniffKey{exe: n.Exe, addr: n.Addr, port: n.Port}]), func(a, b proxyTarget) int {
				return cmp.Or(strings.Compare(a.host, b.host), cmp.Compare(a.port, b.port))
			}) {
				m := *n
				m.Addr, m.Host, m.Port = "", pt.host, pt.port
				if a, err := netip.ParseAddr(pt.host); err == nil {
					m.Addr, m.Host = a.Unmap().String(), ""
				}
				t.Network = append(t.Network, m)
			}
		}
		// No DNS answer named the address and the binary read the hosts file, which does:
		// one record per name the file gives it (the tool looked up one of them; under
		// enforce the sandbox asks the stub for it). A datagram sent (sendto: a statsd
		// client) keeps its address too: enforce relays both exactly.
		if names := fromHosts[hostsKey{n.Exe, n.Addr}]; n.Host == "" && (n.Op == trace.OpConnect || n.Op == trace.OpSend) && len(names) > 0 {
			for _, name := range names {
				m := *n
				m.Host = name
				t.Network = append(t.Network, m)
			}
			if n.Op == trace.OpConnect {
				continue
			}
		}
		// The names the binary's connections named themselves win over the DNS answer's:
		// one record per name (a CDN address serves several).
		if names := c.sniffed[sniffKey{exe: n.Exe, addr: n.Addr, port: n.Port}]; n.Op == trace.OpConnect && len(names) > 0 {
			for _, name := range slices.Sorted(maps.Keys(names)) {
				m := *n
				m.Host = name
				t.Network = append(t.Network, m)
			}
			continue
		}
		t.Network = append(t.Network, *n)
	}
	slices.SortFunc(t.Network, func(a, b trace.NetworkAccess) int {
		return cmp.Or(strings.Compare(a.Exe, b.Exe), strings.Compare(a.Op, b.Op), strings.Compare(a.Family, b.Family),
			strings.Compare(a.Proto, b.Proto), strings.Compare(a.Addr, b.Addr), strings.Compare(a.Path, b.Path),
			cmp.Compare(a.Port, b.Port), compareBool(a.OK, b.OK), strings.Compare(a.Host, b.Host))
	})
	for name, d := range c.dns {
		a := trace.DNSAnswer{Name: name, Server: d.server}
		for addr := range d.addrs {
			a.Addrs = append(a.Addrs, addr)
		}
		sort.Strings(a.Addrs)
		t.DNS = append(t.DNS, a)
	}
	sort.Slice(t.DNS, func(i, j int) bool { return t.DNS[i].Name < t.DNS[j].Name })
}

type hostsKey struct{ exe, addr string }

// hostsNames maps {exe, address} to the hosts file's names for the address, for the binaries
// of the trace that read the file (t.Files) and the addresses they connected to.
func (c *collector) hostsNames(t *trace.Trace) map[hostsKey][]string {
	readers := map[string]bool{}
	for _, f := range t.Files {
		if f.Path == c.hostsPath && f.OK && f.Access == trace.AccessRead {
			readers[f.Exe] = true
		}
	}
	if len(readers) == 0 || c.hostsPath == "" {
		return nil
	}
	b, err := os.ReadFile(c.hostsPath)
	if err != nil {
		return nil
	}
	byAddr := hostsfile.Names(string(b))
	out := map[hostsKey][]string{}
	for _, n := range c.nets {
		a, err := netip.ParseAddr(n.Addr)
		if err != nil || !readers[n.Exe] {
			continue
		}
		if names := byAddr[a.WithZone("").Unmap()]; len(names) > 0 {
			out[hostsKey{n.Exe, n.Addr}] = slices.Compact(slices.Sorted(slices.Values(names)))
		}
	}
	return out
}

// sortedFiles returns the file accesses sorted by executable, path, access and errno. Only the
// distinct paths and executables are sorted as strings (a find(1) run has 36k records of 18k
// paths); the records are then put in order by their ranks with counting sorts.
func (c *collector) sortedFiles() []trace.FileAccess {
	exeRank := ranks(len(c.exeNames), func(a, b int) int { return strings.Compare(c.exeNames[a], c.exeNames[b]) })
	c.sortNewPaths(0)
	pathRank := make([]uint32, len(c.paths))
	for r, i := range c.pathOrder {
		pathRank[i] = uint32(r)
	}
	recs := c.fileRecs
	order := make([]uint32, len(recs))
	for i := range order {
		order[i] = uint32(i)
	}
	const maxErrno = 1 << 12 // errnos are below MAX_ERRNO, 4095
	minorOK := true
	for i := range recs {
		minorOK = minorOK && recs[i].errno >= 0 && recs[i].errno < maxErrno
	}
	if minorOK { // least significant key first; each pass keeps the order of the one before
		order = countingSort(order, len(accessByID)*maxErrno, func(i uint32) int {
			return int(recs[i].access)*maxErrno + int(recs[i].errno)
		})
	} else {
		slices.SortFunc(order, func(a, b uint32) int {
			return cmp.Or(cmp.Compare(recs[a].access, recs[b].access), cmp.Compare(recs[a].errno, recs[b].errno))
		})
	}
	order = countingSort(order, len(c.paths), func(i uint32) int { return int(pathRank[recs[i].path]) })
	order = countingSort(order, len(c.exeNames), func(i uint32) int { return int(exeRank[recs[i].exe]) })
	out := make([]trace.FileAccess, len(order))
	for i, ri := range order {
		r := &recs[ri]
		out[i] = trace.FileAccess{Exe: c.exeNames[r.exe], Path: c.paths[r.path], Access: accessByID[r.access],
			OK: r.errno == 0, Errno: int(r.errno), Dir: r.dir, Count: r.count}
	}
	return out
}

// sortNewPaths merges the paths interned since the last call into pathOrder, when there are at
// least min of them (0: any) and, with min, at least a 32nd of those sorted already: each
// merge copies all of pathOrder, so batches of a fixed size made a long run's sorting
// quadratic (400k paths: 3.5 s of the reader's CPU).
func (c *collector) sortNewPaths(min int) {
	old := c.pathOrder
	if n := len(c.paths) - len(old); n == 0 || n < min || min > 0 && n < len(old)/32 {
		return
	}
	byPath := func(a, b uint32) int { return strings.Compare(c.paths[a], c.paths[b]) }
	added := make([]uint32, len(c.paths)-len(old))
	for i := range added {
		added[i] = uint32(len(old) + i)
	}
	slices.SortFunc(added, byPath)
	merged := make([]uint32, 0, len(c.paths))
	for len(old) > 0 && len(added) > 0 {
		if byPath(added[0], old[0]) < 0 {
			merged, added = append(merged, added[0]), added[1:]
		} else {
			merged, old = append(merged, old[0]), old[1:]
		}
	}
	c.pathOrder = append(append(merged, old...), added...)
}

// countingSort returns idx ordered by key (in [0, n)), stably.
func countingSort(idx []uint32, n int, key func(uint32) int) []uint32 {
	start := make([]int, n+1)
	for _, i := range idx {
		start[key(i)+1]++
	}
	for k := 1; k <= n; k++ {
		start[k] += start[k-1]
	}
	out := make([]uint32, len(idx))
	for _, i := range idx {
		k := key(i)
		out[start[k]] = i
		start[k]++
	}
	return out
}

// ranks returns the rank of each of 0..n-1 in the order of compare.
func ranks(n int, compare func(a, b int) int) []uint32 {
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, compare)
	rank := make([]uint32, n)
	for r, i := range order {
		rank[i] = uint32(r)
	}
	return rank
}

func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}

func syscallName(info *arch.Info, nr int) string {
	if n, ok := info.SyscallNumbers[nr]; ok {
		return n
	}
	return fmt.Sprintf("syscall_%d", nr)
}

var argKinds = map[bpf.LearnArgKind]string{
	bpf.LearnArgKindARGK_SOCKET:        "socket",
	bpf.LearnArgKindARGK_CLONE_FLAGS:   "clone_flags",
	bpf.LearnArgKindARGK_CLONE3FLAGS:   "clone3_flags",
	bpf.LearnArgKindARGK_UNSHARE_FLAGS: "unshare_flags",
	bpf.LearnArgKindARGK_SETNS_NSTYPE:  "setns_nstype",
	bpf.LearnArgKindARGK_PRCTL_OPTION:  "prctl_option",
	bpf.LearnArgKindARGK_PERSONALITY:   "personality",
	bpf.LearnArgKindARGK_IOCTL_REQUEST: "ioctl_request",
	bpf.LearnArgKindARGK_MMAP_PROT:     "mmap_prot",
	bpf.LearnArgKindARGK_MPROTECT_PROT: "mprotect_prot",
}

func (c *collector) syscall(k bpf.LearnScKey, count uint64) trace.SyscallCount {
	a, ok := bpf.ArchTables[bpf.LearnArchKind(k.Arch)]
	if !ok {
		a = bpf.NativeArch
	}
	return trace.SyscallCount{Exe: c.exe(k.ExeKey), Arch: a.Name, Name: syscallName(a, int(k.Nr)), Nr: int(k.Nr), Count: count}
}

func (c *collector) arg(k bpf.LearnArgKey, count uint64) trace.ArgValue {
	v := trace.ArgValue{Exe: c.exe(k.ExeKey), Syscall: syscallName(bpf.NativeArch, int(k.Nr)),
		Kind: argKinds[bpf.LearnArgKind(k.Kind)], Value: k.Value, Count: count}
	if v.Kind == "" {
		v.Kind = fmt.Sprintf("kind%d", k.Kind)
	}
	if bpf.LearnArgKind(k.Kind) == bpf.LearnArgKindARGK_SOCKET {
		v.Fields = map[string]uint64{"domain": k.Value >> 32, "type": (k.Value >> 16) & 0xffff, "protocol": k.Value & 0xffff}
	}
	return v
}
