package enforcer

import (
	"errors"
	"testing"

	"github.com/sysprof/sysprof/enforcer/initstage"
	"github.com/sysprof/sysprof/sandbox"
)

// A layer the init stage cannot apply is one error across the packages: the enforcer's
// LayerError (exit 125) wraps the sandbox's, and the message the parent rebuilds from the
// status pipe names the layer once.
func TestLayerErrorWrapsTheSandboxs(t *testing.T) {
	// Validate refuses a relative path before anything is mounted.
	_, _, _, err := initstage.ApplyParts(stageParts(&sandbox.Plan{ReadOnlyRoot: true, Writable: []string{"relative"}}, nil), nil, nil)
	var ie *initstage.LayerError
	var se *sandbox.LayerError
	if !errors.As(err, &ie) || ie.Layer != LayerMounts {
		t.Fatalf("ApplyParts = %v, want an init stage *LayerError for %s", err, LayerMounts)
	}
	if !errors.As(err, &se) || se.Layer != sandbox.LayerMounts {
		t.Errorf("ApplyParts = %#v, want it to wrap a *sandbox.LayerError", err)
	}
	// What the stage sends (applyLayers), rebuilt by the parent.
	back := initFailure(&initStatus{Stage: "sandbox", Layer: ie.Layer, Error: ie.Err.Error()}, "cmd")
	var le *LayerError
	if !errors.As(back, &le) || le.Layer != LayerMounts || ExitCode(back) != 125 {
		t.Fatalf("initFailure = %v, want an enforcer *LayerError for %s", back, LayerMounts)
	}
	want := `cannot apply the mounts layer: sandbox mounts: writable path "relative" is not absolute (rerun with --degrade=mounts to run without it)`
	if !errors.As(back, &le) || back.Error() != want {
		t.Errorf("initFailure = %q, want %q", back, want)
	}
}

// TestInitStageDegradesOnlyWhatIsNamed: the init stage goes without a layer it cannot apply
// only when --degrade names that layer (or is bare); naming another layer still refuses.
func TestInitStageDegradesOnlyWhatIsNamed(t *testing.T) {
	bad := &sandbox.Plan{ReadOnlyRoot: true, Writable: []string{"relative"}} // refused by Validate, before any mount
	for _, tc := range []struct {
		degrade Degrade
		refused bool
	}{
		{nil, true},
		{Degrade{LayerLandlock, LayerUserNS}, true},
		{Degrade{LayerMounts}, false},
		{DegradeAll, false},
	} {
		layers, _, _, err := initstage.ApplyParts(stageParts(bad, tc.degrade), nil, nil)
		if refused := err != nil; refused != tc.refused {
			t.Errorf("--degrade=%v: err %v, want refused %v", tc.degrade, err, tc.refused)
			continue
		}
		if !tc.refused && (len(layers) != 1 || layers[0].Name != LayerMounts || !layers[0].Degraded) {
			t.Errorf("--degrade=%v: layers %+v, want mounts degraded", tc.degrade, layers)
		}
	}
}
