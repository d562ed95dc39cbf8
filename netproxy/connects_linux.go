package netproxy

import (
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// connectLog is who made each connect in the sandbox, by the socket's inode, as the
// supervisor saw it (SawConnect): the newest connectsKept.
type connectLog struct {
	mu    sync.Mutex
	byIno map[uint64]who
	order []uint64 // oldest first
}

// connectsKept bounds the connects remembered: a connect the proxy looks up follows its
// record at once (the call waited for it), so only a flood of connects elsewhere (UDP, unix
// sockets, the sandbox's own loopback) could push one out, which then is refused.
const connectsKept = 8192

// Caller is a process making a connect, described while its call waits in the supervisor.
type Caller struct{ w who }

// DescribeCaller describes the process of thread tid, whose connect waits in the supervisor:
// its file, and its parents' when a rule names a tool with transport helpers (only a helper
// is judged by them); the caller checks the notification is still valid afterwards, so that
// what was read is that task's.
func (p *Proxy) DescribeCaller(tid int) Caller {
	if !p.helpers {
		w := who{Pid: tid, id: exeID(tid), connector: true}
		w.Exe, _ = os.Readlink(fmt.Sprintf("/proc/%d/exe", tid))
		return Caller{w}
	}
	netns, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", tid))
	w := describe(tid, netns)
	w.connector, w.tgid = true, tgidOf(tid)
	return Caller{w}
}

// SawConnect records that c made the connect of the socket with inode ino, before the call
// goes on (so before the proxy can accept it).
func (p *Proxy) SawConnect(ino uint64, c Caller) {
	l := &p.connects
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byIno == nil {
		l.byIno = map[uint64]who{}
	}
	if _, ok := l.byIno[ino]; !ok {
		l.order = append(l.order, ino)
	}
	l.byIno[ino] = c.w // a socket connected again (UDP) is its latest caller's
	for len(l.order) > connectsKept {
		delete(l.byIno, l.order[0])
		l.order = l.order[1:]
	}
}

// connector is who made the connect of the TCP client socket loc→rem (connectorOf).
func (p *Proxy) connector(loc, rem netip.AddrPort) (who, bool) {
	if p.diag == nil {
		return who{}, false
	}
	ino, cookie, ok := p.diag.lookup(unix.IPPROTO_TCP, loc, rem)
	if !ok || ino == 0 {
		return who{}, false
	}
	l := &p.connects
	l.mu.Lock()
	w, ok := l.byIno[uint64(ino)]
	l.mu.Unlock()
	if ok && p.opts.ExecOrder != nil {
		if tgids, ran, found := p.opts.ExecOrder(cookie); found {
			w.order = orderOf(w, tgids, ran)
		}
	}
	return w, ok
}

// orderOf is who.order of w (the supervisor's description of the process that made a connect)
// from what the kernel recorded at that connect: level i is known to have been run by its
// parent's file when the kernel says so and both processes are the ones w names.
func orderOf(w who, tgids []uint32, ran []bool) []bool {
	procs := append([]int{w.tgid}, w.ppids...)
	order := make([]bool, len(w.ppids))
	for i := range order {
		order[i] = i+1 < len(tgids) && i < len(ran) && ran[i] && int(tgids[i]) == procs[i] && int(tgids[i+1]) == procs[i+1]
	}
	return order
}

// tgidOf is the process of thread tid (0 when gone).
func tgidOf(tid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", tid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Tgid:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}

// mayUseNow reports whether the socket's holders now, and the process that made its connect
// as it was then (when the supervisor sees connects), may use a rule or credential learned by
// by; when not, the process that may not.
func (pc *proxyConn) mayUseNow(by string) (who, bool) {
	hs := pc.p.ownerOf("tcp", pc.src, pc.dst)
	if pc.p.opts.ConnectsSeen {
		w, ok := pc.p.connectorOf(pc.src, pc.dst)
		if !ok {
			return first(hs), false
		}
		if bad, ok := mayUse([]who{w}, by, pc.p.fileAt); !ok {
			return bad, false
		}
	}
	return mayUse(hs, by, pc.p.fileAt)
}
