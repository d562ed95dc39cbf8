package enforcer

import (
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/internal/kernrun"
	"github.com/sysprof/sysprof/netproxy"
	"github.com/sysprof/sysprof/paths"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/report"
)

// supervisor answers the filter's USER_NOTIF decisions: it records who asked for what and
// replies EPERM, or lets the call continue in audit mode.
type supervisor struct {
	listener int
	audit    bool
	rootPid  int
	compiled *Compiled
	// initCalls counts the init stage's own calls let through (see initTask).
	initCalls atomic.Int64
	stopR     int
	stopW     int
	// The noexec tmpfs memfds are made on (memfd_linux.go), or -1 and why not.
	memfdOnce sync.Once
	memfdMnt  int
	memfdUID  int // the fs ids files are made on it with
	memfdGID  int
	memfdWhy  string
	// The init stage's socket that makes exec output directories (execoutputs_linux.go), or -1.
	execOutMu sync.Mutex
	execOutFD int
	execOuts  []string
	execFiles []string
	// The egress proxy told who made each connect (egress_linux.go), or nil.
	egress *netproxy.Proxy
	// exdevLinks counts the links stagedLink answered EXDEV, exdevFirst names the first.
	exdevLinks int
	exdevFirst string

	mu      sync.Mutex
	denials []report.Denial
	index   map[string]int  // aggregation key → position in denials
	kinds   map[string]bool // kindKey of every kept denial
	dropped int             // denials past maxDistinct, counted but not kept
	done    chan struct{}
}

// maxDistinct bounds the distinct denials kept, so that a command looping over denied calls
// with ever-changing arguments cannot grow sysprof's memory without bound. Past it, a denial of
// a kind not listed yet (kindKey) is still kept, up to twice as many in all: a command cannot
// fill the record with thousands of ioctl requests and then ptrace unseen.
const maxDistinct = 4096

func newSupervisor(listener, rootPid int, c *Compiled, audit bool) (*supervisor, error) {
	syncWakeUp(listener)
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		return nil, err
	}
	return &supervisor{listener: listener, rootPid: rootPid, compiled: c, audit: audit,
		stopR: p[0], stopW: p[1], done: make(chan struct{}), execOutFD: -1}, nil
}

// run serves notifications until every task using the filter is gone (the listener reports
// POLLHUP) or stop is called. It never blocks in RECV: it polls first.
func (s *supervisor) run() {
	defer close(s.done)
	var n seccompNotif
	for {
		fds := []unix.PollFd{{Fd: int32(s.listener), Events: unix.POLLIN}, {Fd: int32(s.stopR), Events: unix.POLLIN}}
		if _, err := unix.Poll(fds, -1); err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return
		}
		if fds[0].Revents&unix.POLLIN != 0 {
			if err := notifRecv(s.listener, &n); err != nil {
				// ENOENT: the task died or was interrupted before we received it.
				if errors.Is(err, unix.EINTR) || errors.Is(err, unix.ENOENT) {
					continue
				}
				return
			}
			s.handle(&n)
			continue
		}
		if fds[0].Revents&(unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0 || fds[1].Revents != 0 {
			return
		}
	}
}

// stop ends run and waits for it.
func (s *supervisor) stop() {
	unix.Write(s.stopW, []byte{0})
	<-s.done
	unix.Close(s.stopR)
	unix.Close(s.stopW)
	if s.memfdMnt > 0 {
		unix.Close(s.memfdMnt)
	}
	if s.execOutFD >= 0 {
		unix.Close(s.execOutFD)
	}
}

// initTask reports whether the notifying task tid runs the init stage's own code: it shares the
// init stage's address space (kcmp KCMP_VM). That is the init stage's filtered thread, between
// installing the filter and exec and, as PID 1 of the sandbox's PID namespace, for as long as
// the command runs (it forks the command and reaps), and the command's process between fork and
// exec (Go's vfork child). Nothing the command runs can share that address space: an exec gives
// it a new one, and the init stage is not dumpable (no ptrace, no /proc/1/mem). The task is
// blocked in the notification, so its tid cannot be reused meanwhile.
func (s *supervisor) initTask(tid int) bool {
	r, _, errno := unix.Syscall6(unix.SYS_KCMP, uintptr(s.rootPid), uintptr(tid), kcmpVM, 0, 0, 0)
	return errno == 0 && r == 0
}

// kcmpVM is KCMP_VM (include/uapi/linux/kcmp.h).
const kcmpVM = 1

func (s *supervisor) handle(n *seccompNotif) {
	resp := seccompNotifResp{ID: n.ID}
	if s.initTask(int(n.Pid)) {
		s.initCalls.Add(1)
		if args := execFileArgs(s, n); args != nil {
			s.execFileCall(n, args) // the command itself may be an exec output file (./app)
		}
		resp.Flags = unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE
		_ = notifSend(s.listener, &resp)
		return
	}
	if len(s.compiled.ProcWrites) > 0 && s.procWriteOpen(n) {
		return
	}
	if s.memfdCreate(n) || s.stagedLink(n) || s.xattrSet(n) || s.connectSeen(n) {
		return
	}
	if s.execOutputMkdir(n) || s.execOutputExec(n) {
		return
	}
	if s.compiled.setIDModeIgnored(n) || s.compiled.prlimitSelf(n) {
		resp.Flags = unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE
		_ = notifSend(s.listener, &resp)
		return
	}
	d := s.explain(n)
	if !s.known(d) {
		// Only a new entry keeps its parent chain: walking /proc for it was most of a
		// notification's cost (~60 us of ~100 here) when the same denial repeats.
		d.Parents = s.parents(int(n.Pid))
	}
	valid := notifIDValid(s.listener, n.ID) // what explain read from /proc belongs to this task
	if s.audit {
		resp.Flags = unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE
		d.Allowed = true
	} else {
		resp.Error = -int32(unix.EPERM)
	}
	_ = notifSend(s.listener, &resp) // ENOENT: the task is gone; still worth reporting
	if !valid {
		d.Exe, d.Parents = "(exited)", nil
	}
	s.record(d)
}

// record adds a denial. Denials are aggregated per profile change: the same suggestion for the
// same executable is one entry whatever the arguments (What keeps the first call as the
// example), so a tool touching a thousand paths with one denied syscall is one line.
func (s *supervisor) record(d report.Denial) {
	key := s.key(d)
	s.mu.Lock()
	defer s.mu.Unlock()
	if i, ok := s.index[key]; ok {
		s.denials[i].Count++
		return
	}
	if s.full(d) {
		s.dropped++
		return
	}
	if s.index == nil {
		s.index, s.kinds = map[string]int{}, map[string]bool{}
	}
	s.index[key] = len(s.denials)
	s.kinds[kindKey(d)] = true
	s.denials = append(s.denials, d)
}

// full reports whether a denial not listed yet is only counted (s.mu held): past maxDistinct
// when its kind is listed already, always past twice that.
func (s *supervisor) full(d report.Denial) bool {
	return len(s.denials) >= maxDistinct && (s.kinds[kindKey(d)] || len(s.denials) >= 2*maxDistinct)
}

// kindKey is a denial's kind: the call and who made it, whatever the arguments.
func kindKey(d report.Denial) string {
	return string(d.Kind) + "\x00" + d.Syscall + "\x00" + d.Arch + "\x00" + d.Exe
}

// denialKey is what record aggregates a denial under.
func denialKey(d report.Denial) string {
	return string(d.Kind) + "\x00" + d.Syscall + "\x00" + d.Arch + "\x00" + d.Exe + "\x00" + d.Suggest
}

// key is what record aggregates d under: denialKey, and for a call naming a protected path (a
// hook, a CI workflow, a shell rc file, autostart, a .pth) that path too, so that each such
// attempt is named on the record, not counted under another path's example.
func (s *supervisor) key(d report.Denial) string {
	k := denialKey(d)
	if p := callPath(d.What); p != "" && s.compiled != nil && s.compiled.protectedHost(p) {
		k += "\x00" + p
	}
	return k
}

// protectedHost reports whether host path p is (or lies in) a protected path or names a
// start-up hook.
func (c *Compiled) protectedHost(p string) bool {
	return policy.ProtectedPath(paths.Portable(p, c.vars)) != ""
}

// callPath is the path a described call names first (`mkdir("/a/b")`), or "".
func callPath(what string) string {
	_, args, ok := strings.Cut(what, "(")
	if !ok {
		return ""
	}
	q, err := strconv.QuotedPrefix(args)
	if err != nil {
		return ""
	}
	p, err := strconv.Unquote(q)
	if err != nil || !filepath.IsAbs(p) {
		return ""
	}
	return p
}

// known reports whether recording d would only count it: an entry with its key exists, or the
// list is full.
func (s *supervisor) known(d report.Denial) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.index[s.key(d)]
	return ok || s.full(d)
}

// explain turns a notification into a denial (without its parent chain: see handle): who,
// what, and the profile change to allow it.
func (s *supervisor) explain(n *seccompNotif) report.Denial {
	pid := int(n.Pid)
	d := report.Denial{Kind: report.KindSyscall, First: time.Now().UTC(), Count: 1}
	d.Exe = kernrun.ExeOf(pid)
	name, abi := SyscallName(n.Data.Arch, uint32(n.Data.Nr))
	d.Arch = abi
	if name == "" {
		name = "syscall_" + strconv.Itoa(int(n.Data.Nr))
	}
	d.Syscall = name
	d.What = describeCall(pid, name, n.Data.Args)
	if abi != s.compiled.Arch {
		d.What = abi + " " + d.What
	}
	s.compiled.suggestDenial(&d, abi, name, n.Data.Arch, uint32(n.Data.Nr), n.Data.Args)
	return d
}

// take returns the denials collected so far and how many distinct ones were not kept.
func (s *supervisor) take() ([]report.Denial, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out, dropped := s.denials, s.dropped
	s.denials, s.index, s.kinds, s.dropped = nil, nil, nil, 0
	return out, dropped
}

// parents returns the executables from pid's parent up to the sandbox's root process.
func (s *supervisor) parents(pid int) []string { return kernrun.ParentsOf(s.rootPid, pid) }
