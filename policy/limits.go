package policy

import (
	"fmt"
	"math"
	"strconv"
)

// Limits bounds what a run may consume: how many processes and threads at once, how much memory,
// how much its private /tmp may hold. Learn writes the peaks it saw times LimitMargin (never
// below the floors); a zero field means the default (DefaultPids, a fraction of the host's RAM,
// DefaultTmpMiB). Raising a limit widens the profile (Diff), merging takes the larger.
type Limits struct {
	// Pids is the most processes and threads the run may have at once.
	Pids int `yaml:"pids,omitempty" json:"pids,omitempty"`
	// MemoryMiB is the most memory (RAM, no swap) the whole run may use, in MiB.
	MemoryMiB int `yaml:"memoryMiB,omitempty" json:"memoryMiB,omitempty"`
	// TmpMiB is the size of the private /tmp (and /var/tmp), in MiB.
	TmpMiB int `yaml:"tmpMiB,omitempty" json:"tmpMiB,omitempty"`
	// WriteMiB is the most the run's changeset (each staged directory's upper layer: the work
	// tree's writes) may hold, in MiB.
	WriteMiB int `yaml:"writeMiB,omitempty" json:"writeMiB,omitempty"`
	// WriteFiles is the most files, directories and links the changeset (each staged
	// directory's upper layer) and each private tmpfs may hold.
	WriteFiles int `yaml:"writeFiles,omitempty" json:"writeFiles,omitempty"`
}

// Sections of the limits, as Change.Section and Grant.Section name them.
const (
	SectionLimitPids   = "limits.pids"
	SectionLimitMemory = "limits.memoryMiB"
	SectionLimitTmp    = "limits.tmpMiB"
	SectionLimitWrite  = "limits.writeMiB"
	SectionLimitFiles  = "limits.writeFiles"
)

// Defaults and floors of the limits, and the margin over what learn saw.
//
// DefaultPids: a build of a large project with -j on a big machine stays well below 1024 tasks,
// a fork bomb reaches it in milliseconds. MinPids: a learned tool that ran a handful of
// processes still gets room for a shell, a pager, a compiler's subprocesses. DefaultTmpMiB: the
// kernel's tmpfs default is half of RAM; 1 GiB holds any ordinary build's temporaries.
// DefaultMemoryPercent of the host's RAM when the profile names no memory limit: the run cannot
// push the host into its OOM killer, a heavy link still fits.
const (
	DefaultPids          = 1024
	MinPids              = 64
	DefaultTmpMiB        = 1024
	MinTmpMiB            = 64
	MinMemoryMiB         = 256
	DefaultMemoryPercent = 50
	LimitMargin          = 4
	// PidsPerCPU and MemoryMiBPerCPU are floors the enforcer applies on each host: threads
	// and parallel jobs grow with the CPUs, so a limit learned on a small machine still fits
	// a big one.
	PidsPerCPU      = 32
	MemoryMiBPerCPU = 128
	// DefaultWriteMiB and DefaultWriteFiles bound what a run without learned write limits may
	// write into its changeset: more than a large build's outputs (a cargo target of a big
	// workspace, a node_modules of 100k files), far less than a disk or an inode table.
	// MinWriteMiB and MinWriteFiles are the floors of a learned limit: a build learned in a
	// warm tree writes a fraction of what the same build writes in a fresh checkout, which the
	// margin alone does not cover.
	DefaultWriteMiB   = 4096
	DefaultWriteFiles = 1 << 18
	MinWriteMiB       = 1024
	MinWriteFiles     = 1 << 16
)

// LearnedLimits turns what learn saw (peak tasks; peak memory and /tmp bytes, 0: not measured)
// into the profile's limits: each peak times LimitMargin, rounded up to a power of two, never
// below the floor. What was not measured stays 0 (the default). The rounding keeps a limit
// the same across runs whose peaks differ by chance (a cold cache, another terminal): drift
// and refine see a limit change only when a run's need doubles. Written bytes and files are
// set with LearnedWrites.
func LearnedLimits(peakPids int, peakMemory, peakTmp int64) Limits {
	var l Limits
	if peakPids > 0 {
		l.Pids = max(pow2(int64(peakPids)*LimitMargin), MinPids)
	}
	const mib = 1 << 20
	if peakMemory > 0 {
		l.MemoryMiB = max(pow2((peakMemory*LimitMargin+mib-1)/mib), MinMemoryMiB)
	}
	if peakTmp > 0 {
		l.TmpMiB = max(pow2((peakTmp*LimitMargin+mib-1)/mib), MinTmpMiB)
	}
	return l
}

// LearnedWrites sets the write limits from what learn measured the run's writes left (bytes
// and files; nothing written gives the floors, so that a learn of an up-to-date tree and one
// that built it compare equal), as LearnedLimits does the others.
func (l *Limits) LearnedWrites(bytes, files int64) {
	const mib = 1 << 20
	l.WriteMiB = max(pow2(max((bytes*LimitMargin+mib-1)/mib, 1)), MinWriteMiB)
	l.WriteFiles = max(pow2(max(files*LimitMargin, 1)), MinWriteFiles)
}

// pow2 is the smallest power of two at or above v (v > 0).
func pow2(v int64) int {
	p := int64(1)
	for p < v {
		p <<= 1
	}
	return int(p)
}

// mergeLimits takes the larger of each limit; a default (0) on either side wins, as the default
// is what that run had.
func mergeLimits(a, b Limits) Limits {
	m := func(x, y int) int {
		if x == 0 || y == 0 {
			return 0
		}
		return max(x, y)
	}
	return Limits{Pids: m(a.Pids, b.Pids), MemoryMiB: m(a.MemoryMiB, b.MemoryMiB), TmpMiB: m(a.TmpMiB, b.TmpMiB),
		WriteMiB: m(a.WriteMiB, b.WriteMiB), WriteFiles: m(a.WriteFiles, b.WriteFiles)}
}

// fields are the limits by section, with their default's value (memory's depends on the host:
// taken as the largest here).
func (l Limits) fields() []struct {
	section string
	value   int
	def     int
} {
	return []struct {
		section string
		value   int
		def     int
	}{{SectionLimitPids, l.Pids, DefaultPids}, {SectionLimitMemory, l.MemoryMiB, math.MaxInt}, {SectionLimitTmp, l.TmpMiB, DefaultTmpMiB},
		{SectionLimitWrite, l.WriteMiB, DefaultWriteMiB}, {SectionLimitFiles, l.WriteFiles, DefaultWriteFiles}}
}

// limits reports a raised limit as a widening, a lowered one as a narrowing; a limit left out
// counts as its default.
func (d *differ) limits() {
	for i, o := range d.old.Limits.fields() {
		n := d.new.Limits.fields()[i]
		ov, nv := o.value, n.value
		if ov == nv {
			continue
		}
		show := func(v int) string {
			if v == 0 {
				return "default"
			}
			return strconv.Itoa(v)
		}
		item := fmt.Sprintf("%s -> %s", show(ov), show(nv))
		eo, en := ov, nv
		if eo == 0 {
			eo = o.def
		}
		if en == 0 {
			en = n.def
		}
		if en > eo && en <= 2*eo && ov != 0 && nv != 0 {
			// Learned limits are powers of two over peaks times LimitMargin: one step up is a
			// run that needed a little more than the last (still within the old margin), not
			// a tool doing something new. Merge keeps the larger; drift stays quiet.
			continue
		}
		if en > eo {
			d.add(Change{Kind: Widened, Section: o.section, Item: item, Widens: true, Risk: RiskLow,
				Reason: "the run may use more before the limit stops it"})
		} else {
			d.narrow(Narrowed, o.section, item, "limit lowered")
		}
	}
}

// limitGrant is the grant that raises section to v.
func limitGrant(section, body string) (Grant, error) {
	n, err := strconv.Atoi(body)
	if err != nil || n <= 0 {
		return Grant{}, fmt.Errorf("%q: want a positive number (%s: N)", body, section)
	}
	return Grant{Section: section, Item: body}, nil
}

// LimitGrant is the grant that raises the limit of section (SectionLimit*) to v.
func LimitGrant(section string, v int) Grant {
	return Grant{Section: section, Item: strconv.Itoa(v)}
}

// IsLimitSection reports whether section is one of the limits.
func IsLimitSection(section string) bool {
	switch section {
	case SectionLimitPids, SectionLimitMemory, SectionLimitTmp, SectionLimitWrite, SectionLimitFiles:
		return true
	}
	return false
}

// Raise raises the limit of section (SectionLimit*) to v, a number as a grant writes it; a
// limit already higher stays.
func (l *Limits) Raise(section, v string) error {
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return fmt.Errorf("%s: %q is not a positive number", section, v)
	}
	switch section {
	case SectionLimitPids:
		l.Pids = max(l.Pids, n)
	case SectionLimitMemory:
		l.MemoryMiB = max(l.MemoryMiB, n)
	case SectionLimitTmp:
		l.TmpMiB = max(l.TmpMiB, n)
	case SectionLimitWrite:
		l.WriteMiB = max(l.WriteMiB, n)
	case SectionLimitFiles:
		l.WriteFiles = max(l.WriteFiles, n)
	default:
		return fmt.Errorf("%q is not a limit", section)
	}
	return nil
}
