package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/enforcer"
	"github.com/sysprof/sysprof/policy"
)

// `sysprof show` prints the line of each layer that has one (enforcer's layer table), under
// the layer's name: the limits enforce applies on this host.
func TestShowLayers(t *testing.T) {
	p := &policy.Profile{Limits: policy.Limits{Pids: 100, MemoryMiB: 512, TmpMiB: 64}}
	var b bytes.Buffer
	writeShow(&b, "p.yaml", p)
	layers := enforcer.ShowLayers(p)
	if len(layers) == 0 {
		t.Fatal("no layer has a line in show")
	}
	for _, l := range layers {
		if line := "\n" + l.Name + strings.Repeat(" ", max(9-len(l.Name), 0)) + " " + l.Text + "\n"; !strings.Contains(b.String(), line) {
			t.Errorf("show lacks %q:\n%s", line, b.String())
		}
	}
	if !strings.Contains(b.String(), "\nlimits    pids ") {
		t.Errorf("show lacks the limits line:\n%s", b.String())
	}
}
