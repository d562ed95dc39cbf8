// Package report owns the result of one enforced run: which layers were applied or degraded,
// every denial (syscall, file or network) with the executable that caused it, its parent chain,
// how often and when it first happened, and the profile change that would allow it: as data
// (Change, a policy.Grant, what refine applies) and as the line it prints (Suggest).
// It is plain data with a stable JSON form (what `sysprof refine` reads) and a table for humans.
// It does not observe anything itself: the enforcer's supervisor fills it in.
//
// Printable is the one escaping of names for humans (control, C1, DEL and bidi characters):
// every printer of sysprof (this table, diffreport, show, refine, learn, doctor) uses it.
//
// # Stability
//
// The JSON field names are part of the CLI contract (`--report FILE`); add fields, never rename
// them. A report without Change (written before it existed) still loads: Suggested reads the
// change back from Suggest. Denials are kept sorted (kind, what, executable) so that two reports of the same run
// compare equal.
package report
