package enforcer

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sysprof/sysprof/report"
)

// hostFacts are what a run's layer decision depends on besides the compiled profile: who runs
// it and what this host can do. Run gathers them; decideLayers is pure.
type hostFacts struct {
	AsRoot  bool
	Sandbox bool  // namespaces, mounts and Landlock can be applied (sandboxAvailable)
	Guard   error // why the root-only guard (file-denial observation) cannot run; nil: it can
	Degrade Degrade
	Audit   bool
	// RAM is the host's memory in bytes (the default memory limit is a share of it), CPUs its
	// processors (the limits' floors grow with them).
	RAM  int64
	CPUs int
	// FileMax is fs.file-max (the open-file limit per process is a share of it); 0: unknown.
	FileMax int64
	// UserCounts are the host user's per-user counts (/proc/sys/user: inotify, fanotify) by
	// name: the run may hold a share of each.
	UserCounts map[string]int
	// LimitCgroup: why the run gets no cgroup to keep its limits in; nil: it does.
	LimitCgroup error
	// WriteBound: why the stages' writes cannot be bounded here (limits.writeMiB); nil: they can.
	WriteBound error
	// UIDWeaker: the command's identity is weaker than this caller's case calls for
	// (sandbox.Identity.Weaker: as root, / cannot be idmapped, so it keeps host uid 0).
	UIDWeaker string
}

// layerDecision is what Run executes: refuse, or run with these layers and this much observed.
type layerDecision struct {
	Refuse   error          // non-nil: the run is refused (exit 125) before anything starts
	Sandbox  bool           // start the init stage with the sandbox (namespaces, mounts, Landlock)
	Guard    bool           // start the guard's file-denial program (root)
	Degraded []report.Layer // layers the run goes without (--degrade), as the report lists them
	Notes    []string
	Data     map[string]any // each layer's own decision, by name (its verdict's Data)
}

// decideLayers turns the compiled profile and the host's facts into the run's layers: each
// layer of layerTable decides its part in turn (the first refusal wins); every layer the profile
// needs must apply, or --degrade names what is lost.
func decideLayers(c *Compiled, h hostFacts) layerDecision {
	var d layerDecision
	if h.Audit {
		d.Notes = append(d.Notes, "audit: only syscalls are let through; the filesystem and network layers still enforce")
	}
	for _, l := range layerTable {
		if l.Decide == nil {
			continue
		}
		v := l.Decide(c, h)
		if v.Refuse != nil {
			d.Refuse = v.Refuse
			return d
		}
		d.Sandbox = d.Sandbox || v.Sandbox
		if v.Degraded != "" {
			d.Degraded = append(d.Degraded, report.Layer{Name: l.Name, State: report.LayerDegraded, Detail: v.Degraded})
		}
		d.Notes = append(d.Notes, v.Notes...)
		if v.Data != nil {
			if d.Data == nil {
				d.Data = map[string]any{}
			}
			d.Data[l.Name] = v.Data
		}
	}
	d.Sandbox = d.Sandbox && h.Sandbox
	// As root the guard observes file denials (Landlock's EACCES, the read-only mounts' EROFS)
	// in the run's cgroup.
	if h.AsRoot && h.Sandbox && c.Plan.Landlock != nil {
		if h.Guard == nil {
			d.Guard = true
		} else {
			d.Notes = append(d.Notes, guardLostNote(h.Guard))
		}
	}
	return d
}

func guardLostNote(why error) string {
	return fmt.Sprintf("file denials are not observed: %v", why)
}

// clone3Unobservable is the report's entry for clone3 asking for namespaces without the guard
// (it reads the flags at the syscall's exit; seccomp cannot read them, and every clone3 answers
// ENOSYS, glibc's threads and spawns included, so the filter alone cannot tell an attempt).
const clone3Unobservable = "clone3 asking for new namespaces (it fails ENOSYS as every clone3 does; its flags are in memory seccomp cannot read: no record)"

// unobservable says which denials a run cannot report: with the guard up, only file denials
// that name no hidden path (a read of a hidden file, which succeeds empty, is watched);
// without it, no file denial at all, and no clone3 into namespaces.
func unobservable(guardUp bool) []string {
	files := "file denials (Landlock answers EACCES/EROFS without a record the enforcer can read; a hidden file or directory reads as empty, a masked git config without its credentials)"
	if guardUp {
		files = "file denials that name no path the sandbox hides (ENOENT of relative or symlinked paths) or list a hidden directory (it reads as empty)"
	}
	if guardUp {
		// The guard reports failed connects (a covered host unix socket, a TCP port Landlock
		// refused, no route); what never calls connect is not seen.
		return []string{files, "datagrams sent without a connect when the profile has no network (sendto fails ENETUNREACH; no record)"}
	}
	return []string{files, "network denials by Landlock or the empty network namespace (the call fails; no record)",
		"connects to host unix sockets the sandbox covers (relative, other network namespaces, any number: refused without a record)",
		"the loader mapping a file no exec rule names (ld.so ./evil, LD_PRELOAD, dlopen in the noexec work tree, home or writable mounts: the mapping fails EPERM; no record)",
		"execve or an executable mapping of a memfd the supervisor made non-executable (on a noexec tmpfs: they fail EACCES/EPERM; no record)",
		clone3Unobservable}
}

// Degrade names the layers a run may go without when this host cannot apply them (enforce
// --degrade[=LAYER,...]): nil, none (fail closed); DegradeAll, any. Degrading never widens what
// the profile allows: a layer that cannot apply is left out and reported, and an allowance no
// layer can enforce (network.*, filesystem.write) is dropped, not granted.
type Degrade []string

// DegradeAll lets every layer that cannot apply degrade (a bare --degrade).
var DegradeAll = Degrade{"all"}

// Allows reports whether layer may degrade.
func (d Degrade) Allows(layer string) bool {
	return slices.Contains(d, "all") || slices.Contains(d, layer)
}

// ParseDegrade reads --degrade's value: "all", or layer names separated by commas.
func ParseDegrade(s string) (Degrade, error) {
	if s == "" {
		return nil, nil
	}
	var d Degrade
	for _, l := range strings.Split(s, ",") {
		l = strings.TrimSpace(l)
		if l == "all" || slices.Contains(DegradableLayers, l) {
			d = append(d, l)
			continue
		}
		return nil, fmt.Errorf("--degrade=%s: no layer %q that can degrade (all, %s)", s, l, strings.Join(DegradableLayers, ", "))
	}
	return d, nil
}
