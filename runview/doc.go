// Package runview owns the picture of a run: a process tree (Run, Node) built from what
// exists — a profile's binaries with their by: parents and the allowances each first needed
// (FromProfile), an enforce report's denials with their Exe and parent chain (AddReport), a
// learn trace's full process tree (FromTrace) — drawn for a terminal (WriteTree) or as one
// self-contained HTML page (WriteHTML; WriteAuditHTML for `sysprof audit --format html`).
//
// The pages embed their template, CSS and a little filtering JavaScript (go:embed) and load
// nothing: no network, no external assets, and a Content-Security-Policy of default-src
// 'none' so that a browser would refuse if anything tried. html/template escapes markup;
// names also go through report.Printable, for the bidi and control characters markup escaping
// leaves alone.
//
// What a picture cannot show, it says (Run.Missing): a profile keeps one parent per binary
// and no per-run counts; an enforce report names only the binaries that were denied
// something (and their parents).
package runview
