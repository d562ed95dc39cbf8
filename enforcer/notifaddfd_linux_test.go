package enforcer

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/internal/testutil"
)

// addfdChildEnv makes the test binary addfdChild: it sends its memfd_create calls to a listener
// the test takes and counts the answers that are not the test's file.
const addfdChildEnv = "SYSPROF_TEST_ADDFD_CHILD"

// TestNotifAnswerFDUnderSignals: an fd answer reaches the caller as its call's result while the
// answering thread is showered with signals. With SECCOMP_ADDFD_FLAG_SEND a signal during the
// ioctl withdrew the fd but kept the answer: memfd_create returned 0 (the e2e memfd flake).
func TestNotifAnswerFDUnderSignals(t *testing.T) {
	const calls = 3000
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), addfdChildEnv+"="+strconv.Itoa(calls))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := bufio.NewScanner(out)
	if !lines.Scan() {
		t.Fatalf("the child said nothing: %v", cmd.Wait())
	}
	num, err := strconv.Atoi(lines.Text())
	if err != nil {
		t.Fatalf("the child's listener: %q", lines.Text())
	}
	pidfd, err := unix.PidfdOpen(cmd.Process.Pid, 0)
	testutil.RequireNoErr(t, "pidfd_open", err)
	defer unix.Close(pidfd)
	listener, err := unix.PidfdGetfd(pidfd, num, 0)
	testutil.RequireNoErr(t, "take the child's listener (pidfd_getfd)", err)
	defer unix.Close(listener)
	answer, err := unix.MemfdCreate("answer", unix.MFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(answer)

	tids := make(chan int)
	served := make(chan int)
	go func() {
		runtime.LockOSThread() // the thread the signals aim at; it ends with the goroutine
		tids <- unix.Gettid()
		n := 0
		defer func() { served <- n }()
		for {
			fds := []unix.PollFd{{Fd: int32(listener), Events: unix.POLLIN}}
			if _, err := unix.Poll(fds, 10000); err == unix.EINTR {
				continue
			} else if err != nil || fds[0].Revents&unix.POLLIN == 0 {
				return // POLLHUP: the child is done; or no call for 10 s
			}
			var notif seccompNotif
			if err := notifRecv(listener, &notif); err == unix.EINTR || err == unix.ENOENT {
				continue
			} else if err != nil {
				return
			}
			// ENOENT: the child's call was interrupted before the answer (it comes again).
			if errno := notifAnswerFD(listener, notif.ID, answer, false); errno != 0 && errno != unix.ENOENT {
				t.Errorf("answer %d: %v", n, errno)
			}
			n++
		}
	}()
	tid := <-tids
	var stop atomic.Bool
	signaled := make(chan struct{})
	go func() {
		defer close(signaled)
		for !stop.Load() {
			_ = unix.Tgkill(os.Getpid(), tid, unix.SIGURG) // Go's preemption signal: no harm
			runtime.Gosched()
		}
	}()
	var last string
	for lines.Scan() {
		last = lines.Text()
	}
	werr := cmd.Wait()
	n := <-served
	stop.Store(true)
	<-signaled
	if werr != nil || last != "bad 0" || n < calls { // more: a call interrupted in the child is sent again
		t.Fatalf("the child's memfd_create got %q of %d answers (%d served), exit %v", last, calls, n, werr)
	}
}

// addfdChild installs a filter sending memfd_create to a listener on its own thread, says the
// listener's number, then calls memfd_create n times and says how many answers were not the
// test's file ("bad N").
func addfdChild(arg string) int {
	n, _ := strconv.Atoi(arg)
	runtime.LockOSThread() // the filter is this thread's alone
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		fmt.Fprintln(os.Stderr, "no_new_privs:", err)
		return 1
	}
	prog := []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 0}, // nr
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 0, Jf: 1, K: unix.SYS_MEMFD_CREATE},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_USER_NOTIF},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW},
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	listener, _, errno := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER, uintptr(unsafe.Pointer(&fprog)))
	if errno != 0 {
		fmt.Fprintln(os.Stderr, "seccomp:", errno)
		return 1
	}
	fmt.Println(listener)
	name := []byte("x\x00")
	bad := 0
	for range n {
		fd, _, errno := unix.Syscall(unix.SYS_MEMFD_CREATE, uintptr(unsafe.Pointer(&name[0])), 0, 0)
		if errno != 0 {
			fmt.Fprintln(os.Stderr, "memfd_create:", errno)
			return 1
		}
		link, _ := os.Readlink("/proc/thread-self/fd/" + strconv.Itoa(int(fd)))
		if !strings.HasPrefix(link, "/memfd:answer") {
			bad++
			continue // fd 0 stays: the next answer is not the lowest free fd by chance
		}
		unix.Close(int(fd))
	}
	fmt.Printf("bad %d\n", bad)
	return 0
}
