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
			sandbox: true, noteMatch: "file denials are not observed: no bpffs"},
		{name: "no sandbox: refused", c: withLL(Compiled{Layers: fsLayers}), h: hostFacts{AsRoot: true},
			refuse: "capabilities"},
		{name: "no sandbox, degrade: every sandbox layer degraded, no guard", c: withLL(Compiled{Layers: fsLayers}), h: hostFacts{AsRoot: true, Degrade: DegradeAll},
			degraded: []string{LayerCaps, LayerMounts, LayerLandlock, LayerNetNS}},
		{name: "unenforceable file rule: refused", c: withLL(Compiled{Layers: fsLayers, Unenforceable: []string{"filesystem.write: x is a symlink"}}), h: hostFacts{Sandbox: true},
			refuse: "symlink"},
		{name: "unenforceable file rule, degrade", c: withLL(Compiled{Layers: fsLayers, Unenforceable: []string{"filesystem.write: x is a symlink"}}), h: hostFacts{Sandbox: true, Degrade: DegradeAll},
			sandbox: true, degraded: []string{LayerFileRules}},
		{name: "egress without the sandbox never degrades", c: withLL(Compiled{Layers: append(fsLayers, LayerNetwork), Egress: &netproxy.Plan{}}), h: hostFacts{Degrade: DegradeAll},
			refuse: "egress by name"},
		{name: "no sandbox, only landlock named: the first other layer refuses", c: withLL(Compiled{Layers: fsLayers}), h: hostFacts{AsRoot: true, Degrade: Degrade{LayerLandlock}},
			refuse: LayerCaps},
		{name: "unenforceable network rule, only filesystem-rules named: refused", c: withLL(Compiled{Layers: fsLayers, Unenforceable: []string{"network.allow: 1.2.3.4:53 udp"}}), h: hostFacts{Sandbox: true, Degrade: Degrade{LayerFileRules}},
			refuse: "1.2.3.4:53 udp"},
		{name: "unenforceable network rule, network named: dropped", c: withLL(Compiled{Layers: fsLayers, Unenforceable: []string{"network.allow: 1.2.3.4:53 udp"}}), h: hostFacts{Sandbox: true, Degrade: Degrade{LayerNetwork}},
			sandbox: true, degraded: []string{LayerNetwork}},
		{name: "root where / cannot be idmapped: refused", c: withLL(Compiled{Layers: fsLayers}), h: hostFacts{AsRoot: true, Sandbox: true, UIDWeaker: "/ is on overlayfs"},
			refuse: "--degrade=userns"},
		{name: "root where / cannot be idmapped, userns named: degraded", c: withLL(Compiled{Layers: fsLayers}), h: hostFacts{AsRoot: true, Sandbox: true, UIDWeaker: "/ is on overlayfs", Degrade: Degrade{LayerUserNS}},
			sandbox: true, guard: true, degraded: []string{LayerUserNS}},
		{name: "root where / cannot be idmapped, landlock named: refused", c: withLL(Compiled{Layers: fsLayers}), h: hostFacts{AsRoot: true, Sandbox: true, UIDWeaker: "/ is on overlayfs", Degrade: Degrade{LayerLandlock}},
			refuse: "host uid 0"},
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

func TestParseDegrade(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Degrade
		err  string
	}{
		{"", nil, ""},
		{"all", DegradeAll, ""},
		{"userns", Degrade{LayerUserNS}, ""},
		{"landlock, network-allowlist", Degrade{LayerLandlock, LayerNetwork}, ""},
		{"seccomp", nil, "no layer \"seccomp\""},
		{"landlok", nil, "no layer \"landlok\""},
	} {
		got, err := ParseDegrade(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseDegrade(%q) = %v, %v: want error %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("ParseDegrade(%q) = %v, %v: want %v", tc.in, got, err, tc.want)
		}
	}
	if (Degrade{LayerUserNS}).Allows(LayerLandlock) || !(Degrade{LayerUserNS}).Allows(LayerUserNS) || !DegradeAll.Allows(LayerMounts) || Degrade(nil).Allows(LayerMounts) {
		t.Error("Allows: a named layer only, all for all, none for nil")
	}
}
