package enforcer

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/changeset"
	"github.com/sysprof/sysprof/internal/kernrun"
	"github.com/sysprof/sysprof/internal/phase"
	"github.com/sysprof/sysprof/paths"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/report"
	"github.com/sysprof/sysprof/sandbox"
)

// LayerLimits bounds the run's processes, memory and private /tmp (policy.Limits).
const LayerLimits = sandbox.LayerLimits

// stageTasks is room for the init stage's own threads (a Go runtime: PID 1 of the sandbox
// stays), which the run's pids limit and RLIMIT_NPROC count besides the command's tasks.
const stageTasks = 16

const mib = 1 << 20

// cpuWeight is the run's CPU weight, of the kernel's default 100, where its cgroup has the cpu
// controller: under contention the whole run, however many tasks it has, gets the share of one
// ordinary process. Not less: at 50 a command ran at half speed beside any other work (a getppid
// storm 2x, cc -O0 1.5-2x bare's wall time at the same CPU time, load ~12-20: BENCHMARKS.md).
const cpuWeight = 100

// runLimits is the limits decision: the values, and where they are kept. Cgroup: in the
// run's cgroup (pids.max, memory.max, no swap), which counts the whole run and records every
// hit, with rlimits above them as a backstop; otherwise as rlimits on the command
// (RLIMIT_NPROC, per uid of the sandbox's user namespace; RLIMIT_DATA, per process), which
// bound the run without a record.
type runLimits struct {
	Pids   int   // tasks at once, the init stage's included
	Memory int64 // bytes
	Tmp    int64 // bytes each private tmpfs holds
	Write  int64 // bytes each staged directory's writes hold (its upper layer, a tmpfs)
	Files  int64 // inodes each staged directory's writes and each private tmpfs hold
	// WriteRoom is memory the run's cgroup holds for the stages' writes above Memory: the
	// profile's own writeMiB (learned: the tool needs it). A default write limit gets none:
	// those bytes count against Memory, which stays exact for a memory bomb.
	WriteRoom int64
	NoFile    int // open files per process (RLIMIT_NOFILE); 0: the host's
	// UserCounts bound the run's share of the host user's per-user kernel counts.
	UserCounts []sandbox.UserCount
	Cgroup     bool // kept in the run's cgroup
	Detail     string
	Defaults   []string // what is not the profile's own value: defaults, per-CPU floors
}

// rlimits are the limits the init stage sets on the command. RLIMIT_NPROC means nothing for a
// command that is host uid 0 (the kernel exempts it): then only the cgroup bounds the tasks.
// RLIMIT_CORE is 1 in every run: no core file is written, and the kernel skips a core_pattern
// pipe helper (systemd-coredump, apport: host root programs storing the sandbox's memory on
// the host) for exactly that value.
func (l runLimits) rlimits(hostUID0 bool) []sandbox.Rlimit {
	var out []sandbox.Rlimit
	if !hostUID0 {
		out = append(out, sandbox.Rlimit{Resource: unix.RLIMIT_NPROC, Max: uint64(l.Pids)})
	}
	if l.NoFile > 0 {
		out = append(out, sandbox.Rlimit{Resource: unix.RLIMIT_NOFILE, Max: uint64(l.NoFile)})
	}
	out = append(out, sandbox.Rlimit{Resource: unix.RLIMIT_CORE, Max: 1},
		sandbox.Rlimit{Resource: unix.RLIMIT_SIGPENDING, Max: maxSigPending},
		sandbox.Rlimit{Resource: unix.RLIMIT_MSGQUEUE, Max: maxMsgQueue})
	if l.Memory > 0 {
		out = append(out, sandbox.Rlimit{Resource: unix.RLIMIT_DATA, Max: uint64(l.Memory)})
	}
	return out
}

// Queued signals and POSIX message queue bytes are counted per user, up through the user
// namespaces: an ordinary user's run shares the host user's count with the user's other
// programs, and a run that fills it (rt signals queued to itself with kill, which profiles
// learn) leaves them no sigqueue and no timer_create. The run keeps to what no tool needs more
// than: 1,024 queued signals, a quarter of the kernel's default message queue bytes.
const (
	maxSigPending = 1024
	maxMsgQueue   = 819200 / 4
)

// Open files per process: the run's tasks, each at its RLIMIT_NOFILE, hold at most a quarter
// of the host's file table (fs.file-max; when it is full, the host's own unprivileged
// programs cannot open a file), within what tools expect.
const (
	fileTableShare = 4
	minFiles       = 1024
	maxFiles       = 1 << 16
)

// The kernel's per-user counts a run may hold a quarter of (as of the host's file table): the
// host user's other programs (an editor's file watches, a desktop's fanotify) keep the rest.
// Each is counted per uid through every user namespace up to the host's.
var userCountShares = []string{"max_inotify_instances", "max_inotify_watches", "max_fanotify_groups", "max_fanotify_marks"}

const userCountShare = 4

// decideLimits is the limits layer's decision: the profile's limits, or the defaults, kept in
// the run's cgroup when this host gives the run one (h.LimitCgroup nil), else as rlimits only.
// Limits never refuse a run: rlimits always apply.
func decideLimits(c *Compiled, h hostFacts) layerVerdict {
	l := limitsFor(c, h)
	return layerVerdict{Data: &l}
}

// startLimits is the limits layer's part of the run outside the init stage (layerDef.Start).
func startLimits(r *enforcedRun, s layerStart) layerRun {
	l, _ := s.Data.(*runLimits)
	return r.applyLimits(l, s.Plan, s.ID, r.opts.Early.takeLimits(), s.Sandbox)
}

// limitsFor turns the profile's limits and the host into the values a run applies.
func limitsFor(c *Compiled, h hostFacts) runLimits {
	var pl policy.Limits
	if c.profile != nil {
		pl = c.profile.Limits
	}
	l := runLimits{Pids: pl.Pids, Memory: int64(pl.MemoryMiB) * mib, Tmp: int64(pl.TmpMiB) * mib,
		Write: int64(pl.WriteMiB) * mib, Files: int64(pl.WriteFiles)}
	if l.Pids == 0 {
		l.Pids = policy.DefaultPids
		l.Defaults = append(l.Defaults, "pids")
	}
	// A tool's threads and parallel jobs grow with the host's CPUs: a limit learned on a
	// laptop must not fail the same build on a bigger CI runner.
	cpus := max(h.CPUs, 1)
	if floor := policy.PidsPerCPU * cpus; l.Pids < floor {
		l.Pids = floor
		l.Defaults = append(l.Defaults, fmt.Sprintf("pids raised to %d per CPU", policy.PidsPerCPU))
	}
	l.Pids += stageTasks
	if l.Memory == 0 {
		l.Memory = max(h.RAM*policy.DefaultMemoryPercent/100, policy.MinMemoryMiB*mib)
		l.Defaults = append(l.Defaults, "memory")
	}
	if floor := int64(policy.MemoryMiBPerCPU*cpus) * mib; l.Memory < floor {
		l.Memory = floor
		l.Defaults = append(l.Defaults, fmt.Sprintf("memory raised to %d MiB per CPU", policy.MemoryMiBPerCPU))
	}
	if l.Tmp == 0 {
		l.Tmp = policy.DefaultTmpMiB * mib
		l.Defaults = append(l.Defaults, "tmp")
	}
	if l.Write == 0 {
		// Held in memory until the run ends: never more than a quarter of the host's.
		l.Write = policy.DefaultWriteMiB * mib
		if h.RAM > 0 {
			l.Write = max(min(l.Write, h.RAM/4), 64*mib)
		}
		l.Defaults = append(l.Defaults, "writes")
	}
	if l.Files == 0 {
		l.Files = policy.DefaultWriteFiles
		l.Defaults = append(l.Defaults, "files")
	}
	unbounded := h.WriteBound
	if pl.WriteMiB == 0 && pl.MemoryMiB > 0 && unbounded == nil {
		// A profile learned before write limits: its writes go to disk as they did. Held in
		// memory against its learned memoryMiB, a build's fresh outputs would fail where they
		// ran before (a false denial); learning again records writeMiB.
		unbounded = errors.New("the profile has no limits.writeMiB: learn again to bound them")
	}
	if unbounded != nil {
		// Written to the host's disk unbounded; the private tmpfs keeps its inode limit.
		l.Write = 0
	} else if pl.WriteMiB > 0 {
		l.WriteRoom = l.Write
	}
	if h.FileMax > 0 {
		l.NoFile = int(min(max(h.FileMax/fileTableShare/int64(l.Pids), minFiles), maxFiles))
	}
	for _, name := range userCountShares {
		if n := h.UserCounts[name]; n > 0 {
			l.UserCounts = append(l.UserCounts, sandbox.UserCount{Name: name, Max: max(n/userCountShare, 1)})
		}
	}
	l.Cgroup = h.LimitCgroup == nil
	where := "in the run's cgroup"
	if !l.Cgroup {
		where = fmt.Sprintf("as rlimits only (NPROC per uid, DATA per process; %v)", h.LimitCgroup)
	}
	writes := fmt.Sprintf("writes %d MiB and %d files", l.Write/mib, l.Files)
	if unbounded != nil {
		writes = fmt.Sprintf("writes unbounded (%v), /tmp %d files", unbounded, l.Files)
	}
	l.Detail = fmt.Sprintf("pids %d, memory %d MiB, /tmp %d MiB, %s, %s", l.Pids-stageTasks, l.Memory/mib, l.Tmp/mib, writes, where)
	if len(l.Defaults) > 0 {
		l.Detail += "; default: " + strings.Join(l.Defaults, ", ")
	}
	return l
}

// thisHost are the facts of this host the limits depend on.
func thisHost() hostFacts {
	return hostFacts{RAM: hostRAM(), CPUs: runtime.NumCPU(), FileMax: hostFileMax(), UserCounts: hostUserCounts(),
		LimitCgroup: kernrun.LimitsAvailable(), WriteBound: writeBoundAvailable()}
}

// hostUserCounts are the per-user counts of userCountShares this host has (the values of
// sysprof's own user namespace, the level above the sandbox's).
func hostUserCounts() map[string]int {
	out := map[string]int{}
	for _, name := range userCountShares {
		if b, err := os.ReadFile("/proc/sys/user/" + name); err == nil {
			if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && n > 0 {
				out[name] = n
			}
		}
	}
	return out
}

// writeBoundAvailable says why a stage's upper layer cannot be a bounded tmpfs here: overlay
// takes its layers by fd since Linux 6.13 (user.* xattrs on tmpfs, which it needs in a user
// namespace, since 6.6). nil: it can.
func writeBoundAvailable() error {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return errors.New("kernel version unknown")
	}
	rel := unix.ByteSliceToString(u.Release[:])
	var major, minor int
	if _, err := fmt.Sscanf(rel, "%d.%d", &major, &minor); err != nil {
		return fmt.Errorf("kernel version %q unknown", rel)
	}
	if major < 6 || major == 6 && minor < 13 {
		return fmt.Errorf("Linux %d.%d: overlayfs takes a tmpfs upper layer by fd since 6.13", major, minor)
	}
	return nil
}

// hostFileMax is fs.file-max, the host's open-file table (0: unknown).
func hostFileMax() int64 {
	b, err := os.ReadFile("/proc/sys/fs/file-max")
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return max(n, 0)
}

// EffectiveLimits are the limits enforce applies to p on this host: tasks (the command's, the
// init stage's room aside), memory and each private tmpfs in MiB.
func EffectiveLimits(p *policy.Profile) policy.Limits {
	l := limitsFor(&Compiled{profile: p}, thisHost())
	return policy.Limits{Pids: l.Pids - stageTasks, MemoryMiB: int(l.Memory / mib), TmpMiB: int(l.Tmp / mib),
		WriteMiB: int(l.Write / mib), WriteFiles: int(l.Files)}
}

// limitDenials are the report's entries for each limit the run hit, from what its cgroup
// counted: the limit, how often it refused, and the value that would have sufficed (pids:
// the peak plus every refused fork; memory: unknown beyond the limit, twice it is suggested).
func limitDenials(l runLimits, s kernrun.LimitStats, p *policy.Profile) []report.Denial {
	var out []report.Denial
	now := time.Now().UTC()
	add := func(section, what string, count, suffice int) {
		g := policy.LimitGrant(section, suffice)
		risk, _ := policy.GrantRisk(p, g)
		out = append(out, report.Denial{Kind: report.KindLimit, What: what, Exe: "(run)", Count: count, First: now,
			Suggest: g.String(), Change: &g, Risk: risk})
	}
	if s.PidsRefused > 0 {
		suffice := max(s.PidsPeak, l.Pids) + s.PidsRefused - stageTasks
		add(policy.SectionLimitPids, fmt.Sprintf("pids limit %d reached: %d fork(s) refused (peak %d tasks); %d would have sufficed",
			l.Pids-stageTasks, s.PidsRefused, s.PidsPeak, suffice), s.PidsRefused, suffice)
	}
	if s.OOMKills > 0 {
		suffice := int(2 * l.Memory / mib)
		add(policy.SectionLimitMemory, fmt.Sprintf("memory limit %d MiB reached: %d process(es) killed (peak %d MiB); more than %d MiB needed, %d MiB may suffice",
			l.Memory/mib, s.OOMKills, s.MemoryPeak/mib, l.Memory/mib, suffice), s.OOMKills, suffice)
	}
	return out
}

// writeLimitDenials are the report's entries for each bounded stage whose writes reached a
// limit (the stage's end left sandbox.LimitFile next to its upper layer): the limit, what the
// stage held, and twice the limit as what may suffice (what the command would have written
// beyond is not known). A copy that failed is said too.
func writeLimitDenials(stages []changeset.Stage, p *policy.Profile, env Env) []report.Denial {
	var out []report.Denial
	now := time.Now().UTC()
	for _, st := range stages {
		b, err := os.ReadFile(filepath.Join(filepath.Dir(st.Upper), sandbox.LimitFile))
		if err != nil {
			continue
		}
		var hit sandbox.LimitHit
		if json.Unmarshal(b, &hit) != nil {
			continue
		}
		where := paths.Portable(st.Rules.Dir, env.Vars)
		add := func(section, what string, suffice int) {
			g := policy.LimitGrant(section, suffice)
			risk, _ := policy.GrantRisk(p, g)
			out = append(out, report.Denial{Kind: report.KindLimit, What: what, Exe: "(run)", Count: 1, First: now,
				Suggest: g.String(), Change: &g, Risk: risk})
		}
		if hit.BytesFull {
			limit := int(hit.Size / mib)
			add(policy.SectionLimitWrite, fmt.Sprintf("write limit %d MiB reached in %s: writes beyond answered ENOSPC (%d MiB held, kept); more than %d MiB needed, %d MiB may suffice",
				limit, where, hit.Used/mib, limit, 2*limit), 2*limit)
		}
		if hit.FilesFull {
			add(policy.SectionLimitFiles, fmt.Sprintf("file limit %d reached in %s: new files beyond answered ENOSPC (%d held, kept); more than %d needed, %d may suffice",
				hit.Files, where, hit.UsedFiles, hit.Files, 2*hit.Files), int(2*hit.Files))
		}
		if hit.CopyFailed != "" {
			out = append(out, report.Denial{Kind: report.KindLimit, What: fmt.Sprintf("writes in %s not all copied out of their bounded layer: %s", where, hit.CopyFailed),
				Exe: "(run)", Count: 1, First: now})
		}
	}
	return out
}

// runLimitGroup is the limits as one run applies them: the values and, when they are kept in
// a cgroup, that cgroup. Making it and moving the init stage into it (a cgroup v1 move waits
// for an RCU grace period, ~10 ms) happen in the background, from StartEarly on when the
// stage starts early, while the profile compiles and the stage sets up its sandbox; start
// waits for them and writes the limits before it releases the stage to exec the command.
type runLimitGroup struct {
	l     runLimits
	group *kernrun.LimitGroup // nil: rlimits only
	made  chan struct{}       // closed once group is made (or could not be); nil: no cgroup
	moved chan error          // the stage's move into group (nil: not asked, or waited for)
	asked bool                // enter was called
	err   error               // why the cgroup does not hold the run
	// unbound: neither a cgroup nor the sandbox's rlimits hold the run (a run without the
	// sandbox: the rlimits are set by the init stage's sandbox step).
	unbound bool
	// self: the stage joined group itself at its start (cgroup v1, initstage.FDJoin) or was
	// born into it (cgroup2, CLONE_INTO_CGROUP: birth): no move.
	self bool
	// written: the limits' writes (writeSoon), until wait collects them; nil: none asked.
	written chan error
	// birth: group's cgroup2 directory for the early stage's clone3 (kernrun.BirthDir), until
	// it is spawned.
	birth *os.File
	// leftover: a group the stage joined that the run does not use, removed when it is over;
	// idle: that is all there is (no limits decided: nothing to report).
	leftover *kernrun.LimitGroup
	idle     bool
}

// rlimitMargin: beside a cgroup the rlimits are a backstop only, above the cgroup's limits,
// so that the cgroup refuses first and the hit is on the record.
const rlimitMargin = 2

// newLimitGroup starts making the run's limit cgroup (in run, the guard's cgroup2 directory,
// when there is one).
func newLimitGroup(run *kernrun.Cgroup) *runLimitGroup {
	rg := &runLimitGroup{made: make(chan struct{})}
	go func() {
		defer close(rg.made)
		rg.group, rg.err = kernrun.NewLimitGroup(run)
	}()
	return rg
}

// joinedLimitGroup makes the run's limit cgroup before the init stage starts (in run, the
// guard's cgroup2 directory, when there is one) and, in cgroup v1, opens the files the stage
// joins it through (initstage.FDJoin; close them once it started): a move by pid would wait
// for an RCU grace period, ~10 ms of every run's start. Without them (cgroup2, or the files
// could not be opened) enter moves the stage.
func joinedLimitGroup(run *kernrun.Cgroup) (*runLimitGroup, []*os.File) {
	rg := &runLimitGroup{made: make(chan struct{})}
	defer close(rg.made)
	if rg.group, rg.err = kernrun.NewLimitGroup(run); rg.err != nil {
		return rg, nil
	}
	join, err := rg.group.JoinFiles()
	rg.self = err == nil && len(join) > 0
	if !rg.self {
		rg.birth, _ = rg.group.BirthDir() // none: enter moves the stage
	}
	phase.Mark("early: limits cgroup")
	return rg, join
}

// applyLimits puts the decided limits into the run's plan (the private /tmp's size, the
// rlimits) and, when the decision keeps them in a cgroup, into early's (the early stage's,
// already under way) or a cgroup of the run's own. A cgroup that cannot be made, entered or
// written leaves the rlimits, and the report says so.
func (r *enforcedRun) applyLimits(l *runLimits, plan *sandbox.Plan, id sandbox.Identity, early *runLimitGroup, inSandbox bool) *runLimitGroup {
	if l == nil {
		if early != nil && early.self { // the stage is in it: removed once the run is over
			return &runLimitGroup{leftover: early.group, idle: true}
		}
		early.remove()
		return nil
	}
	plan.TmpSize, plan.TmpFiles = l.Tmp, l.Files
	if id.UserNS { // the stage's own namespace's counts; never the host's
		plan.UserCounts = l.UserCounts
	}
	plan.Staged = slices.Clone(plan.Staged)
	for i := range plan.Staged {
		if !plan.Staged[i].Shared && l.Write > 0 {
			plan.Staged[i].Size, plan.Staged[i].Files = l.Write, l.Files
		}
	}
	if !l.Cgroup {
		var leftover *kernrun.LimitGroup
		if early != nil && early.self { // the stage is in it: removed once the run is over
			leftover = early.group
		} else {
			early.remove()
		}
		plan.Rlimits = l.rlimits(id.UID == 0)
		rg := &runLimitGroup{l: *l, unbound: !inSandbox, leftover: leftover}
		if id.UID == 0 {
			rg.l.Detail += "; tasks unbounded: RLIMIT_NPROC does not bind host uid 0"
		}
		return rg
	}
	// No RLIMIT_DATA beside the cgroup: it bounds address space, not memory, and a
	// sanitizer's shadow (ASan reserves terabytes, MAP_NORESERVE) or an allocator's reserve
	// counts in it whole; memory.max bounds what the run uses, and a cgroup that fails fails
	// the run.
	backstop := *l
	backstop.Pids, backstop.Memory = l.Pids*rlimitMargin, 0
	plan.Rlimits = backstop.rlimits(id.UID == 0)
	rg := early
	if rg == nil {
		var run *kernrun.Cgroup
		if r.guard != nil {
			run = r.guard.Cgroup()
		}
		rg = newLimitGroup(run)
	}
	rg.l = *l
	rg.writeSoon()
	return rg
}

// writeSoon writes the limits into the group in the background, as soon as it is made, while
// the stage builds the sandbox: wait, before the stage is released, then only collects the
// result (the writes took ~0.25 ms of the start's critical path there).
func (rg *runLimitGroup) writeSoon() {
	w := make(chan error, 1)
	rg.written = w
	l := rg.l
	go func() {
		<-rg.made
		if rg.group == nil {
			w <- nil
			return
		}
		// The stages' writes are held in memory (a tmpfs, charged to the run's cgroup, no
		// swap) until the run ends: room for the learned ones besides the run's own, so
		// that a write beyond its limit answers ENOSPC, not the OOM killer.
		err := rg.group.Set(l.Pids, l.Memory+l.WriteRoom)
		if err == nil {
			err = rg.group.SetCPUWeight(cpuWeight)
		}
		w <- err
	}()
}

// joinFiles, before the run's own init stage is spawned: the files it joins the cgroup v1
// directories through (as joinedLimitGroup's), nil when enter is to move it.
func (rg *runLimitGroup) joinFiles() []*os.File {
	if rg == nil || rg.made == nil || rg.asked || rg.self {
		return nil
	}
	<-rg.made
	if rg.group == nil {
		return nil
	}
	join, err := rg.group.JoinFiles()
	rg.self = err == nil && len(join) > 0
	return join
}

// enter moves the init stage (pid) into the run's cgroup, in the background (once).
func (rg *runLimitGroup) enter(pid int) {
	if rg == nil || rg.made == nil || rg.asked {
		return
	}
	rg.asked = true
	moved := make(chan error, 1)
	rg.moved = moved
	if rg.self {
		// It joined at its start, before anything it runs (or it failed and runs nothing).
		moved <- nil
		return
	}
	go func() {
		<-rg.made
		if rg.group == nil {
			moved <- nil
			return
		}
		moved <- rg.group.Enter(pid)
	}()
}

// wait waits for the move and for the limits' writes (writeSoon); a cgroup that does not hold
// the stage, or whose limits could not be written, leaves the rlimits.
func (rg *runLimitGroup) wait() {
	if rg == nil || rg.moved == nil {
		return
	}
	err := <-rg.moved
	rg.moved = nil
	if werr := rg.waitWritten(); err == nil {
		err = werr
	}
	if err != nil && rg.err == nil {
		rg.err = err
	}
	phase.Mark("limits: the stage in its cgroup")
}

// waitWritten waits for writeSoon's writes, once, and returns their error.
func (rg *runLimitGroup) waitWritten() error {
	if rg.written == nil {
		return nil
	}
	err := <-rg.written
	rg.written = nil
	return err
}

// report sets the limits layer's state and adds a denial for each limit the run hit. Without
// a cgroup a hit leaves no record (a fork fails with EAGAIN, an allocation with ENOMEM).
func (rg *runLimitGroup) report(rep *report.Report, res *runResult, p *policy.Profile) {
	if rg == nil || rg.idle {
		return
	}
	if rg.unbound {
		rep.SetLayer(report.Layer{Name: LayerLimits, State: report.LayerDegraded, Detail: "the run has no sandbox and no cgroup of its own: no limit holds it"})
		return
	}
	if rg.made != nil {
		<-rg.made
	}
	if rg.made != nil && !rg.asked {
		rg.err = errors.New("the stage was not moved into it")
	}
	detail := rg.l.Detail
	if rg.err != nil {
		detail = strings.Replace(detail, "in the run's cgroup", fmt.Sprintf("as rlimits at %dx only, memory not bounded (the run's cgroup: %v)", rlimitMargin, rg.err), 1)
	}
	if rg.err == nil && rg.group != nil && rg.group.Delegated {
		detail = strings.Replace(detail, "in the run's cgroup", "in the run's cgroup (below the subtree delegated to this user: "+filepath.Dir(rg.group.Pids)+")", 1)
	}
	if rg.err == nil && rg.group != nil && rg.group.CPU != "" {
		detail += fmt.Sprintf("; cpu weight %d of 100", cpuWeight)
	}
	rep.SetLayer(report.Layer{Name: LayerLimits, State: report.LayerApplied, Detail: detail})
	if rg.group == nil || rg.err != nil {
		rep.Unobservable = append(rep.Unobservable, "limits reached (rlimits only: a refused fork or allocation leaves no record)")
		return
	}
	res.denials = append(res.denials, limitDenials(rg.l, rg.group.Stats(), p)...)
}

func (rg *runLimitGroup) remove() {
	if rg == nil {
		return
	}
	if rg.moved != nil {
		<-rg.moved
	}
	if rg.made != nil {
		<-rg.made
	}
	rg.born(false)
	rg.waitWritten()
	rg.group.Remove()
	rg.leftover.Remove()
}

// hostRAM is the host's memory in bytes (0: unknown).
func hostRAM() int64 {
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) != nil {
		return 0
	}
	return int64(si.Totalram) * int64(si.Unit)
}

// LimitsSummary says what limits enforce applies to p on this host, for `sysprof show`.
func LimitsSummary(p *policy.Profile) string {
	return limitsFor(&Compiled{profile: p}, thisHost()).Detail
}
