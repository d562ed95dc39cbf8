// Package report owns the result of one enforced run: which layers were applied or degraded,
// every denial (syscall, file or network) with the executable that caused it, its parent chain,
// how often and when it first happened, and the one-line profile change that would allow it.
// It is plain data with a stable JSON form (what `sysprof refine` reads) and a table for humans.
// It does not observe anything itself: the enforcer's supervisor fills it in.
//
// # Stability
//
// The JSON field names are part of the CLI contract (`--report FILE`); add fields, never rename
// them. Denials are kept sorted (kind, what, executable) so that two reports of the same run
// compare equal.
package report
