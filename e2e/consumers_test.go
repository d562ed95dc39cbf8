package e2e

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/policy"
)

// Issue 25: every export runs in the program that reads it, as strong as enforce. Learned
// profiles run clean in runc, crun and bubblewrap (their exports: oci, bpf + bwrap), and the
// probe's forbidden calls are refused there as under sysprof enforce.

// consumer runs argv in b's work directory under profile (exported for it) and returns the
// result.
type consumer struct {
	name  string
	tools []string
	run   func(t *testing.T, b *testutil.Box, profile string, argv []string) testutil.Result
}

func consumers() []consumer {
	return []consumer{
		{"enforce", nil, func(t *testing.T, b *testutil.Box, profile string, argv []string) testutil.Result {
			return b.Sysprof(t, append([]string{"enforce", "-p", profile, "--"}, argv...)...)
		}},
		{"runc", []string{"runc"}, func(t *testing.T, b *testutil.Box, profile string, argv []string) testutil.Result {
			return runOCI(t, b, profile, argv, "runc", true)
		}},
		// As Docker runs it: runc loads the filter before it drops capabilities and sets ids.
		{"runc-privs", []string{"runc"}, func(t *testing.T, b *testutil.Box, profile string, argv []string) testutil.Result {
			return runOCI(t, b, profile, argv, "runc", false)
		}},
		{"crun", []string{"crun"}, func(t *testing.T, b *testutil.Box, profile string, argv []string) testutil.Result {
			return runOCI(t, b, profile, argv, "crun", true)
		}},
		{"bwrap", []string{"bwrap"}, runBwrapExport},
	}
}

// runOCI exports profile as OCI seccomp JSON and runs argv in a bundle whose root is an empty
// directory with the host's system directories bound read-only and the box (work tree, HOME,
// TMPDIR) bound writable at its own path: runc and crun as root, no container engine.
// noNewPrivs is process.noNewPrivileges: false makes runc load the filter before it drops
// capabilities and sets ids (Docker's default).
func runOCI(t *testing.T, b *testutil.Box, profile string, argv []string, runtime string, noNewPrivs bool) testutil.Result {
	t.Helper()
	dir := t.TempDir()
	scjson := filepath.Join(dir, "seccomp.json")
	if r := b.Sysprof(t, "export", "-p", profile, "--format", "oci", "-o", scjson); r.Code != 0 {
		t.Fatalf("export oci: %s", r)
	}
	var sc json.RawMessage // as written: a float64 would round 64-bit masks
	if err := json.Unmarshal(mustRead(t, scjson), &sc); err != nil {
		t.Fatal(err)
	}
	mounts := []map[string]any{
		{"destination": "/proc", "type": "proc", "source": "proc"},
		{"destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": []string{"nosuid", "mode=755"}},
		{"destination": "/dev/pts", "type": "devpts", "source": "devpts", "options": []string{"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"}},
		{"destination": "/tmp", "type": "tmpfs", "source": "tmpfs", "options": []string{"nosuid", "nodev"}},
	}
	for _, d := range []string{"/usr", "/etc", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32"} {
		if _, err := os.Stat(d); err == nil {
			mounts = append(mounts, map[string]any{"destination": d, "type": "bind", "source": d, "options": []string{"rbind", "ro"}})
		}
	}
	box := filepath.Dir(b.Work)
	mounts = append(mounts, map[string]any{"destination": box, "type": "bind", "source": box, "options": []string{"rbind", "rw"}})
	cfg := map[string]any{
		"ociVersion": "1.0.2",
		"process": map[string]any{
			"args": argv, "env": b.Environ(), "cwd": b.Work, "noNewPrivileges": noNewPrivs,
			"user":         map[string]any{"uid": 0, "gid": 0},
			"capabilities": map[string]any{"bounding": []string{}, "effective": []string{}, "permitted": []string{}},
		},
		"root":     map[string]any{"path": "rootfs", "readonly": true},
		"hostname": "sysprof-test",
		"mounts":   mounts,
		"linux": map[string]any{
			"namespaces": []map[string]string{{"type": "pid"}, {"type": "ipc"}, {"type": "uts"}, {"type": "mount"}, {"type": "network"}},
			"seccomp":    sc,
		},
	}
	bundle := filepath.Join(dir, "bundle")
	if err := os.MkdirAll(filepath.Join(bundle, "rootfs"), 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	testutil.WriteFile(t, filepath.Join(bundle, "config.json"), string(data), 0o644)
	id := fmt.Sprintf("sysprof-%s-%d-%s", runtime, os.Getpid(), filepath.Base(dir))
	state := filepath.Join(dir, "state")
	run := fmt.Sprintf("%s --root %s run --bundle %s %s", runtime, state, bundle, id)
	if runtime == "crun" {
		// crun 1.8 refuses a hybrid cgroup hierarchy: give it a pure cgroup2 view in a private
		// mount namespace (nothing changes on the host), and no cgroup of its own.
		run = fmt.Sprintf("if ! grep -q ' /sys/fs/cgroup cgroup2 ' /proc/self/mounts; then umount -l /sys/fs/cgroup 2>/dev/null; mount -t cgroup2 none /sys/fs/cgroup || exit 125; fi; exec crun --cgroup-manager=disabled --root %s run --bundle %s %s", state, bundle, id)
		return testutil.Run(t, b.Work, b.Environ(), "unshare", "-m", "--propagation", "private", "sh", "-c", run)
	}
	return testutil.Run(t, b.Work, b.Environ(), "sh", "-c", run)
}

// runBwrapExport exports the bpf filter and the bwrap script for profile and runs argv
// through the script.
func runBwrapExport(t *testing.T, b *testutil.Box, profile string, argv []string) testutil.Result {
	t.Helper()
	dir := t.TempDir()
	bpf, sh := filepath.Join(dir, "filter.bpf"), filepath.Join(dir, "run.sh")
	if r := b.Sysprof(t, "export", "-p", profile, "--format", "bpf", "-o", bpf); r.Code != 0 {
		t.Fatalf("export bpf: %s", r)
	}
	if r := b.Sysprof(t, "export", "-p", profile, "--format", "bwrap", "--seccomp-file", bpf, "-o", sh); r.Code != 0 {
		t.Fatalf("export bwrap: %s", r)
	}
	return testutil.Run(t, "/", b.Environ(), append([]string{"sh", sh}, argv...)...)
}

func requireConsumer(t *testing.T, c consumer) {
	t.Helper()
	for _, tool := range append([]string{"unshare", "sh"}, c.tools...) {
		testutil.RequireTool(t, tool)
	}
}

// TestLearnedProfilesRunInConsumers: ls, a python one-liner, make of the C fixture in a fresh
// tree and a pty, each learned once, run clean in every consumer.
func TestLearnedProfilesRunInConsumers(t *testing.T) {
	testutil.RequireRoot(t)
	for _, tc := range []struct {
		name    string
		fixture string
		argv    []string
		want    string
	}{
		{"ls", "", []string{"ls", "-la", "/usr"}, "bin"},
		{"python", "", []string{"python3", "-c", "import json, sys; print(json.dumps(sorted({3: 1, 1: 2})))"}, "[1, 3]"},
		{"make", "cproj", []string{"make"}, "greet.o"},
		{"pty", "", []string{"python3", "-c", "import os; m, s = os.openpty(); os.write(s, b'pty-ok\\n'); print(os.read(m, 100).decode().strip())"}, "pty-ok"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			learn := newBox(t, root, "learn", "dev", "work", tc.fixture)
			profile := filepath.Join(root, "profile.yaml")
			if r := learn.Sysprof(t, append([]string{"learn", "-p", profile, "--"}, tc.argv...)...); r.Code != 0 || !strings.Contains(r.Stdout, tc.want) {
				t.Fatalf("learn: %s", r)
			}
			for _, c := range consumers() {
				t.Run(c.name, func(t *testing.T) {
					requireConsumer(t, c)
					b := newBox(t, root, c.name, "dev", "work", tc.fixture) // a fresh tree
					r := c.run(t, b, profile, tc.argv)
					if r.Code != 0 || !strings.Contains(r.Stdout, tc.want) {
						t.Errorf("%s under %s: %s", strings.Join(tc.argv, " "), c.name, r)
					}
				})
			}
		})
	}
}

// TestForbiddenCallsRefusedInConsumers: the probe learned doing only what is allowed, then its
// forbidden calls (a namespace clone, TIOCSTI with and without bit 32, an AF_INET socket,
// MPTCP with and without bit 32, i386 int 0x80) are refused by every consumer, also when the
// profile lacks its own ioctl or socket-protocol rule (the hardening) or its mask (32-bit
// arguments).
func TestForbiddenCallsRefusedInConsumers(t *testing.T) {
	testutil.RequireRoot(t)
	probe := testutil.BuildC(t, "consumers/probe.c", "-static")
	root := t.TempDir()
	learn := newBox(t, root, "learn", "dev", "work", "")
	bin := mustRead(t, probe)
	testutil.WriteFile(t, filepath.Join(learn.Work, "probe"), string(bin), 0o755)
	profiles := map[string]string{}
	for _, p := range []string{"ok", "ok-inet"} {
		profiles[p] = filepath.Join(root, p+".yaml")
		if r := learn.Sysprof(t, "learn", "-p", profiles[p], "--", "./probe", p); r.Code != 0 {
			t.Fatalf("learn probe %s: %s", p, r)
		}
	}
	// The same profiles without their own rules: what is left is the hardening every
	// consumer must add, and 32-bit comparisons without a mask in the profile.
	variant := func(name string, edit func(p *policy.Profile)) {
		p := loadProfile(t, profiles["ok-inet"])
		edit(p)
		profiles[name] = filepath.Join(root, name+".yaml")
		if err := policy.Save(profiles[name], p); err != nil {
			t.Fatal(err)
		}
	}
	variant("no-own-rules", func(p *policy.Profile) {
		p.Syscalls.Args = slices.DeleteFunc(p.Syscalls.Args, func(r policy.ArgRule) bool {
			return r.Syscall == "ioctl" || r.Syscall == "clone" || (r.Syscall == "socket" && r.Arg == 2)
		})
	})
	variant("no-mask", func(p *policy.Profile) {
		for i := range p.Syscalls.Args {
			if r := &p.Syscalls.Args[i]; r.Syscall == "ioctl" || (r.Syscall == "socket" && r.Arg == 2) {
				r.Mask = ""
			}
		}
	})
	actions := map[string][]string{
		"ok":           {"clone-ns", "tiocsti", "tiocsti-hi", "inet", "int80"},
		"ok-inet":      {"clone-ns", "tiocsti", "tiocsti-hi", "mptcp", "mptcp-hi", "int80"},
		"no-own-rules": {"clone-ns", "tiocsti", "tiocsti-hi", "mptcp", "mptcp-hi", "int80"},
		"no-mask":      {"tiocsti", "tiocsti-hi", "mptcp", "mptcp-hi"},
	}
	for _, name := range slices.Sorted(maps.Keys(actions)) {
		for _, c := range consumers() {
			t.Run(name+"/"+c.name, func(t *testing.T) {
				requireConsumer(t, c)
				b := newBox(t, root, "run-"+c.name, "dev", "work", "")
				testutil.WriteFile(t, filepath.Join(b.Work, "probe"), string(bin), 0o755)
				learned := name
				if _, ok := map[string]bool{"ok": true, "ok-inet": true}[name]; !ok {
					learned = "ok-inet"
				}
				// The learned call first: the profile runs clean.
				if r := c.run(t, b, profiles[name], []string{"./probe", learned}); r.Code != 0 || !strings.Contains(r.Stdout, learned+": ok") {
					t.Fatalf("the learned run under %s: %s", c.name, r)
				}
				for _, a := range actions[name] {
					r := c.run(t, b, profiles[name], []string{"./probe", a})
					refused := strings.Contains(r.Stdout, a+": EPERM")
					// libseccomp (runc, crun) kills a call of an architecture its filter does
					// not list (SIGSYS) instead of answering EPERM: refused too.
					if a == "int80" && c.name != "enforce" && c.name != "bwrap" && r.Code == 128+31 {
						refused = true
					}
					if !refused {
						t.Errorf("%s under %s with the %s profile: not refused: %s", a, c.name, name, r)
					}
				}
			})
		}
	}
}
