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
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/report"
)

// The init program's memfd is sealed before anything runs it: nothing (this process included)
// can write, resize or unseal it, and it still runs.
func TestSealedMemfdCannotChange(t *testing.T) {
	bin, err := os.ReadFile("/usr/bin/true")
	testutil.RequireNoErr(t, "/usr/bin/true", err)
	fd, err := sealedMemfd("sysprof-test", string(bin))
	testutil.RequireNoErr(t, "sealed memfd", err)
	defer unix.Close(fd)
	if fd <= fdReplica {
		t.Errorf("memfd is fd %d: a child's inherited fds (3-%d) would replace it before its exec", fd, fdReplica)
	}
	seals, err := unix.FcntlInt(uintptr(fd), unix.F_GET_SEALS, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []struct {
		name string
		bit  int
	}{{"write", unix.F_SEAL_WRITE}, {"shrink", unix.F_SEAL_SHRINK}, {"grow", unix.F_SEAL_GROW}, {"seal", unix.F_SEAL_SEAL}} {
		if seals&s.bit == 0 {
			t.Errorf("memfd not sealed against %s (seals %#x)", s.name, seals)
		}
	}
	if _, err := unix.Pwrite(fd, []byte{0}, 0); !errors.Is(err, unix.EPERM) {
		t.Errorf("pwrite into the sealed memfd: %v, want EPERM", err)
	}
	if err := unix.Ftruncate(fd, 1); !errors.Is(err, unix.EPERM) {
		t.Errorf("ftruncate of the sealed memfd: %v, want EPERM", err)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, 0); !errors.Is(err, unix.EPERM) {
		t.Errorf("adding seals: %v, want EPERM (F_SEAL_SEAL)", err)
	}
	if out, err := exec.Command(procFD(fd)).CombinedOutput(); err != nil {
		t.Errorf("exec of the sealed memfd: %v %s", err, out)
	}
}

func procFD(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }

// A run whose init stage is the embedded program (what make builds): the stage is the sealed
// memfd's program, not sysprof re-executed, and a sandboxed command runs through it with every
// layer. (The test binary embeds no program: the test builds cmd/sysprof-init and uses it.)
func TestRunWithTheInitProgram(t *testing.T) {
	testutil.RequireRoot(t)
	dir := t.TempDir()
	prog := filepath.Join(dir, "sysprof-init")
	build := exec.Command("go", "build", "-o", prog, "./cmd/sysprof-init")
	build.Dir = testutil.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/sysprof-init: %v\n%s", err, out)
	}
	useKeepDir(t) // not the host's kept program: this one
	saved := initProgram
	data, err := os.ReadFile(prog)
	if err != nil {
		t.Fatal(err)
	}
	initProgram = programFrom(func() string { return string(data) }, nil)
	defer func() { initProgram = saved }()
	if !strings.HasPrefix(initProgram(), "/proc/self/fd/") {
		t.Fatalf("init program %q: not a memfd", initProgram())
	}

	var stdout, stderr bytes.Buffer
	opts := Options{Profile: nsProfile(t, false), Dir: dir, Stdout: &stdout, Stderr: &stderr,
		Command: []string{"readlink", "/proc/self/ns/net"}}
	e := StartEarly(opts)
	if e == nil {
		t.Fatal("StartEarly: nil as root")
	}
	defer e.Close()
	exe, err := os.Readlink("/proc/" + strconv.Itoa(e.st.pid) + "/exe")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(exe, "/memfd:sysprof-init") {
		t.Errorf("the init stage runs %q, want the sealed memfd's program", exe)
	}
	opts.Early = e
	rep, code, err := Run(context.Background(), opts)
	if err != nil || code != 0 {
		t.Fatalf("run: exit %d %v\n%s%s", code, err, stdout.String(), stderr.String())
	}
	host, _ := os.Readlink("/proc/self/ns/net")
	if got := strings.TrimSpace(stdout.String()); got == "" || got == host {
		t.Errorf("command's network namespace %q, want its own (host %s)", got, host)
	}
	applied := map[string]bool{}
	for _, l := range rep.Layers {
		applied[l.Name] = l.State == report.LayerApplied
	}
	for _, l := range []string{LayerSeccomp, LayerMounts, LayerLandlock, LayerNetNS, LayerCaps} {
		if !applied[l] {
			t.Errorf("layer %s not applied: %+v", l, rep.Layers)
		}
	}
}

// buildInitProgram builds cmd/sysprof-init (the test binary embeds no program) and returns it.
func buildInitProgram(t *testing.T) []byte {
	t.Helper()
	prog := filepath.Join(t.TempDir(), "sysprof-init")
	build := exec.Command("go", "build", "-o", prog, "./cmd/sysprof-init")
	build.Dir = testutil.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/sysprof-init: %v\n%s", err, out)
	}
	data, err := os.ReadFile(prog)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// While the command runs, the init stage (PID 1 of the sandbox, waiting for it) holds only its
// own descriptors: not the Go runtime's cgroup CPU files, which it kept open before
// (cmd/sysprof-init's containermaxprocs=0).
func TestInitStageHoldsNoCgroupFiles(t *testing.T) {
	testutil.RequireRoot(t)
	data := buildInitProgram(t)
	useKeepDir(t)
	saved := initProgram
	initProgram = programFrom(func() string { return string(data) }, nil)
	defer func() { initProgram = saved }()
	cat, err := filepath.EvalSymlinks("/usr/bin/cat")
	testutil.RequireNoErr(t, "cat", err)
	p := nsProfile(t, false)
	p.Filesystem.Exec = append(p.Filesystem.Exec, policy.PathRule{Path: cat})
	in, feed, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	defer feed.Close()
	var stdout, stderr bytes.Buffer
	opts := Options{Profile: p, Dir: t.TempDir(), Stdin: in, Stdout: &stdout, Stderr: &stderr, Command: []string{"cat"}}
	e := StartEarly(opts)
	if e == nil {
		t.Fatal("StartEarly: nil as root")
	}
	defer e.Close()
	stage := e.st.pid
	opts.Early = e
	done := make(chan error, 1)
	go func() {
		_, code, err := Run(context.Background(), opts)
		if err == nil && code != 0 {
			err = fmt.Errorf("exit %d", code)
		}
		done <- err
	}()
	// The command runs once the stage has a child (the command is the stage's only child).
	for i := 0; ; i++ {
		if kids, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", stage, stage)); len(bytes.TrimSpace(kids)) > 0 {
			break
		}
		if i == 1000 {
			t.Fatalf("the command never started\n%s", stderr.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", stage))
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range fds {
		l, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", stage, fd.Name()))
		if strings.Contains(l, "cpu.") || strings.Contains(l, "cgroup") {
			t.Errorf("the init stage holds fd %s -> %s while the command runs", fd.Name(), l)
		}
	}
	feed.Close()
	if err := <-done; err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
}
