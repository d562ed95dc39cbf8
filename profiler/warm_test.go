package profiler_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/bpf"
	"github.com/sysprof/sysprof/internal/kernrun"
	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/profiler"
	"github.com/sysprof/sysprof/trace"
)

// Runs that take over the last run's programs and maps record only their own command: no file
// or syscall count of the run before leaks in, and what that run deduplicated is recorded again.
func TestWarmTakeOverKeepsRunsApart(t *testing.T) {
	testutil.RequireRoot(t)
	t.Cleanup(profiler.SwapWarmDir(t.TempDir()))
	victim := realPath(t, testutil.BuildC(t, "victim/victim.c"))
	dir := realPath(t, t.TempDir())
	writeFile(t, filepath.Join(dir, "a.txt"), "a")
	writeFile(t, filepath.Join(dir, "b.txt"), "b")
	runs := []struct {
		file  string
		storm int
	}{{"a.txt", 10}, {"b.txt", 20}, {"a.txt", 5}}
	before := profiler.WarmTakeovers.Load()
	for i, r := range runs {
		tr := learn(t, withTimeout(t, time.Minute), profiler.Options{Dir: dir,
			Command: []string{victim, "open-rel", r.file, "storm", itoa(r.storm)}})
		if tr.ExitCode != 0 || tr.Incomplete {
			t.Fatalf("run %d: exit %d, incomplete %v %q", i+1, tr.ExitCode, tr.Incomplete, tr.Reasons)
		}
		if n := syscallCount(tr, victim, trace.ArchX86_64, "getppid"); n != uint64(r.storm) {
			t.Errorf("run %d: getppid %d times, want %d", i+1, n, r.storm)
		}
		for _, f := range []string{"a.txt", "b.txt"} {
			got := findFile(tr, victim, filepath.Join(dir, f), trace.AccessRead, true) != nil
			if want := f == r.file; got != want {
				t.Errorf("run %d: read of %s recorded %v, want %v", i+1, f, got, want)
			}
		}
	}
	if got := profiler.WarmTakeovers.Load() - before; got != 2 {
		t.Errorf("%d of the 2 later runs took the probe over", got)
	}
}

// A helper that is gone (killed, or its linger over) is not taken over: the run loads its own.
func TestWarmHelperGone(t *testing.T) {
	testutil.RequireRoot(t)
	warm := t.TempDir()
	t.Cleanup(profiler.SwapWarmDir(warm))
	victim := realPath(t, testutil.BuildC(t, "victim/victim.c"))
	learn(t, withTimeout(t, time.Minute), profiler.Options{Command: []string{victim, "storm", "3"}})
	_, rec := onlyHelper(t, warm)
	endHelper(rec)
	before := profiler.WarmTakeovers.Load()
	tr := learn(t, withTimeout(t, time.Minute), profiler.Options{Command: []string{victim, "storm", "7"}})
	if n := syscallCount(tr, victim, trace.ArchX86_64, "getppid"); n != 7 || tr.Incomplete {
		t.Errorf("getppid %d times, incomplete %v; want 7, complete", n, tr.Incomplete)
	}
	if profiler.WarmTakeovers.Load() != before {
		t.Errorf("a run took over a helper that was gone")
	}
}

// A helper file whose fds are not learn.c's objects (here a process holding /dev/null) is not
// taken over, and that process is left alone; the run loads its own programs.
func TestWarmRecordOfForeignFDs(t *testing.T) {
	testutil.RequireRoot(t)
	warm := t.TempDir()
	t.Cleanup(profiler.SwapWarmDir(warm))
	victim := realPath(t, testutil.BuildC(t, "victim/victim.c"))
	// A real record to copy the key and fd layout from.
	learn(t, withTimeout(t, time.Minute), profiler.Options{Command: []string{victim, "storm", "1"}})
	file, rec := onlyHelper(t, warm)
	os.Remove(file)
	endHelper(rec)

	// The same fd numbers, in a process that holds /dev/null there.
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	extra := make([]*os.File, 0, 80)
	for range 80 {
		extra = append(extra, devnull)
	}
	foreign := exec.Command("sleep", "30")
	foreign.ExtraFiles = extra
	if err := foreign.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { foreign.Process.Kill(); foreign.Wait() }()
	start, ok := kernrun.ProcStart(foreign.Process.Pid)
	if !ok {
		t.Fatal("the foreign process is gone")
	}
	rec["pid"], rec["start"] = foreign.Process.Pid, start
	b, _ := json.Marshal(rec)
	if err := os.WriteFile(filepath.Join(warm, itoa(foreign.Process.Pid)+".json"), b, 0o600); err != nil {
		t.Fatal(err)
	}

	before := profiler.WarmTakeovers.Load()
	tr := learn(t, withTimeout(t, time.Minute), profiler.Options{Command: []string{victim, "storm", "4"}})
	if n := syscallCount(tr, victim, trace.ArchX86_64, "getppid"); n != 4 || tr.Incomplete {
		t.Errorf("getppid %d times, incomplete %v; want 4, complete", n, tr.Incomplete)
	}
	if profiler.WarmTakeovers.Load() != before {
		t.Errorf("a run took over /dev/null as learn.c's objects")
	}
	if err := foreign.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("the foreign process was ended: %v", err)
	}
}

// onlyHelper returns the one helper file in warm and its record.
func onlyHelper(t *testing.T, warm string) (string, map[string]any) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(warm, "*.json"))
	if len(files) != 1 {
		t.Fatalf("helpers published: %q, want one", files)
	}
	var rec map[string]any
	b, _ := os.ReadFile(files[0])
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatalf("helper file %s: %v %s", files[0], err, b)
	}
	if pid, _ := rec["pid"].(float64); pid <= 0 {
		t.Fatalf("helper file %s names no process: %s", files[0], b)
	}
	return files[0], rec
}

// endHelper kills the helper of rec and waits until it is reaped.
func endHelper(rec map[string]any) {
	pid := int(rec["pid"].(float64))
	unix.Kill(pid, unix.SIGKILL)
	for i := 0; i < 500 && unix.Kill(pid, 0) == nil; i++ {
		time.Sleep(10 * time.Millisecond)
	}
}

// A run hands its programs on idle: the run's cgroup id in the helper's `run` map is 0, so
// sys_exit_path, still attached to the path syscalls' exit tracepoints while the helper waits,
// returns for every process on the host before any helper call.
func TestWarmHelperHoldsAnIdleRun(t *testing.T) {
	testutil.RequireRoot(t)
	warm := t.TempDir()
	t.Cleanup(profiler.SwapWarmDir(warm))
	victim := realPath(t, testutil.BuildC(t, "victim/victim.c"))
	learn(t, withTimeout(t, time.Minute), profiler.Options{Command: []string{victim, "storm", "1"}})
	_, rec := onlyHelper(t, warm)
	defer endHelper(rec)
	maps, _ := rec["maps"].(map[string]any)
	num, ok := maps["run"].(float64)
	if !ok {
		t.Fatalf("the helper's record names no run map: %v", rec)
	}
	h := kernrun.Holder{Pid: int(rec["pid"].(float64)), Start: uint64(rec["start"].(float64))}
	pidfd, fds, err := kernrun.Take(h, []int{int(num)})
	if err != nil {
		t.Fatalf("take the helper's run map: %v", err)
	}
	unix.Close(pidfd)
	m, err := ebpf.NewMapFromFD(fds[0])
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	var rs bpf.LearnRunState
	if err := m.Lookup(uint32(0), &rs); err != nil {
		t.Fatal(err)
	}
	if rs.Cgid != 0 {
		t.Errorf("the lingering helper's run has cgroup id %d, want 0 (idle)", rs.Cgid)
	}
}

// After a run, no link of learn.c's programs is left (raw_tp/sys_enter, the sched and cgroup
// tracepoints, the cgroup hooks): between runs no process on the host pays for an entry hook.
// What the warm helper keeps attached is sys_exit_path on the exit tracepoints' perf events
// (not links), idle (TestWarmHelperHoldsAnIdleRun).
func TestNoLinkOutlivesARun(t *testing.T) {
	testutil.RequireRoot(t)
	warm := t.TempDir()
	t.Cleanup(profiler.SwapWarmDir(warm))
	victim := realPath(t, testutil.BuildC(t, "victim/victim.c"))
	learn(t, withTimeout(t, time.Minute), profiler.Options{Command: []string{victim, "storm", "1"}})
	_, rec := onlyHelper(t, warm)
	defer endHelper(rec)
	progs, _ := rec["progs"].(map[string]any)
	var names []string
	var nums []int
	for name, n := range progs {
		names = append(names, name)
		nums = append(nums, int(n.(float64)))
	}
	h := kernrun.Holder{Pid: int(rec["pid"].(float64)), Start: uint64(rec["start"].(float64))}
	pidfd, fds, err := kernrun.Take(h, nums)
	if err != nil {
		t.Fatalf("take the helper's programs: %v", err)
	}
	unix.Close(pidfd)
	ids := map[ebpf.ProgramID]string{}
	for i, fd := range fds {
		prog, err := ebpf.NewProgramFromFD(fd)
		if err != nil {
			t.Fatal(err)
		}
		defer prog.Close()
		info, err := prog.Info()
		if err != nil {
			t.Fatal(err)
		}
		id, _ := info.ID()
		ids[id] = names[i]
	}
	if len(ids) != len(names) {
		t.Fatalf("program ids %v of %q", ids, names)
	}
	var it link.Iterator
	defer it.Close()
	for it.Next() {
		info, err := it.Link.Info()
		if err != nil {
			continue // gone meanwhile
		}
		if name, ok := ids[info.Program]; ok {
			t.Errorf("learn.c's %s is still attached after the run (link %d, type %v)", name, it.ID, info.Type)
		}
	}
	if err := it.Err(); err != nil {
		t.Fatalf("list the kernel's links: %v", err)
	}
}

// A record whose maps of one kind are swapped (syscalls and args are both hash maps, so only
// their names tell them apart) is not taken over: the next run loads its own objects and
// counts right.
func TestWarmRecordOfSwappedMaps(t *testing.T) {
	testutil.RequireRoot(t)
	warm := t.TempDir()
	t.Cleanup(profiler.SwapWarmDir(warm))
	victim := realPath(t, testutil.BuildC(t, "victim/victim.c"))
	learn(t, withTimeout(t, time.Minute), profiler.Options{Command: []string{victim, "storm", "1"}})
	file, rec := onlyHelper(t, warm)
	defer endHelper(rec)
	maps, _ := rec["maps"].(map[string]any)
	if maps["syscalls"] == nil || maps["args"] == nil {
		t.Fatalf("the helper's record names no syscalls or args map: %v", rec)
	}
	maps["syscalls"], maps["args"] = maps["args"], maps["syscalls"]
	b, _ := json.Marshal(rec)
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	before := profiler.WarmTakeovers.Load()
	tr := learn(t, withTimeout(t, time.Minute), profiler.Options{Command: []string{victim, "storm", "4"}})
	if n := syscallCount(tr, victim, trace.ArchX86_64, "getppid"); n != 4 || tr.Incomplete {
		t.Errorf("getppid %d times, incomplete %v; want 4, complete", n, tr.Incomplete)
	}
	if profiler.WarmTakeovers.Load() != before {
		t.Errorf("a run took over a record with its syscalls and args maps swapped")
	}
}
