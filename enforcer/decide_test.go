package enforcer

import (
	"errors"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/netproxy"
	"github.com/sysprof/sysprof/sandbox"
)

func TestDecideLayers(t *testing.T) {
	fsLayers := []string{LayerSeccomp, LayerCaps, LayerMounts, LayerLandlock, LayerNetNS}
	withLL := func(c Compiled) *Compiled { c.Plan.Landlock = &sandbox.Landlock{}; return &c }
	for _, tc := range []struct {
		name      string
		c         *Compiled
		h         hostFacts
		refuse    string // substring of the refusal; "" runs
		sandbox   bool
		guard     bool
		degraded  []string
		noteMatch string
	}{
		{name: "root, everything available", c: withLL(Compiled{Layers: fsLayers}), h: hostFacts{AsRoot: true, Sandbox: true},
			sandbox: true, guard: true},
		{name: "ordinary user: no guard, nothing lost", c: withLL(Compiled{Layers: fsLayers}), h: hostFacts{Sandbox: true},
			sandbox: true},
		{name: "root without the guard runs unobserved", c: withLL(Compiled{Layers: fsLayers}), h: hostFacts{AsRoot: true, Sandbox: true, Guard: errors.New("no bpffs")},
			sandbox: true, noteMatch: "not observed: no bpffs"},
		{name: "no sandbox: refused", c: withLL(Compiled{Layers: fsLayers}), h: hostFacts{AsRoot: true},
			refuse: "capabilities"},
		{name: "no sandbox, degrade: every sandbox layer degraded, no guard", c: withLL(Compiled{Layers: fsLayers}), h: hostFacts{AsRoot: true, Degrade: true},
			degraded: []string{LayerCaps, LayerMounts, LayerLandlock, LayerNetNS}},
		{name: "unenforceable file rule: refused", c: withLL(Compiled{Layers: fsLayers, Unenforceable: []string{"filesystem.write: x is a symlink"}}), h: hostFacts{Sandbox: true},
			refuse: "symlink"},
		{name: "unenforceable file rule, degrade", c: withLL(Compiled{Layers: fsLayers, Unenforceable: []string{"filesystem.write: x is a symlink"}}), h: hostFacts{Sandbox: true, Degrade: true},
			sandbox: true, degraded: []string{LayerFileRules}},
		{name: "egress without the sandbox never degrades", c: withLL(Compiled{Layers: append(fsLayers, LayerNetwork), Egress: &netproxy.Plan{}}), h: hostFacts{Degrade: true},
			refuse: "egress by name"},
		{name: "audit says what still enforces", c: withLL(Compiled{Layers: fsLayers, Egress: &netproxy.Plan{}}), h: hostFacts{Sandbox: true, Audit: true},
			sandbox: true, noteMatch: "allowlist still enforces"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := decideLayers(tc.c, tc.h)
			if tc.refuse != "" {
				if d.Refuse == nil || !strings.Contains(d.Refuse.Error(), tc.refuse) {
					t.Fatalf("refuse = %v, want one naming %q", d.Refuse, tc.refuse)
				}
				return
			}
			if d.Refuse != nil {
				t.Fatalf("refused: %v", d.Refuse)
			}
			if d.Sandbox != tc.sandbox || d.Guard != tc.guard {
				t.Errorf("sandbox %v guard %v, want %v %v", d.Sandbox, d.Guard, tc.sandbox, tc.guard)
			}
			var got []string
			for _, l := range d.Degraded {
				got = append(got, l.Name)
			}
			if strings.Join(got, ",") != strings.Join(tc.degraded, ",") {
				t.Errorf("degraded %v, want %v", got, tc.degraded)
			}
			if tc.noteMatch != "" && !strings.Contains(strings.Join(d.Notes, "\n"), tc.noteMatch) {
				t.Errorf("notes %q lack %q", d.Notes, tc.noteMatch)
			}
		})
	}
}
