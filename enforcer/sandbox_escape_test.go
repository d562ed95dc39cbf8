package enforcer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/policy"
)

// fsFixture is a work tree, a home with a credential store, and a profile that lets the victim
// read the system and the work tree, write only out/ ($HOME/out, reached as $WORKDIR/out: see
// boundOut), and exec only itself.
type fsFixture struct {
	work, home, secret, victim string
	profile                    *policy.Profile
	vars                       map[string]string
}

func newFSFixture(t *testing.T) *fsFixture {
	t.Helper()
	f := &fsFixture{work: t.TempDir(), home: t.TempDir(), victim: testutil.BuildC(t, "escape/escape.c")}
	boundOut(t, f.work, filepath.Join(f.home, "out"), os.Getuid(), os.Getgid())
	for _, d := range []string{filepath.Join(f.home, ".ssh")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	f.secret = filepath.Join(f.home, ".ssh", "id_ed25519")
	for _, file := range []string{f.secret, filepath.Join(f.work, "src.txt")} {
		if err := os.WriteFile(file, []byte("secret\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ld, err := filepath.EvalSymlinks("/lib64/ld-linux-x86-64.so.2")
	testutil.RequireNoErr(t, "the x86_64 dynamic loader", err)
	p := victimProfile()
	rules := func(paths ...string) (out []policy.PathRule) {
		for _, p := range paths {
			out = append(out, policy.PathRule{Path: p})
		}
		return out
	}
	p.Filesystem = policy.Filesystem{
		Read:   rules("/usr", "/etc", "/proc", "$WORKDIR", filepath.Dir(f.victim)),
		Write:  rules("$HOME/out", "/dev/null"),
		Exec:   rules(f.victim, ld),
		Hidden: rules("$HOME/.ssh"),
	}
	f.profile = p
	f.vars = map[string]string{"HOME": f.home, "WORKDIR": f.work}
	return f
}

func (f *fsFixture) run(t *testing.T, p *policy.Profile, degrade bool, args ...string) runOut {
	t.Helper()
	var stdout, stderr bytes.Buffer
	rep, code, err := Run(context.Background(), Options{
		Profile: p, Command: append([]string{f.victim}, args...), Dir: f.work, Vars: f.vars,
		Degrade: degradeIf(degrade), Stdout: &stdout, Stderr: &stderr,
	})
	return runOut{rep, code, err, stdout.String(), stderr.String()}
}

// unixDaemon listens on a pathname socket outside the sandbox, as a host daemon would.
func unixDaemon(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", "sysprof-daemon-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "daemon.sock")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(path, 0o777)
	t.Cleanup(func() { l.Close() })
	return path
}

func TestSandboxEscapesBlocked(t *testing.T) {
	testutil.RequireRoot(t)
	f := newFSFixture(t)
	daemon := unixDaemon(t)
	abstract := "@sysprof-test-" + strconv.Itoa(os.Getpid())
	al, err := net.Listen("unix", abstract)
	if err != nil {
		t.Fatal(err)
	}
	defer al.Close()
	port := testutil.LoopbackTCP(t)
	target := exec.Command("sleep", "300")
	if err := target.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { target.Process.Kill(); target.Wait() }()
	link := filepath.Join(f.work, "out", "link")

	for _, tc := range []struct {
		name   string
		action string
		want   []string // any of these results
	}{
		{"write read-only source tree", "write=" + filepath.Join(f.work, "src.txt"), []string{"EROFS"}},
		{"write outside the writable set", "write=" + filepath.Join(f.home, "x"), []string{"EROFS", "EACCES"}},
		{"read hidden credential", "read=" + f.secret, []string{"ENOENT", "EACCES"}},
		{"symlink to hidden credential", "symlink-read=" + f.secret + "," + link, []string{"ENOENT", "EACCES"}},
		{"hardlink to hidden credential", "hardlink-read=" + f.secret + "," + link, []string{"ENOENT", "EACCES", "EXDEV"}},
		{"unix socket of a host daemon", "connect-unix=" + daemon, []string{"EACCES", "ENOENT"}},
		{"abstract unix socket outside", "connect-unix=" + abstract, []string{"EPERM", "ECONNREFUSED"}},
		{"loopback port (no network in profile)", fmt.Sprintf("connect=127.0.0.1:%d", port), []string{"ECONNREFUSED", "ENETUNREACH", "EACCES"}},
		// ESRCH: the PID namespace hides it; EPERM: Landlock's signal scope (or its uid).
		{"signal a process outside", "kill=" + strconv.Itoa(target.Process.Pid), []string{"ESRCH", "EPERM"}},
		{"exec a binary never run", "exec=/usr/bin/true", []string{"EACCES"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The benign write uses a relative path: the working directory must be the
			// sandbox's view of it, not the host mount entered before the mounts.
			o := f.run(t, f.profile, false, tc.action, "write=out/ok.txt", "ok")
			if o.err != nil || o.code != 0 {
				t.Fatalf("run: %s", o)
			}
			name, _, _ := strings.Cut(tc.action, "=")
			got := ""
			for _, line := range strings.Split(o.stdout, "\n") {
				if r, ok := strings.CutPrefix(line, name+": "); ok {
					got = r
					break
				}
			}
			ok := false
			for _, w := range tc.want {
				ok = ok || got == w
			}
			if !ok {
				t.Errorf("%s: got %q, want one of %v\n%s", name, got, tc.want, o)
			}
			if !strings.Contains(o.stdout, "write: ok\nok\n") {
				t.Errorf("benign write to the writable dir did not work in the same run:\n%s", o)
			}
			for _, l := range o.rep.Layers {
				if l.State != "applied" {
					t.Errorf("layer %s is %s: %s", l.Name, l.State, l.Detail)
				}
			}
		})
	}
}

// Without the guard (what an ordinary user has) a network allowlist runs, not degraded: the
// egress proxy holds the addresses, Landlock the ports.
func TestNetworkAllowlistByPort(t *testing.T) {
	testutil.RequireRoot(t)
	f := newFSFixture(t)
	allowed := testutil.LoopbackTCP(t)
	other := testutil.LoopbackTCP(t)
	p := f.profile
	p.Network.Connect = []policy.Endpoint{{Endpoint: fmt.Sprintf("127.0.0.1:%d", allowed), Proto: "tcp"}}
	saved := guardAvailable
	guardAvailable = func() error { return errors.New("test: no guard") }
	defer func() { guardAvailable = saved }()
	o := f.run(t, p, false, fmt.Sprintf("connect=127.0.0.1:%d", other), fmt.Sprintf("connect=127.0.0.1:%d", allowed))
	if o.err != nil || o.code != 0 {
		t.Fatalf("run: %s", o)
	}
	if !strings.Contains(o.stdout, "connect: EACCES\nconnect: ok\n") {
		t.Errorf("want the other port refused and the allowed one connected:\n%s", o)
	}
	if len(o.rep.Degraded()) != 0 {
		t.Errorf("degraded layers without the guard:\n%s", o)
	}
}

// A work tree inside /tmp with a private /tmp: the tree is bound read-only from the host (a
// read-only mount: Landlock's write rule on the private /tmp would cover it), and relative paths
// work from the working directory.
func TestWorkTreeInsidePrivateTmp(t *testing.T) {
	testutil.RequireRoot(t)
	f := newFSFixture(t)
	if !strings.HasPrefix(f.work, "/tmp/") {
		testutil.RequireNoErr(t, "a work tree under /tmp", testutil.NotAvailable("%s is not under /tmp (TMPDIR is set)", f.work))
	}
	f.profile.Filesystem.PrivateTmp = true
	o := f.run(t, f.profile, false, "read=src.txt", "write=src.txt", "write=out/ok.txt", "ok")
	if o.err != nil || o.code != 0 {
		t.Fatalf("run: %s", o)
	}
	if !strings.Contains(o.stdout, "read: ok\nwrite: EROFS\nwrite: ok\nok\n") {
		t.Errorf("want the tree readable, read-only, and out/ writable, by relative paths:\n%s", o)
	}
}

// degradeIf is DegradeAll when degrade, else nil (fail closed).
func degradeIf(degrade bool) Degrade {
	if degrade {
		return DegradeAll
	}
	return nil
}

// boundOut makes host (a directory outside the work tree) the victim's writable out/, owned by
// uid and gid, and work/out a symlink to it: the victim's relative out/ paths reach a directory
// bound writable while the work tree stays read-only. (An existing directory a rule names inside
// the work tree is staged with the work tree instead, so that a tool may remove it: writes to
// the tree's other files then land in the changeset, not on EROFS; see replaceableParent.)
func boundOut(t testing.TB, work, host string, uid, gid int) {
	t.Helper()
	if err := os.MkdirAll(host, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(host, uid, gid); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(host, filepath.Join(work, "out")); err != nil {
		t.Fatal(err)
	}
}
