package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/internal/testutil"
)

// TestMountLayer: read-only root gives EROFS outside Writable, Writable works, hidden dirs are
// empty, hidden files read as empty and cannot be written, reached through a symlink they are
// still empty, a hard link to them fails (EXDEV: the name resolves to the empty file on its own
// mount, and link(2) never crosses mounts), a hidden path that does not exist stays absent, the
// tool cannot undo the mounts (capabilities dropped), /dev/null stays writable.
func TestMountLayer(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			f := newFixture(t, mode)
			work := f.dir(t, "work")
			env := f.file(t, "work/.env", "SECRET-ENV")
			ro := f.file(t, "ro.txt", "host")
			f.file(t, "home/.ssh/id_rsa", "SECRET-KEY")
			ssh := f.path("home/.ssh")
			netrc := f.file(t, "home/.netrc", "SECRET-NETRC")
			missing := f.path("home/missing")
			daemon := unixListener(t, f.path("run/daemon.sock"))
			otherDaemon := unixListener(t, f.path("run/other.sock"))
			wantID := "ok:uid=0,gid=0"
			if f.uid != 0 {
				wantID = fmt.Sprintf("ok:uid=%d,gid=%d", f.uid, f.uid)
			}
			zero := "0000000000000000"
			wantCaps := "ok:CapInh:" + zero + ",CapPrm:" + zero + ",CapEff:" + zero + ",CapBnd:" + zero + ",CapAmb:" + zero + ",NoNewPrivs:0"

			plan := Plan{
				ReadOnlyRoot: true,
				Writable:     []string{work},
				Hidden:       []string{ssh, netrc, env, missing, daemon},
				DropCaps:     true,
			}
			out := runChecks(t, mode, plan, 0, []check{
				{op{Op: "write", Path: ro, Arg: "pwned"}, "EROFS"},
				{op{Op: "write", Path: "/etc/sysprof-sandbox-test"}, "EROFS"},
				{op{Op: "write", Path: filepath.Join(work, "new"), Arg: "x"}, "ok"},
				{op{Op: "read", Path: filepath.Join(work, "new")}, "ok:x"},
				{op{Op: "readdir", Path: ssh}, "ok:"},
				{op{Op: "read", Path: filepath.Join(ssh, "id_rsa")}, "ENOENT"},
				{op{Op: "read", Path: netrc}, "ok:"},
				{op{Op: "write", Path: netrc, Arg: "x"}, "EROFS"},
				{op{Op: "read", Path: env}, "ok:"},
				{op{Op: "write", Path: env, Arg: "x"}, "EROFS"},
				{op{Op: "rename", Arg: env, Path: filepath.Join(work, "moved")}, "EBUSY"},
				{op{Op: "symlink", Arg: netrc, Path: filepath.Join(work, "ln")}, "ok"},
				{op{Op: "read", Path: filepath.Join(work, "ln")}, "ok:"},
				{op{Op: "link", Arg: netrc, Path: filepath.Join(work, "hl")}, "EXDEV"},
				{op{Op: "link", Arg: filepath.Join(ssh, "id_rsa"), Path: filepath.Join(work, "hl2")}, "ENOENT"},
				{op{Op: "stat", Path: missing}, "ENOENT"},
				{op{Op: "write", Path: "/dev/null", Arg: "x"}, "ok"},
				{op{Op: "openrw", Path: "/dev/zero"}, "ok"},
				{op{Op: "read1", Path: "/dev/urandom"}, "ok:1"},
				{op{Op: "openpty"}, "ok"},
				{op{Op: "unix", Path: daemon}, "EACCES"},  // a hidden daemon socket: covered by an empty 0444 file
				{op{Op: "unix", Path: otherDaemon}, "ok"}, // control: not hidden
				{op{Op: "umount", Path: ssh}, "EPERM"},
				{op{Op: "umount", Path: work}, "EPERM"},
				{op{Op: "remount-rw", Path: "/"}, "EPERM"},
				{op{Op: "mount-tmpfs", Path: work}, "EPERM"},
				{op{Op: "id"}, wantID},
				{op{Op: "caps"}, wantCaps},
			})
			// The host saw the writable write, and nothing else changed.
			if b, err := os.ReadFile(filepath.Join(work, "new")); err != nil || string(b) != "x" {
				t.Errorf("host: work/new = %q, %v; want the sandbox's write", b, err)
			}
			for p, want := range map[string]string{ro: "host", netrc: "SECRET-NETRC", env: "SECRET-ENV"} {
				if b, err := os.ReadFile(p); err != nil || string(b) != want {
					t.Errorf("host: %s = %q, %v; want %q", p, b, err, want)
				}
			}
			var st unix.Stat_t
			if err := unix.Stat(filepath.Join(work, "new"), &st); err != nil || int(st.Uid) != f.uid {
				t.Errorf("host: work/new owner = %d, %v; want %d (the caller, not root)", st.Uid, err, f.uid)
			}
			if !hasSkipped(out.Result, LayerMounts, missing) {
				t.Errorf("result does not report the missing hidden path as skipped: %+v", out.Result)
			}
		})
	}
}

// TestPrivateTmp: /tmp, /var/tmp and /dev/shm are fresh and empty, writes there do not reach the
// host, and a writable directory below /tmp (t.TempDir, $TMPDIR builds) is bound back in.
func TestPrivateTmp(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			f := newFixture(t, mode) // under the host's /tmp
			work := f.dir(t, "work")
			f.file(t, "work/in", "hostdata")
			single := f.file(t, "single.log", "")
			marker, err := os.CreateTemp("", "sysprof-marker-")
			if err != nil {
				t.Fatal(err)
			}
			marker.Close()
			t.Cleanup(func() { os.Remove(marker.Name()) })
			private := fmt.Sprintf("/tmp/sysprof-private-%d", os.Getpid())
			t.Cleanup(func() { os.Remove(private) })

			checks := []check{
				{op{Op: "stat", Path: marker.Name()}, "ENOENT"},
				{op{Op: "readdir", Path: "/tmp"}, "ok:" + filepath.Base(f.base)},
				{op{Op: "readdir", Path: f.base}, "ok:single.log,work"},
				{op{Op: "write", Path: single, Arg: "log"}, "ok"},
				{op{Op: "write", Path: private, Arg: "p"}, "ok"},
				{op{Op: "read", Path: private}, "ok:p"},
				{op{Op: "read", Path: filepath.Join(work, "in")}, "ok:hostdata"},
				{op{Op: "write", Path: filepath.Join(work, "out"), Arg: "y"}, "ok"},
				{op{Op: "write", Path: filepath.Join(f.base, "beside-work"), Arg: "z"}, "ok"}, // private tmpfs
			}
			for _, d := range []string{"/var/tmp", "/dev/shm"} {
				if st, err := os.Lstat(d); err == nil && st.IsDir() {
					checks = append(checks,
						check{op{Op: "readdir", Path: d}, "ok:"},
						check{op{Op: "write", Path: filepath.Join(d, "sysprof-x"), Arg: "x"}, "ok"})
				}
			}
			runChecks(t, mode, Plan{ReadOnlyRoot: true, PrivateTmp: true, Writable: []string{work, single}, DropCaps: true}, 0, checks)
			for _, p := range []string{private, filepath.Join(f.base, "beside-work"), "/var/tmp/sysprof-x", "/dev/shm/sysprof-x"} {
				if _, err := os.Stat(p); err == nil {
					os.Remove(p)
					t.Errorf("host: %s exists: a private tmp write reached the host", p)
				}
			}
			if b, err := os.ReadFile(single); err != nil || string(b) != "log" {
				t.Errorf("host: single.log = %q, %v; want the sandbox's write through the file bind", b, err)
			}
			if b, err := os.ReadFile(filepath.Join(work, "out")); err != nil || string(b) != "y" {
				t.Errorf("host: work/out = %q, %v; want the sandbox's write through the bind", b, err)
			}
		})
	}
}

// TestNoExecOnEveryWritableRoot: every writable mount NoExec names is noexec, and one it does
// not name is not, with five writable roots beside the private tmpfs (making the root
// read-only sorted a slice that shared its array with the writable roots, and the last two of
// five dropped out of the noexec pass).
func TestNoExecOnEveryWritableRoot(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			f := newFixture(t, mode)
			var roots []string
			var checks []check
			for _, name := range []string{"a", "b", "c", "d", "x"} {
				roots = append(roots, f.dir(t, name))
				want := "ok:true"
				if name == "x" {
					want = "ok:false"
				}
				checks = append(checks, check{op{Op: "noexec", Path: roots[len(roots)-1]}, want})
			}
			plan := Plan{ReadOnlyRoot: true, PrivateTmp: true, Writable: roots, NoExec: roots[:4], DropCaps: true}
			runChecks(t, mode, plan, 0, checks)
		})
	}
}

// TestNoExecTrees: a read-only tree of NoExecTrees cannot be mapped executable (what ld.so,
// LD_PRELOAD and dlopen do), but for the kept file and directory; a writable mount inside it
// keeps its own flag, and a cover over a hidden file stays.
func TestNoExecTrees(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			f := newFixture(t, mode)
			tree := f.dir(t, "tree")
			evil := f.file(t, "tree/evil.so", "x")
			kept := f.file(t, "tree/lib/kept.so", "x")
			other := f.file(t, "tree/lib/other.so", "x")
			inDir := f.file(t, "tree/venv/ext.so", "x")
			secret := f.file(t, "tree/secret", "s3cret")
			w := f.dir(t, "tree/out")
			plan := Plan{ReadOnlyRoot: true, Writable: []string{w}, Hidden: []string{secret}, DropCaps: true,
				NoExecTrees: []string{tree}, ExecKeep: []string{kept, filepath.Dir(inDir), f.path("tree/missing")}}
			runChecks(t, mode, plan, 0, []check{
				{op{Op: "mapexec", Path: evil}, "EPERM"},
				{op{Op: "mapexec", Path: other}, "EPERM"},
				{op{Op: "mapexec", Path: kept}, "ok"},
				{op{Op: "mapexec", Path: inDir}, "ok"},
				{op{Op: "noexec", Path: w}, "ok:false"},
				{op{Op: "write", Path: filepath.Join(w, "new"), Arg: "x"}, "ok"},
				{op{Op: "read", Path: secret}, "ok:"},
			})
		})
	}
}

// TestDevTTY: the controlling terminal stays usable under a read-only root, and under Landlock
// when /dev/tty is in Devices (and only then).
func TestDevTTY(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			for _, c := range []struct {
				devices []string
				want    string
			}{{[]string{"/dev/tty"}, "ok"}, {nil, "EACCES"}} {
				plan := Plan{ReadOnlyRoot: true, DropCaps: true, Landlock: &Landlock{Read: systemRead, Exec: systemExec, Devices: c.devices}}
				out := run(t, mode, spec{Plan: plan, TTY: true, Ops: []op{{Op: "openrw", Path: "/dev/tty"}}})
				mustApply(t, mode, out)
				if len(out.Got) != 1 || out.Got[0] != c.want {
					t.Errorf("%s: open /dev/tty with Devices %q: got %q, want %q", mode, c.devices, out.Got, c.want)
				}
			}
		})
	}
}

// TestPIDNamespaceProc: when the enforcer adds CLONE_NEWPID, Apply mounts a /proc that shows the
// new namespace only.
func TestPIDNamespaceProc(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			runChecks(t, mode, Plan{ReadOnlyRoot: true, DropCaps: true}, unix.CLONE_NEWPID, []check{
				{op{Op: "pid"}, "ok:1"},
				{op{Op: "stat", Path: fmt.Sprintf("/proc/%d", os.Getpid())}, "ENOENT"},
				{op{Op: "stat", Path: "/proc/self/status"}, "ok"},
			})
		})
	}
}

// TestRefusesHostNamespaces: the guards that keep a missing clone flag from touching the host.
// They only look (no mount, no ioctl that changes anything), so they run in the test process.
func TestRefusesHostNamespaces(t *testing.T) {
	if os.Getpid() == 1 {
		testutil.RequireNoErr(t, "a test process that is not PID 1", testutil.NotAvailable("it is PID 1: the host's namespaces cannot be told apart"))
	}
	if os.Geteuid() == 0 {
		if err := checkNewMountNS(); err == nil || !strings.Contains(err.Error(), "same mount namespace") {
			t.Errorf("checkNewMountNS in the host mount namespace = %v, want a refusal", err)
		}
	}
	if err := bringUpLoopback(); err == nil || !strings.Contains(err.Error(), "already up") {
		t.Errorf("bringUpLoopback in the host network namespace = %v, want a refusal", err)
	}
}

func TestTopLevel(t *testing.T) {
	got := topLevel([]string{"/a/b", "/a", "/ab", "/c/", "/a/b/c", "/c"})
	if want := []string{"/a", "/ab", "/c"}; !slices.Equal(got, want) {
		t.Errorf("topLevel = %q, want %q", got, want)
	}
}

// unixListener listens on a pathname unix socket any uid may connect to, like a daemon's.
func unixListener(t *testing.T, path string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	testutil.Listen(t, "unix", path)
	if err := os.Chmod(path, 0o777); err != nil {
		t.Fatal(err)
	}
	return path
}

func hasSkipped(r *Result, layer, path string) bool {
	if r == nil {
		return false
	}
	for _, s := range r.Skipped {
		if s.Layer == layer && s.Path == path {
			return true
		}
	}
	return false
}

// TestWritableMountsNoSuidNoDev (issue 23 item 3): every mount the command can write is
// nosuid,nodev. As root, a set-uid-root binary in a writable directory, run by another uid,
// keeps that uid; a device node there does not open.
func TestWritableMountsNoSuidNoDev(t *testing.T) {
	testutil.RequireRoot(t) // the set-uid binary and the device node are made by host root
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			f := newFixture(t, mode)
			work := f.dir(t, "work")
			file := f.file(t, "single.log", "")
			suid := filepath.Join(work, "suid")
			b, err := os.ReadFile(self)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(suid, b, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := unix.Chmod(suid, 0o4755); err != nil { // root-owned: set-uid root
				t.Fatal(err)
			}
			null := filepath.Join(work, "null")
			if err := unix.Mknod(null, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err != nil || unix.Chmod(null, 0o666) != nil {
				t.Fatal(err)
			}
			flags := "ok:nosuid=true,nodev=true"
			checks := []check{
				{op{Op: "mountflags", Path: work}, flags},
				{op{Op: "mountflags", Path: file}, flags},
				{op{Op: "mountflags", Path: "/var/tmp"}, flags},
				{op{Op: "openrw", Path: null}, "EACCES"},
			}
			if mode == "root" { // the harness's root is host root: set-uid root would be real
				checks = append(checks, check{op{Op: "suid-exec", Path: suid}, fmt.Sprintf("ok:euid=%d", nobody)})
			}
			runChecks(t, mode, Plan{ReadOnlyRoot: true, PrivateTmp: true, Writable: []string{work, file}}, 0, checks)
		})
	}
}
