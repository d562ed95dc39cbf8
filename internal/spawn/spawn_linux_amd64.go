package spawn

const supported = true

// rawSpawn is clone3(ca, size) and, in the child, ops[0..n) then exit_group(127) (spawn_amd64.s).
// It returns the child's pid, or the errno of clone3; a child whose call failed leaves the
// errno and the calls left in res before it exits.
//
//go:noescape
func rawSpawn(ca *cloneArgs, size uintptr, ops *op, n uintptr, res *result) (pid uintptr, errno uintptr)
