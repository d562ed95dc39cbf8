package sandbox

// The test harness: every test that applies a Plan re-executes the test binary, because the
// steps are irreversible (mounts, Landlock, dropped capabilities). Roles, chosen by an
// environment variable before testing.M runs:
//
//	launcher  (user mode, when the tests run as root) drops to uid/gid 65534 without any
//	          namespace, then starts "init" the way an unprivileged sysprof would
//	init      is the init stage: already in the namespaces from Plan.NamespaceAttr, it calls
//	          Plan.ApplyResult and execs the test binary again as "probe" (Landlock and the
//	          capability sets survive execve only from the thread that set them, as in sysprof)
//	probe     the sandboxed "tool": runs the spec's operations and prints one JSON line
//
// Modes: "root" starts init as root without a user namespace; "user" runs it as an ordinary
// user in a user namespace (uid 65534 via the launcher when the tests run as root, the caller's
// own uid otherwise).

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
	"golang.org/x/sys/unix"
)

const (
	envRole   = "SYSPROF_SANDBOX_TEST_ROLE"
	envSpec   = "SYSPROF_SANDBOX_TEST_SPEC"
	envResult = "SYSPROF_SANDBOX_TEST_RESULT"

	nobody = 65534
)

type spec struct {
	Plan       Plan
	ExtraClone uintptr // added to CloneFlags, e.g. CLONE_NEWPID
	FakeABI    int     // when > 0, the init stage pretends the kernel has this Landlock ABI
	TTY        bool    // start the sandbox in a new session with a pty as controlling terminal
	Ops        []op
}

type op struct {
	Op   string
	Path string `json:",omitempty"`
	Arg  string `json:",omitempty"`
	Port int    `json:",omitempty"`
}

type output struct {
	ApplyErr string `json:",omitempty"`
	// ApplyMissing: ApplyErr says the host lacks a feature or permission (testutil.Missing).
	ApplyMissing bool     `json:",omitempty"`
	ApplyLayer   string   `json:",omitempty"`
	Result       *Result  `json:",omitempty"`
	Got          []string `json:",omitempty"`
}

func TestMain(m *testing.M) {
	switch os.Getenv(envRole) {
	case "launcher":
		launcherMain()
	case "init":
		initMain()
	case "probe":
		probeMain()
	case "replica":
		replicaMain()
	case "euid":
		fmt.Print(os.Geteuid())
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func readSpec() spec {
	var s spec
	if err := json.Unmarshal([]byte(os.Getenv(envSpec)), &s); err != nil {
		fmt.Fprintln(os.Stderr, "bad spec:", err)
		os.Exit(100)
	}
	return s
}

// startInit returns the command that starts the init stage in the plan's namespaces.
func startInit(s spec, asRoot bool) *exec.Cmd {
	cmd := exec.Command("/proc/self/exe")
	cmd.Env = append(withoutRole(os.Environ()), envRole+"=init")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	// The harness's init stage execs the probe, which would be PID 1 of a new PID namespace
	// (the enforcer's stays PID 1 and forks): only tests that ask get one.
	// As root: ids mapped to themselves (root-userns). The harness tests the layers; the
	// idmapped replica of root-idmap is TestReplica's and the enforcer's.
	cmd.SysProcAttr = s.Plan.NamespaceAttr(ChooseIdentity(os.Geteuid(), os.Getuid(), os.Getgid(), "", "", asRoot, errHarnessNoReplica, Tree{}))
	cmd.SysProcAttr.Cloneflags &^= syscall.CLONE_NEWPID
	cmd.SysProcAttr.Cloneflags |= s.ExtraClone
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	return cmd
}

var errHarnessNoReplica = errors.New("the sandbox harness makes no replica")

func launcherMain() {
	cmd := startInit(readSpec(), false)
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		os.Exit(ee.ExitCode())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "launcher: start init:", err)
		os.Exit(101)
	}
	os.Exit(0)
}

func initMain() {
	runtime.LockOSThread()
	s := readSpec()
	if s.FakeABI > 0 {
		landlockABI = func() (int, error) { return s.FakeABI, nil }
	}
	res, err := s.Plan.ApplyResult()
	if err != nil {
		out := output{ApplyErr: err.Error(), ApplyMissing: testutil.Missing(err), Result: res}
		var le *LayerError
		if errors.As(err, &le) {
			out.ApplyLayer = le.Layer
		}
		json.NewEncoder(os.Stdout).Encode(out)
		os.Exit(0)
	}
	rb, _ := json.Marshal(res)
	env := append(withoutRole(os.Environ()), envRole+"=probe", envResult+"="+string(rb))
	err = syscall.Exec("/proc/self/exe", []string{"probe"}, env)
	json.NewEncoder(os.Stdout).Encode(output{ApplyErr: "exec probe: " + err.Error(), Result: res})
	os.Exit(0)
}

func withoutRole(env []string) []string {
	return slices.DeleteFunc(slices.Clone(env), func(e string) bool {
		return strings.HasPrefix(e, envRole+"=") || strings.HasPrefix(e, envResult+"=")
	})
}

func probeMain() {
	s := readSpec()
	out := output{Result: &Result{}}
	json.Unmarshal([]byte(os.Getenv(envResult)), out.Result)
	for _, o := range s.Ops {
		out.Got = append(out.Got, o.run())
	}
	json.NewEncoder(os.Stdout).Encode(out)
	os.Exit(0)
}

func errno(err error) string {
	if err == nil {
		return "ok"
	}
	var en syscall.Errno
	if errors.As(err, &en) {
		return unix.ErrnoName(en)
	}
	return err.Error()
}

func (o op) run() string {
	switch o.Op {
	case "read":
		b, err := os.ReadFile(o.Path)
		if err != nil {
			return errno(err)
		}
		return "ok:" + string(b)
	case "write":
		return errno(os.WriteFile(o.Path, []byte(o.Arg), 0o644))
	case "readdir":
		ents, err := os.ReadDir(o.Path)
		if err != nil {
			return errno(err)
		}
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		return "ok:" + strings.Join(names, ",")
	case "openrw":
		fd, err := unix.Open(o.Path, unix.O_RDWR|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
		if err == nil {
			unix.Close(fd)
		}
		return errno(err)
	case "read1":
		fd, err := unix.Open(o.Path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return errno(err)
		}
		defer unix.Close(fd)
		n, err := unix.Read(fd, make([]byte, 1))
		if err != nil {
			return errno(err)
		}
		return fmt.Sprintf("ok:%d", n)
	case "openpty":
		// What openpty(3) does: open the multiplexer, unlock, ask the number, open the peer.
		fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
		if err != nil {
			return "ptmx:" + errno(err)
		}
		defer unix.Close(fd)
		if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
			return "unlock:" + errno(err)
		}
		n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
		if err != nil {
			return "ptn:" + errno(err)
		}
		pfd, err := unix.Open(fmt.Sprintf("/dev/pts/%d", n), unix.O_RDWR|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
		if err != nil {
			return "pts:" + errno(err)
		}
		unix.Close(pfd)
		return "ok"
	case "unix":
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return "socket:" + errno(err)
		}
		defer unix.Close(fd)
		return errno(unix.Connect(fd, &unix.SockaddrUnix{Name: o.Path}))
	case "stat":
		_, err := os.Lstat(o.Path)
		return errno(err)
	case "suid-exec":
		// Run Path (a set-uid copy of this binary) as nobody; it prints its effective uid.
		cmd := exec.Command(o.Path)
		cmd.Env = append(withoutRole(os.Environ()), envRole+"=euid")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody, Groups: []uint32{}}}
		b, err := cmd.Output()
		if err != nil {
			return errno(err)
		}
		return "ok:euid=" + string(b)
	case "mountflags":
		var sfs unix.Statfs_t
		if err := unix.Statfs(o.Path, &sfs); err != nil {
			return errno(err)
		}
		return fmt.Sprintf("ok:nosuid=%t,nodev=%t", sfs.Flags&unix.ST_NOSUID != 0, sfs.Flags&unix.ST_NODEV != 0)
	case "noexec":
		var sfs unix.Statfs_t
		if err := unix.Statfs(o.Path, &sfs); err != nil {
			return errno(err)
		}
		return fmt.Sprintf("ok:%t", sfs.Flags&unix.ST_NOEXEC != 0)
	case "mapexec": // what the loader does with a library: map it executable
		fd, err := unix.Open(o.Path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return errno(err)
		}
		defer unix.Close(fd)
		b, err := unix.Mmap(fd, 0, 4096, unix.PROT_READ|unix.PROT_EXEC, unix.MAP_PRIVATE)
		if err == nil {
			unix.Munmap(b)
		}
		return errno(err)
	case "symlink":
		return errno(os.Symlink(o.Arg, o.Path))
	case "link":
		return errno(os.Link(o.Arg, o.Path))
	case "rename":
		return errno(os.Rename(o.Arg, o.Path))
	case "exec":
		return errno(exec.Command(o.Path, strings.Fields(o.Arg)...).Run())
	case "connect", "mptcp":
		proto := 0
		if o.Op == "mptcp" {
			proto = 262 // IPPROTO_MPTCP
		}
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, proto)
		if err != nil {
			return "socket:" + errno(err)
		}
		defer unix.Close(fd)
		return errno(unix.Connect(fd, &unix.SockaddrInet4{Port: o.Port, Addr: [4]byte{127, 0, 0, 1}}))
	case "bind":
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return "socket:" + errno(err)
		}
		defer unix.Close(fd)
		return errno(unix.Bind(fd, &unix.SockaddrInet4{Port: o.Port, Addr: [4]byte{127, 0, 0, 1}}))
	case "abstract":
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return "socket:" + errno(err)
		}
		defer unix.Close(fd)
		return errno(unix.Connect(fd, &unix.SockaddrUnix{Name: o.Arg}))
	case "kill0":
		return errno(unix.Kill(o.Port, 0))
	case "ifaces":
		ifs, err := net.Interfaces()
		if err != nil {
			return errno(err)
		}
		var s []string
		for _, i := range ifs {
			state := "down"
			if i.Flags&net.FlagUp != 0 {
				state = "up"
			}
			s = append(s, i.Name+":"+state)
		}
		return "ok:" + strings.Join(s, ",")
	case "caps":
		b, err := os.ReadFile("/proc/self/status")
		if err != nil {
			return errno(err)
		}
		var s []string
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "Cap") || strings.HasPrefix(l, "NoNewPrivs") {
				s = append(s, strings.Join(strings.Fields(l), ""))
			}
		}
		return "ok:" + strings.Join(s, ",")
	case "id":
		return fmt.Sprintf("ok:uid=%d,gid=%d", os.Getuid(), os.Getgid())
	case "pid":
		return fmt.Sprintf("ok:%d", os.Getpid())
	case "umount":
		return errno(unix.Unmount(o.Path, unix.MNT_DETACH))
	case "remount-rw":
		return errno(unix.MountSetattr(unix.AT_FDCWD, o.Path, 0, &unix.MountAttr{Attr_clr: unix.MOUNT_ATTR_RDONLY}))
	case "mount-tmpfs":
		return errno(unix.Mount("tmpfs", o.Path, "tmpfs", 0, ""))
	}
	return "BUG: unknown op " + o.Op
}

// run runs s in the given mode ("root" or "user") and returns what the probe saw.
func run(t *testing.T, mode string, s spec) output {
	t.Helper()
	var cmd *exec.Cmd
	switch {
	case mode == "root":
		testutil.RequireRoot(t)
		cmd = startInit(s, true)
	case mode == "user" && os.Geteuid() != 0:
		// An ordinary user on a laptop: the init stage's user namespace is made by this user.
		cmd = startInit(s, false)
	case mode == "user":
		cmd = exec.Command("/proc/self/exe")
		cmd.Env = append(withoutRole(os.Environ()), envRole+"=launcher")
		cmd.SysProcAttr = &syscall.SysProcAttr{
			Credential: &syscall.Credential{Uid: nobody, Gid: nobody},
			Pdeathsig:  syscall.SIGKILL,
		}
	default:
		t.Fatalf("BUG: mode %q", mode)
	}
	if s.TTY {
		pts := openPTY(t)
		cmd.Stdin = pts
		cmd.SysProcAttr.Setsid, cmd.SysProcAttr.Setctty, cmd.SysProcAttr.Ctty = true, true, 0
	}
	js, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Env = append(cmd.Env, envSpec+"="+string(js))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s sandbox run: %v\nstdout: %s\nstderr: %s", mode, err, stdout.String(), stderr.String())
	}
	var out output
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("%s sandbox output %q: %v\nstderr: %s", mode, stdout.String(), err, stderr.String())
	}
	if stderr.Len() > 0 {
		t.Logf("%s sandbox stderr: %s", mode, stderr.String())
	}
	return out
}

// mustApply fails the test when Apply failed in the init stage.
func mustApply(t *testing.T, mode string, out output) {
	t.Helper()
	if out.ApplyErr != "" {
		err := errors.New(out.ApplyErr)
		if out.ApplyMissing {
			err = testutil.NotAvailable("%s", out.ApplyErr)
		}
		testutil.RequireNoErr(t, mode+" sandbox apply", err)
	}
}

type check struct {
	op   op
	want string
}

// runChecks runs the checks' ops in one sandbox and compares each result.
func runChecks(t *testing.T, mode string, plan Plan, extraClone uintptr, checks []check) output {
	t.Helper()
	s := spec{Plan: plan, ExtraClone: extraClone}
	for _, c := range checks {
		s.Ops = append(s.Ops, c.op)
	}
	out := run(t, mode, s)
	mustApply(t, mode, out)
	if len(out.Got) != len(checks) {
		t.Fatalf("%s: got %d results for %d ops: %q", mode, len(out.Got), len(checks), out.Got)
	}
	for i, c := range checks {
		if out.Got[i] != c.want {
			t.Errorf("%s: %s %s %s port=%d: got %q, want %q", mode, c.op.Op, c.op.Path, c.op.Arg, c.op.Port, out.Got[i], c.want)
		}
	}
	return out
}

// openPTY allocates a pseudo-terminal and returns its peer (the terminal end), open for the
// sandbox's stdin; both ends are closed when the test ends.
func openPTY(t *testing.T) *os.File {
	t.Helper()
	_, pts := testutil.OpenPTY(t)
	if err := pts.Chown(nobody, -1); err != nil && os.Geteuid() == 0 {
		t.Fatal(err)
	}
	return pts
}

// fixture is a directory tree under the host's /tmp that the sandboxed user owns.
type fixture struct {
	base string
	uid  int
}

func newFixture(t *testing.T, mode string) *fixture {
	t.Helper()
	return newFixtureIn(t, mode, "")
}

// newFixtureIn makes the fixture below dir ("" for the host's temp dir). Tests that combine
// PrivateTmp with host files outside Writable need a dir that is not covered by the private tmp.
func newFixtureIn(t *testing.T, mode, dir string) *fixture {
	t.Helper()
	base, err := os.MkdirTemp(dir, "sysprof-sandbox-")
	if err != nil {
		testutil.RequireNoErr(t, "fixture dir in "+dir, err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	f := &fixture{base: base, uid: os.Getuid()}
	if mode == "user" && os.Getuid() == 0 {
		f.uid = nobody
	}
	return f
}

func (f *fixture) path(rel string) string { return filepath.Join(f.base, rel) }

// file writes content to rel (creating parents) owned by the sandboxed user.
func (f *fixture) file(t *testing.T, rel, content string) string {
	t.Helper()
	p := f.path(rel)
	f.dir(t, filepath.Dir(rel))
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(p, f.uid, f.uid); err != nil {
		t.Fatal(err)
	}
	return p
}

func (f *fixture) dir(t *testing.T, rel string) string {
	t.Helper()
	p := f.path(rel)
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	for d := p; d != f.base && strings.HasPrefix(d, f.base); d = filepath.Dir(d) {
		if err := os.Lchown(d, f.uid, f.uid); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

var modes = []string{"root", "user"}
