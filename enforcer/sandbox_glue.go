package enforcer

import (
	"os"
	"sync"
	"syscall"

	"github.com/sysprof/sysprof/enforcer/initstage"
	"github.com/sysprof/sysprof/sandbox"
)

// sandboxAvailable reports whether this build applies the sandbox layers (a seam: Run refuses
// profiles that need them when false, unless degrading).
var sandboxAvailable = true

// namespaceAttr is the namespace part of starting the init stage.
func namespaceAttr(p *sandbox.Plan, id sandbox.Identity) *syscall.SysProcAttr {
	return p.NamespaceAttr(id)
}

// identity is who a run's command is on the host (sandbox.ChooseIdentity for this process).
func identity(hostRoot bool) sandbox.Identity {
	var rootIdmap error
	if os.Geteuid() == 0 {
		rootIdmap = canIdmapRoot()
	}
	return sandbox.ChooseIdentity(os.Geteuid(), os.Getuid(), os.Getgid(), os.Getenv("SUDO_UID"), os.Getenv("SUDO_GID"), hostRoot, rootIdmap)
}

// canIdmapRoot is sandbox.CanIdmap("/"), once per process.
var canIdmapRoot = sync.OnceValue(func() error { return sandbox.CanIdmap("/") })

// stageParts are the layers' parts of plan the init stage applies (each layer's Part), in
// stageOrder, each marked whether degrade lets the run go without it.
func stageParts(p *sandbox.Plan, degrade Degrade) []initstage.Part {
	var parts []initstage.Part
	for _, name := range stageOrder {
		if sub, want := layerNamed(name).Part(p, degrade); want {
			parts = append(parts, initstage.Part{Name: name, Plan: sub, Degrade: degrade.Allows(name)})
		}
	}
	return parts
}
