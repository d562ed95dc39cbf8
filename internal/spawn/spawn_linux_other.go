//go:build linux && !amd64

package spawn

const supported = false

func rawSpawn(ca *cloneArgs, size uintptr, ops *op, n uintptr, res *result) (pid uintptr, errno uintptr) {
	panic("BUG: spawn.rawSpawn without an implementation for this architecture")
}
