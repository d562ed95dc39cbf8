package kernrun

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
)

// What a run pays for its limits before the command starts (BENCHMARKS.md, "Limits"): the
// host check, on the CLI's path (once per process), and the cgroup, made in the background.
func BenchmarkLimitsAvailable(b *testing.B) {
	for b.Loop() {
		_ = limitsAvailable()
	}
}

func BenchmarkLimitGroupMakeSetRemove(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root")
	}
	for b.Loop() {
		g, err := NewLimitGroup(nil)
		if err != nil {
			b.Skip(err)
		}
		if err := g.Set(100, 1<<30); err != nil {
			b.Fatal(err)
		}
		g.Remove()
	}
}

// A LimitGroup made by root holds its limits and counts what reached them: a child of this
// test moved into it that forks past pids.max is refused, and the refusal is counted.
func TestLimitGroupCountsRefusals(t *testing.T) {
	testutil.RequireRoot(t)
	g, err := NewLimitGroup(nil)
	testutil.RequireNoErr(t, "cgroup pids and memory limits", err)
	defer g.Remove()
	if err := g.Set(3, 64<<20); err != nil {
		t.Fatal(err)
	}
	// The shell waits for a line before it forks: it is moved into g first.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	p, err := os.StartProcess("/bin/sh", []string{"sh", "-c", "read x; for i in 1 2 3 4 5 6; do sleep 1 & done; wait"}, &os.ProcAttr{Files: []*os.File{r, nil, nil}})
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Enter(p.Pid); err != nil {
		p.Kill()
		p.Wait()
		t.Fatal(err)
	}
	if err := g.SetCPUWeight(50); err != nil {
		t.Fatal(err)
	}
	if g.CPU != "" {
		file, want := "cpu.shares", "512"
		if g.V2 {
			file, want = "cpu.weight", "50"
		}
		if b, _ := os.ReadFile(filepath.Join(g.CPU, file)); strings.TrimSpace(string(b)) != want {
			t.Errorf("%s = %q, want %s", file, b, want)
		}
		if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", p.Pid)); !strings.Contains(string(b), filepath.Base(g.CPU)) {
			t.Errorf("the process is not in the cpu directory %s:\n%s", g.CPU, b)
		}
	}
	w.Write([]byte("go\n"))
	w.Close()
	p.Wait()
	s := g.Stats()
	if s.PidsRefused == 0 || s.PidsPeak > 3 {
		t.Errorf("stats %+v: want forks refused and at most 3 tasks at once", s)
	}
}

// The v1 directories of a sysprof that was killed before it removed them go with the next
// run's; a live one's stay.
func TestLimitGroupRemovesStale(t *testing.T) {
	testutil.RequireRoot(t)
	parent, err := v1Dir("pids")
	testutil.RequireNoErr(t, "the cgroup v1 pids hierarchy", err)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(parent, fmt.Sprintf("sysprof-run-%d-1", dead.Process.Pid))
	// With a nested one below it, as a sysprof run inside a killed one leaves.
	if err := os.MkdirAll(filepath.Join(stale, "sysprof-run-1-1"), 0o755); err != nil {
		t.Fatal(err)
	}
	defer removeTree(stale, 1)
	g, err := NewLimitGroup(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Remove()
	sweeps.Wait()
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("%s of a process that is gone was not removed (%v)", stale, err)
	}
	if _, err := os.Stat(g.Pids); err != nil {
		t.Errorf("this run's own directory: %v", err)
	}
}

// The delegated subtree is the topmost directory above this process's that the user owns and
// may move processes into, and never the mount or what is above it.
func TestTopDelegated(t *testing.T) {
	testutil.RequireRoot(t) // chown
	mnt := t.TempDir()
	leaf := filepath.Join(mnt, "user.slice", "user@1000.service", "app.slice", "x.scope")
	if err := os.MkdirAll(leaf, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"user.slice/user@1000.service", "user.slice/user@1000.service/app.slice", "user.slice/user@1000.service/app.slice/x.scope"} {
		d = filepath.Join(mnt, d)
		if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{d, filepath.Join(d, "cgroup.procs")} {
			if err := os.Chown(f, 1000, 1000); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got, want := topDelegated(leaf, mnt, 1000), filepath.Join(mnt, "user.slice", "user@1000.service"); got != want {
		t.Errorf("delegated to 1000: %q, want %q", got, want)
	}
	if got := topDelegated(leaf, mnt, 1001); got != "" {
		t.Errorf("another user: %q, want none", got)
	}
	os.Chown(mnt, 1000, 1000)
	if got := topDelegated(mnt, mnt, 1000); got != "" {
		t.Errorf("the mount itself: %q, want none", got)
	}
}
