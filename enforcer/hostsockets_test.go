package enforcer

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/report"
)

const (
	sockDaemonEnv = "SYSPROF_TEST_SOCK_DAEMON" // bind this (relative) path, say "ready", wait
	sockCheckEnv  = "SYSPROF_TEST_SOCK_CHECK"  // run hostSocketsCheck as nobody
)

// sockDaemon is the helper daemon: it binds the path it is given relative to its working
// directory, in whatever network namespace it was started, and lives until stdin closes.
func sockDaemon(path string) {
	l, err := net.Listen("unix", path)
	if err != nil {
		fmt.Println("listen:", err)
		os.Exit(1)
	}
	os.Chmod(path, 0o777)
	fmt.Println("ready")
	bufio.NewReader(os.Stdin).ReadString('\n')
	l.Close()
}

// startSockDaemon runs the test binary as a daemon (uid nobody: its own sockets are what an
// ordinary user's sandbox must also find) in dir, binding rel, optionally in a new netns.
func startSockDaemon(t *testing.T, bin, dir, rel string, netns bool) {
	t.Helper()
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), sockDaemonEnv+"="+rel)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if netns {
		cmd.SysProcAttr.Cloneflags = syscall.CLONE_NEWNET
	}
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); cmd.Wait() })
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "ready\n" {
		t.Fatalf("socket daemon in %s: %q", dir, line)
	}
}

// TestHostSocketsHidden: host daemons' pathname sockets are unreachable from the sandbox
// whether bound by a relative path, in another network namespace, or past the 512th socket,
// while the socket the profile names stays reachable (as root and as nobody).
func TestHostSocketsHidden(t *testing.T) {
	testutil.RequireRoot(t)
	base, err := os.MkdirTemp("", "sysprof-hostsock-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(base)
	os.Chmod(base, 0o755)
	mk := func(name string) string {
		d := filepath.Join(base, name)
		os.MkdirAll(d, 0o755)
		os.Chown(d, 65534, 65534)
		return d
	}
	rel, ns, many, ok, work := mk("rel"), mk("ns"), mk("many"), mk("ok"), mk("work")
	self, _ := os.Executable()
	bin, victim := filepath.Join(base, "enforcer.test"), filepath.Join(base, "escape")
	for src, dst := range map[string]string{self: bin, testutil.BuildC(t, "escape/escape.c"): victim} {
		if err := copyFile(src, dst, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	startSockDaemon(t, bin, rel, "rel.sock", false)
	startSockDaemon(t, bin, ns, filepath.Join(ns, "ns.sock"), true)
	var last string
	for i := range 600 {
		last = filepath.Join(many, fmt.Sprintf("s%03d.sock", i))
		l, err := net.Listen("unix", last)
		if err != nil {
			t.Fatal(err)
		}
		os.Chmod(last, 0o777)
		defer l.Close()
	}
	okSock := filepath.Join(ok, "ok.sock")
	l, err := net.Listen("unix", okSock)
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(okSock, 0o777)
	defer l.Close()

	args := []string{victim, work, filepath.Join(rel, "rel.sock"), filepath.Join(ns, "ns.sock"), last, okSock}
	t.Run("root", func(t *testing.T) {
		if err := hostSocketsCheck(args); err != nil {
			t.Error(err)
		}
	})
	t.Run("nobody", func(t *testing.T) {
		cmd := exec.Command(bin)
		cmd.Env = append(os.Environ(), sockCheckEnv+"="+strings.Join(args, "\n"), "HOME="+base)
		cmd.Dir = work
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("as nobody: %v\n%s", err, out)
		}
	})
}

// TestHostSocketsInPrivateTmpBinds: with a private /tmp, the host's sockets in the host
// directories bound into it (a work tree in /tmp, a directory the profile reads there) are
// unreachable too, while the one the profile names works (as root and as nobody).
func TestHostSocketsInPrivateTmpBinds(t *testing.T) {
	testutil.RequireRoot(t)
	base, err := os.MkdirTemp("/tmp", "sysprof-tmpsock-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(base)
	os.Chmod(base, 0o755)
	self, _ := os.Executable()
	bin, victim := filepath.Join(base, "enforcer.test"), filepath.Join(base, "escape")
	for src, dst := range map[string]string{self: bin, testutil.BuildC(t, "escape/escape.c"): victim} {
		if err := copyFile(src, dst, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	work, data := filepath.Join(base, "work"), filepath.Join(base, "data")
	var socks []string
	for _, s := range []string{filepath.Join(work, "daemon.sock"), filepath.Join(work, "sub", "other.sock"), filepath.Join(data, "data.sock"), filepath.Join(work, "ok.sock")} {
		os.MkdirAll(filepath.Dir(s), 0o755)
		l, err := net.Listen("unix", s)
		if err != nil {
			t.Fatal(err)
		}
		os.Chmod(s, 0o777)
		defer l.Close()
		socks = append(socks, s)
	}
	os.Chown(work, 65534, 65534)
	args := append([]string{privateTmpArg + data, victim, work}, socks...)
	t.Run("root", func(t *testing.T) {
		if err := hostSocketsCheck(args); err != nil {
			t.Error(err)
		}
	})
	t.Run("nobody", func(t *testing.T) {
		cmd := exec.Command(bin)
		cmd.Env = append(os.Environ(), sockCheckEnv+"="+strings.Join(args, "\n"), "HOME="+base)
		cmd.Dir = work
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("as nobody: %v\n%s", err, out)
		}
	})
}

// privateTmpArg, first in hostSocketsCheck's args, asks for a private /tmp and a read rule on
// the directory that follows it.
const privateTmpArg = "private-tmp,read="

// hostSocketsCheck enforces a profile that names only the last socket of args and connects to
// each: every other one must fail, the named one must work.
func hostSocketsCheck(args []string) error {
	var extraRead string
	if r, ok := strings.CutPrefix(args[0], privateTmpArg); ok {
		extraRead, args = r, args[1:]
	}
	victim, work, socks := args[0], args[1], args[2:]
	named := socks[len(socks)-1]
	ld, _ := filepath.EvalSymlinks("/lib64/ld-linux-x86-64.so.2")
	p := victimProfile()
	p.Filesystem = policy.Filesystem{
		Read:  []policy.PathRule{{Path: "/usr"}, {Path: "/etc"}, {Path: "$WORKDIR"}},
		Write: []policy.PathRule{{Path: "/dev/null"}},
		Exec:  []policy.PathRule{{Path: victim}, {Path: ld}},
	}
	if extraRead != "" {
		p.Filesystem.PrivateTmp = true
		p.Filesystem.Read = append(p.Filesystem.Read, policy.PathRule{Path: extraRead})
	}
	p.Network = policy.Network{Connect: []policy.Endpoint{{Endpoint: "unix:" + named}}}
	cmd := []string{victim}
	for _, s := range socks {
		cmd = append(cmd, "connect-unix="+s)
	}
	var stdout strings.Builder
	rep, code, err := Run(context.Background(), Options{Profile: p, Command: cmd, Dir: work, Stdout: &stdout, Stderr: &stdout})
	if err != nil || code != 0 {
		return fmt.Errorf("run: exit %d err %v\n%s", code, err, stdout.String())
	}
	got := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(got) != len(socks) {
		return fmt.Errorf("output %q: want one line per socket", stdout.String())
	}
	var errs []error
	for i, s := range socks {
		r := strings.TrimPrefix(got[i], "connect-unix: ")
		if s == named {
			if r != "ok" {
				errs = append(errs, fmt.Errorf("named socket %s: %s, want ok (benign control)", s, r))
			}
		} else if r != "EACCES" && r != "ENOENT" && r != "ECONNREFUSED" {
			errs = append(errs, fmt.Errorf("host socket %s: %s, want it unreachable\nnotes: %q", s, r, rep.Notes))
		}
	}
	for _, l := range rep.Layers {
		if l.State != "applied" {
			errs = append(errs, fmt.Errorf("layer %s %s: %s", l.Name, l.State, l.Detail))
		}
	}
	// On the record (issue 23 item 5): as root the guard reports each refused connect; as an
	// ordinary user the report says it cannot.
	for _, s := range socks {
		found := slices.ContainsFunc(rep.Denials, func(d report.Denial) bool {
			return d.Kind == report.KindNetwork && d.Endpoint == "unix:"+s && strings.HasSuffix(d.Exe, filepath.Base(victim)) && d.Suggest != ""
		})
		switch {
		case s == named && found:
			errs = append(errs, fmt.Errorf("the named socket %s is reported refused", s))
		case s != named && os.Geteuid() == 0 && !found:
			errs = append(errs, fmt.Errorf("host socket %s: refused without a denial (denials %q)", s, denialWhats(rep)))
		}
	}
	if os.Geteuid() != 0 && !slices.ContainsFunc(rep.Unobservable, func(u string) bool { return strings.Contains(u, "unix socket") }) {
		errs = append(errs, fmt.Errorf("as an ordinary user the report does not say that refused unix connects go unrecorded: %q", rep.Unobservable))
	}
	return errors.Join(errs...)
}

func denialWhats(rep *report.Report) []string {
	var out []string
	for _, d := range rep.Denials {
		out = append(out, d.What)
	}
	return out
}

// BenchmarkDaemonSockets is compile's per-run cost of finding the host's unix sockets (every
// network namespace): go test ./enforcer -run '^$' -bench DaemonSockets
// (SYSPROF_BENCH_SOCKS=N binds N more sockets under /run, 10 per directory, first).
func BenchmarkDaemonSockets(b *testing.B) {
	if n, _ := strconv.Atoi(os.Getenv("SYSPROF_BENCH_SOCKS")); n > 0 {
		dir, err := os.MkdirTemp("/run", "sysprof-bench-") // outside the private /tmp
		if err != nil {
			b.Fatal(err)
		}
		defer os.RemoveAll(dir)
		for i := range n {
			p := filepath.Join(dir, fmt.Sprintf("d%03d", i/10), fmt.Sprintf("s%d.sock", i))
			os.MkdirAll(filepath.Dir(p), 0o755)
			l, err := net.Listen("unix", p)
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
		}
	}
	var n int
	b.ResetTimer()
	for range b.N {
		s, _ := daemonSockets(Env{}, policy.Network{}, true, nil)
		n = len(s)
	}
	b.ReportMetric(float64(n), "sockets")
}

// The host's sockets are read and covered exactly when the run's filter lets a call that can
// address one reach the kernel (socketAddressing), or under --audit, where every call does:
// compile skips the scan otherwise (its ~2 ms), and only then.
func TestSocketScanOnlyWhenAddressable(t *testing.T) {
	dir, err := os.MkdirTemp("", "sysprof-scan-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "daemon.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	base := []string{"read", "write", "close", "exit_group", "socket"}
	for _, tc := range []struct {
		name   string
		extra  []string
		arches []string
		exact  bool
		audit  bool
		want   bool
	}{
		{name: "nothing addresses a socket", want: false},
		{name: "nothing, under --audit", audit: true, want: true},
		{name: "connect", extra: []string{"connect"}, want: true},
		{name: "sendto", extra: []string{"sendto"}, exact: true, want: true},
		{name: "sendmsg", extra: []string{"sendmsg"}, exact: true, want: true},
		{name: "sendmmsg", extra: []string{"sendmmsg"}, exact: true, want: true},
		{name: "i386 socketcall", extra: []string{"socketcall"}, arches: []string{"x86_64", "i386"}, want: true},
		{name: "io_uring", extra: []string{"io_uring_setup", "io_uring_enter"}, want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &policy.Profile{APIVersion: policy.APIVersion, Kind: policy.Kind}
			p.Metadata.Exact = tc.exact
			p.Syscalls.Architectures = []string{"x86_64"}
			if tc.arches != nil {
				p.Syscalls.Architectures = tc.arches
			}
			for _, s := range append(slices.Clone(base), tc.extra...) {
				p.Syscalls.Allow = append(p.Syscalls.Allow, policy.Syscall{Name: s})
			}
			c, err := Compile(p, Env{Vars: map[string]string{"WORKDIR": dir, "TMPDIR": "/tmp"}, Arch: "x86_64", Audit: tc.audit})
			if err != nil {
				t.Fatal(err)
			}
			covered := slices.ContainsFunc(c.HiddenSockets, func(h string) bool {
				return h == sock || strings.HasSuffix(h, "/") && strings.HasPrefix(sock, h)
			})
			if covered != tc.want {
				t.Errorf("%s covered: %v, want %v (hidden sockets %q)", sock, covered, tc.want, c.HiddenSockets)
			}
		})
	}
}

// TestHostSocketsHiddenUnderAudit: under --audit a profile that never connects still gets the
// host's sockets covered, since the supervisor lets its refused connect continue; without the
// cover that connect reaches the daemon.
func TestHostSocketsHiddenUnderAudit(t *testing.T) {
	testutil.RequireRoot(t)
	base, err := os.MkdirTemp("", "sysprof-auditsock-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(base)
	work := filepath.Join(base, "work")
	os.MkdirAll(work, 0o755)
	sock := filepath.Join(base, "daemon.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	os.Chmod(sock, 0o777)
	victim := testutil.BuildC(t, "escape/escape.c")
	ld, _ := filepath.EvalSymlinks("/lib64/ld-linux-x86-64.so.2")
	p := victimProfile()
	p.Syscalls.Allow = slices.DeleteFunc(p.Syscalls.Allow, func(s policy.Syscall) bool { return s.Name == "connect" })
	p.Filesystem = policy.Filesystem{
		Read: []policy.PathRule{{Path: "/usr"}, {Path: "/etc"}, {Path: "$WORKDIR"}, {Path: filepath.Dir(victim)}},
		Exec: []policy.PathRule{{Path: victim}, {Path: ld}},
	}
	var out strings.Builder
	_, code, err := Run(context.Background(), Options{Profile: p, Command: []string{victim, "connect-unix=" + sock}, Dir: work, Stdout: &out, Stderr: &out, Audit: true})
	if err != nil || code != 0 {
		t.Fatalf("run: exit %d err %v\n%s", code, err, out.String())
	}
	if r := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(out.String()), "connect-unix: ")); r != "EACCES" && r != "ENOENT" && r != "ECONNREFUSED" {
		t.Errorf("under --audit the host socket %s answered %q: want it unreachable", sock, r)
	}
}

// BenchmarkCompileTrue is compile's cost for a profile that addresses no socket (`true`'s
// allowlist: no scan) and for the same profile with connect (the scan, not prefetched):
// go test ./enforcer -run '^$' -bench CompileTrue
func BenchmarkCompileTrue(b *testing.B) {
	for _, extra := range []string{"", "connect"} {
		b.Run("extra="+extra, func(b *testing.B) {
			p := &policy.Profile{APIVersion: policy.APIVersion, Kind: policy.Kind}
			p.Syscalls.Architectures = []string{"x86_64"}
			for _, s := range []string{"access", "arch_prctl", "brk", "close", "execve", "exit_group", "fstat", "mmap", "mprotect", "munmap", "newfstatat", "openat", "pread64", "read", "write", extra} {
				if s != "" {
					p.Syscalls.Allow = append(p.Syscalls.Allow, policy.Syscall{Name: s})
				}
			}
			p.Filesystem.Read = []policy.PathRule{{Path: "/usr"}, {Path: "/etc/ld.so.cache"}}
			p.Filesystem.Exec = []policy.PathRule{{Path: "/usr/bin/true"}}
			env := HostEnv(b.TempDir())
			for b.Loop() {
				if _, err := Compile(p, env); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
