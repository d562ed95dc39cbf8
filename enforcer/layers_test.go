package enforcer

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/sandbox"
)

// A layer has one name: the sandbox's errors and the enforcer's reports (and the JSON report
// that refine and CI read) call the layers they share the same.
func TestLayerNamesAgreeWithSandbox(t *testing.T) {
	for _, l := range []struct{ enforcer, sandbox string }{
		{LayerMounts, sandbox.LayerMounts},
		{LayerNetNS, sandbox.LayerNetNS},
		{LayerLandlock, sandbox.LayerLandlock},
		{LayerCaps, sandbox.LayerCaps},
	} {
		if l.enforcer != l.sandbox {
			t.Errorf("enforcer calls the layer %q, sandbox %q", l.enforcer, l.sandbox)
		}
	}
}

var updateReadme = flag.Bool("update-readme", false, "rewrite README.md's layer list from the layer table")

// Every layer is one complete entry of layerTable: a name, what it holds, a decision, a report
// state from somewhere, and what --degrade gives up (or why it never degrades); the init
// stage's order names exactly the layers with a Part. README.md's layer list is the table's
// (go test ./enforcer -run TestLayerTable -update-readme rewrites it).
func TestLayerTable(t *testing.T) {
	seen := map[string]bool{}
	for _, l := range layerTable {
		if l.Name == "" || seen[l.Name] {
			t.Errorf("layer %q: no name, or a name twice", l.Name)
		}
		seen[l.Name] = true
		if l.Holds == "" {
			t.Errorf("layer %s: no Holds (what it enforces)", l.Name)
		}
		if l.Decide == nil {
			t.Errorf("layer %s: no Decide", l.Name)
		}
		if l.Part == nil && l.Start == nil && l.Reports == "" {
			t.Errorf("layer %s: its report state is set nowhere (a Part, a Start or Reports)", l.Name)
		}
		if l.Degradable == (l.Degrade == "") || !l.Degradable && !strings.Contains(l.Holds, "never degrades") {
			t.Errorf("layer %s: neither what --degrade gives up nor that it never degrades", l.Name)
		}
		if (l.Part != nil) != slices.Contains(stageOrder, l.Name) {
			t.Errorf("layer %s: a Part must be applied in stageOrder (%v), and only a Part", l.Name, stageOrder)
		}
		if l.Degradable {
			if d, err := ParseDegrade(l.Name); err != nil || !d.Allows(l.Name) {
				t.Errorf("--degrade=%s: %v", l.Name, err)
			}
		}
	}
	// A degradable layer's refusal says how to degrade it; a layer that never degrades does not.
	for _, l := range layerTable {
		msg := (&LayerError{Layer: l.Name, Reason: "x"}).Error()
		if strings.Contains(msg, "--degrade="+l.Name) != l.Degradable {
			t.Errorf("layer %s: refusal %q", l.Name, msg)
		}
	}

	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- layers: enforcer's layer table -->\n", "<!-- end of layers -->\n"
	i, j := bytes.Index(readme, []byte(begin)), bytes.Index(readme, []byte(end))
	if i < 0 || j < i {
		t.Fatalf("README.md has no layer list between %q and %q", begin, end)
	}
	var want bytes.Buffer
	want.WriteString("| layer | holds | `--degrade=LAYER` gives up |\n|---|---|---|\n")
	for _, l := range Layers() {
		d := l.Degrade
		if d == "" {
			d = "never degrades"
		}
		fmt.Fprintf(&want, "| `%s` | %s | %s |\n", l.Name, l.Holds, d)
	}
	got := readme[i+len(begin) : j]
	if bytes.Equal(got, want.Bytes()) {
		return
	}
	if *updateReadme {
		out := append(append(slices.Clone(readme[:i+len(begin)]), want.Bytes()...), readme[j:]...)
		if err := os.WriteFile("../README.md", out, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("README.md's layer list is not the layer table's (-update-readme rewrites it):\n%s", want.String())
}

// The layers a run's report lists are the table's, by the table's names.
func TestReportLayersAreTableLayers(t *testing.T) {
	testutil.RequireRoot(t)
	f := newFSFixture(t)
	o := f.run(t, f.profile, false, "ok")
	if o.err != nil || o.code != 0 || len(o.rep.Layers) == 0 {
		t.Fatalf("run: %s", o)
	}
	for _, l := range o.rep.Layers {
		if layerNamed(l.Name) == nil {
			t.Errorf("the report lists layer %q, which is not in the layer table", l.Name)
		}
	}
}
