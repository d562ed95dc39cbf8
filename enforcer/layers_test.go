package enforcer

import (
	"testing"

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
