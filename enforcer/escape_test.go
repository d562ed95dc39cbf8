package enforcer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/report"
)

// victimSyscalls is what testdata/escape/escape.c's benign actions need (from strace of a
// dynamically linked build, plus what the harmless actions use). Nothing an escape needs.
var victimSyscalls = []string{
	"access", "arch_prctl", "brk", "close", "execve", "exit_group", "fstat", "newfstatat", "getdents64",
	"getrandom", "getsid", "getpid", "ioctl", "mmap", "mprotect", "munmap", "openat", "pread64",
	"prlimit64", "read", "rseq", "set_robust_list", "set_tid_address", "write", "lseek", "fcntl",
	"futex", "rt_sigaction", "rt_sigprocmask", "kill", "tgkill", "pause", "wait4", "clone", "socket",
	"connect", "symlink", "link", "unlink", "dup", "dup2", "exit", "readlink",
}

func victimProfile() *policy.Profile {
	p := &policy.Profile{APIVersion: policy.APIVersion, Kind: policy.Kind}
	p.Metadata.Name = "escape"
	p.Syscalls.Architectures = []string{"x86_64"}
	for _, s := range victimSyscalls {
		p.Syscalls.Allow = append(p.Syscalls.Allow, policy.Syscall{Name: s})
	}
	return p
}

type runOut struct {
	rep    *report.Report
	code   int
	err    error
	stdout string
	stderr string
}

func runVictim(t *testing.T, p *policy.Profile, audit bool, args ...string) runOut {
	t.Helper()
	victim := testutil.BuildC(t, "escape/escape.c")
	var stdout, stderr bytes.Buffer
	var degrade Degrade
	if !sandboxAvailable { // until the sandbox layers are in this build
		degrade = DegradeAll
	}
	rep, code, err := Run(context.Background(), Options{
		Profile: p, Command: append([]string{victim}, args...), Audit: audit,
		Degrade: degrade, Stdout: &stdout, Stderr: &stderr, Dir: t.TempDir(),
	})
	return runOut{rep, code, err, stdout.String(), stderr.String()}
}

func (o runOut) denial(syscall string) *report.Denial {
	if o.rep == nil {
		return nil
	}
	for i := range o.rep.Denials {
		if o.rep.Denials[i].Syscall == syscall {
			return &o.rep.Denials[i]
		}
	}
	return nil
}

func (o runOut) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "exit %d err %v\nstdout:\n%s\nstderr:\n%s\n", o.code, o.err, o.stdout, o.stderr)
	if o.rep != nil {
		o.rep.WriteTable(&b)
	}
	return b.String()
}

func TestEscapesBlockedAndReported(t *testing.T) {
	testutil.RequireRoot(t)
	// An outside process to attack.
	target := exec.Command("sleep", "300")
	if err := target.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { target.Process.Kill(); target.Wait() }()
	outside := strconv.Itoa(target.Process.Pid)

	for _, tc := range []struct {
		action  string // argument to the victim
		line    string // the victim's output line for it
		syscall string // what the report names
		suggest string // substring of the suggestion
	}{
		{"ptrace=" + outside, "ptrace: EPERM", "ptrace", "syscalls.allow: + ptrace"},
		{"vmread=" + outside, "vmread: EPERM", "process_vm_readv", "syscalls.allow: + process_vm_readv"},
		{"unshare-user", "unshare-user: EPERM", "unshare", "syscalls.allow: + unshare"},
		{"setns", "setns: EPERM", "setns", "syscalls.allow: + setns"},
		{"mount", "mount: EPERM", "mount", "syscalls.allow: + mount"},
		{"bpf", "bpf: EPERM", "bpf", "syscalls.allow: + bpf"},
		{"keyctl", "keyctl: EPERM", "keyctl", "syscalls.allow: + keyctl"},
		{"perf", "perf: EPERM", "perf_event_open", "syscalls.allow: + perf_event_open"},
		{"iouring", "iouring: EPERM", "io_uring_setup", "syscalls.allow: + io_uring_setup"},
		{"int80", "int80: EPERM", "getpid", "syscalls.architectures: + i386"},
		{"x32", "x32: EPERM", "getpid", "syscalls.architectures: + x32"},
		{"clone-newns", "clone-newns: EPERM", "clone", "syscalls.args: clone arg 0: + CLONE_NEWNS"},
		{"mptcp", "mptcp: EPERM", "socket", "mptcp"},
		{"tiocsti", "tiocsti: EPERM", "ioctl", "TIOCSTI"},
		{"sysinfo", "sysinfo: EPERM", "sysinfo", "syscalls.allow: + sysinfo"},
	} {
		name, _, _ := strings.Cut(tc.action, "=")
		t.Run(name, func(t *testing.T) {
			o := runVictim(t, victimProfile(), false, tc.action, "tcp", "ok")
			if o.err != nil || o.code != 0 {
				t.Fatalf("run: %s", o)
			}
			if !strings.Contains(o.stdout, tc.line+"\n") {
				t.Errorf("want %q in the output:\n%s", tc.line, o)
			}
			if !strings.Contains(o.stdout, "tcp: ok\nok\n") {
				t.Errorf("benign work in the same run did not work:\n%s", o)
			}
			d := o.denial(tc.syscall)
			if d == nil {
				t.Fatalf("no %s denial in the report:\n%s", tc.syscall, o)
			}
			if !strings.Contains(d.Suggest, tc.suggest) {
				t.Errorf("suggestion %q, want it to contain %q", d.Suggest, tc.suggest)
			}
			if !strings.HasSuffix(d.Exe, "/escape") || d.Count < 1 || d.First.IsZero() || d.Allowed {
				t.Errorf("denial lacks who/when: %+v", *d)
			}
			if len(o.rep.Denials) != 1 {
				t.Errorf("want exactly one denial (the escape), got:\n%s", o)
			}
		})
	}
}

func TestAuditLetsThroughAndReports(t *testing.T) {
	testutil.RequireRoot(t)
	o := runVictim(t, victimProfile(), true, "sysinfo", "ok")
	if o.err != nil || o.code != 0 {
		t.Fatalf("run: %s", o)
	}
	if !strings.Contains(o.stdout, "sysinfo: ok\n") {
		t.Errorf("audit mode denied the call:\n%s", o)
	}
	d := o.denial("sysinfo")
	if d == nil || !d.Allowed || !o.rep.Audit {
		t.Errorf("audit mode did not report the call as allowed:\n%s", o)
	}
}

func TestExitCodes(t *testing.T) {
	testutil.RequireRoot(t)
	for _, tc := range []struct {
		args []string
		want int
	}{
		{[]string{"ok"}, 0},
		{[]string{"exit=3"}, 3},
		{[]string{"kill-self=" + strconv.Itoa(int(syscall.SIGKILL))}, 128 + 9},
		{[]string{"kill-self=" + strconv.Itoa(int(syscall.SIGTERM))}, 128 + 15},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			o := runVictim(t, victimProfile(), false, tc.args...)
			if o.err != nil || o.code != tc.want {
				t.Errorf("exit %d, want %d: %s", o.code, tc.want, o)
			}
		})
	}
}

func TestCommandNotFoundOrNotExecutable(t *testing.T) {
	testutil.RequireRoot(t)
	notExec := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cmd  string
		want int
	}{{"sysprof-no-such-command", 127}, {notExec, 126}} {
		_, code, err := Run(context.Background(), Options{Profile: victimProfile(), Command: []string{tc.cmd}})
		var ee *ExecError
		if !errors.As(err, &ee) || code != tc.want || ExitCode(err) != tc.want {
			t.Errorf("%s: code %d err %v, want %d and an ExecError", tc.cmd, code, err, tc.want)
		}
	}
}

func TestNoFdLeaksAndNewSession(t *testing.T) {
	testutil.RequireRoot(t)
	// An fd of the test process without close-on-exec must not reach the command.
	leak, err := os.Open("/dev/null")
	if err != nil {
		t.Fatal(err)
	}
	defer leak.Close()
	syscall.Syscall(syscall.SYS_FCNTL, leak.Fd(), syscall.F_SETFD, 0)
	p := victimProfile()
	p.Filesystem.Read = []policy.PathRule{{Path: "/proc/self/fd"}} // an empty section lists nothing
	o := runVictim(t, p, false, "fds", "sid")
	if o.err != nil || o.code != 0 {
		t.Fatalf("run: %s", o)
	}
	if !strings.Contains(o.stdout, "fds: 0 1 2\n") {
		t.Errorf("the command sees fds other than 0, 1, 2:\n%s", o)
	}
	mySid, _, _ := syscall.RawSyscall(syscall.SYS_GETSID, 0, 0, 0)
	if strings.Contains(o.stdout, fmt.Sprintf("sid: %d\n", mySid)) || !strings.Contains(o.stdout, "sid: ") {
		t.Errorf("the command runs in sysprof's session %d:\n%s", mySid, o)
	}
	if len(o.rep.Denials) != 0 {
		t.Errorf("benign run has denials:\n%s", o)
	}
}
