package enforcer

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/internal/kernrun"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/report"
	"github.com/sysprof/sysprof/sandbox"
)

func TestDecideLimits(t *testing.T) {
	const gib = 1 << 30
	noCgroup := errors.New("an ordinary user has no cgroup of its own to limit here")
	prof := func(l policy.Limits) *Compiled { return &Compiled{profile: &policy.Profile{Limits: l}} }
	for _, tc := range []struct {
		name     string
		c        *Compiled
		h        hostFacts
		pids     int
		memory   int64
		tmp      int64
		cgroup   bool
		detail   string
		defaults string
	}{
		{name: "no profile limits: the defaults, in the cgroup", c: prof(policy.Limits{}), h: hostFacts{AsRoot: true, RAM: 8 * gib},
			pids: policy.DefaultPids + stageTasks, memory: 4 * gib, tmp: policy.DefaultTmpMiB * mib, cgroup: true, detail: "in the run's cgroup", defaults: "pids, memory, tmp"},
		{name: "learned limits", c: prof(policy.Limits{Pids: 100, MemoryMiB: 512, TmpMiB: 64}), h: hostFacts{AsRoot: true, RAM: 8 * gib},
			pids: 100 + stageTasks, memory: 512 * mib, tmp: 64 * mib, cgroup: true},
		{name: "ordinary user: rlimits only, and why", c: prof(policy.Limits{Pids: 100}), h: hostFacts{RAM: 8 * gib, LimitCgroup: noCgroup},
			pids: 100 + stageTasks, memory: 4 * gib, tmp: policy.DefaultTmpMiB * mib, detail: "rlimits only", defaults: "memory, tmp"},
		{name: "a small host: never below the memory floor", c: prof(policy.Limits{}), h: hostFacts{RAM: 256 * mib},
			pids: policy.DefaultPids + stageTasks, memory: policy.MinMemoryMiB * mib, tmp: policy.DefaultTmpMiB * mib, cgroup: true},
		{name: "a big host: the learned limits grow to the per-CPU floors", c: prof(policy.Limits{Pids: 100, MemoryMiB: 512, TmpMiB: 64}), h: hostFacts{AsRoot: true, RAM: 64 * gib, CPUs: 8},
			pids: 8*policy.PidsPerCPU + stageTasks, memory: 8 * policy.MemoryMiBPerCPU * mib, tmp: 64 * mib, cgroup: true, detail: "pids raised to 32 per CPU, memory raised to 128 MiB per CPU"},
		{name: "compiled without a profile (tests): the defaults", c: &Compiled{}, h: hostFacts{RAM: 2 * gib},
			pids: policy.DefaultPids + stageTasks, memory: gib, tmp: policy.DefaultTmpMiB * mib, cgroup: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := decideLayers(tc.c, tc.h)
			if d.Refuse != nil {
				t.Fatalf("limits refused a run: %v", d.Refuse)
			}
			l, _ := d.Data[LayerLimits].(*runLimits)
			if l == nil {
				t.Fatal("no limits decided")
			}
			if l.Pids != tc.pids || l.Memory != tc.memory || l.Tmp != tc.tmp || l.Cgroup != tc.cgroup {
				t.Errorf("limits %+v, want pids %d memory %d tmp %d cgroup %v", *l, tc.pids, tc.memory, tc.tmp, tc.cgroup)
			}
			if !strings.Contains(l.Detail, tc.detail) || tc.defaults != "" && !strings.Contains(l.Detail, "default: "+tc.defaults) {
				t.Errorf("detail %q, want %q and defaults %q", l.Detail, tc.detail, tc.defaults)
			}
		})
	}
}

// RLIMIT_NPROC does not hold a command that is host uid 0 (the kernel exempts it): it is
// left out there, and only the cgroup bounds its tasks.
func TestLimitRlimits(t *testing.T) {
	l := runLimits{Pids: 80, Memory: 256 * mib}
	has := func(rl []sandbox.Rlimit, res int) bool {
		for _, r := range rl {
			if r.Resource == res {
				return true
			}
		}
		return false
	}
	if rl := l.rlimits(false); !has(rl, unix.RLIMIT_NPROC) || !has(rl, unix.RLIMIT_DATA) {
		t.Errorf("rlimits(not host uid 0) = %+v, want NPROC and DATA", rl)
	}
	if rl := l.rlimits(true); has(rl, unix.RLIMIT_NPROC) || !has(rl, unix.RLIMIT_DATA) {
		t.Errorf("rlimits(host uid 0) = %+v, want DATA only", rl)
	}
	// Beside a cgroup (the backstop's Memory 0): no RLIMIT_DATA, whose address space a
	// sanitizer's shadow fills.
	l.Memory = 0
	if rl := l.rlimits(false); has(rl, unix.RLIMIT_DATA) {
		t.Errorf("rlimits(no memory) = %+v, want no DATA", rl)
	}
}

// Every run gets RLIMIT_CORE 1 (no core file, no core_pattern pipe helper on the host) and an
// RLIMIT_NOFILE that keeps the run's tasks to a quarter of the host's file table, within
// [1024, 65536]; an unknown file table leaves the host's.
func TestLimitFilesAndCore(t *testing.T) {
	p := &policy.Profile{Limits: policy.Limits{Pids: 64, MemoryMiB: 256}}
	for _, tc := range []struct {
		fileMax int64
		want    int
	}{
		{0, 0},
		{2466093, 2466093 / 4 / (64 + stageTasks)},
		{100000, 1024},
		{9223372036854775807, 1 << 16},
	} {
		l := limitsFor(&Compiled{profile: p}, hostFacts{RAM: 8 << 30, CPUs: 2, FileMax: tc.fileMax})
		if l.NoFile != tc.want {
			t.Errorf("file-max %d: files %d, want %d", tc.fileMax, l.NoFile, tc.want)
		}
		var files, core uint64
		for _, r := range l.rlimits(false) {
			switch r.Resource {
			case unix.RLIMIT_NOFILE:
				files = r.Max
			case unix.RLIMIT_CORE:
				core = r.Max
			}
		}
		if int(files) != tc.want || core != 1 {
			t.Errorf("file-max %d: rlimits NOFILE %d CORE %d, want %d and 1", tc.fileMax, files, core, tc.want)
		}
	}
}

// A run holds a quarter of each per-user count the host has (inotify and fanotify: counted per
// uid up to the host's user namespace, shared with the user's other programs), at least one;
// a count the host lacks is not set. The plan carries them only into a user namespace of the
// stage's own (written elsewhere they would be the host's).
func TestLimitUserCounts(t *testing.T) {
	p := &policy.Profile{Limits: policy.Limits{Pids: 64, MemoryMiB: 256}}
	h := hostFacts{RAM: 8 << 30, CPUs: 2, UserCounts: map[string]int{"max_inotify_instances": 128, "max_inotify_watches": 192546, "max_fanotify_groups": 3}}
	l := limitsFor(&Compiled{profile: p}, h)
	want := []sandbox.UserCount{{Name: "max_inotify_instances", Max: 32}, {Name: "max_inotify_watches", Max: 48136}, {Name: "max_fanotify_groups", Max: 1}}
	if !slices.Equal(l.UserCounts, want) {
		t.Errorf("user counts %v, want %v", l.UserCounts, want)
	}
	var r enforcedRun
	for _, userNS := range []bool{true, false} {
		var plan sandbox.Plan
		r.applyLimits(&runLimits{UserCounts: want}, &plan, sandbox.Identity{UserNS: userNS}, nil, true)
		if got := len(plan.UserCounts) > 0; got != userNS {
			t.Errorf("user namespace %v: plan's user counts %v", userNS, plan.UserCounts)
		}
	}
}

// A hit is a denial naming the limit, the peak and what would have sufficed, with the grant
// raising it.
func TestLimitDenials(t *testing.T) {
	l := runLimits{Pids: 64 + stageTasks, Memory: 256 * mib}
	ds := limitDenials(l, kernrun.LimitStats{PidsPeak: 80, PidsRefused: 40, MemoryPeak: 256 * mib, OOMKills: 2}, &policy.Profile{})
	if len(ds) != 2 {
		t.Fatalf("denials %+v, want one for pids and one for memory", ds)
	}
	if d := ds[0]; d.Change == nil || d.Change.Section != policy.SectionLimitPids || d.Change.Item != "104" ||
		!strings.Contains(d.What, "pids limit 64 reached") || !strings.Contains(d.What, "104 would have sufficed") {
		t.Errorf("pids denial %+v", d)
	}
	if d := ds[1]; d.Change == nil || d.Change.Section != policy.SectionLimitMemory || d.Change.Item != "512" ||
		!strings.Contains(d.What, "memory limit 256 MiB reached") {
		t.Errorf("memory denial %+v", d)
	}
	if ds := limitDenials(l, kernrun.LimitStats{PidsPeak: 30, MemoryPeak: 10 * mib}, nil); len(ds) != 0 {
		t.Errorf("a run within its limits has denials: %+v", ds)
	}
}

// What the limits decision adds to a run's start on the CLI's path (BENCHMARKS.md, "Limits").
func BenchmarkDecideLimits(b *testing.B) {
	c := &Compiled{profile: &policy.Profile{Limits: policy.Limits{Pids: 64}}}
	for b.Loop() {
		_ = decideLimits(c, hostFacts{RAM: hostRAM(), LimitCgroup: kernrun.LimitsAvailable()})
	}
}

// A run the sandbox does not hold (no rlimits set) and no cgroup bounds says the layer is off.
func TestLimitsUnboundIsDegraded(t *testing.T) {
	rep := report.New([]string{"x"}, "", false)
	(&runLimitGroup{unbound: true}).report(rep, &runResult{}, &policy.Profile{})
	if d := rep.Degraded(); len(d) != 1 || d[0].Name != LayerLimits {
		t.Errorf("layers %+v, want limits degraded", rep.Layers)
	}
}
