// Package diffreport renders a policy diff (policy.Diff) for people and machines. It owns the
// output formats of `sysprof diff` and `sysprof drift`, nothing else: computing the diff and
// rating risks is package policy's job.
//
// # Formats
//
// Render writes one of these; widening changes always come first, by risk (critical, high,
// low), then narrowing ones.
//
//   - table: a terminal table and a one-line summary.
//   - markdown: a summary line and a table, made to paste into a pull request. Cells are
//     escaped (| in argument values) and items are code spans.
//   - json: a stable shape for scripts (below).
//   - sarif: SARIF 2.1.0 for code scanning (below).
//
// # JSON
//
// The JSON report is identified by its format field and only ever gains fields; a change to
// existing fields would get a new format name. "changes" is always an array; "by" is the binary
// that first needed a new allowance, omitted when unknown; "old", "new" and "sysprofVersion"
// are omitted when not given (Options.BasePath, ProfilePath, Version).
//
//	{
//	  "format": "sysprof.dev/diff/v1",
//	  "sysprofVersion": "0.1.0",
//	  "old": "main:.sysprof/make.yaml",
//	  "new": ".sysprof/make.yaml",
//	  "widens": true,
//	  "summary": {"critical": 1, "high": 2, "low": 0, "narrowing": 3},
//	  "changes": [
//	    {"kind": "added", "section": "filesystem.read", "item": "$HOME/.ssh",
//	     "risk": "critical", "reason": "credential store $HOME/.ssh becomes readable",
//	     "widens": true, "by": "/usr/bin/cc"}
//	  ]
//	}
//
// kind is added, removed, widened or narrowed; risk is none, low, high or critical; section is
// one of policy.Sections; widens is true for changes that allow more than before.
//
// # SARIF
//
// tool.driver.name is "sysprof"; there is one rule per profile section (ruleId
// "filesystem.read", ...) and one result per widening change, with level "error" for critical,
// "warning" for high and "note" for low. Each result points at the profile file given with
// Options.ProfilePath, at the item's line when Options.Line (policy.Locator) is given, and carries the
// risk, kind, item and reason as properties. Narrowing changes are not results. The output is
// checked against the OASIS SARIF 2.1.0 schema in the tests.
package diffreport
