package enforcer

import (
	"fmt"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/internal/kernrun"
	"github.com/sysprof/sysprof/internal/phase"
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

// runLimits is the limits decision: the values, and where they are kept. Cgroup: in the
// run's cgroup (pids.max, memory.max, no swap), which counts the whole run and records every
// hit; otherwise as rlimits on the command (RLIMIT_NPROC, per uid of the sandbox's user
// namespace; RLIMIT_DATA, per process), which bound the run without a record (an rlimit
// beside the cgroup would refuse first, and the hit would go unrecorded).
type runLimits struct {
	Pids     int   // tasks at once, the init stage's included
	Memory   int64 // bytes
	Tmp      int64 // bytes each private tmpfs holds
	Cgroup   bool  // kept in the run's cgroup
	Detail   string
	Defaults []string // the limits the profile leaves to their default
}

// rlimits are the limits the init stage sets on the command. RLIMIT_NPROC means nothing for a
// command that is host uid 0 (the kernel exempts it): then only the cgroup bounds the tasks.
func (l runLimits) rlimits(hostUID0 bool) []sandbox.Rlimit {
	var out []sandbox.Rlimit
	if !hostUID0 {
		out = append(out, sandbox.Rlimit{Resource: unix.RLIMIT_NPROC, Max: uint64(l.Pids)})
	}
	return append(out, sandbox.Rlimit{Resource: unix.RLIMIT_DATA, Max: uint64(l.Memory)})
}

// decideLimits is the limits layer's decision: the profile's limits, or the defaults, kept in
// the run's cgroup when this host gives the run one (h.LimitCgroup nil), else as rlimits only.
// Limits never refuse a run: rlimits always apply.
func decideLimits(c *Compiled, h hostFacts) layerVerdict {
	l := limitsFor(c, h)
	return layerVerdict{Limits: &l}
}

// limitsFor turns the profile's limits and the host into the values a run applies.
func limitsFor(c *Compiled, h hostFacts) runLimits {
	var pl policy.Limits
	if c.profile != nil {
		pl = c.profile.Limits
	}
	l := runLimits{Pids: pl.Pids, Memory: int64(pl.MemoryMiB) * mib, Tmp: int64(pl.TmpMiB) * mib}
	if l.Pids == 0 {
		l.Pids = policy.DefaultPids
		l.Defaults = append(l.Defaults, "pids")
	}
	l.Pids += stageTasks
	if l.Memory == 0 {
		l.Memory = max(h.RAM*policy.DefaultMemoryPercent/100, policy.MinMemoryMiB*mib)
		l.Defaults = append(l.Defaults, "memory")
	}
	if l.Tmp == 0 {
		l.Tmp = policy.DefaultTmpMiB * mib
		l.Defaults = append(l.Defaults, "tmp")
	}
	l.Cgroup = h.LimitCgroup == nil
	where := "the run's cgroup"
	if !l.Cgroup {
		where = fmt.Sprintf("rlimits only (NPROC per uid, DATA per process; no cgroup: %v)", h.LimitCgroup)
	}
	l.Detail = fmt.Sprintf("pids %d, memory %d MiB, /tmp %d MiB, in %s", l.Pids, l.Memory/mib, l.Tmp/mib, where)
	if len(l.Defaults) > 0 {
		l.Detail += "; default: " + strings.Join(l.Defaults, ", ")
	}
	return l
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

// runLimitGroup is the limits as one run applies them: its cgroup (nil: rlimits only) and the
// values.
type runLimitGroup struct {
	group *kernrun.LimitGroup
	l     runLimits
}

// applyLimits puts the decided limits into the run's plan (rlimits, the private /tmp's size)
// and, when the decision keeps them in a cgroup, makes it (in the guard's cgroup2 directory
// when there is one) and sets them there. A cgroup that cannot be made leaves the rlimits,
// and says so.
func (r *enforcedRun) applyLimits(l *runLimits, plan *sandbox.Plan, id sandbox.Identity) *runLimitGroup {
	if l == nil {
		return nil
	}
	plan.TmpSize = l.Tmp
	rg := &runLimitGroup{l: *l}
	if l.Cgroup {
		var run *kernrun.Cgroup
		if r.guard != nil {
			run = r.guard.Cgroup()
		}
		g, err := kernrun.NewLimitGroup(run)
		if err == nil {
			if err = g.Set(l.Pids, l.Memory); err != nil {
				g.Remove()
			}
		}
		if err != nil {
			rg.l.Cgroup = false
			plan.Rlimits = l.rlimits(id.UID == 0)
			rg.l.Detail = strings.Replace(rg.l.Detail, "the run's cgroup", "rlimits only (the run's cgroup: "+err.Error()+")", 1)
		} else {
			rg.group = g
		}
	}
	if !l.Cgroup {
		plan.Rlimits = l.rlimits(id.UID == 0)
	}
	phase.Mark("limits")
	return rg
}

// report sets the limits layer's state and adds a denial for each limit the run hit. Without
// a cgroup a hit leaves no record (a fork fails with EAGAIN, an allocation with ENOMEM).
func (rg *runLimitGroup) report(rep *report.Report, res *runResult, p *policy.Profile) {
	if rg == nil {
		return
	}
	rep.SetLayer(report.Layer{Name: LayerLimits, State: report.LayerApplied, Detail: rg.l.Detail})
	if rg.group == nil {
		rep.Unobservable = append(rep.Unobservable, "limits reached (rlimits only: a refused fork or allocation leaves no record)")
		return
	}
	res.denials = append(res.denials, limitDenials(rg.l, rg.group.Stats(), p)...)
}

// cgroup is where the init stage is moved to (nil: nowhere).
func (rg *runLimitGroup) cgroup() *kernrun.LimitGroup {
	if rg == nil {
		return nil
	}
	return rg.group
}

func (rg *runLimitGroup) remove() {
	if rg != nil {
		rg.group.Remove()
	}
}

// hostRAM is the host's memory in bytes (0: unknown).
func hostRAM() int64 {
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) != nil {
		return 0
	}
	return int64(si.Totalram) * int64(si.Unit)
}
