// Package report owns the result of one enforced run: which layers were applied or degraded,
// every denial (syscall, file or network) with the executable that caused it, its parent chain,
// how often and when it first happened, and the profile change that would allow it: as data
// (Change, a policy.Grant, what refine applies) and as the line it prints (Suggest).
// It is plain data with a stable JSON form (what `sysprof refine` reads) and a table for humans.
// It does not observe anything itself: the enforcer's supervisor fills it in.
//
// Printable is the one escaping of names for humans (control, C1, DEL and bidi characters):
// every printer of sysprof (this table, diffreport, show, refine, learn, doctor) uses it.
// Width and Fit are the one fitting of a table to a terminal (TIOCGWINSZ on the writer, else
// $COLUMNS, else no limit): cells wrap after '/', ' ' or ',' and never inside an escape. Every
// table sysprof prints uses them: denials, diff/drift, the learn summary, changes, the gates,
// the audit and doctor.
// MarkdownText and MarkdownCode are the one markdown escaping built on it (diff and drift
// markdown, `changes diff --format markdown`, the audit).
//
// # Stability
//
// The JSON field names are part of the CLI contract (`--report FILE`); add fields, never rename
// them. A report without Change (written before it existed) still loads: Suggested reads the
// change back from Suggest. Denials are kept sorted (kind, what, executable) so that two reports of the same run
// compare equal.
//
// # Run reports that last
//
// An Envelope wraps one run's result (a Report, or a drift's changes) with who ran it where:
// kind (enforce, audit, drift, held), host, project, step, role, the sha256 of the profile
// file, the sysprof version and the time. With a reports directory set (`reports:` in
// sysprof.yaml, --reports-dir or SYSPROF_REPORTS_DIR) every enforce (with the changes it
// held for review, in its Report), audit-mode enforce and drift run leaves one there
// (Envelope.SaveIn: atomic, a name that sorts by time and never collides). That JSON is the
// interface for CI artifacts and fleet collection, and what `sysprof audit` reads: schema
// "sysprof.run-report", version EnvelopeVersion; fields are added, never renamed. ParseEnvelope also reads a plain Report (`enforce --report FILE`), and
// refuses a newer version with ErrFutureVersion.
package report
