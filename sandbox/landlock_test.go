package sandbox

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
)

// freePort returns a loopback port nobody listens on (bound then released).
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// sleeper is a process outside the sandbox, owned by the sandboxed uid, to send signals to.
func sleeper(t *testing.T, uid int) int {
	t.Helper()
	cmd := exec.Command("sleep", "300")
	if uid != os.Getuid() {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd.Process.Pid
}

// systemRead and systemExec let the probe (a dynamically linked Go test binary) start and run
// /usr/bin/true.
var (
	systemRead = []string{"/usr", "/lib", "/lib64", "/etc", "/proc", "/sys"}
	systemExec = []string{"/proc/self/exe", "/usr/bin/true", "/usr/lib", "/lib", "/lib64"}
)

// TestLandlock: reads outside Read fail with EACCES, writes outside Write too, exec outside Exec
// (including a binary the tool copied into its writable directory) fails, TCP connect to a
// port not in ConnectTCP and bind to one not in BindTCP fail with EACCES while the allowed ones
// work, a signal to a process outside fails with EPERM (ScopeSignals), an abstract unix connect
// to a listener outside fails with EPERM (ScopeAbstractUnix). The "control" run has the same
// plan without the scopes, so the EPERMs are Landlock's and not a uid or namespace effect.
func TestLandlock(t *testing.T) {
	abi, err := LandlockABI()
	testutil.RequireNoErr(t, "landlock", err)
	if abi < 6 {
		testutil.RequireNoErr(t, "landlock", testutil.NotAvailable("ABI %d < 6 (scopes)", abi))
	}
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			f := newFixture(t, mode)
			readable := f.file(t, "readable/f", "r")
			other := f.file(t, "other/f", "o")
			work := f.dir(t, "work")
			mytrue := f.file(t, "work/mytrue", "")
			b, err := os.ReadFile("/usr/bin/true")
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(mytrue, b, 0o755); err != nil {
				t.Fatal(err)
			}
			allowed, denied := testutil.LoopbackTCP(t), testutil.LoopbackTCP(t)
			bindOK, bindDenied := freePort(t), freePort(t)
			abstract := fmt.Sprintf("@sysprof-sandbox-test-%d-%s", os.Getpid(), mode)
			testutil.Listen(t, "unix", abstract)
			victim := sleeper(t, f.uid)
			nonexistent := "/nonexistent-sysprof-sandbox-test"

			ll := &Landlock{
				Read:        append([]string{f.path("readable"), nonexistent}, systemRead...),
				Write:       []string{work},
				Exec:        systemExec,
				Devices:     []string{"/dev/null", "/dev/ptmx", "/dev/pts"},
				RestrictTCP: true,
				ConnectTCP:  []uint16{uint16(allowed)},
				BindTCP:     []uint16{uint16(bindOK)},
			}
			checks := []check{
				{op{Op: "read", Path: readable}, "ok:r"},
				{op{Op: "read", Path: other}, "EACCES"},
				{op{Op: "readdir", Path: f.path("other")}, "EACCES"},
				{op{Op: "write", Path: filepath.Join(work, "x"), Arg: "w"}, "ok"},
				{op{Op: "read", Path: filepath.Join(work, "x")}, "ok:w"},
				{op{Op: "rename", Arg: filepath.Join(work, "x"), Path: filepath.Join(work, "y")}, "ok"},
				{op{Op: "write", Path: filepath.Join(f.path("readable"), "x")}, "EACCES"},
				{op{Op: "link", Arg: readable, Path: filepath.Join(work, "hl")}, "EXDEV"}, // no refer outside Write
				{op{Op: "write", Path: "/dev/null", Arg: "x"}, "ok"},
				{op{Op: "openpty"}, "ok"},
				{op{Op: "openrw", Path: "/dev/zero"}, "EACCES"},
				{op{Op: "exec", Path: "/usr/bin/true"}, "ok"},
				{op{Op: "exec", Path: "/usr/bin/false"}, "EACCES"},
				{op{Op: "exec", Path: mytrue}, "EACCES"},
				{op{Op: "connect", Port: allowed}, "ok"},
				{op{Op: "connect", Port: denied}, "EACCES"},
				{op{Op: "bind", Port: bindOK}, "ok"},
				{op{Op: "bind", Port: bindDenied}, "EACCES"},
			}
			scoped := []check{
				{op{Op: "kill0", Port: victim}, "EPERM"},
				{op{Op: "abstract", Arg: abstract}, "EPERM"},
			}
			control := []check{
				{op{Op: "kill0", Port: victim}, "ok"},
				{op{Op: "abstract", Arg: abstract}, "ok"},
			}

			t.Run("control", func(t *testing.T) {
				runChecks(t, mode, Plan{Landlock: ll, DropCaps: true}, 0, control)
			})
			ls := *ll
			ls.ScopeSignals, ls.ScopeAbstractUnix = true, true
			out := runChecks(t, mode, Plan{Landlock: &ls, DropCaps: true}, 0, append(checks, scoped...))
			if !hasSkipped(out.Result, LayerLandlock, nonexistent) {
				t.Errorf("result does not report %s as skipped: %+v", nonexistent, out.Result)
			}
			if out.Result.LandlockABI != abi || len(out.Result.Dropped) != 0 {
				t.Errorf("result = %+v, want ABI %d and nothing dropped", out.Result, abi)
			}

			// Known kernel gap (KERNEL-NOTES.md): MPTCP sockets are not subject to Landlock's TCP
			// rules. The enforcer closes it with seccomp or cgroup hooks; log what this kernel does.
			mp := run(t, mode, spec{Plan: Plan{Landlock: &ls}, Ops: []op{{Op: "mptcp", Port: denied}}})
			t.Logf("MPTCP connect to a port Landlock denies for TCP: %q (ok = Landlock bypassed; close it in seccomp)", mp.Got)
		})
	}
}

// TestNetNS: in a new network namespace only lo exists and it is up; a listener the test runs
// in the host namespace is unreachable.
func TestNetNS(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			host := testutil.LoopbackTCP(t)
			runChecks(t, mode, Plan{NetNS: true, DropCaps: true}, 0, []check{
				{op{Op: "ifaces"}, "ok:lo:up"},
				{op{Op: "connect", Port: host}, "ECONNREFUSED"},
			})
		})
	}
}

// TestApplyErrorsNameTheLayer: a plan that cannot be applied fails closed with the layer named.
func TestApplyErrorsNameTheLayer(t *testing.T) {
	out := run(t, "root", spec{Plan: Plan{ReadOnlyRoot: true, Landlock: &Landlock{Read: []string{"relative/path"}}}})
	if out.ApplyLayer != LayerLandlock {
		t.Errorf("apply error layer = %q (%s), want %q", out.ApplyLayer, out.ApplyErr, LayerLandlock)
	}
}

// TestAllLayersTogether is the composition the enforcer builds: read-only root, private /tmp
// that Landlock lets the tool write (the rule is added after the mounts, so it names the
// sandbox's tmpfs, not the host's /tmp it covers), a hidden credential under a readable home, an
// empty network namespace with Landlock TCP rules, scopes, and no capabilities.
func TestAllLayersTogether(t *testing.T) {
	_, err := LandlockABI()
	testutil.RequireNoErr(t, "landlock", err)
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			// Host files outside Writable must not be under the private /tmp or /var/tmp.
			outside := "/var/lib"
			if os.Geteuid() != 0 {
				outside, _ = os.UserHomeDir()
			}
			if r, err := filepath.EvalSymlinks(outside); err != nil || under(r, privateTmpDirs) {
				testutil.RequireNoErr(t, "a writable host directory outside the private tmp dirs",
					testutil.NotAvailable("%s is not one (%v)", outside, err))
			}
			f := newFixtureIn(t, mode, outside)
			work := f.dir(t, "work")
			netrc := f.file(t, "home/.netrc", "SECRET")
			f.file(t, "home/.gitconfig", "[user]")
			other := f.file(t, "other/f", "o")
			hostMarker, err := os.CreateTemp("", "sysprof-marker-")
			if err != nil {
				t.Fatal(err)
			}
			hostMarker.Close()
			t.Cleanup(func() { os.Remove(hostMarker.Name()) })
			plan := Plan{
				ReadOnlyRoot: true,
				Writable:     []string{work},
				Hidden:       []string{netrc},
				PrivateTmp:   true,
				NetNS:        true,
				DropCaps:     true,
				Landlock: &Landlock{
					Read:              append([]string{f.path("home")}, systemRead...),
					Write:             []string{work, "/tmp"},
					Exec:              systemExec,
					Devices:           []string{"/dev/null"},
					RestrictTCP:       true,
					ConnectTCP:        []uint16{8443},
					ScopeSignals:      true,
					ScopeAbstractUnix: true,
				},
			}
			runChecks(t, mode, plan, 0, []check{
				{op{Op: "write", Path: "/tmp/x", Arg: "t"}, "ok"},
				{op{Op: "read", Path: "/tmp/x"}, "ok:t"},
				{op{Op: "stat", Path: hostMarker.Name()}, "ENOENT"},
				{op{Op: "write", Path: filepath.Join(work, "o"), Arg: "w"}, "ok"},
				{op{Op: "read", Path: f.path("home/.gitconfig")}, "ok:[user]"},
				{op{Op: "read", Path: netrc}, "ok:"},
				{op{Op: "write", Path: f.path("home/new"), Arg: "x"}, "EROFS"}, // the mount answers before Landlock
				{op{Op: "read", Path: other}, "EACCES"},
				{op{Op: "exec", Path: "/usr/bin/true"}, "ok"},
				{op{Op: "connect", Port: 8443}, "ECONNREFUSED"}, // allowed, nothing listens in the netns
				{op{Op: "connect", Port: 8444}, "EACCES"},
				{op{Op: "ifaces"}, "ok:lo:up"},
				{op{Op: "kill0", Port: os.Getpid()}, "EPERM"},
			})
		})
	}
}

// TestDegrade: on a kernel whose Landlock ABI lacks what the plan asks (simulated: ABI 5 has no
// scopes), Apply fails closed naming the layer and the missing feature; with Plan.Degrade it
// runs, lists what it dropped, and still enforces the rest.
func TestDegrade(t *testing.T) {
	abi, err := LandlockABI()
	testutil.RequireNoErr(t, "landlock", err)
	if abi < 5 {
		testutil.RequireNoErr(t, "landlock", testutil.NotAvailable("ABI %d < 5", abi))
	}
	f := newFixture(t, "root")
	other := f.file(t, "other/f", "o")
	ll := &Landlock{Read: systemRead, Exec: systemExec, ScopeSignals: true}
	ops := []op{{Op: "kill0", Port: os.Getpid()}, {Op: "read", Path: other}}

	out := run(t, "root", spec{Plan: Plan{Landlock: ll}, FakeABI: 5, Ops: ops})
	if out.ApplyLayer != LayerLandlock || !strings.Contains(out.ApplyErr, "scope signal") || out.Got != nil {
		t.Errorf("without Degrade: layer %q err %q ran %q; want a refusal naming landlock scope signal", out.ApplyLayer, out.ApplyErr, out.Got)
	}

	out = run(t, "root", spec{Plan: Plan{Landlock: ll, Degrade: true}, FakeABI: 5, Ops: ops})
	mustApply(t, "root", out)
	if len(out.Result.Dropped) != 1 || !strings.Contains(out.Result.Dropped[0], "scope signal") {
		t.Errorf("dropped = %q, want the signal scope", out.Result.Dropped)
	}
	if want := []string{"ok", "EACCES"}; !slices.Equal(out.Got, want) {
		t.Errorf("degraded run: got %q, want %q (signal allowed, file rules still enforced)", out.Got, want)
	}
}

// TestLandlockELFInterpreter: Landlock checks EXECUTE on the ELF interpreter the kernel opens
// for a dynamically linked binary. A plan that allows only the binaries (what a learn run sees)
// still runs them: Apply adds the interpreter and says so in Result.Implied.
func TestLandlockELFInterpreter(t *testing.T) {
	_, err := LandlockABI()
	testutil.RequireNoErr(t, "landlock", err)
	interp := elfInterpreter("/usr/bin/true")
	if interp == "" {
		testutil.RequireNoErr(t, "a dynamically linked /usr/bin/true", testutil.NotAvailable("it has no ELF interpreter"))
	}
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			f := newFixture(t, mode)
			mytrue := f.file(t, "work/mytrue", "")
			b, err := os.ReadFile("/usr/bin/true")
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(mytrue, b, 0o755); err != nil {
				t.Fatal(err)
			}
			resolved, _ := filepath.EvalSymlinks(interp)
			ll := &Landlock{Read: systemRead, Write: []string{f.path("work")}, Exec: []string{"/proc/self/exe", "/usr/bin/true"}, Devices: []string{"/dev/null"}}
			out := runChecks(t, mode, Plan{Landlock: ll, DropCaps: true}, 0, []check{
				{op{Op: "exec", Path: "/usr/bin/true"}, "ok"},
				{op{Op: "exec", Path: "/usr/bin/false"}, "EACCES"},
				{op{Op: "exec", Path: mytrue}, "EACCES"},
				// Known limit of Landlock's execute right: the interpreter, run directly, maps a
				// readable binary with read_file only. W^X on Write holds for execve, not for
				// "ld.so ./binary" (closing it needs a noexec mount, which breaks dlopen of build
				// outputs such as rustc proc-macros).
				{op{Op: "exec", Path: resolved, Arg: mytrue}, "ok"},
			})
			if !slices.ContainsFunc(out.Result.Implied, func(s string) bool { return strings.HasPrefix(s, "exec "+resolved+": ELF interpreter of ") }) {
				t.Errorf("Result.Implied = %q, want the interpreter %s", out.Result.Implied, resolved)
			}
		})
	}
}
