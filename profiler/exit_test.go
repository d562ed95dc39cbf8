package profiler_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/profiler"
)

func TestExitStatus(t *testing.T) {
	testutil.RequireRoot(t)
	victim := realPath(t, testutil.BuildC(t, "victim/victim.c"))
	for _, tc := range []struct {
		args []string
		want int
		sig  int
	}{
		{[]string{"exit", "0"}, 0, 0},
		{[]string{"exit", "7"}, 7, 0},
		{[]string{"kill-self", "9"}, 137, 9},
		{[]string{"kill-self", "15"}, 143, 15},
	} {
		t.Run(strings.Join(tc.args, "-"), func(t *testing.T) {
			tr := learn(t, withTimeout(t, time.Minute), profiler.Options{Command: append([]string{victim}, tc.args...)})
			if tr.ExitCode != tc.want {
				t.Errorf("ExitCode = %d, want %d", tr.ExitCode, tc.want)
			}
			if tr.Incomplete {
				t.Errorf("incomplete: %q", tr.Reasons)
			}
			if n := syscallCount(tr, victim, "x86_64", "execve"); n != 1 {
				t.Errorf("execve count %d, want 1: the command's own execve, added by user space (it precedes the gate)", n)
			}
			p := tr.Processes[0]
			if p.ExitCode == nil || *p.ExitCode != tc.want || p.Signal != tc.sig {
				t.Errorf("root process exit %v signal %d, want %d / %d", p.ExitCode, p.Signal, tc.want, tc.sig)
			}
		})
	}
}

func TestCommandErrors(t *testing.T) {
	testutil.RequireRoot(t)
	dir := t.TempDir()
	noexec := filepath.Join(dir, "noexec")
	writeFile(t, noexec, "#!/bin/sh\n")
	for _, tc := range []struct {
		cmd  string
		code int
	}{
		{"sysprof-no-such-command", 127},
		{filepath.Join(dir, "missing"), 127},
		{noexec, 126},
		{dir, 126},
	} {
		_, err := profiler.Run(context.Background(), profiler.Options{Command: []string{tc.cmd}})
		var ce *profiler.CommandError
		if !errors.As(err, &ce) || ce.Code != tc.code {
			t.Errorf("Run(%s) = %v, want a CommandError with code %d", tc.cmd, err, tc.code)
		}
	}
	if _, err := profiler.Run(context.Background(), profiler.Options{}); err == nil {
		t.Errorf("Run without a command succeeded")
	}
}

func TestInterruptContext(t *testing.T) {
	testutil.RequireRoot(t)
	victim := realPath(t, testutil.BuildC(t, "victim/victim.c"))
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(500*time.Millisecond, cancel)
	start := time.Now()
	tr := learn(t, ctx, profiler.Options{Command: []string{victim, "storm", "10", "sleep", "60"}})
	if time.Since(start) > 30*time.Second {
		t.Errorf("the run was not interrupted")
	}
	if !tr.Incomplete || len(tr.Reasons) == 0 || !strings.Contains(tr.Reasons[0], "interrupted") {
		t.Errorf("incomplete %v reasons %q, want interrupted", tr.Incomplete, tr.Reasons)
	}
	if tr.ExitCode != 128+int(syscall.SIGTERM) {
		t.Errorf("ExitCode = %d, want %d (SIGTERM)", tr.ExitCode, 128+int(syscall.SIGTERM))
	}
	if syscallCount(tr, victim, "x86_64", "getppid") < 10 {
		t.Errorf("what the command did before the interruption is lost: %+v", tr.Syscalls)
	}
}

// Ctrl-C is how a dev server's learn ends: SIGINT is forwarded, and a command that exits by it
// ended normally (the trace is complete). SIGTERM is an interruption.
func TestInterruptSignal(t *testing.T) {
	testutil.RequireRoot(t)
	victim := realPath(t, testutil.BuildC(t, "victim/victim.c"))
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		time.AfterFunc(500*time.Millisecond, func() { syscall.Kill(os.Getpid(), sig) })
		tr := learn(t, withTimeout(t, time.Minute), profiler.Options{Command: []string{victim, "sleep", "60"}})
		if sig == syscall.SIGINT && (tr.Incomplete || len(tr.Reasons) > 0) {
			t.Errorf("SIGINT: incomplete %v reasons %q, want complete (Ctrl-C is a server's normal end)", tr.Incomplete, tr.Reasons)
		}
		if sig == syscall.SIGTERM && (!tr.Incomplete || len(tr.Reasons) == 0 || tr.Reasons[0] != "interrupted by SIGTERM") {
			t.Errorf("SIGTERM: incomplete %v reasons %q, want interrupted by SIGTERM", tr.Incomplete, tr.Reasons)
		}
		if tr.ExitCode != 128+int(sig) {
			t.Errorf("ExitCode = %d, want %d: %v is forwarded to the command", tr.ExitCode, 128+int(sig), sig)
		}
	}
}

// A server whose worker outlives it by a moment on Ctrl-C (next dev: the main process exits
// on SIGINT while the server it started is still writing its cache) ended normally: the learn
// waits for the worker as it would for the command, and the trace is complete.
func TestInterruptWorkerEndsAfter(t *testing.T) {
	testutil.RequireRoot(t)
	script := `sh -c 'trap "sleep 1; exit 0" TERM; while :; do sleep 0.1; done' & c=$!
trap 'kill -TERM $c; exit 0' INT
wait`
	time.AfterFunc(time.Second, func() { syscall.Kill(os.Getpid(), syscall.SIGINT) })
	tr := learn(t, withTimeout(t, time.Minute), profiler.Options{Command: []string{"/bin/sh", "-c", script}})
	if tr.Incomplete || len(tr.Reasons) > 0 {
		t.Errorf("incomplete %v reasons %q, want complete (the worker ended by itself after the Ctrl-C)", tr.Incomplete, tr.Reasons)
	}
}

// TestDaemon: a double-forked, setsid'd grandchild outlives the command; it is killed, the run
// says so, and the cgroup is gone.
func TestDaemon(t *testing.T) {
	testutil.RequireRoot(t)
	victim := realPath(t, testutil.BuildC(t, "victim/victim.c"))
	tr := learn(t, withTimeout(t, time.Minute), profiler.Options{Command: []string{victim, "daemon", "exit", "0"}})
	if tr.ExitCode != 0 {
		t.Errorf("ExitCode = %d", tr.ExitCode)
	}
	if !tr.Incomplete || len(tr.Reasons) != 1 || !strings.Contains(tr.Reasons[0], "1 process(es) still running") {
		t.Errorf("incomplete %v reasons %q, want one leftover process killed", tr.Incomplete, tr.Reasons)
	}
	if n := syscallCount(tr, victim, "x86_64", "setsid"); n != 1 {
		t.Errorf("setsid count %d, want 1 (from the forked child)", n)
	}
	mnt, err := profiler.Cgroup2Mount()
	if err != nil {
		t.Fatal(err)
	}
	left, _ := filepath.Glob(filepath.Join(mnt, "sysprof", "run-"+itoa(os.Getpid())+"-*"))
	if len(left) != 0 {
		t.Errorf("run cgroups left behind: %q", left)
	}
}
