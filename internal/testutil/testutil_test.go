package testutil

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/sysprof/sysprof/internal/hostcheck"
	"github.com/sysprof/sysprof/sandbox"
)

// verdict records what RequireNoErr decided instead of stopping the test.
type verdict struct {
	testing.TB
	skipped, failed bool
}

func (v *verdict) Helper()               {}
func (v *verdict) Skipf(string, ...any)  { v.skipped = true }
func (v *verdict) Fatalf(string, ...any) { v.failed = true }
func (v *verdict) Skip(...any)           { v.skipped = true }
func (v *verdict) Fatal(...any)          { v.failed = true }

// On a laptop a missing feature or permission skips and anything else fails; under CI=true
// everything fails.
func TestRequireNoErr(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		skip bool // on a laptop
	}{
		{"nil", nil, false},
		{"sandbox unsupported", &sandbox.UnsupportedError{Feature: "landlock", Reason: "off"}, true},
		{"hostcheck unsupported", fmt.Errorf("probe: %w", &hostcheck.UnsupportedError{Feature: "bpf"}), true},
		{"ebpf unsupported", fmt.Errorf("map: %w", ebpf.ErrNotSupported), true},
		{"ENOSYS", syscall.ENOSYS, true},
		{"EPERM", &os.PathError{Op: "mount", Path: "/x", Err: syscall.EPERM}, true},
		{"EACCES", syscall.EACCES, true},
		{"no program", &exec.Error{Name: "cc", Err: exec.ErrNotFound}, true},
		{"no file", &os.PathError{Op: "open", Path: "/lib64/ld", Err: syscall.ENOENT}, true},
		{"NotAvailable", NotAvailable("ABI %d < 6", 5), true},
		{"a failure", errors.New("load learn.c: verifier rejected program"), false},
		{"EINVAL", syscall.EINVAL, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, ci := range []string{"", "true"} {
				t.Setenv("CI", ci)
				v := &verdict{TB: t}
				RequireNoErr(v, "x", tc.err)
				wantSkip := tc.skip && ci == ""
				wantFail := tc.err != nil && !wantSkip
				if v.skipped != wantSkip || v.failed != wantFail {
					t.Errorf("CI=%q: skipped %v failed %v, want skipped %v failed %v", ci, v.skipped, v.failed, wantSkip, wantFail)
				}
			}
		})
	}
}

func TestListen(t *testing.T) {
	port := LoopbackTCP(t)
	c, err := net.Dial("tcp4", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatalf("dial the listener: %v", err)
	}
	// The listener accepts and closes: the read ends without data.
	if n, err := c.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Errorf("read = %d, %v; want EOF", n, err)
	}
	c.Close()
	l := Listen(t, "unix", "@sysprof-testutil-"+t.Name())
	if c, err := net.Dial("unix", l.Addr().String()); err != nil {
		t.Errorf("dial the unix listener: %v", err)
	} else {
		c.Close()
	}
	// A non-loopback address fails the test instead of listening.
	v := &verdict{}
	if l := Listen(v, "tcp4", "0.0.0.0:0"); l != nil || !v.failed {
		t.Error("Listen on 0.0.0.0 did not fail the test")
	}
}

func TestRecord(t *testing.T) {
	r := Record(t, func(port int) string { return fmt.Sprintf("echo %d", port) })
	c, err := net.Dial("tcp4", fmt.Sprintf("127.0.0.1:%d", r.Port))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprint(c, "GET /x.sh HTTP/1.0\r\nHost: a\r\n\r\n")
	reply, _ := io.ReadAll(c)
	if want := fmt.Sprintf("\r\n\r\necho %d", r.Port); !strings.HasSuffix(string(reply), want) {
		t.Errorf("reply %q does not end with the answer %q", reply, want)
	}
	if n, got := r.Received(); n != 1 || !strings.HasPrefix(got, "GET /x.sh ") {
		t.Errorf("Received() = %d, %q; want the one GET", n, got)
	}
}

// A Box's environment is its own (nothing from the test's), commands are looked up in its PATH,
// and a Result says how the command ended.
func TestBoxRun(t *testing.T) {
	sh := RequireTool(t, "sh")
	t.Setenv("SYSPROF_TESTUTIL_LEAK", "1")
	root := t.TempDir()
	b := NewBox(t, &Box{Work: filepath.Join(root, "w"), Home: filepath.Join(root, "h"), Tmp: filepath.Join(root, "t"),
		Path: filepath.Dir(sh), Env: []string{"A=env"}, Extra: []string{"A=extra"}})
	r := b.Run(t, "sh", "-c", `echo "$A $HOME $TMPDIR ${SYSPROF_TESTUTIL_LEAK:-none}"; pwd; echo err >&2; exit 3`)
	if want := fmt.Sprintf("extra %s %s none\n%s\n", b.Home, b.Tmp, b.Work); r.Code != 3 || r.Stdout != want || r.Stderr != "err\n" {
		t.Errorf("got %s\nwant exit 3 and stdout %q", r, want)
	}
	if r := b.Run(t, "sh", "-c", "kill -9 $$"); r.Code != 128+9 {
		t.Errorf("a command killed by SIGKILL: exit %d, want 137", r.Code)
	}
	if _, err := LookPath(b.Path, "sysprof-testutil-no-such-tool"); !Missing(err) {
		t.Errorf("LookPath of a missing tool: %v, want a missing-program error", err)
	}
}
