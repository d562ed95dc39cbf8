package enforcer

import (
	"fmt"
	"maps"
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
}

// decideLayers turns the compiled profile and the host's facts into the run's layers: every
// layer the profile needs must apply, or --degrade names what is lost; egress by name never
// degrades (it needs the sandbox's network namespace).
func decideLayers(c *Compiled, h hostFacts) layerDecision {
	var d layerDecision
	if h.Audit {
		d.Notes = append(d.Notes, "audit: only syscalls are let through; the filesystem and network layers still enforce")
	}
	for _, l := range c.Layers {
		if l == LayerSeccomp || l == LayerNetwork {
			continue
		}
		d.Sandbox = true
		if !h.Sandbox {
			if !h.Degrade.Allows(l) {
				d.Refuse = &LayerError{Layer: l, Reason: errSandboxMissing.Error()}
				return d
			}
			d.Degraded = append(d.Degraded, report.Layer{Name: l, State: report.LayerDegraded, Detail: errSandboxMissing.Error()})
		}
	}
	d.Sandbox = d.Sandbox && h.Sandbox
	if d.Sandbox && h.UIDWeaker != "" {
		if !h.Degrade.Allows(LayerUserNS) {
			d.Refuse = &LayerError{Layer: LayerUserNS, Reason: "as root the command must not be host uid 0, but " + h.UIDWeaker +
				": run sysprof as an ordinary user or under sudo, or pass --degrade=userns to accept uid 0 in a user namespace"}
			return d
		}
		d.Degraded = append(d.Degraded, report.Layer{Name: LayerUserNS, State: report.LayerDegraded, Detail: h.UIDWeaker})
	}
	unenforceable := map[string][]string{}
	for _, u := range c.Unenforceable {
		layer := LayerNetwork
		if strings.HasPrefix(u, "filesystem.") {
			layer = LayerFileRules
		}
		if !h.Degrade.Allows(layer) {
			d.Refuse = &LayerError{Layer: layer, Reason: u}
			return d
		}
		unenforceable[layer] = append(unenforceable[layer], u)
	}
	for _, layer := range slices.Sorted(maps.Keys(unenforceable)) {
		d.Degraded = append(d.Degraded, report.Layer{Name: layer, State: report.LayerDegraded, Detail: strings.Join(unenforceable[layer], "; ")})
	}
	if c.Egress != nil {
		if !h.Sandbox {
			d.Refuse = &LayerError{Layer: LayerNetwork, Reason: "egress by name needs the sandbox's network namespace: " + errSandboxMissing.Error()}
			return d
		}
		if h.Audit {
			d.Notes = append(d.Notes, "audit: the network allowlist still enforces (the proxy refuses, and reports, what it does not allow)")
		}
	}
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

// unobservable says which denials a run cannot report: with the guard up, only file denials
// that are no error or name no hidden path; without it, no file denial at all.
func unobservable(guardUp bool) []string {
	files := "file denials (Landlock answers EACCES/EROFS without a record the enforcer can read)"
	if guardUp {
		files = "file denials that are not an error (a hidden file reads as empty) or that name no path the sandbox hides (ENOENT of relative or symlinked paths)"
	}
	if guardUp {
		// The guard reports failed connects (a covered host unix socket, a TCP port Landlock
		// refused, no route); what never calls connect is not seen.
		return []string{files, "datagrams sent without a connect when the profile has no network (sendto fails ENETUNREACH; no record)"}
	}
	return []string{files, "network denials by Landlock or the empty network namespace (the call fails; no record)",
		"connects to host unix sockets the sandbox covers (relative, other network namespaces, any number: refused without a record)",
		"ld.so running a file of a noexec mount (the mapping fails EPERM; no record)"}
}

// Degrade names the layers a run may go without when this host cannot apply them (enforce
// --degrade[=LAYER,...]): nil, none (fail closed); DegradeAll, any. Degrading never widens what
// the profile allows: a layer that cannot apply is left out and reported, and an allowance no
// layer can enforce (network.*, filesystem.write) is dropped, not granted.
type Degrade []string

// DegradeAll lets every layer that cannot apply degrade (a bare --degrade).
var DegradeAll = Degrade{"all"}

// DegradableLayers are the names --degrade=LAYER accepts (seccomp never degrades: the filter is
// installed or the run fails).
var DegradableLayers = []string{LayerMounts, LayerNetNS, LayerLandlock, LayerCaps, LayerUserNS, LayerFileRules, LayerNetwork}

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
