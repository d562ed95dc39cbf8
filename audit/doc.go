// Package audit owns the monthly escape audit: it reads many run reports (report.Envelope,
// from many machines and projects), folds the same escape seen many times into one Finding
// (what, by which binary and parent chain, in which projects and steps, first and last seen,
// how many runs) and classifies each finding with one pure function, Classify, that states its
// reason:
//
//   - legitimate: a new version of a binary the profile knows, a new cache or temp location
//     of the same tool, a new host of the same ecosystem as one the profile names (a registry
//     mirror), what a tool of that role normally does;
//   - overbroad: what the tool's role does not explain: a formatter or linter that connects
//     out, loads a cloud SDK, reads outside the project or spawns a shell;
//   - suspicious: writes to protected paths (policy.ProtectedPath, paths' one list), secret
//     reads (credential stores, policy's critical reads), stand-in credentials sent elsewhere,
//     raw addresses, exec of files in scratch directories, loader tricks, critical syscalls
//     (policy.SyscallRisk, or the report's own critical rating), a formatter or linter
//     writing outside the project.
//
// A step's role (format, lint, build, test, install, language-server, vcs) is `role:` of
// sysprof.yaml, carried in each run report, or GuessRole's guess from the step name, the
// command and the binaries. Findings are ranked suspicious first; the summary gives the split
// (the playbook's 90/8/2) and each finding says what to do (refine, tighten the role,
// investigate).
//
// Read never fails on a bad report: malformed, truncated, future-version and oversized
// reports are skipped with one line each. The package does no I/O beyond reading reports and
// writing the output it is given; HTML is package runview's.
//
// Names from reports are hostile input: every text output escapes them (Printable).
package audit
