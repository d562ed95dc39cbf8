package enforcer

import (
	"strings"
	"testing"

	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/policy"
)

// TestCompileProcWrites: a learned write under /proc/self never makes any of /proc writable
// (no writable mount, no Landlock write rule): the file is listed for the supervisor, and the
// filter sends opens for writing to it while reads go through; a write under other /proc or
// /sys paths, or of a per-process file the supervisor does not grant, is refused with a note.
func TestCompileProcWrites(t *testing.T) {
	work := t.TempDir()
	p := testProfile()
	p.Syscalls.Allow = append(p.Syscalls.Allow, policy.Syscall{Name: "openat"}, policy.Syscall{Name: "open"})
	p.Filesystem.Read = []policy.PathRule{{Path: "/usr"}}
	p.Filesystem.Write = []policy.PathRule{{Path: "/proc/self/oom_score_adj"}, {Path: "/proc/sys/kernel/core_pattern"}, {Path: "/sys/kernel/mm/x"},
		{Path: "/proc"}, {Path: "/proc/self/comm"}}
	c, err := Compile(p, Env{Vars: map[string]string{"WORKDIR": work, "TMPDIR": "/tmp"}, Arch: "x86_64"})
	if err != nil {
		t.Fatal(err)
	}
	want := []ProcWrite{{Name: "oom_score_adj", Granted: true}, {Name: "comm"}}
	if len(c.ProcWrites) != 2 || c.ProcWrites[0] != want[0] || c.ProcWrites[1] != want[1] {
		t.Errorf("ProcWrites %+v, want %+v", c.ProcWrites, want)
	}
	for _, w := range c.Plan.Writable {
		if kernelTree(w) {
			t.Errorf("writable mount %s", w)
		}
	}
	if ll := c.Plan.Landlock; ll == nil || len(ll.Write) != 0 {
		t.Errorf("Landlock write %v, want none", ll)
	}
	refused := 0
	for _, n := range c.Notes {
		if strings.Contains(n, "refused: /proc and /sys stay read-only") {
			refused++
		}
	}
	if refused != 4 {
		t.Errorf("%d refusal notes, want 4: %q", refused, c.Notes)
	}
	x86 := uint32(arch.X86_64.ID)
	openat := uint32(arch.X86_64.SyscallNames["openat"])
	if got := c.spec.Eval(x86, openat, [6]uint64{unix.AT_FDCWD & 0xffffffff, 0, unix.O_RDONLY | unix.O_CLOEXEC}); got != retAllow {
		t.Errorf("openat for reading: %#x, want allowed", got)
	}
	if got := c.spec.Eval(x86, openat, [6]uint64{0, 0, unix.O_WRONLY}); got != retNotify {
		t.Errorf("openat for writing: %#x, want the supervisor", got)
	}
	// Without a granted /proc write, opens never go to the supervisor.
	p.Filesystem.Write = []policy.PathRule{{Path: "/proc/self/comm"}}
	if c, err = Compile(p, Env{Vars: map[string]string{"WORKDIR": work, "TMPDIR": "/tmp"}, Arch: "x86_64"}); err != nil {
		t.Fatal(err)
	}
	if got := c.spec.Eval(x86, openat, [6]uint64{0, 0, unix.O_WRONLY}); got != retAllow {
		t.Errorf("openat for writing without a granted /proc write: %#x, want allowed", got)
	}
}

// TestProcTarget: which write-opens of /proc files the supervisor grants, and for whom.
func TestProcTarget(t *testing.T) {
	self := []ProcWrite{{Name: "oom_score_adj", Granted: true}, {Name: "comm"}}
	any := []ProcWrite{{Name: "oom_score_adj", AnyPID: true, Granted: true}}
	for _, tc := range []struct {
		writes []ProcWrite
		path   string
		pid    int // 0: not granted
	}{
		{self, "/proc/self/oom_score_adj", 7},
		{self, "/proc/thread-self/oom_score_adj", 7},
		{self, "/proc/7/oom_score_adj", 7},
		{self, "/proc/8/oom_score_adj", 7}, // its own thread's id
		{self, "/proc/7/task/8/oom_score_adj", 7},
		{self, "/proc/9/oom_score_adj", 0}, // another process, self-only rule
		{self, "/proc/self/comm", 0},       // learned, but not a file the supervisor opens
		{self, "/proc/self/oom_adj", 0},    // not learned
		{self, "/proc/self/../1/oom_score_adj", 0},
		{self, "/proc/self/root/proc/1/oom_score_adj", 0},
		{self, "/proc/sys/vm/oom_score_adj", 0},
		{any, "/proc/9/oom_score_adj", 9},
		{any, "/proc/1/oom_score_adj", 0}, // the init stage
		{any, "/proc/*/oom_score_adj", 0},
	} {
		pid, _, ok := procTarget(tc.writes, tc.path, 7, 8)
		if !ok {
			pid = 0
		}
		if pid != tc.pid {
			t.Errorf("procTarget(%s) = %d, want %d", tc.path, pid, tc.pid)
		}
	}
}
