package spawn

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/internal/feature"
	"github.com/sysprof/sysprof/internal/testutil"
)

// startSh runs sh -c script with Start in new user, PID and mount namespaces (as root: uid 0 of
// the namespace is 65534 on the host) and returns what it printed and its exit status.
func startSh(t *testing.T, a Attr, script string) (string, int, error) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	a.Path, a.Argv, a.Env = "/bin/sh", []string{"sh", "-c", script}, []string{"PATH=/usr/bin:/bin"}
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	a.Files = []int{int(null.Fd()), int(w.Fd()), int(w.Fd()), int(w.Fd())}
	a.CloneFlags = unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNS
	if a.CgroupFD == 0 {
		a.CgroupFD = -1
	}
	p, err := Start(&a)
	w.Close()
	if err != nil {
		return "", -1, err
	}
	defer unix.Close(p.PidFD)
	id := syscall.SysProcIDMap{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}
	if os.Getuid() == 0 {
		id = syscall.SysProcIDMap{ContainerID: 0, HostID: 65534, Size: 1}
	}
	gid := id
	if os.Getuid() != 0 {
		gid = syscall.SysProcIDMap{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}
	}
	if err := WriteIDMaps(p.Pid, []syscall.SysProcIDMap{id}, []syscall.SysProcIDMap{gid}, false); err != nil {
		t.Fatal(err)
	}
	out, _ := readAll(r)
	var ws unix.WaitStatus
	if _, err := unix.Wait4(p.Pid, &ws, 0, nil); err != nil {
		t.Fatal(err)
	}
	return out, ws.ExitStatus(), nil
}

func readAll(f *os.File) (string, error) {
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := f.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			return b.String(), err
		}
	}
}

func requireSpawn(t *testing.T, err error) {
	t.Helper()
	if errors.Is(err, feature.ErrNotSupported) {
		testutil.RequireNoErr(t, "spawn on this architecture", err)
	}
	var se *os.SyscallError
	if errors.As(err, &se) {
		testutil.RequireNoErr(t, "clone3 of a user namespace", err)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// The child runs in its namespaces as PID 1, with exactly the fds and the ambient capabilities
// asked for, its ids mapped once the parent wrote them, and in its directory.
func TestStartInNamespaces(t *testing.T) {
	// The child waits for the maps (a read of fd 3 would race them: poll uid_map instead).
	script := `while [ -z "$(cat /proc/self/uid_map)" ]; do :; done
echo pid=$$ dir=$(pwd)
grep -E '^(CapAmb|CapEff|Uid)' /proc/self/status
ls /proc/self/fd | tr '\n' ' '`
	out, code, err := startSh(t, Attr{Dir: "/usr", Setsid: true, Ambient: []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN}}, script)
	requireSpawn(t, err)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	want := []string{"pid=1 dir=/usr", "CapAmb:\t0000000000201000", "CapEff:\t0000000000201000"}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("no %q in:\n%s", w, out)
		}
	}
	// 0-3 as given, 4 ls's own directory; any other only one this process holds without
	// close-on-exec (inherited from whatever started the test).
	for _, f := range strings.Fields(out[strings.LastIndex(out, "\n")+1:]) {
		fd, _ := strconv.Atoi(f)
		if fd <= 4 {
			continue
		}
		if flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil || flags&unix.FD_CLOEXEC != 0 {
			t.Errorf("the child has fd %d, not given (flags %d, %v)", fd, flags, err)
		}
	}
}

// A call of the child that fails is an error naming it, and the child is reaped.
func TestStartNamesWhatFailed(t *testing.T) {
	before := ownChildren(t)
	_, _, err := startSh(t, Attr{Dir: "/no/such/dir"}, "true")
	if errors.Is(err, feature.ErrNotSupported) {
		requireSpawn(t, err)
	}
	var se *os.SyscallError
	if errors.As(err, &se) {
		requireSpawn(t, err)
	}
	if err == nil || !strings.Contains(err.Error(), "chdir /no/such/dir") || !errors.Is(err, unix.ENOENT) {
		t.Fatalf("err %v, want chdir /no/such/dir: ENOENT", err)
	}
	noChildLeft(t, before)
}

// No handler of this process runs in the child, which shares its memory: the child sees
// SIGURG (the Go runtime's preemption signal, handled here) at its default action.
func TestChildHasNoHandlers(t *testing.T) {
	var here [4]uint64 // struct sigaction as the kernel has it: handler, flags, restorer, mask
	if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(unix.SIGURG), 0, uintptr(unsafe.Pointer(&here[0])), 8, 0, 0); e != 0 || here[0] == 0 {
		t.Fatalf("SIGURG is not handled here (%v): nothing to check", e)
	}
	seen := new([4]uint64)
	seen[0] = 12345
	// Kept like every buffer the list names (prepared.keep): on the heap, where it does not
	// move; a stack copy moved by growth left the child writing to the old place (a flake).
	p := &prepared{keep: []any{seen}}
	p.call("rt_sigaction", unix.SYS_RT_SIGACTION, uintptr(unix.SIGURG), 0, uintptr(unsafe.Pointer(seen)), 8)
	proc, err := start(&Attr{Path: "/bin/true", CgroupFD: -1}, p) // no execve: exits 127 after the list
	requireSpawn(t, err)
	defer unix.Close(proc.PidFD)
	var ws unix.WaitStatus
	if _, err := unix.Wait4(proc.Pid, &ws, 0, nil); err != nil {
		t.Fatal(err)
	}
	if seen[0] != 0 { // SIG_DFL
		t.Errorf("the child's SIGURG handler is %#x, want SIG_DFL (this process's is %#x)", seen[0], here[0])
	}
}

// Release closes an fd and leaves its last reference to a child that drops it at once: the
// pipe's reader sees EOF (nobody else holds the write end), and the fd is closed here.
func TestReleaseDropsTheLastReference(t *testing.T) {
	if !supported {
		if err := Release(0); !errors.Is(err, feature.ErrNotSupported) {
			t.Fatalf("Release without an implementation: %v, want ErrNotSupported", err)
		}
		return
	}
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	if err := Release(p[1]); err != nil {
		unix.Close(p[1])
		t.Fatal(err)
	}
	eof := make(chan error, 1)
	go func() {
		var b [1]byte
		n, err := unix.Read(p[0], b[:])
		if err == nil && n != 0 {
			err = fmt.Errorf("read %d bytes", n)
		}
		eof <- err
	}()
	select {
	case err := <-eof:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the write end is still open somewhere: the child kept it")
	}
	if _, err := unix.FcntlInt(uintptr(p[1]), unix.F_GETFD, 0); err != unix.EBADF {
		t.Errorf("fd %d still open here after Release: %v", p[1], err)
	}
}

// With IDs.Cred the child takes the ids before its execve, once Start has written the maps:
// the program starts with them (nothing here waits for the maps), and with the groups asked
// for where setgroups is allowed.
func TestStartTakesIDsBeforeExec(t *testing.T) {
	uid, gid := os.Getuid(), os.Getgid()
	ids := &IDs{Uids: []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
		Gids: []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
		Cred: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}}
	want := []string{fmt.Sprintf("Uid: %d %d %d %d", uid, uid, uid, uid), fmt.Sprintf("Gid: %d %d %d %d", gid, gid, gid, gid)}
	if uid == 0 {
		// Root: uid and gid 0 of the namespace are 65534 on the host, the child's host ids are
		// 0 (unmapped: the overflow id) until it takes them; its groups are the ones asked for.
		host := []syscall.SysProcIDMap{{ContainerID: 0, HostID: 65534, Size: 1}}
		ids = &IDs{Uids: host, Gids: host, EnableSetgroups: true, Cred: &syscall.Credential{Uid: 0, Gid: 0, Groups: []uint32{0}}}
		want = []string{"Uid: 0 0 0 0", "Gid: 0 0 0 0", "Groups: 0\n"}
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	script := `while read -r k v; do case $k in Uid:|Gid:|Groups:) echo $k $v;; esac; done </proc/self/status`
	p, err := Start(&Attr{Path: "/bin/sh", Argv: []string{"sh", "-c", script}, Env: []string{"PATH=/usr/bin:/bin"},
		Files: []int{int(null.Fd()), int(w.Fd()), int(w.Fd())}, CgroupFD: -1,
		CloneFlags: unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNS, IDs: ids})
	w.Close()
	requireSpawn(t, err)
	defer unix.Close(p.PidFD)
	out, _ := readAll(r)
	var ws unix.WaitStatus
	if _, err := unix.Wait4(p.Pid, &ws, 0, nil); err != nil {
		t.Fatal(err)
	}
	if ws.ExitStatus() != 0 {
		t.Fatalf("exit %d: %s", ws.ExitStatus(), out)
	}
	for _, s := range want {
		if !strings.Contains(out, s) {
			t.Errorf("no %q in:\n%s", s, out)
		}
	}
}

// Maps that cannot be written fail Start with what failed, and the waiting child is gone.
func TestStartIDsMapsRefused(t *testing.T) {
	bad := []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}, {ContainerID: 0, HostID: os.Getuid(), Size: 1}}
	before := ownChildren(t)
	_, err := Start(&Attr{Path: "/bin/true", Argv: []string{"true"}, CgroupFD: -1, CloneFlags: unix.CLONE_NEWUSER,
		IDs: &IDs{Uids: bad, Cred: &syscall.Credential{}}})
	if errors.Is(err, feature.ErrNotSupported) {
		requireSpawn(t, err)
	}
	var se *os.SyscallError
	if errors.As(err, &se) {
		requireSpawn(t, err)
	}
	if err == nil || !strings.Contains(err.Error(), "uid_map") {
		t.Fatalf("err %v, want the uid_map write's", err)
	}
	noChildLeft(t, before)
}

// A child with ids to take that fails after the parent's thread went on (a chdir refused once
// the maps exist) fails Start with that call: the child writes its result into memory it
// shares with a parent that runs on meanwhile, which must not be a goroutine stack (the
// runtime moves one that grows or, here, that a collection shrinks).
func TestStartIDsChildFailsLate(t *testing.T) {
	uid, gid := os.Getuid(), os.Getgid()
	ids := &IDs{Uids: []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
		Gids: []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
		Cred: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}}
	if uid == 0 {
		host := []syscall.SysProcIDMap{{ContainerID: 0, HostID: 65534, Size: 1}}
		ids = &IDs{Uids: host, Gids: host, EnableSetgroups: true, Cred: &syscall.Credential{Groups: []uint32{0}}}
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() { // collections shrink the starting goroutine's mostly unused stack (moving it)
		for {
			select {
			case <-stop:
				return
			default:
				runtime.GC()
			}
		}
	}()
	for range 100 {
		errc := make(chan error)
		go func() {
			grow(1 << 12) // a large stack, mostly unused while Start runs
			p, err := Start(&Attr{Path: "/bin/true", Argv: []string{"true"}, Dir: "/nonexistent-sysprof-spawn",
				CgroupFD: -1, CloneFlags: unix.CLONE_NEWUSER, IDs: ids})
			if err == nil {
				reap(p.Pid)
				unix.Close(p.PidFD)
			}
			errc <- err
		}()
		err := <-errc
		if err != nil && !strings.Contains(err.Error(), "chdir") {
			requireSpawn(t, err)
		}
		if err == nil || !errors.Is(err, unix.ENOENT) {
			t.Fatalf("err %v, want the chdir's ENOENT", err)
		}
	}
}

//go:noinline
func grow(n int) byte {
	var b [256]byte
	if n > 0 {
		b[n%256] = grow(n - 1)
	}
	return b[n%7]
}

// ownChildren is this process's children, running or not reaped (every thread's:
// /proc/self/task/*/children).
func ownChildren(t *testing.T) map[int]bool {
	t.Helper()
	files, err := filepath.Glob("/proc/self/task/*/children")
	if err != nil || len(files) == 0 {
		t.Fatalf("no /proc/self/task/*/children (%v)", err)
	}
	kids := map[int]bool{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue // the thread is gone (its children went to another)
		}
		for _, w := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(w); err == nil {
				kids[pid] = true
			}
		}
	}
	return kids
}

// noChildLeft fails t when this process has a child that before did not list: never wait4(-1),
// which would reap another test's child (Release's goroutine waits for its own) or call one
// still running a leak.
func noChildLeft(t *testing.T, before map[int]bool) {
	t.Helper()
	for pid := range ownChildren(t) {
		if !before[pid] {
			t.Errorf("a child is left: pid %d", pid)
		}
	}
}
