package sandbox

import (
	"fmt"
	"strings"

	"github.com/sysprof/sysprof/internal/feature"
)

// Layer names used in LayerError and Skipped. They are the names the enforcer reports for the
// same layers (enforcer.LayerMounts, LayerNetNS, LayerLandlock, LayerCaps; a test holds them
// equal): one name per layer in errors, reports and the JSON report.
const (
	LayerMounts   = "mounts"
	LayerNetNS    = "netns" // the new network namespace with loopback up
	LayerLandlock = "landlock"
	LayerCaps     = "capabilities"
)

// ErrNotSupported is wrapped by every error that means "this kernel (or its configuration) does
// not offer the feature". errors.Is(err, ErrNotSupported) is how callers and tests tell a missing
// feature from a failure.
// It is the same value as hostcheck.ErrNotSupported (internal/feature).
var ErrNotSupported = feature.ErrNotSupported

// LayerError says which layer of a Plan could not be applied and why. Apply returns it so the
// enforcer can refuse to run (fail closed) and name the layer; the enforcer's own LayerError
// wraps it (errors.As finds either).
type LayerError struct {
	Layer string // LayerMounts, LayerNetNS, LayerLandlock or LayerCaps
	Err   error
}

func (e *LayerError) Error() string { return "sandbox " + e.Layer + ": " + e.Err.Error() }
func (e *LayerError) Unwrap() error { return e.Err }

// UnsupportedError is a feature this host lacks: available=false with a reason.
type UnsupportedError struct {
	Feature string // e.g. "landlock", "landlock tcp"
	Reason  string // what is missing and, where a user can fix it, how
	// MinimumABI is the Landlock ABI the feature needs (0 when not a Landlock feature).
	MinimumABI int
}

func (e *UnsupportedError) Error() string {
	if e.MinimumABI > 0 {
		return fmt.Sprintf("%s not supported (needs Landlock ABI %d): %s", e.Feature, e.MinimumABI, e.Reason)
	}
	return e.Feature + " not supported: " + e.Reason
}

// Is makes errors.Is(err, ErrNotSupported) true.
func (e *UnsupportedError) Is(target error) bool { return target == ErrNotSupported }

// ProbeError is a probe that could not tell whether a feature is available (for example the
// probing syscall was itself denied by an outer sandbox).
type ProbeError struct {
	Feature string
	Err     error
}

func (e *ProbeError) Error() string {
	return "could not tell whether " + e.Feature + " is available: " + e.Err.Error()
}
func (e *ProbeError) Unwrap() error { return e.Err }

// DegradedError lists Landlock features a plan asked for that this kernel cannot enforce. Apply
// wraps it in a *LayerError unless Plan.Degrade is set.
type DegradedError struct {
	ABI     int
	Dropped []string
}

func (e *DegradedError) Error() string {
	return fmt.Sprintf("kernel Landlock ABI %d cannot enforce: %s (rerun with the degrade flag to run without them)",
		e.ABI, strings.Join(e.Dropped, "; "))
}

// Is makes errors.Is(err, ErrNotSupported) true: a degraded layer is a missing feature.
func (e *DegradedError) Is(target error) bool { return target == ErrNotSupported }
