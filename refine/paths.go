package refine

import "github.com/sysprof/sysprof/synth"

// Portable turns a host path from a report into the portable form a profile stores; see
// synth.Portable.
func Portable(p string, env map[string]string) string { return synth.Portable(p, env) }
