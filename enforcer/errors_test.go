package enforcer

import (
	"errors"
	"testing"

	"github.com/sysprof/sysprof/sandbox"
)

// A layer the init stage cannot apply is one error across the packages: the enforcer's
// LayerError (exit 125) wraps the sandbox's, and the message the parent rebuilds from the
// status pipe names the layer once.
func TestLayerErrorWrapsTheSandboxs(t *testing.T) {
	// Validate refuses a relative path before anything is mounted.
	_, _, _, err := applySandbox(&sandbox.Plan{Writable: []string{"relative"}}, nil, nil, nil)
	var le *LayerError
	var se *sandbox.LayerError
	if !errors.As(err, &le) || le.Layer != LayerMounts || ExitCode(err) != 125 {
		t.Fatalf("applySandbox = %v, want an enforcer *LayerError for %s", err, LayerMounts)
	}
	if !errors.As(err, &se) || se.Layer != sandbox.LayerMounts {
		t.Errorf("applySandbox = %#v, want it to wrap a *sandbox.LayerError", err)
	}
	back := initFailure(&initStatus{Stage: "sandbox", Layer: le.Layer, Error: le.reason()}, "cmd")
	want := `cannot apply the mounts layer: sandbox mounts: writable path "relative" is not absolute (rerun with --degrade=mounts to run without it)`
	if !errors.As(back, &le) || back.Error() != want {
		t.Errorf("initFailure = %q, want %q", back, want)
	}
}

// TestInitStageDegradesOnlyWhatIsNamed: the init stage goes without a layer it cannot apply
// only when --degrade names that layer (or is bare); naming another layer still refuses.
func TestInitStageDegradesOnlyWhatIsNamed(t *testing.T) {
	bad := &sandbox.Plan{Writable: []string{"relative"}} // refused by Validate, before any mount
	for _, tc := range []struct {
		degrade Degrade
		refused bool
	}{
		{nil, true},
		{Degrade{LayerLandlock, LayerUserNS}, true},
		{Degrade{LayerMounts}, false},
		{DegradeAll, false},
	} {
		layers, _, _, err := applySandbox(bad, nil, nil, tc.degrade)
		if refused := err != nil; refused != tc.refused {
			t.Errorf("--degrade=%v: err %v, want refused %v", tc.degrade, err, tc.refused)
			continue
		}
		if !tc.refused && (len(layers) != 1 || layers[0].Name != LayerMounts || !layers[0].Degraded) {
			t.Errorf("--degrade=%v: layers %+v, want mounts degraded", tc.degrade, layers)
		}
	}
}
