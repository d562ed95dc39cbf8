package enforcer

import (
	"errors"
	"fmt"
	"slices"
)

var errSandboxMissing = errors.New("this sysprof was built without the sandbox layers")

// LayerError says which layer of the profile could not be applied and why. Run returns it
// (fail closed) unless Options.Degrade is set. Err is the cause when it arose in this process
// (the init stage's own sandbox step: a *sandbox.LayerError, or the egress setup), so
// errors.As finds the sandbox's type through it; an error the init stage reported over its
// status pipe has the Reason only.
type LayerError struct {
	Layer  string // seccomp, mounts, landlock, netns, capabilities, network-allowlist, ...
	Reason string // when empty, Err's text
	Err    error
}

func (e *LayerError) Error() string {
	if !slices.Contains(DegradableLayers, e.Layer) {
		return fmt.Sprintf("cannot apply the %s layer: %s", e.Layer, e.reason())
	}
	return fmt.Sprintf("cannot apply the %s layer: %s (rerun with --degrade=%s to run without it)", e.Layer, e.reason(), e.Layer)
}

func (e *LayerError) Unwrap() error { return e.Err }

// reason is what failed, without the advice Error adds.
func (e *LayerError) reason() string {
	if e.Reason == "" && e.Err != nil {
		return e.Err.Error()
	}
	return e.Reason
}

// ExecError is the command could not be started inside the sandbox: not found (127) or not
// executable (126).
type ExecError struct {
	Command string
	Reason  string
	Code    int
}

func (e *ExecError) Error() string { return e.Command + ": " + e.Reason }

// ExitCode is the process exit status the CLI should use for an error from Run: the command's
// 126/127 for an ExecError, 125 (sysprof's own failure) for anything else.
func ExitCode(err error) int {
	var ee *ExecError
	if errors.As(err, &ee) {
		return ee.Code
	}
	return 125
}

func asLayerError(err error, target **LayerError) bool { return errors.As(err, target) }
