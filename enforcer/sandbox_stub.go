//go:build !sysprof_sandbox

package enforcer

import (
	"syscall"

	"github.com/sysprof/sysprof/sandbox"
)

// sandboxAvailable reports whether this build applies the sandbox layers. This build does not
// (the sandbox package's Apply has not landed): Run refuses profiles that need it unless
// degrading, and then reports the layers as degraded.
const sandboxAvailable = false

func namespaceAttr(p *sandbox.Plan, asRoot bool, uid, gid int) *syscall.SysProcAttr {
	// seccomp needs no namespace: no_new_privs is enough for an ordinary user.
	return &syscall.SysProcAttr{}
}

func applySandbox(p *sandbox.Plan, degrade bool) ([]layerState, []string, error) {
	return nil, nil, &layerError{layer: LayerMounts, err: errSandboxMissing}
}
