package enforcer

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/policy"
)

// nsProfile lets readlink print its namespaces (audit: syscalls go through, the filesystem
// layers still enforce), with a network allowlist when network.
func nsProfile(t *testing.T, network bool) *policy.Profile {
	t.Helper()
	ld, err := filepath.EvalSymlinks("/lib64/ld-linux-x86-64.so.2")
	testutil.RequireNoErr(t, "the x86_64 dynamic loader", err)
	readlink, err := filepath.EvalSymlinks("/usr/bin/readlink")
	testutil.RequireNoErr(t, "readlink", err)
	p := victimProfile()
	p.Filesystem = policy.Filesystem{
		Read: []policy.PathRule{{Path: "/usr"}, {Path: "/etc"}, {Path: "/proc"}},
		Exec: []policy.PathRule{{Path: readlink}, {Path: ld}},
	}
	if network {
		p.Network.Connect = []policy.Endpoint{{Endpoint: "127.0.0.1:9", Proto: "tcp"}}
	}
	return p
}

// The early init stage (StartEarly, before the profile is known) must give the command the
// sandbox a stage started for the profile gives it: its own mount namespace, its own network
// namespace exactly when the profile has no network (the early stage unshares it itself), and
// the run's cgroup.
func TestEarlyStageNamespaces(t *testing.T) {
	testutil.RequireRoot(t)
	host := map[string]string{}
	for _, ns := range []string{"net", "mnt"} {
		l, err := os.Readlink("/proc/self/ns/" + ns)
		if err != nil {
			t.Fatal(err)
		}
		host[ns] = l
	}
	for _, tc := range []struct {
		name           string
		network, early bool
	}{
		{"late, no network", false, false},
		{"early, no network", false, true},
		{"late, network", true, false},
		{"early, network", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			opts := Options{Profile: nsProfile(t, tc.network), Audit: true, Dir: t.TempDir(), Stdout: &stdout, Stderr: &stderr,
				Command: []string{"readlink", "/proc/self/ns/net", "/proc/self/ns/mnt"}}
			var e *Early
			if tc.early {
				if e = StartEarly(opts); e == nil {
					t.Fatal("StartEarly: nil as root")
				}
				defer e.Close()
				opts.Early = e
			}
			rep, code, err := Run(context.Background(), opts)
			if err != nil || code != 0 {
				t.Fatalf("run: exit %d %v\n%s%s", code, err, stdout.String(), stderr.String())
			}
			lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
			if len(lines) != 2 {
				t.Fatalf("output %q", stdout.String())
			}
			if lines[0] == host["net"] { // a network allowlist too: its egress proxy serves the sandbox's own
				t.Errorf("network namespace %s is the host's", lines[0])
			}
			if lines[1] == host["mnt"] {
				t.Errorf("mount namespace is the host's (%s)", lines[1])
			}
			if tc.early && !e.taken {
				t.Error("Run did not take the early stage")
			}
			for _, l := range rep.Layers {
				if l.State != "applied" {
					t.Errorf("layer %s is %s: %s", l.Name, l.State, l.Detail)
				}
			}
		})
	}
}

// As root the early stage is born into the run's cgroup: the guard must see its file denials.
func TestEarlyStageFileDenialsReported(t *testing.T) {
	testutil.RequireRoot(t)
	f := newFSFixture(t)
	var stdout, stderr bytes.Buffer
	opts := Options{Profile: f.profile, Command: []string{f.victim, "write=src.txt", "ok"}, Dir: f.work, Vars: f.vars,
		Stdout: &stdout, Stderr: &stderr}
	e := StartEarly(opts)
	if e == nil {
		t.Fatal("StartEarly: nil as root")
	}
	defer e.Close()
	if e.cg == nil {
		t.Fatal("the early stage has no cgroup as root")
	}
	opts.Early = e
	rep, code, err := Run(context.Background(), opts)
	if err != nil || code != 0 || stdout.String() != "write: EROFS\nok\n" {
		t.Fatalf("run: exit %d %v\n%s%s", code, err, stdout.String(), stderr.String())
	}
	if !e.taken {
		t.Fatal("Run did not take the early stage")
	}
	src := filepath.Join(f.work, "src.txt")
	for _, d := range rep.Denials {
		if d.Path == src {
			return
		}
	}
	t.Errorf("the write to %s was not reported: %+v", src, rep.Denials)
}

// A run that does not fit the early stage (other streams) kills it and removes its cgroup, and
// runs in a stage of its own.
func TestEarlyStageNotFittingIsKilled(t *testing.T) {
	testutil.RequireRoot(t)
	var early, stdout bytes.Buffer
	opts := Options{Profile: nsProfile(t, false), Audit: true, Dir: t.TempDir(), Stdout: &early, Stderr: &early,
		Command: []string{"readlink", "/proc/self/ns/net"}}
	e := StartEarly(opts)
	if e == nil {
		t.Fatal("StartEarly: nil as root")
	}
	defer e.Close()
	pid, cgDir := e.st.pid, e.cg.Dir
	opts.Stdout, opts.Stderr, opts.Early = &stdout, &stdout, e
	_, code, err := Run(context.Background(), opts)
	if err != nil || code != 0 || !strings.HasPrefix(stdout.String(), "net:[") {
		t.Fatalf("run: exit %d %v\n%s", code, err, stdout.String())
	}
	if e.taken {
		t.Error("Run took an early stage with other streams")
	}
	if early.Len() > 0 {
		t.Errorf("the early stage wrote %q", early.String())
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Errorf("the early stage (pid %d) is still alive", pid)
	}
	if _, err := os.Stat(cgDir); !os.IsNotExist(err) {
		t.Errorf("its cgroup %s is still there: %v", cgDir, err)
	}
}
