package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sysprof/sysprof/enforcer"
	"github.com/sysprof/sysprof/internal/kernrun"
	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/report"
)

// The bombs. forkBomb: a binary tree of depth 10 (2047 shells if nothing stops it), each leaf
// sleeping a second so the tree stands at once, finite so that a test whose protection fails
// still ends (bounded by the test's own cgroup meanwhile). memoryBomb: a shell string doubled
// until something stops it (the run's limit, or the test's bound).
const (
	forkBomb    = `b() { if [ $1 -gt 0 ]; then b $(($1-1)) & b $(($1-1)) & wait; fi; sleep 1; }; b 10`
	memoryBomb  = `x=a; i=0; while [ $i -lt 31 ]; do x="$x$x"; i=$((i+1)); done; echo done`
	tmpFillFile = "/tmp/sysprof-limits-fill.$$"
	// tmpFill writes 64 KiB at a time to the private /tmp until it is full (or 64 MiB).
	tmpFill = `x=a; i=0; while [ $i -lt 16 ]; do x="$x$x"; i=$((i+1)); done; i=0; while [ $i -lt 1024 ]; do echo "$x" >> ` + tmpFillFile + ` || { echo "tmp full after $i"; exit 3; }; i=$((i+1)); done; echo "tmp took all"`
)

// The run's limits under test (raised to the per-CPU floors on a bigger host: the test reads
// what applies), and the test's own bound, far enough above them that a run kept to its limits
// stays well below it and one that is not reaches it.
const (
	bombPids   = 64
	bombMemMiB = 256
	bombTmpMiB = 4
)

// The host survives a fork bomb and a memory bomb under enforce, as root (the run's cgroup:
// each hit is a denial naming the limit) and as an ordinary user (rlimits: the hit is
// unobservable, and the report says so). Everything runs inside a cgroup of the test's own with
// its own pids and memory bounds, so that a failure of the limits cannot take the machine down;
// that cgroup's peaks show what the run reached.
func TestLimitsHoldBombs(t *testing.T) {
	testutil.RequireRoot(t)
	exe, dir, prof, lim, bnd := bombSetup(t)

	for _, asUser := range []bool{false, true} {
		who := "root"
		if asUser {
			who = "nobody"
		}
		t.Run(who+"/fork-bomb", func(t *testing.T) {
			bound, rep, _ := underBound(t, exe, dir, prof, asUser, forkBomb, bnd)
			if s := bound.Stats(); s.PidsPeak > lim.Pids+bnd.pids/3 || s.PidsRefused > 0 {
				t.Errorf("the test's cgroup held %d tasks at once (%d refused by its bound of %d): the run's pids limit of %d did not hold",
					s.PidsPeak, s.PidsRefused, bnd.pids, lim.Pids)
			}
			checkLimitReport(t, rep, asUser, policy.SectionLimitPids)
		})
		t.Run(who+"/memory-bomb", func(t *testing.T) {
			bound, rep, _ := underBound(t, exe, dir, prof, asUser, memoryBomb, bnd)
			if s := bound.Stats(); s.MemoryPeak > 2*int64(lim.MemoryMiB)<<20 || s.OOMKills > 0 {
				t.Errorf("the test's cgroup used %d MiB at most (%d OOM kill(s) by its bound of %d MiB): the run's memory limit of %d MiB did not hold",
					s.MemoryPeak>>20, s.OOMKills, bnd.memory>>20, lim.MemoryMiB)
			}
			checkLimitReport(t, rep, asUser, policy.SectionLimitMemory)
		})
		t.Run(who+"/tmp-fill", func(t *testing.T) {
			_, _, stdout := underBound(t, exe, dir, prof, asUser, tmpFill, bnd)
			// 64 KiB a write: a 4 MiB /tmp is full after 63 or 64 of them.
			if !strings.Contains(stdout, "tmp full after 6") {
				t.Errorf("the private /tmp of %d MiB took more: %q", bombTmpMiB, stdout)
			}
		})
	}
}

// bombSetup learns a small shell profile with sysprof (copied where nobody reaches it), sets its
// limits to the bombs' and returns the binary, the directory, the profile, the limits that apply
// on this host and the test's bound above them.
func bombSetup(t *testing.T) (exe, dir, prof string, lim policy.Limits, bnd bounds) {
	t.Helper()
	bin, err := sysprofBinary()
	if err != nil {
		t.Fatal(err)
	}
	// nobody must reach the binary, the profile and the work directory.
	dir, err = os.MkdirTemp("", "sysprof-limits-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	exe = filepath.Join(dir, "sysprof")
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(exe, b, 0o755); err != nil {
		t.Fatal(err)
	}
	prof = filepath.Join(dir, "sh.yaml")
	// It writes a file of its own to /tmp too (a glob of the private /tmp in the profile).
	learn := exec.Command(exe, "learn", "--fresh", "-p", prof, "--", "sh", "-c",
		"for i in 1 2 3; do sleep 0 & done; wait; x=a; x=\"$x$x\"; echo $x > "+tmpFillFile+"; rm -f "+tmpFillFile)
	learn.Dir, learn.Env = dir, origEnv
	if out, err := learn.CombinedOutput(); err != nil {
		t.Fatalf("learn: %v\n%s", err, out)
	}
	p, err := policy.Load(prof)
	if err != nil {
		t.Fatal(err)
	}
	if p.Limits.Pids == 0 || p.Limits.MemoryMiB == 0 {
		t.Errorf("learn wrote no limits from the run's peaks: %+v", p.Limits)
	}
	p.Limits = policy.Limits{Pids: bombPids, MemoryMiB: bombMemMiB, TmpMiB: bombTmpMiB}
	lim = enforcer.EffectiveLimits(p)
	bnd = bounds{pids: max(600, 4*lim.Pids), memory: max(1<<30, 4*int64(lim.MemoryMiB)<<20)}
	if err := policy.Save(prof, p); err != nil {
		t.Fatal(err)
	}
	os.Chmod(prof, 0o644)
	return exe, dir, prof, lim, bnd
}

// bounds are the test's own cgroup's limits: tasks, bytes.
type bounds struct {
	pids   int
	memory int64
}

// underBound runs `sysprof enforce -p prof -- sh -c script` (as nobody when asUser) inside a
// fresh cgroup of the test's own, bounded by bnd, and returns that cgroup, the run's report and
// the command's output.
func underBound(t *testing.T, exe, dir, prof string, asUser bool, script string, bnd bounds) (*kernrun.LimitGroup, *report.Report, string) {
	return underBoundIn(t, exe, dir, prof, asUser, false, script, bnd)
}

// underBoundIn is underBound, and with delegated (as nobody) enforce starts in a cgroup subtree
// of the bound delegated to nobody as systemd delegates one (delegateTo).
func underBoundIn(t *testing.T, exe, dir, prof string, asUser, delegated bool, script string, bnd bounds) (*kernrun.LimitGroup, *report.Report, string) {
	t.Helper()
	bound, err := kernrun.NewLimitGroup(nil)
	testutil.RequireNoErr(t, "a cgroup of the test's own (pids and memory)", err)
	t.Cleanup(bound.Remove)
	if err := bound.Set(bnd.pids, bnd.memory); err != nil {
		t.Fatal(err)
	}
	enter := bound.Enter
	if delegated {
		enter = delegateTo(t, bound, 65534, 65534)
	}
	out := filepath.Join(dir, "report.json")
	os.Remove(out)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// The shell waits for a line on stdin: it is moved into the bound before it execs sysprof.
	cmd := exec.CommandContext(ctx, "sh", "-c", `read go && exec "$@"`, "sh", exe, "enforce", "-p", prof, "--report", out, "--", "sh", "-c", script)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
	if asUser {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		os.Chmod(dir, 0o777)
	}
	gate, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if err := enter(cmd.Process.Pid); err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal(err)
	}
	gate.Write([]byte("go\n"))
	gate.Close()
	err = cmd.Wait()
	t.Logf("enforce: %v\n%s", err, tail(stderr.String(), 600))
	data, rerr := os.ReadFile(out)
	if rerr != nil {
		t.Fatalf("no report: %v (enforce: %v)", rerr, err)
	}
	var rep report.Report
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	return bound, &rep, stdout.String()
}

// delegateTo delegates a subtree of bound to uid as systemd's Delegate=yes does for
// user@UID.service: a directory "user" chowned with its cgroup.procs, cgroup.subtree_control
// and cgroup.threads (v1: cgroup.procs and tasks), the controllers on for it, and the user's
// processes in a leaf below it ("init.scope", made by the user's manager: the user's). It
// returns how to put a process into that leaf; the directories are removed when the test ends
// (after the run's own, which sysprof removes).
func delegateTo(t *testing.T, bound *kernrun.LimitGroup, uid, gid int) func(pid int) error {
	t.Helper()
	parents := []string{bound.Pids, bound.Memory}
	if bound.V2 {
		parents = parents[:1]
		// The controllers pass down to the delegated directory (the bound holds no process).
		if err := os.WriteFile(filepath.Join(bound.Pids, "cgroup.subtree_control"), []byte("+pids +memory"), 0); err != nil {
			t.Fatalf("enable pids and memory below %s: %v", bound.Pids, err)
		}
	}
	var leaves []string
	for _, parent := range parents {
		user, leaf := filepath.Join(parent, "user"), filepath.Join(parent, "user", "init.scope")
		for _, d := range []string{user, leaf} {
			if err := os.Mkdir(d, 0o755); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				for range 100 {
					if err := os.Remove(d); err == nil || os.IsNotExist(err) {
						return
					}
					time.Sleep(20 * time.Millisecond)
				}
				t.Errorf("cgroup %s left behind", d)
			})
			for _, f := range []string{"", "cgroup.procs", "cgroup.subtree_control", "cgroup.threads", "tasks"} {
				if err := os.Chown(filepath.Join(d, f), uid, gid); err != nil && !os.IsNotExist(err) {
					t.Fatal(err)
				}
			}
		}
		leaves = append(leaves, leaf)
	}
	return func(pid int) error {
		for _, l := range leaves {
			if err := os.WriteFile(filepath.Join(l, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
				return err
			}
		}
		return nil
	}
}

// An ordinary user with a delegated cgroup subtree (systemd's user@UID.service) gets a cgroup
// of its own for its run, below the delegated directory: the fork bomb is stopped by its
// pids.max, and the hit is a limit denial naming the value that would have sufficed (without a
// delegated cgroup, rlimits hold the run without a record).
func TestLimitsDelegatedCgroup(t *testing.T) {
	testutil.RequireRoot(t)
	exe, dir, prof, lim, bnd := bombSetup(t)
	bound, rep, _ := underBoundIn(t, exe, dir, prof, true, true, forkBomb, bnd)
	if s := bound.Stats(); s.PidsPeak > lim.Pids+bnd.pids/3 || s.PidsRefused > 0 {
		t.Errorf("the test's cgroup held %d tasks at once (%d refused by its bound of %d): the run's pids limit of %d did not hold",
			s.PidsPeak, s.PidsRefused, bnd.pids, lim.Pids)
	}
	var layer string
	for _, l := range rep.Layers {
		if l.Name == "limits" {
			layer = l.State + ": " + l.Detail
		}
	}
	if !strings.HasPrefix(layer, "applied") || !strings.Contains(layer, "delegated to this user") {
		t.Errorf("limits layer %q, want applied in the delegated cgroup", layer)
	}
	for _, d := range rep.Denials {
		if d.Kind == report.KindLimit && d.Change != nil && d.Change.Section == policy.SectionLimitPids {
			if !strings.Contains(d.What, "would have sufficed") || !strings.Contains(d.What, "pids limit "+strconv.Itoa(lim.Pids)+" reached") {
				t.Errorf("the denial must name the limit and what would have sufficed: %q", d.What)
			}
			return
		}
	}
	t.Errorf("no pids limit denial in a delegated run's report (unobservable: %q): %+v", rep.Unobservable, rep.Denials)
}

// checkLimitReport: as root a hit is a denial naming the limit with a grant raising it; as an
// ordinary user (rlimits) the report says such hits are unobservable.
func checkLimitReport(t *testing.T, rep *report.Report, asUser bool, section string) {
	t.Helper()
	var layer string
	for _, l := range rep.Layers {
		if l.Name == "limits" {
			layer = l.State + ": " + l.Detail
		}
	}
	if !strings.HasPrefix(layer, "applied") {
		t.Errorf("limits layer %q, want applied (layers %+v)", layer, rep.Layers)
	}
	if asUser {
		if !strings.Contains(strings.Join(rep.Unobservable, "\n"), "limits reached") {
			t.Errorf("an rlimits-only run must say its limit hits are unobservable: %q", rep.Unobservable)
		}
		return
	}
	for _, d := range rep.Denials {
		if d.Kind == report.KindLimit && d.Change != nil && d.Change.Section == section {
			return
		}
	}
	t.Errorf("no %s denial in the report: %+v", section, rep.Denials)
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}
