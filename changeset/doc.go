// Package changeset owns a run's writes as a changeset (issue 22): the overlay upper layers an
// enforced command wrote into, kept on disk until each change is applied or dropped, the one
// classification of each change (Classify: learned, held, dangerous), and applying them to
// the host as hostile input. It does not decide which directories are staged or mount
// anything (enforcer, sandbox), nor render changes for people (cmd/sysprof `changes`).
//
// # Runs
//
// Begin makes RUN/run.json under StateDir ($XDG_STATE_HOME/sysprof/runs, else
// ~/.local/state/sysprof/runs; the sudo user's under sudo; /var/tmp/sysprof-UID/runs, this
// user's own, when the home cannot be written: read-only, `sudo -u nobody`'s /nonexistent;
// SYSPROF_STATE_DIR overrides) before
// the command starts, and holds RUN/lock (flock) while the run is alive; AddStage makes one
// staged directory's empty upper and work layers, owned by the command's uid/gid, on the staged
// directory's file system where a writable place outside it exists (the run directory, then
// LayerPlaces: /var/tmp/sysprof-changes, the user cache, then the temp directories; never a
// tmpfs that dies with the run; a place is made only when chosen), and records them in the manifest (written atomically) before returning. A
// sysprof killed at any point leaves a manifest List finds: a run recorded running whose lock
// nobody holds is interrupted, and its changes apply like any other's.
//
// # Classification
//
// Classify is pure (table-tested): dangerous first (a protected path of paths' one list —
// including the interpreter start-up hooks paths.StartupHook names — that no Keep rule at or
// below it names; a symlink or hard link leaving Rules.Tree or naming a protected path; a hard
// link with names outside the changeset; a device, FIFO or socket; set-id bits or file
// capabilities; a file becoming executable outside Rules.ExecOK), then dropped (Python's
// bytecode cache, whatever a rule says: Apply removes it from the changeset and never places
// it, Result.Dropped counts it), then learned (a Keep rule covers it), else held. A held change carries the typed write rule (policy.Grant) that would
// make it learned and the policy's rating of it; a dangerous one is critical.
//
// # Applying
//
// Apply scans and classifies again, then opens every name below directory fds with openat2
// RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS and checks it is the inode the scan saw. A change lands
// whole or not at all: a rename on one file system (RENAME_NOREPLACE for a new name,
// RENAME_EXCHANGE and a check of what was swapped out for an existing one), else a copy to a
// temporary name renamed into place, keeping mode, owner and times. Set-id bits and file
// capabilities are stripped before the move and checked again on the host after it (where a
// command still running cannot reach): a bit set again in between is stripped too. A special
// file, a hard link with names outside the changeset and a link leaving its tree are refused
// even when named. The names of one file made in the run (hard links, Change.Names) apply
// together or stay held together, since one name placed alone would leave the others with a
// name outside the changeset: naming one names the others that are not dangerous. What was
// applied leaves the changeset (its emptied directories too); the
// rest stays until applied or dropped. An error such as ENOSPC stops the apply: Result says
// what was applied and what is left. A directory the command made unreadable stays held whole
// (Change.Unreadable); the rest of the changeset is still read and applied.
//
// Conflicts: the host side of a change "moved" when its ctime is later than Run.Started (the
// kernel sets ctime on every write, chmod, link or rename, and nobody can set it back), or when
// a name appears or vanishes while applying. Taking one name of a host file with several (hard
// links: cargo's target/debug/app and deps/app-HASH) sets its ctime too: an inode this apply
// took a name of, unmoved when it did, is not moved for its other names. Such a change is never overwritten: it stays held
// and is reported. ctime, not a snapshot taken at Begin, because a run may stage a whole tree
// and Begin must stay cheap; the coarse clock makes a change within a few milliseconds after
// Begin undetectable, which only a writer racing the run's start can hit.
//
// The run state (StateDir) and the layers are the command's to write only through the overlay:
// the enforcer hides them from the sandbox, and a manifest naming a layer directory that is
// not one of this run's is not followed by Drop.
//
// OpenNew and OpenOld read a change's two sides for a review (`sysprof changes diff`), by the
// same fds-beneath rule. SetRules records a stage's widened rules (a gated run's later step).
//
// Two runs on one tree: each has its own layers and lock; their applies take turns on a flock
// of the staged directory, and the second finds what the first applied as a conflict.
package changeset
