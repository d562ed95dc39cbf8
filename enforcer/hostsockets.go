package enforcer

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/policy"
)

// Host unix sockets. A pathname unix socket is reached through its file, whatever network
// namespace bound it, and a read-only mount or Landlock ABI 7 does not stop a connect: the
// init stage covers each one the host has. The kernel lists a namespace's sockets in its
// /proc/PID/net/unix, with the path as bound (relative to the binder's working directory when
// it was bound so). Every network namespace some process is in is read once; relative paths
// are resolved through the working directories of the processes holding the socket.

// Only a run that can address a socket needs them covered: a pathname socket is reached by
// naming its path in connect, sendto, sendmsg or sendmmsg (i386's socketcall multiplexes them,
// io_uring has its own CONNECT and SENDMSG operations). A filter that lets none of those reach
// the kernel leaves a command nothing to reach a host socket with, whatever sockets it holds
// (an inherited connected socket talks to its one peer), and the scan is skipped: ~2 ms of
// CPU of each run of such a profile (`true`, a compiler). Opening a socket file fails (ENXIO).
// What the cover also did there: a host socket inside a directory the run may write could not
// be removed or renamed (a mount point); without the cover it is a file like any other there.
var socketAddressing = []string{"connect", "sendto", "sendmsg", "sendmmsg", "socketcall",
	"io_uring_setup", "io_uring_enter", "io_uring_register"}

// addressesSockets reports whether c's filter lets a socket-addressing call reach the kernel
// on some ABI: allowed, also under argument checks (an ERRNO answer does not reach it, a
// call of an ABI the profile does not allow goes to the supervisor, which refuses it). The
// caller adds --audit, under which every call continues.
func (c *Compiled) addressesSockets() bool {
	if c == nil || c.spec == nil {
		return true
	}
	for _, a := range c.spec.ABIs {
		for _, r := range a.Rules {
			if r != nil && r.Ret&unix.SECCOMP_RET_ACTION_FULL != unix.SECCOMP_RET_ERRNO && slices.Contains(socketAddressing, r.Name) {
				return true
			}
		}
	}
	return false
}

// mayAddressSockets guesses addressesSockets from p's own names, before its filter is
// compiled, to start the scan early; the compiled filter decides.
func mayAddressSockets(p *policy.Profile) bool {
	for _, s := range p.Syscalls.Allow {
		if slices.Contains(socketAddressing, s.Name) {
			return true
		}
	}
	return false
}

// procRoot is where the host's processes are listed (a seam for tests).
var procRoot = "/proc"

// socketScan is what compile reads of the host's unix sockets whatever the profile: the
// kernel's lists (hostSockets) and the sockets in socketDirs. Compile starts one
// (PrefetchSockets) beside the rest of the plan when the profile names a socket-addressing
// call (~1.5–2 ms here, with ~100–300 processes) and takes it once, or scans itself.
type socketScan struct {
	bound, unresolved []string
	dirs              map[string][]string // socketDirs entry -> its sockets
}

// scanSockets reads the host's unix sockets now.
func scanSockets() socketScan {
	sc := socketScan{dirs: map[string][]string{}}
	sc.bound, sc.unresolved = hostSockets()
	for _, d := range socketDirs {
		sc.dirs[d] = socketsIn(d)
	}
	return sc
}

// socketsIn lists the sockets directly in dir.
func socketsIn(dir string) []string {
	var out []string
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.Type()&os.ModeSocket != 0 {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out
}

// prefetch is the scan PrefetchSockets started, until compile takes it.
var prefetch struct {
	sync.Mutex
	scan    chan socketScan
	started time.Time
}

// prefetchFresh is how old a prefetched scan may be when compile takes it: one started
// longer ago (a CLI that stopped for something else) is dropped and compile scans again.
const prefetchFresh = time.Second

// PrefetchSockets starts reading the host's unix sockets for the next compile of this
// process, in the background. A socket bound after that scan is not hidden, as one bound after
// compile's own scan never was.
func PrefetchSockets() {
	ch := make(chan socketScan, 1)
	prefetch.Lock()
	prefetch.scan, prefetch.started = ch, time.Now()
	prefetch.Unlock()
	go func() { ch <- scanSockets() }()
}

// takeSocketScan returns the prefetched scan when one is fresh, else a new one.
func takeSocketScan() socketScan {
	prefetch.Lock()
	ch, started := prefetch.scan, prefetch.started
	prefetch.scan = nil
	prefetch.Unlock()
	if ch != nil && time.Since(started) < prefetchFresh {
		return <-ch
	}
	return scanSockets()
}

// netUnixEntry is one bound pathname socket of a /proc/net/unix listing.
type netUnixEntry struct {
	inode uint64
	path  string // as bound: absolute, or relative to the binder's directory then
}

// parseNetUnix returns the pathname sockets of a /proc/net/unix listing (abstract and unbound
// ones are left out).
func parseNetUnix(b []byte) []netUnixEntry {
	var out []netUnixEntry
	for _, line := range strings.Split(string(b), "\n")[1:] {
		// Num RefCount Protocol Flags Type St Inode Path
		f := strings.Fields(line)
		if len(f) < 8 || strings.HasPrefix(f[7], "@") {
			continue // unbound or abstract
		}
		ino, err := strconv.ParseUint(f[6], 10, 64)
		if err != nil {
			continue
		}
		// The path is the rest of the line after the seventh field (it may hold spaces).
		rest := line
		for range 7 {
			rest = strings.TrimLeft(rest, " ")
			rest = rest[strings.IndexByte(rest, ' '):]
		}
		out = append(out, netUnixEntry{inode: ino, path: strings.TrimLeft(rest, " ")})
	}
	return out
}

// hostSockets returns the paths, as seen from here, of the pathname unix sockets bound in
// every network namespace a host process is in, and the bound paths it could not place (a
// relative path whose holders' working directories are not readable or have moved).
func hostSockets() (paths, unresolved []string) {
	ents, err := os.ReadDir(procRoot)
	if err != nil {
		return nil, []string{procRoot + ": " + err.Error()}
	}
	// One pid per distinct network namespace: the inode of PID/net/unix differs per
	// namespace and, unlike PID/ns/net, can be stat'ed for any user's process.
	// PID/ns/net is a little cheaper where readable (root, own processes); the two kinds of
	// key never mix up two namespaces, at worst one is read twice.
	byNS := map[string][]string{}
	var order []string
	link := make([]byte, 64)
	for _, e := range ents {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		var key string
		if n, err := syscall.Readlink(procRoot+"/"+e.Name()+"/ns/net", link); err == nil {
			key = string(link[:n])
		} else {
			var st syscall.Stat_t
			if syscall.Stat(procRoot+"/"+e.Name()+"/net/unix", &st) != nil {
				continue // exited, or a kernel thread
			}
			key = strconv.FormatUint(st.Ino, 10)
		}
		if byNS[key] == nil {
			order = append(order, key)
		}
		byNS[key] = append(byNS[key], e.Name())
	}
	seen := map[string]bool{}
	for _, ns := range order {
		pids := byNS[ns]
		var b []byte
		for _, pid := range pids {
			if b, err = readProcBig(procRoot + "/" + pid + "/net/unix"); err == nil {
				break
			}
		}
		var relative []netUnixEntry
		for _, e := range parseNetUnix(b) {
			if strings.HasPrefix(e.path, "/") {
				if !seen[e.path] {
					seen[e.path] = true
					paths = append(paths, e.path)
				}
				continue
			}
			relative = append(relative, e)
		}
		if len(relative) == 0 {
			continue
		}
		found := resolveRelative(relative, pids)
		for _, e := range relative {
			if p := found[e.inode]; p != "" {
				if !seen[p] {
					seen[p] = true
					paths = append(paths, p)
				}
			} else {
				unresolved = append(unresolved, e.path)
			}
		}
	}
	return paths, unresolved
}

// resolveRelative finds, for each socket bound by a relative path, the processes (among pids,
// its network namespace's) holding it, and the path below one's working directory that is
// still that socket file. Only runs when such a socket exists: it reads every process's fds.
func resolveRelative(rel []netUnixEntry, pids []string) map[uint64]string {
	want := map[string]netUnixEntry{}
	for _, e := range rel {
		want["socket:["+strconv.FormatUint(e.inode, 10)+"]"] = e
	}
	found := map[uint64]string{}
	for _, pid := range pids {
		if len(found) == len(rel) {
			break
		}
		fdDir := procRoot + "/" + pid + "/fd"
		fds, err := os.ReadDir(fdDir)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			l, err := os.Readlink(fdDir + "/" + fd.Name())
			e, ok := want[l]
			if err != nil || !ok || found[e.inode] != "" {
				continue
			}
			if p := placeRelative(pid, e.path); p != "" {
				found[e.inode] = p
			}
		}
	}
	return found
}

// placeRelative returns the path here of the socket file rel below pid's working directory,
// or "" when that directory cannot be named from this mount namespace.
func placeRelative(pid, rel string) string {
	cwd := procRoot + "/" + pid + "/cwd"
	var there, here syscall.Stat_t
	if syscall.Lstat(cwd+"/"+rel, &there) != nil || there.Mode&syscall.S_IFMT != syscall.S_IFSOCK {
		return ""
	}
	dir, err := os.Readlink(cwd)
	if err != nil || !strings.HasPrefix(dir, "/") {
		return ""
	}
	p := filepath.Join(dir, rel)
	if syscall.Lstat(p, &here) != nil || here.Dev != there.Dev || here.Ino != there.Ino {
		return "" // the directory has another name here (another mount namespace)
	}
	return p
}

// readProcBig reads a /proc listing in large reads: each read of a seq_file walks the kernel's
// list again up to where it stopped, and os.ReadFile's 512-byte start makes that quadratic.
func readProcBig(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, 0, 256<<10)
	for {
		n, err := f.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if n == 0 || err != nil {
			return b, nil
		}
		if len(b) == cap(b) {
			b = append(b, make([]byte, len(b))...)[:len(b)]
		}
	}
}
