package enforcer

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"

	"github.com/sysprof/sysprof/internal/phase"
	"github.com/sysprof/sysprof/netproxy"
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

// applySandbox applies the plan one layer at a time (each layer's Part), in stageOrder, so that with
// degrade a layer the host cannot apply is skipped and named while the others still apply.
// With egress, the stub's and the proxy's sockets are opened in the new network namespace
// right after lo comes up (before Landlock and the capability drop); that never degrades.
func applySandbox(p *sandbox.Plan, sockets []string, egress *netproxy.Inside, degrade Degrade) ([]layerState, []string, []int, error) {
	var layers []layerState
	var skipped []string
	var fds []int
	for _, name := range stageOrder {
		sub, want := layerNamed(name).Part(p, degrade)
		if !want {
			continue
		}
		res, err := sub.ApplyResult()
		if res != nil {
			for _, sk := range res.Skipped {
				skipped = append(skipped, fmt.Sprintf("skipped %s: %s: %s", sk.Layer, sk.Path, sk.Reason))
			}
			for _, im := range res.Implied {
				skipped = append(skipped, "implied "+name+": "+im)
			}
			if len(res.Dropped) > 0 {
				layers = append(layers, layerState{Name: name, Degraded: true, Detail: fmt.Sprintf("kernel cannot enforce: %v", res.Dropped)})
				continue
			}
		}
		if err == nil && name == LayerMounts {
			err = hideSockets(sockets)
		}
		if err != nil {
			if !degrade.Allows(name) {
				return layers, skipped, nil, &LayerError{Layer: name, Err: err}
			}
			layers = append(layers, layerState{Name: name, Degraded: true, Detail: err.Error()})
			continue
		}
		layers = append(layers, layerState{Name: name})
		if name == LayerNetNS && egress != nil {
			phase.Mark("sandbox: up to the network namespace")
			if fds, err = netproxy.SetupInside(*egress); err != nil {
				return layers, skipped, nil, &LayerError{Layer: LayerNetwork, Err: err}
			}
			phase.Mark("egress: routes, sockets, resolv.conf")
		}
	}
	if egress != nil && fds == nil {
		return layers, skipped, nil, &LayerError{Layer: LayerNetwork, Err: errors.New("egress: no network namespace to set up (the plan has none)")}
	}
	return layers, skipped, fds, nil
}

// hideSockets covers the host daemon sockets that are still there with the sandbox's empty
// read-only file, and the directories compile chose to hide whole (many sockets in them) with
// an empty one. A socket removed while this runs is skipped (it cannot be reached either);
// a failure caused by one vanishing mid-way is retried with the sockets still uncovered.
func hideSockets(sockets []string) error {
	var err error
	for range 3 {
		var left []string
		for _, s := range sockets {
			dir, isDir := strings.CutSuffix(s, "/")
			if st, e := os.Lstat(dir); e == nil && (isDir && st.IsDir() || !isDir && st.Mode()&os.ModeSocket != 0) {
				left = append(left, dir)
			}
		}
		if len(left) == 0 {
			return nil
		}
		if _, err = (&sandbox.Plan{Hidden: left}).ApplyResult(); err == nil {
			return nil
		}
	}
	return fmt.Errorf("hide daemon sockets: %w", err)
}
