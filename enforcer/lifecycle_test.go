package enforcer

import (
	"bufio"
	"context"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/policy"
)

func TestDenialInChildNamesParent(t *testing.T) {
	testutil.RequireRoot(t)
	p := victimProfile()
	p.Syscalls.Allow = append(p.Syscalls.Allow, victimForkSyscalls()...)
	o := runVictim(t, p, false, "fork", "sysinfo", "fork", "sysinfo", "ok")
	if o.err != nil || o.code != 0 {
		t.Fatalf("run: %s", o)
	}
	d := o.denial("sysinfo")
	if d == nil {
		t.Fatalf("no denial:\n%s", o)
	}
	if d.Count != 2 {
		t.Errorf("count %d, want 2 (two children, same call, aggregated)", d.Count)
	}
	if len(d.Parents) != 1 || !strings.HasSuffix(d.Parents[0], "/escape") {
		t.Errorf("parents %v, want the victim that forked", d.Parents)
	}
}

func TestLingeringChildDoesNotHangRun(t *testing.T) {
	testutil.RequireRoot(t)
	p := victimProfile()
	p.Syscalls.Allow = append(p.Syscalls.Allow, victimForkSyscalls()...)
	done := make(chan runOut, 1)
	go func() { done <- runVictim(t, p, false, "linger", "ok") }()
	select {
	case o := <-done:
		if o.err != nil || o.code != 0 {
			t.Fatalf("run: %s", o)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after the command exited while its child lingered")
	}
}

func TestSignalsAreForwarded(t *testing.T) {
	testutil.RequireRoot(t)
	victim := testutil.BuildC(t, "escape/escape.c")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	type result struct {
		code int
		err  error
	}
	done := make(chan result, 1)
	go func() {
		_, code, err := Run(context.Background(), Options{Profile: victimProfile(), Command: []string{victim, "pause"}, Stdout: w, Stderr: w})
		w.Close()
		done <- result{code, err}
	}()
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil || line != "paused\n" {
		t.Fatalf("victim did not start: %q %v", line, err)
	}
	// Run has installed its forwarding before releasing the command, so this reaches the command.
	// The test's own subscription keeps the test binary alive should Run's be gone already.
	guard := make(chan os.Signal, 1)
	signal.Notify(guard, syscall.SIGTERM)
	defer signal.Stop(guard)
	syscall.Kill(os.Getpid(), syscall.SIGTERM)
	select {
	case res := <-done:
		if res.err != nil || res.code != 128+int(syscall.SIGTERM) {
			t.Errorf("exit %d err %v, want %d (killed by the forwarded SIGTERM)", res.code, res.err, 128+int(syscall.SIGTERM))
		}
	case <-time.After(30 * time.Second):
		t.Fatal("SIGTERM was not forwarded")
	}
}

// victimForkSyscalls are what fork() and waiting need in glibc.
func victimForkSyscalls() []policy.Syscall {
	var out []policy.Syscall
	for _, n := range []string{"clone", "wait4", "exit", "set_robust_list", "getpid", "pause"} {
		out = append(out, policy.Syscall{Name: n})
	}
	return out
}

// A profile that allows almost nothing: the init stage's own calls between installing the
// filter and exec (the ready message, the wait for the go-ahead) all go to the supervisor, which
// must let them through without reporting them and without deadlocking.
func TestMinimalProfileDoesNotDeadlock(t *testing.T) {
	testutil.RequireRoot(t)
	p := &policy.Profile{}
	p.Syscalls.Allow = []policy.Syscall{{Name: "execve"}}
	done := make(chan runOut, 1)
	go func() { done <- runVictim(t, p, false, "ok") }()
	select {
	case o := <-done:
		if o.err != nil {
			t.Fatalf("run: %s", o)
		}
		if o.denial("brk") == nil && o.denial("mmap") == nil {
			t.Errorf("the command's first calls were not reported:\n%s", o)
		}
		for _, d := range o.rep.Denials {
			if !strings.HasSuffix(d.Exe, "/escape") {
				t.Errorf("a call of the init stage was reported: %+v", d)
			}
		}
	case <-time.After(30 * time.Second):
		t.Fatal("deadlock: Run did not return")
	}
}
