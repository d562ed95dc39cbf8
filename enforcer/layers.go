package enforcer

import (
	"os"
	"slices"
	"strings"

	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/report"
	"github.com/sysprof/sysprof/sandbox"
)

// layerDef is one layer of a run, in one place: its name (reports, errors, --degrade), what
// it holds and what --degrade gives up (docs, help and errors read them here), its part of the
// run's decision (pure, table-tested through decideLayers), the part of the plan the init stage
// applies for it, its part of the run outside the init stage, and its line in `sysprof show`.
// A new layer is a new entry (DEVELOPERS.md, "Adding a layer"); TestLayerTable checks each.
type layerDef struct {
	Name string
	// Holds says what the layer enforces, in a line (the layer list in README.md).
	Holds string
	// Degradable: --degrade=Name may run without it when this host cannot apply it; Degrade
	// says what that gives up.
	Degradable bool
	Degrade    string
	// Decide is the layer's part of decideLayers (nil: nothing to decide beyond the others).
	Decide func(c *Compiled, h hostFacts) layerVerdict
	// Part is the part of the run's plan the init stage applies for this layer, and whether
	// the plan asks for it at all (nil: the layer applies nothing in the init stage). The init
	// stage reports its state (applied, or degraded and why) for it.
	Part func(p *sandbox.Plan, degrade Degrade) (sandbox.Plan, bool)
	// Start is the layer's part of the run outside the init stage (nil: none): given its
	// verdict's Data, it may complete the plan before the stage starts, and it is told when the
	// stage started, waited for before the command execs, asked for its report state and
	// denials when the command ended, and removed.
	Start func(r *enforcedRun, s layerStart) layerRun
	// Reports says where the layer's state in the report comes from, when no Part or Start
	// sets it (the table test: every layer's state is set somewhere).
	Reports string
	// Show is the layer's line in `sysprof show` for a profile on this host (nil: none).
	Show func(p *policy.Profile) string
}

// layerVerdict is one layer's part of a layerDecision.
type layerVerdict struct {
	Refuse   error  // the run is refused
	Sandbox  bool   // the layer needs the init stage's sandbox
	Degraded string // non-empty: the run goes without (part of) the layer, and why
	Notes    []string
	Data     any // the layer's own decision, handed to its Start (limits: *runLimits)
}

// layerStart is what a layer's Start gets: its decision's Data, the run's plan (before the
// init stage gets it), who the command is and whether the run has the sandbox.
type layerStart struct {
	Data    any
	Plan    *sandbox.Plan
	ID      sandbox.Identity
	Sandbox bool
}

// layerRun is a layer's part of one run outside the init stage. Each method is called on a
// nil receiver too (the layer decided nothing for this run).
type layerRun interface {
	enter(stagePID int)                                           // the init stage started
	wait()                                                        // before the stage execs the command
	report(rep *report.Report, res *runResult, p *policy.Profile) // the command ended
	remove()                                                      // the run is over
}

// layerRuns are the run's layers' parts outside the init stage, called in table order.
type layerRuns []layerRun

func (ls layerRuns) enter(pid int) {
	for _, l := range ls {
		l.enter(pid)
	}
}

// joinFiles are the files a layer has the init stage join its cgroups through
// (initstage.FDJoin), before the stage is spawned; the caller closes them once it is.
func (ls layerRuns) joinFiles() []*os.File {
	var out []*os.File
	for _, l := range ls {
		if j, ok := l.(interface{ joinFiles() []*os.File }); ok {
			out = append(out, j.joinFiles()...)
		}
	}
	return out
}

func (ls layerRuns) wait() {
	for _, l := range ls {
		l.wait()
	}
}

func (ls layerRuns) report(rep *report.Report, res *runResult, p *policy.Profile) {
	for _, l := range ls {
		l.report(rep, res, p)
	}
}

func (ls layerRuns) remove() {
	for _, l := range ls {
		l.remove()
	}
}

// startLayers starts each layer's part of the run outside the init stage (dec: the run's
// decision; plan: the plan the stage will get, which a layer may complete).
func (r *enforcedRun) startLayers(dec layerDecision, plan *sandbox.Plan, id sandbox.Identity) layerRuns {
	var out layerRuns
	for _, l := range layerTable {
		if l.Start != nil {
			out = append(out, l.Start(r, layerStart{Data: dec.Data[l.Name], Plan: plan, ID: id, Sandbox: dec.Sandbox}))
		}
	}
	return out
}

// Where the report's state of a layer without a Part or Start comes from.
const (
	reportsSession  = "the session: applied once the filter is installed"
	reportsIdentity = "the session: applied, or degraded when the command keeps host uid 0"
	reportsDecision = "the decision: degraded, with what was dropped, when a rule cannot be enforced"
	reportsEgress   = "the decision (rules dropped) and the egress proxy (what it holds)"
)

// layerTable lists every layer in the order decideLayers asks them (the first refusal wins).
// The init stage applies the layers with a Part in stageOrder.
var layerTable = []layerDef{
	{Name: LayerSeccomp,
		Holds: "the syscall allowlist and its argument rules (never degrades)", Reports: reportsSession,
		Decide: func(*Compiled, hostFacts) layerVerdict { return layerVerdict{} }}, // installed or the run fails
	{Name: LayerCaps, Degradable: true, Decide: sandboxLayer(LayerCaps),
		Holds: "every capability dropped, no new privileges", Degrade: "the command keeps the capabilities of its user namespace",
		Part: func(p *sandbox.Plan, _ Degrade) (sandbox.Plan, bool) {
			return sandbox.Plan{DropCaps: p.DropCaps}, p.DropCaps
		}},
	{Name: LayerMounts, Degradable: true, Decide: sandboxLayer(LayerMounts),
		Holds: "read-only root, the writable and staged directories, hidden secrets, private /tmp", Degrade: "the mounts (read-only root, hidden secrets, private /tmp): the host's files as they are, Landlock still applies",
		Part: func(p *sandbox.Plan, _ Degrade) (sandbox.Plan, bool) {
			return sandbox.Plan{ReadOnlyRoot: p.ReadOnlyRoot, Writable: p.Writable, Hidden: p.Hidden, Masked: p.Masked, PrivateTmp: p.PrivateTmp,
					TmpSize: p.TmpSize, TmpFiles: p.TmpFiles, Staged: p.Staged, ReadOnly: p.ReadOnly, NoExec: p.NoExec, NoExecTrees: p.NoExecTrees, ExecKeep: p.ExecKeep, ExecOutputs: p.ExecOutputs, ExecFiles: p.ExecFiles},
				p.ReadOnlyRoot || len(p.Writable)+len(p.Hidden)+len(p.Masked)+len(p.Staged)+len(p.NoExecTrees) > 0 || p.PrivateTmp
		}},
	{Name: LayerLandlock, Degradable: true, Decide: sandboxLayer(LayerLandlock),
		Holds: "the read, write, exec and list rules, TCP ports, signal and abstract-unix scoping", Degrade: "the rights this kernel's Landlock cannot enforce, or Landlock altogether",
		Part: func(p *sandbox.Plan, d Degrade) (sandbox.Plan, bool) {
			return sandbox.Plan{Landlock: p.Landlock, Degrade: d.Allows(LayerLandlock)}, p.Landlock != nil
		}},
	{Name: LayerNetNS, Degradable: true, Decide: sandboxLayer(LayerNetNS),
		Holds: "a private network namespace with only loopback", Degrade: "loopback in the private namespace (no network at all), or the namespace in a build without the sandbox",
		Part: func(p *sandbox.Plan, _ Degrade) (sandbox.Plan, bool) {
			return sandbox.Plan{NetNS: p.NetNS}, p.NetNS
		}},
	{Name: LayerUserNS, Degradable: true, Decide: decideUserNS,
		Holds: "the command is never host uid 0 (as root: an unprivileged host uid, idmapped mounts), and has a session keyring of its own", Degrade: "uid 0 in a user namespace mapping every id to itself (where / cannot be idmapped)", Reports: reportsIdentity},
	{Name: LayerFileRules, Degradable: true, Decide: unenforceableIn(LayerFileRules, "filesystem."),
		Holds: "write rules exactly as the profile names them", Degrade: "the write rules no layer here can enforce (dropped, never granted)", Reports: reportsDecision},
	{Name: LayerNetwork, Degradable: true, Decide: decideNetwork,
		Holds: "egress by name through sysprof's DNS stub and proxy, per binary", Degrade: "the network rules no layer here can enforce (dropped, never granted); egress by name never degrades", Reports: reportsEgress},
	{Name: LayerLimits, Degradable: true, Decide: decideLimits,
		Holds: "tasks, memory, private /tmp size and inodes (the run's cgroup, else rlimits), the bytes and files each staged directory's writes hold (a bounded tmpfs upper layer), a quarter of the host user's inotify and fanotify counts", Degrade: "the rlimits, when the init stage cannot set them (a cgroup of the run's own still holds it)",
		Start: startLimits, Show: LimitsSummary,
		Part: func(p *sandbox.Plan, _ Degrade) (sandbox.Plan, bool) {
			return sandbox.Plan{Rlimits: p.Rlimits, UserCounts: p.UserCounts}, len(p.Rlimits)+len(p.UserCounts) > 0
		}},
}

// stageOrder is the order in which the init stage applies the layers' parts: the sandbox's
// (see the sandbox package doc: mounts need the capabilities Landlock and the drop take away).
// The rlimits come last: lowering one needs no capability, and the stage's own work is done.
var stageOrder = []string{LayerMounts, LayerNetNS, LayerLandlock, LayerCaps, LayerLimits}

// layerNamed is the table's entry for name.
func layerNamed(name string) *layerDef {
	for i := range layerTable {
		if layerTable[i].Name == name {
			return &layerTable[i]
		}
	}
	return nil
}

// DegradableLayers are the names --degrade=LAYER accepts (seccomp never degrades: the filter is
// installed or the run fails).
var DegradableLayers = func() []string {
	var out []string
	for _, l := range layerTable {
		if l.Degradable {
			out = append(out, l.Name)
		}
	}
	return out
}()

// LayerInfo is one layer as people read it: its name, what it holds and what --degrade gives
// up ("": it never degrades).
type LayerInfo struct{ Name, Holds, Degrade string }

// Layers lists every layer of a run, in the table's order.
func Layers() []LayerInfo {
	out := make([]LayerInfo, len(layerTable))
	for i, l := range layerTable {
		out[i] = LayerInfo{Name: l.Name, Holds: l.Holds}
		if l.Degradable {
			out[i].Degrade = l.Degrade
		}
	}
	return out
}

// LayerSummary is a layer's line in `sysprof show`.
type LayerSummary struct{ Name, Text string }

// ShowLayers are the lines `sysprof show` prints for the layers that have one, for p on this
// host.
func ShowLayers(p *policy.Profile) []LayerSummary {
	var out []LayerSummary
	for _, l := range layerTable {
		if l.Show != nil {
			out = append(out, LayerSummary{l.Name, l.Show(p)})
		}
	}
	return out
}

// sandboxLayer decides a layer the init stage's sandbox applies: it needs the sandbox when the
// profile asks for it, and degrades (or refuses) when this build has none.
func sandboxLayer(name string) func(c *Compiled, h hostFacts) layerVerdict {
	return func(c *Compiled, h hostFacts) layerVerdict {
		if !slices.Contains(c.Layers, name) {
			return layerVerdict{}
		}
		v := layerVerdict{Sandbox: true}
		if !h.Sandbox {
			if !h.Degrade.Allows(name) {
				v.Refuse = &LayerError{Layer: name, Reason: errSandboxMissing.Error()}
				return v
			}
			v.Degraded = errSandboxMissing.Error()
		}
		return v
	}
}

// decideUserNS: as root the command must not keep host uid 0 (sandbox.Identity.Weaker) unless
// --degrade=userns accepts it.
func decideUserNS(c *Compiled, h hostFacts) layerVerdict {
	if h.UIDWeaker == "" || !h.Sandbox || !needsSandbox(c) {
		return layerVerdict{}
	}
	if !h.Degrade.Allows(LayerUserNS) {
		return layerVerdict{Refuse: &LayerError{Layer: LayerUserNS, Reason: "as root the command must not be host uid 0, but " + h.UIDWeaker +
			": run sysprof as an ordinary user or under sudo, or pass --degrade=userns to accept uid 0 in a user namespace"}}
	}
	return layerVerdict{Degraded: h.UIDWeaker}
}

// needsSandbox: some layer of the profile is applied by the init stage's sandbox.
func needsSandbox(c *Compiled) bool {
	return slices.ContainsFunc(c.Layers, func(l string) bool { return slices.Contains(stageOrder, l) })
}

// unenforceableIn refuses, or degrades with --degrade=name, the parts of the profile no layer
// here can enforce whose key starts with prefix.
func unenforceableIn(name, prefix string) func(c *Compiled, h hostFacts) layerVerdict {
	return func(c *Compiled, h hostFacts) layerVerdict {
		var lost []string
		for _, u := range c.Unenforceable {
			if !strings.HasPrefix(u, prefix) {
				continue
			}
			if !h.Degrade.Allows(name) {
				return layerVerdict{Refuse: &LayerError{Layer: name, Reason: u}}
			}
			lost = append(lost, u)
		}
		return layerVerdict{Degraded: strings.Join(lost, "; ")}
	}
}

// decideNetwork: the network allowlist's unenforceable rules (everything not filesystem.*),
// and egress by name, which never degrades (it needs the sandbox's network namespace).
func decideNetwork(c *Compiled, h hostFacts) layerVerdict {
	var lost []string
	for _, u := range c.Unenforceable {
		if strings.HasPrefix(u, "filesystem.") {
			continue
		}
		if !h.Degrade.Allows(LayerNetwork) {
			return layerVerdict{Refuse: &LayerError{Layer: LayerNetwork, Reason: u}}
		}
		lost = append(lost, u)
	}
	v := layerVerdict{Degraded: strings.Join(lost, "; ")}
	if c.Egress != nil {
		if !h.Sandbox {
			return layerVerdict{Refuse: &LayerError{Layer: LayerNetwork, Reason: "egress by name needs the sandbox's network namespace: " + errSandboxMissing.Error()}}
		}
		if h.Audit {
			v.Notes = append(v.Notes, "audit: the network allowlist still enforces (the proxy refuses, and reports, what it does not allow)")
		}
	}
	return v
}
