package enforcer

import (
	"slices"
	"strings"

	"github.com/sysprof/sysprof/sandbox"
)

// layerDef is one layer of a run, in one place: its name (reports, errors, --degrade), whether
// it may degrade, its part of the run's decision (pure, table-tested through decideLayers) and
// the part of the plan the init stage applies for it. A new layer is a new entry.
type layerDef struct {
	Name string
	// Degradable: --degrade=Name may run without it when this host cannot apply it.
	Degradable bool
	// Decide is the layer's part of decideLayers (nil: nothing to decide beyond the others).
	Decide func(c *Compiled, h hostFacts) layerVerdict
	// Part is the part of the run's plan the init stage applies for this layer, and whether
	// the plan asks for it at all (nil: the layer applies nothing in the init stage).
	Part func(p *sandbox.Plan, degrade Degrade) (sandbox.Plan, bool)
}

// layerVerdict is one layer's part of a layerDecision.
type layerVerdict struct {
	Refuse   error  // the run is refused
	Sandbox  bool   // the layer needs the init stage's sandbox
	Degraded string // non-empty: the run goes without (part of) the layer, and why
	Notes    []string
	Limits   *runLimits // the limits layer's values (limits.go)
}

// layerTable lists every layer in the order decideLayers asks them (the first refusal wins).
// The init stage applies the layers with a Part in stageOrder.
var layerTable = []layerDef{
	{Name: LayerSeccomp},
	{Name: LayerCaps, Degradable: true, Decide: sandboxLayer(LayerCaps),
		Part: func(p *sandbox.Plan, _ Degrade) (sandbox.Plan, bool) {
			return sandbox.Plan{DropCaps: p.DropCaps}, p.DropCaps
		}},
	{Name: LayerMounts, Degradable: true, Decide: sandboxLayer(LayerMounts),
		Part: func(p *sandbox.Plan, _ Degrade) (sandbox.Plan, bool) {
			return sandbox.Plan{ReadOnlyRoot: p.ReadOnlyRoot, Writable: p.Writable, Hidden: p.Hidden, Masked: p.Masked, PrivateTmp: p.PrivateTmp,
					TmpSize: p.TmpSize, Staged: p.Staged, ReadOnly: p.ReadOnly, NoExec: p.NoExec, NoExecTrees: p.NoExecTrees, ExecKeep: p.ExecKeep},
				p.ReadOnlyRoot || len(p.Writable)+len(p.Hidden)+len(p.Masked)+len(p.Staged)+len(p.NoExecTrees) > 0 || p.PrivateTmp
		}},
	{Name: LayerLandlock, Degradable: true, Decide: sandboxLayer(LayerLandlock),
		Part: func(p *sandbox.Plan, d Degrade) (sandbox.Plan, bool) {
			return sandbox.Plan{Landlock: p.Landlock, Degrade: d.Allows(LayerLandlock)}, p.Landlock != nil
		}},
	{Name: LayerNetNS, Degradable: true, Decide: sandboxLayer(LayerNetNS),
		Part: func(p *sandbox.Plan, _ Degrade) (sandbox.Plan, bool) {
			return sandbox.Plan{NetNS: p.NetNS}, p.NetNS
		}},
	{Name: LayerUserNS, Degradable: true, Decide: decideUserNS},
	{Name: LayerFileRules, Degradable: true, Decide: unenforceableIn(LayerFileRules, "filesystem.")},
	{Name: LayerNetwork, Degradable: true, Decide: decideNetwork},
	{Name: LayerLimits, Degradable: true, Decide: decideLimits,
		Part: func(p *sandbox.Plan, _ Degrade) (sandbox.Plan, bool) {
			return sandbox.Plan{Rlimits: p.Rlimits}, len(p.Rlimits) > 0
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
