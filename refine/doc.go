// Package refine turns the denials of an enforce (or --audit) report into reviewed profile
// changes: for each distinct change a denial needs it proposes the smallest one (Propose), rates
// it with the same rules as `sysprof diff`, and applies the answers a reviewer gave (Apply). It
// reads a profile and a report and returns a new profile, never touching the terminal or a
// file; its one host access is reading a denied executable (Executable) for its binaries:
// entry. Asking the questions and writing the profile is the CLI's job
// (cmd/sysprof/refine.go).
//
// # The smallest change per denial
//
//	syscall    syscalls.allow: + NAME
//	           syscalls.architectures: + i386              (a call through another ABI)
//	           syscalls.args: NAME arg N: + VALUE          (a value an argument rule refused)
//	                                                       (no rule there: the filter's own
//	                                                        check refused it, prlimit64 on
//	                                                        another pid; the rule added lets
//	                                                        VALUE through besides what that
//	                                                        check did: seccomp.LiftRule)
//	file       filesystem.read  + PATH                     (read, list, metadata)
//	           filesystem.write + PATH                     (write, create, delete)
//	           filesystem.exec  + PATH                     (exec)
//	           binaries: + PATH sha256                     (with exec: the binary as learn
//	                                                        records it, symlinks resolved)
//	network    network.connect|send|bind + HOST:PORT PROTO (the DNS name when the report knows
//	           it, else the address)
//
// Paths are made portable with the variables of the host that ran the command ($WORKDIR,
// $HOME, $TMPDIR, toolchain roots; see package paths) and per-run random names become globs
// (paths.GlobComponent), so an accepted change matches the next run and the profile stays
// free of machine-specific paths. On a merged-/usr host (/bin → usr/bin) a path through /bin,
// /sbin or /lib* takes its /usr form, the one learn records: a report names the path the tool
// passed, and `/bin/ls` next to a learned `/usr/bin/ls` would be one binary in two rows.
// Landlock follows the link, so the /usr row allows both spellings there. A file denial can also be answered with its directory (the
// parent of the path, never `/` or a bare variable such as $HOME) or by hiding the path.
//
// A syscall denial's change is read as data (report.Denial.Change, a policy.Grant; Patch is
// that grant with its provenance); a report written before denials carried it gives it as
// Suggest text, which policy.ParseGrant reads back (report.Denial.Suggested). Proposals are
// rated with policy.GrantRisk, the rating the enforcer gave the denial.
//
// Denials that need the same change are folded into one proposal (counts add up, every
// executable that asked is listed). A denial the profile already allows (a report older than
// the profile) proposes nothing.
//
// A write to the private /tmp is allowed already only when the profile writes somewhere in it
// ($TMPDIR/...): enforce then grants the whole private tmpfs. A profile with no write rule
// there gets no write in its private /tmp at all, so the first temp file is proposed
// (policy.Diff rates it the same way).
//
// # Credential stores
//
// A denial on a credential store (paths.CredentialStores: ~/.ssh, ~/.aws, .env, ...) is
// always critical, offers no directory form, and its default answer is KeepDenied: the store
// stays hidden. Answering Hide on one hides the whole store, not just the file that was asked
// for. Its path is kept literally (not globbed) so the reviewer sees which secret was read.
// Allowing one exactly also removes the hidden rules that cover it: hidden paths win over any
// read rule, so nothing less would work, and the diff says so.
//
// # Risk, and what needs a person
//
// A proposal is rated with the policy risk functions (policy.SyscallRisk, ArgValueRisk,
// PathRisk, EndpointRisk): the rating `sysprof diff` gives the change and the enforcer gave
// the denial, and never below the risk the report names. Writes to protected paths
// (paths.ProtectedPaths: .git, .github, .sysprof, shell rc files, ...) are critical.
//
// Some changes need a person whatever their risk (Proposal.Review): a write to a protected
// path or to a directory holding one, a new executable, a new network destination (connect or
// send). Their default answer is KeepDenied; the CLI's --yes and --only KIND never accept them,
// only an interactive yes or --only naming the proposal's item (Proposal.AcceptNamed).
//
// # Provenance
//
// An accepted allowance records by: the executable that asked (portable), and no seen count:
// seen counts learn runs (out of metadata.runs), and no learn run saw it. Path rules carry the
// note "refined from report". A later learn that sees it adds its real count.
//
// # Audit reports
//
// A report written with --audit (Denial.Allowed) proposes exactly the same changes: the
// operations went through, but the profile still did not allow them.
package refine
