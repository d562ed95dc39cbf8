// Package spawn starts a process with clone3(CLONE_VM|CLONE_VFORK) whatever namespaces it asks
// for, a new user namespace included: the child shares sysprof's memory until its execve
// instead of copying its page tables. It owns that start and nothing after it (waiting is
// os.Process's).
//
// Go's own forkExec clones without CLONE_VFORK|CLONE_VM when it makes a user namespace (its
// child waits for the parent to write the id maps, which a vfork parent cannot do while it is
// suspended): a full fork of a 20 MB, multi-threaded process, whose every page the parent then
// writes takes a copy-on-write fault and a TLB shootdown (issue 28: ~14% of enforce's parent
// CPU for `true`). Here the child raises the capabilities its program needs as ambient ones
// (they survive the execve of an unmapped uid). With no ids to take it execs at once and Start
// writes the id maps afterwards (Attr.IDs, or the caller: WriteIDMaps). With ids to take
// (IDs.Cred) it is cloned without CLONE_VFORK, still sharing this memory: it waits on a pipe
// while Start writes the maps, takes the ids with raw setgroups/setgid/setuid and execs, and
// Start returns once the execve closed the child's end of a second pipe.
//
// The child runs a list of raw system calls prepared here by the parent (dup3, setsid, prctl,
// read, setgroups, setgid, setuid, capset, chdir, execve), walked by a few lines of assembly
// that use no stack and call nothing: with CLONE_VM it must not touch the parent's goroutine
// stack (which moves) or run Go code; what it reads and writes is on the heap and kept alive
// until it has exec'd or is gone. CLONE_CLEAR_SIGHAND resets every handled signal in the
// child, so no Go handler can run there. Requires Linux 5.5
// (clone3 with CLONE_CLEAR_SIGHAND), amd64; elsewhere Start returns an error wrapping
// feature.ErrNotSupported and the caller uses os/exec.
package spawn

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/internal/feature"
)

// Attr is what the child is started with.
type Attr struct {
	Path string   // absolute: the child resolves nothing
	Argv []string // Argv[0] included
	Env  []string
	Dir  string // "": the parent's
	// Files[i] becomes the child's fd i (all others are close-on-exec in a Go process).
	Files []int
	// CloneFlags are the namespaces (CLONE_NEW*); CLONE_VM, CLONE_VFORK, CLONE_PIDFD and
	// CLONE_CLEAR_SIGHAND are added.
	CloneFlags uint64
	CgroupFD   int // >= 0: born into that cgroup (CLONE_INTO_CGROUP)
	Setsid     bool
	Pdeathsig  syscall.Signal // sent when the thread that called Start exits: lock it
	// Ambient capabilities to raise across the execve (the child's uid is unmapped in its new
	// user namespace then, so no other capability survives it).
	Ambient []uintptr
	// IDs: the new user namespace's id maps, which Start writes (nil: the caller does,
	// WriteIDMaps), and the ids the child takes before its execve.
	IDs *IDs
}

// IDs are a new user namespace's maps and the ids its first process takes in it.
type IDs struct {
	Uids, Gids      []syscall.SysProcIDMap
	EnableSetgroups bool // setgroups is not denied in the namespace (WriteIDMaps)
	// Cred: taken by the child once the maps exist (setgroups unless denied and empty,
	// setgid, setuid); nil: the child execs at once and Start writes the maps afterwards.
	Cred *syscall.Credential
}

// Process is a started child.
type Process struct {
	Pid   int
	PidFD int // close-on-exec; the caller closes it
}

// op is one raw system call of the child; the layout is spawn_amd64.s's.
type op struct {
	nr     uintptr
	a      [6]uintptr
	ignore uintptr // 1: an error does not stop the child
}

// result is what a failed child leaves in the shared memory before it exits.
type result struct {
	errno uintptr
	left  uintptr // ops left, the failed one included
}

// cloneArgs is struct clone_args (linux/sched.h), up to cgroup.
type cloneArgs struct {
	flags, pidfd, childTID, parentTID, exitSignal, stack, stackSize, tls, setTID, setTIDSize, cgroup uint64
}

const clearSighand = 0x100000000 // CLONE_CLEAR_SIGHAND

// Start starts the child and returns once it has exec'd (or failed; then it is reaped). An
// error before the child existed (clone3 refused: EPERM for user namespaces, ENOSYS on an old
// kernel) is returned as the *os.SyscallError of clone3, so that the caller can fall back.
func Start(a *Attr) (*Process, error) {
	if !supported {
		return nil, fmt.Errorf("spawn with CLONE_VFORK on %s: %w", runtime.GOARCH, feature.ErrNotSupported)
	}
	if a.IDs != nil && a.IDs.Cred != nil {
		if a.IDs.Cred.NoSetGroups {
			return nil, fmt.Errorf("start %s: NoSetGroups: %w", a.Path, feature.ErrNotSupported)
		}
		return startWaiting(a)
	}
	p, err := plan(a, -1)
	if err != nil {
		return nil, err
	}
	proc, err := start(a, p)
	if err == nil && a.IDs != nil {
		if err = WriteIDMaps(proc.Pid, a.IDs.Uids, a.IDs.Gids, a.IDs.EnableSetgroups); err != nil {
			kill(proc)
			return nil, fmt.Errorf("start %s: %w", a.Path, err)
		}
	}
	return proc, err
}

// kill ends and reaps a started child.
func kill(p *Process) {
	unix.PidfdSendSignal(p.PidFD, unix.SIGKILL, nil, 0)
	reap(p.Pid)
	unix.Close(p.PidFD)
}

func reap(pid int) {
	var ws unix.WaitStatus
	for {
		if _, err := unix.Wait4(pid, &ws, 0, nil); err != unix.EINTR {
			return
		}
	}
}

// startWaiting starts a child that takes a.IDs.Cred before its execve. Without CLONE_VFORK
// (this thread writes the maps while the child waits), the child still shares this memory
// until its execve: Start returns once the exec pipe, close-on-exec in the child, reads EOF.
func startWaiting(a *Attr) (*Process, error) {
	// Both pipes above the fds the child's list places (a dup3 onto one would replace it).
	var release, exec [2]int
	pipe := func(p *[2]int) error {
		var q [2]int
		if err := unix.Pipe2(q[:], unix.O_CLOEXEC); err != nil {
			return err
		}
		var err error
		for i := range q {
			if err == nil {
				p[i], err = unix.FcntlInt(uintptr(q[i]), unix.F_DUPFD_CLOEXEC, len(a.Files))
				if err != nil && i == 1 {
					unix.Close(p[0])
				}
			}
			unix.Close(q[i])
		}
		return err
	}
	if err := pipe(&release); err != nil {
		return nil, fmt.Errorf("start %s: pipe: %w", a.Path, err)
	}
	if err := pipe(&exec); err != nil {
		unix.Close(release[0])
		unix.Close(release[1])
		return nil, fmt.Errorf("start %s: pipe: %w", a.Path, err)
	}
	closeAll := func(fds ...int) {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}
	p, err := plan(a, release[0])
	if err != nil {
		closeAll(release[0], release[1], exec[0], exec[1])
		return nil, err
	}
	// The kernel writes pidfd during the clone; the child writes p.res while this goroutine
	// runs on (its stack may move meanwhile: nothing the child touches is on it).
	pidfd, res := new(int32), &p.res
	*pidfd = -1
	ca := cloneArgsFor(a, pidfd)
	ca.flags &^= unix.CLONE_VFORK
	pid, errno := rawSpawn(ca, unsafe.Sizeof(*ca), &p.ops[0], uintptr(len(p.ops)), res)
	closeAll(release[0], exec[1])
	if errno != 0 {
		closeAll(release[1], exec[0])
		return nil, os.NewSyscallError("clone3", syscall.Errno(errno))
	}
	proc := &Process{Pid: int(pid), PidFD: int(*pidfd)}
	err = WriteIDMaps(proc.Pid, a.IDs.Uids, a.IDs.Gids, a.IDs.EnableSetgroups)
	if err == nil {
		// EPIPE: the child has already failed; its res says how.
		if _, err = unix.Write(release[1], []byte{1}); err == unix.EPIPE {
			err = nil
		}
	}
	if err != nil {
		// Killed while it waits (or wherever it is in its list: it shares this memory until it
		// is gone), before its release's EOF could let it go on with a map half written.
		kill(proc)
		closeAll(release[1], exec[0])
		runtime.KeepAlive(p)
		return nil, fmt.Errorf("start %s: %w", a.Path, err)
	}
	unix.Close(release[1])
	var b [1]byte
	for {
		if _, err := unix.Read(exec[0], b[:]); err != unix.EINTR {
			break
		}
	}
	unix.Close(exec[0])
	runtime.KeepAlive(p) // the child read the list until its execve or exit
	if res.errno != 0 {
		reap(proc.Pid)
		unix.Close(proc.PidFD)
		i := len(p.ops) - int(res.left)
		return nil, fmt.Errorf("start %s: %s: %w", a.Path, p.what[i], syscall.Errno(res.errno))
	}
	return proc, nil
}

func cloneArgsFor(a *Attr, pidfd *int32) *cloneArgs {
	ca := &cloneArgs{flags: a.CloneFlags | unix.CLONE_VM | unix.CLONE_VFORK | unix.CLONE_PIDFD | clearSighand,
		pidfd: uint64(uintptr(unsafe.Pointer(pidfd))), exitSignal: uint64(unix.SIGCHLD)}
	if a.CgroupFD >= 0 {
		ca.flags |= unix.CLONE_INTO_CGROUP
		ca.cgroup = uint64(a.CgroupFD)
	}
	return ca
}

// Release closes fd, leaving its last close to a child, so that a last close that waits is not
// this process's (a fanotify group's waits for an SRCU grace period: 0-22 ms measured at the
// end of an enforce run). The child shares this process's memory (CLONE_VM: no page tables
// copied, no program exec'd) but not its thread: it closes every fd of its copy of the table but
// fd and a pipe's read end, waits on that pipe until this process has closed its fd and the
// pipe, then exits, dropping fd's last reference. Like Start's child it uses registers only,
// runs no Go code and no handler (CLONE_CLEAR_SIGHAND). On an error fd is left open to the
// caller.
func Release(fd int) error {
	if !supported {
		return fmt.Errorf("spawn with CLONE_VM on %s: %w", runtime.GOARCH, feature.ErrNotSupported)
	}
	if fd < 0 {
		return unix.EBADF
	}
	var pw [2]int
	if err := unix.Pipe2(pw[:], unix.O_CLOEXEC); err != nil {
		return err
	}
	lo, hi := min(fd, pw[0]), max(fd, pw[0])
	p := &prepared{}
	gap := func(from, to int) {
		if from <= to {
			p.call("close fds", unix.SYS_CLOSE_RANGE, uintptr(from), uintptr(to), 0)
			p.ops[len(p.ops)-1].ignore = 1
		}
	}
	gap(0, lo-1)
	gap(lo+1, hi-1)
	p.call("close fds", unix.SYS_CLOSE_RANGE, uintptr(hi+1), ^uintptr(0), 0)
	p.ops[len(p.ops)-1].ignore = 1
	buf := new([8]byte)
	p.keep = append(p.keep, buf)
	p.call("wait for the caller's close", unix.SYS_READ, uintptr(pw[0]), uintptr(unsafe.Pointer(buf)), 1)
	p.ops[len(p.ops)-1].ignore = 1
	ca := &cloneArgs{flags: unix.CLONE_VM | clearSighand, exitSignal: uint64(unix.SIGCHLD)}
	pid, errno := rawSpawn(ca, unsafe.Sizeof(*ca), &p.ops[0], uintptr(len(p.ops)), &p.res)
	if errno != 0 {
		unix.Close(pw[0])
		unix.Close(pw[1])
		return os.NewSyscallError("clone3", syscall.Errno(errno))
	}
	unix.Close(fd)
	unix.Close(pw[1]) // the child's read returns: it exits
	unix.Close(pw[0])
	go func() {
		var ws unix.WaitStatus
		for {
			if _, err := unix.Wait4(int(pid), &ws, 0, nil); err != unix.EINTR {
				break
			}
		}
		// The child read these until it exited.
		runtime.KeepAlive(p)
	}()
	return nil
}

// start clones with the calls p lists for the child.
func start(a *Attr, p *prepared) (*Process, error) {
	// The kernel writes pidfd during the clone, the child p.res (in p, on the heap: nothing the
	// child touches may be on a goroutine stack, which moves).
	pidfd, res := new(int32), &p.res
	*pidfd = -1
	ca := cloneArgsFor(a, pidfd)
	pid, errno := rawSpawn(ca, unsafe.Sizeof(*ca), &p.ops[0], uintptr(len(p.ops)), res)
	runtime.KeepAlive(p)
	runtime.KeepAlive(pidfd)
	if errno != 0 {
		return nil, os.NewSyscallError("clone3", syscall.Errno(errno))
	}
	if res.errno != 0 {
		reap(int(pid))
		unix.Close(int(*pidfd))
		i := len(p.ops) - int(res.left)
		return nil, fmt.Errorf("start %s: %s: %w", a.Path, p.what[i], syscall.Errno(res.errno))
	}
	return &Process{Pid: int(pid), PidFD: int(*pidfd)}, nil
}

// prepared is the child's list of calls and what each is, for errors; it holds every buffer
// the calls point to, and the result the child leaves (rawSpawn's res): on the heap, since
// plan returns it, where the child's writes cannot miss (a goroutine stack moves).
type prepared struct {
	ops  []op
	what []string
	keep []any
	res  result
}

func (p *prepared) call(what string, nr uintptr, args ...uintptr) {
	o := op{nr: nr}
	copy(o.a[:], args)
	p.ops = append(p.ops, o)
	p.what = append(p.what, what)
}

func (p *prepared) cstr(s string) uintptr { return uintptr(unsafe.Pointer(p.bytes(s))) }

func (p *prepared) bytes(s string) *byte {
	b, err := unix.BytePtrFromString(s)
	if err != nil {
		panic(err) // plan checked for NULs
	}
	p.keep = append(p.keep, b)
	return b
}

func (p *prepared) cstrs(ss []string) uintptr {
	v := make([]*byte, len(ss)+1)
	for i, s := range ss {
		v[i] = p.bytes(s)
	}
	p.keep = append(p.keep, v)
	return uintptr(unsafe.Pointer(&v[0]))
}

// plan lists the child's calls: the fds into place (as Go's forkExec: those that a lower
// target would overwrite moved above every open fd first), the session, the parent-death
// signal, with a.IDs.Cred a wait for release (a byte, once the maps exist) and the ids, the
// ambient capabilities, the directory, execve.
func plan(a *Attr, release int) (*prepared, error) {
	for _, s := range append(append([]string{a.Path, a.Dir}, a.Argv...), a.Env...) {
		for i := 0; i < len(s); i++ {
			if s[i] == 0 {
				return nil, fmt.Errorf("start %s: %w", a.Path, unix.EINVAL)
			}
		}
	}
	if len(a.Argv) == 0 {
		return nil, errors.New("spawn: no argv")
	}
	p := &prepared{}
	fds := append([]int(nil), a.Files...)
	next := len(fds)
	for _, fd := range fds {
		next = max(next, fd+1)
	}
	for i, fd := range fds {
		if fd >= 0 && fd < i {
			for isOpen(next) { // the child's table is a copy of this one: the exec'd file may be one
				next++
			}
			p.call("move fd "+strconv.Itoa(fd), unix.SYS_DUP3, uintptr(fd), uintptr(next), unix.O_CLOEXEC)
			fds[i] = next
			next++
		}
	}
	for i, fd := range fds {
		switch {
		case fd < 0:
			p.call("close fd "+strconv.Itoa(i), unix.SYS_CLOSE, uintptr(i))
			p.ops[len(p.ops)-1].ignore = 1
		case fd == i:
			p.call("keep fd "+strconv.Itoa(i), unix.SYS_FCNTL, uintptr(i), unix.F_SETFD, 0)
		default:
			p.call("fd "+strconv.Itoa(i), unix.SYS_DUP3, uintptr(fd), uintptr(i), 0)
		}
	}
	if a.Setsid {
		p.call("setsid", unix.SYS_SETSID)
	}
	if a.Pdeathsig != 0 {
		p.call("parent-death signal", unix.SYS_PRCTL, unix.PR_SET_PDEATHSIG, uintptr(a.Pdeathsig))
	}
	if release >= 0 {
		// EOF (Start failed before the byte) leaves the maps unwritten: the ids below fail.
		buf := new([8]byte)
		p.keep = append(p.keep, buf)
		p.call("wait for the id maps", unix.SYS_READ, uintptr(release), uintptr(unsafe.Pointer(buf)), 1)
		c := a.IDs.Cred
		// As Go's forkExec: no setgroups where it is denied and there are none to set.
		if !(a.IDs.Gids != nil && !a.IDs.EnableSetgroups && len(c.Groups) == 0) {
			var groups uintptr
			if len(c.Groups) > 0 {
				g := slices.Clone(c.Groups)
				p.keep = append(p.keep, g)
				groups = uintptr(unsafe.Pointer(&g[0]))
			}
			p.call("setgroups", unix.SYS_SETGROUPS, uintptr(len(c.Groups)), groups)
		}
		p.call("setgid "+strconv.Itoa(int(c.Gid)), unix.SYS_SETGID, uintptr(c.Gid))
		p.call("setuid "+strconv.Itoa(int(c.Uid)), unix.SYS_SETUID, uintptr(c.Uid))
	}
	if len(a.Ambient) > 0 {
		// In its new user namespace the child has every capability, none inheritable: make the
		// ambient ones inheritable, then raise them.
		hdr := &unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		data := &[2]unix.CapUserData{}
		last := capLast()
		for c := 0; c <= last; c++ {
			data[c/32].Permitted |= 1 << (c % 32)
			data[c/32].Effective |= 1 << (c % 32)
		}
		for _, c := range a.Ambient {
			if int(c) > last {
				return nil, fmt.Errorf("start %s: capability %d: this kernel's last is %d", a.Path, c, last)
			}
			data[c/32].Inheritable |= 1 << (c % 32)
		}
		p.keep = append(p.keep, hdr, data)
		p.call("capset", unix.SYS_CAPSET, uintptr(unsafe.Pointer(hdr)), uintptr(unsafe.Pointer(&data[0])))
		for _, c := range a.Ambient {
			p.call("raise ambient capability "+strconv.Itoa(int(c)), unix.SYS_PRCTL, unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_RAISE, c)
		}
	}
	if a.Dir != "" {
		p.call("chdir "+a.Dir, unix.SYS_CHDIR, p.cstr(a.Dir))
	}
	p.call("execve", unix.SYS_EXECVE, p.cstr(a.Path), p.cstrs(a.Argv), p.cstrs(a.Env))
	return p, nil
}

func isOpen(fd int) bool {
	_, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
	return err == nil
}

// capLast is the kernel's highest capability number.
var capLast = sync.OnceValue(func() int {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err == nil {
		if n, err := strconv.Atoi(string(b[:len(b)-1])); err == nil && n > 0 {
			return n
		}
	}
	return unix.CAP_LAST_CAP
})

// AllCaps are every capability this kernel has: what a program that runs as root in its user
// namespace needs raised ambient when it is started by Start (its uid is not mapped to 0 yet).
func AllCaps() []uintptr {
	var cs []uintptr
	for c := 0; c <= capLast(); c++ {
		cs = append(cs, uintptr(c))
	}
	return cs
}

// WriteIDMaps writes the user namespace maps of pid as Go's forkExec does from its parent:
// setgroups "deny" unless enableSetgroups (an unprivileged writer must deny it before a gid
// map), then gid_map, uid_map.
func WriteIDMaps(pid int, uids, gids []syscall.SysProcIDMap, enableSetgroups bool) error {
	dir := "/proc/" + strconv.Itoa(pid) + "/"
	write := func(name, s string) error {
		if err := os.WriteFile(dir+name, []byte(s), 0); err != nil {
			return fmt.Errorf("write %s of the new user namespace: %w", name, err)
		}
		return nil
	}
	if gids != nil {
		if !enableSetgroups {
			if err := write("setgroups", "deny"); err != nil {
				return err
			}
		}
		if err := write("gid_map", format(gids)); err != nil {
			return err
		}
	}
	if uids != nil {
		return write("uid_map", format(uids))
	}
	return nil
}

func format(m []syscall.SysProcIDMap) string {
	var b []byte
	for _, e := range m {
		b = strconv.AppendInt(b, int64(e.ContainerID), 10)
		b = append(b, ' ')
		b = strconv.AppendInt(b, int64(e.HostID), 10)
		b = append(b, ' ')
		b = strconv.AppendInt(b, int64(e.Size), 10)
		b = append(b, '\n')
	}
	return string(b)
}
