package testutil

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
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
