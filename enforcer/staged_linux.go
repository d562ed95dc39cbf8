package enforcer

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/sysprof/sysprof/changeset"
	"github.com/sysprof/sysprof/internal/phase"
	"github.com/sysprof/sysprof/paths"
	"github.com/sysprof/sysprof/report"
	"github.com/sysprof/sysprof/sandbox"
)

// stagedRun is one run's stages in its changeset (package changeset): the overlay layers are
// made before the init stage starts (changeset.Begin, AddStage: a kill -9 of sysprof leaves the
// run findable by `sysprof changes`), and once the command and its PID namespace are gone the
// changeset is scanned, classified and applied as the mode says (finishChangeset); what is not
// applied stays held, never discarded.
type stagedRun struct {
	specs  []StageSpec
	run    *changeset.Run
	stages []changeset.Stage // one per spec
	extra  []changeset.Stage // a shared changeset's earlier stages no spec of this run uses
	// shared: the caller's changeset (a gated run's steps): the caller applies and finishes.
	shared bool
	done   bool // finish ran: the run is the changeset's to keep
}

// plan returns p with each stage's overlay layers filled in: the plan the init stage receives
// for this run. In a shared changeset a stage may be an earlier step's stage of a directory
// above it (its path then replaces the spec's), and the earlier steps' other stages are
// mounted too (extra): each step sees what the steps before it wrote. p, and the compiled plan
// it shares its slices with, stay as they are.
func (sr *stagedRun) plan(p sandbox.Plan) sandbox.Plan {
	if sr == nil {
		return p
	}
	staged := make([]sandbox.Stage, 0, len(sr.stages)+len(sr.extra))
	p.NoExec = slices.Clone(p.NoExec)
	for i, st := range sr.stages {
		path := p.Staged[i].Path
		if path != st.Rules.Dir { // an earlier step's stage above it
			if j := slices.Index(p.NoExec, path); j >= 0 {
				p.NoExec[j] = st.Rules.Dir
			}
			path = st.Rules.Dir
		}
		if slices.ContainsFunc(staged, func(x sandbox.Stage) bool { return x.Path == path }) {
			continue // one overlay per layer pair
		}
		staged = append(staged, sandbox.Stage{Path: path, Upper: st.Upper, Work: st.Work, Shared: sr.shared})
	}
	for _, x := range sr.extra {
		staged = append(staged, sandbox.Stage{Path: x.Rules.Dir, Upper: x.Upper, Work: x.Work, Shared: true})
		// Exec there only as the mount it lies in allows: none when it lies in none of this
		// step's writable mounts, or in a noexec one.
		inExec := slices.ContainsFunc(slices.Concat(p.Writable, stageDirsOf(sr.specs)), func(w string) bool {
			return paths.Within(x.Rules.Dir, w) && !slices.Contains(p.NoExec, w)
		})
		if !inExec {
			p.NoExec = append(p.NoExec, x.Rules.Dir)
		}
	}
	p.Staged = staged
	return p
}

// stageRules is what the changeset classifies one stage's changes by: the stage's write rules
// (Keep: learned; also where a new executable is a build's own output), its protected paths,
// and the tree a link must stay in (the work tree when the stage lies in it).
func stageRules(s StageSpec, env Env) changeset.Rules {
	tree := s.Dir
	if wd := filepath.Clean(env.Vars["WORKDIR"]); filepath.IsAbs(wd) && paths.Within(s.Dir, wd) {
		tree = wd
	}
	return changeset.Rules{Dir: s.Dir, Tree: tree, Keep: slices.Clone(s.Keep), Protected: slices.Clone(s.Protected),
		ExecOK: slices.Clone(s.Keep), Vars: env.Vars}
}

// prepareStages adds a stage to the run's changeset for each staged directory: shared (a gated
// run's, whose earlier steps' layers a stage of the same directory reuses, so that each step
// sees what the steps before it wrote), or a new run begun here with meta. The layers are
// owned by the uid the command runs as (overlay writes with the mounter's credentials).
func prepareStages(specs []StageSpec, id sandbox.Identity, shared *changeset.Run, meta changeset.Run, env Env) (*stagedRun, error) {
	if len(specs) == 0 {
		return nil, nil
	}
	sr := &stagedRun{specs: specs, run: shared, shared: shared != nil}
	if shared == nil {
		run, err := changeset.Begin(meta)
		if err != nil {
			return nil, fmt.Errorf("changeset (where this run's writes are kept): %w (set XDG_STATE_HOME or SYSPROF_STATE_DIR to a directory you can write)", err)
		}
		sr.run = run
	}
	for _, s := range specs {
		st, err := sr.stage(s, id, env)
		if err != nil {
			if !sr.shared {
				_ = sr.run.Drop()
			}
			return nil, err
		}
		sr.stages = append(sr.stages, st)
	}
	if sr.shared {
		for _, st := range sr.run.Stages {
			if slices.ContainsFunc(sr.stages, func(x changeset.Stage) bool { return x.Top == st.Top }) {
				continue
			}
			if err := resetWork(st, id); err != nil {
				return nil, fmt.Errorf("stage %s: reuse its layers: %w", st.Rules.Dir, err)
			}
			sr.extra = append(sr.extra, st)
		}
	}
	return sr, nil
}

// stage returns the changeset stage of s: a new one, or in a shared changeset the one an
// earlier step made for the same directory or one above it (its work directory emptied for the
// next mount, its rules widened by s's: what any step learned is learned). A new stage above
// earlier ones leaves them mounted inside it (extra, see plan).
func (sr *stagedRun) stage(s StageSpec, id sandbox.Identity, env Env) (changeset.Stage, error) {
	rules := stageRules(s, env)
	i := slices.IndexFunc(sr.run.Stages, func(st changeset.Stage) bool { return st.Rules.Dir == s.Dir })
	if i < 0 {
		i = slices.IndexFunc(sr.run.Stages, func(st changeset.Stage) bool { return paths.Within(s.Dir, st.Rules.Dir) })
	}
	if i < 0 {
		st, err := sr.run.AddStage(rules, id.FileUID, id.FileGID)
		if err != nil {
			return changeset.Stage{}, fmt.Errorf("stage %s: %w", s.Dir, err)
		}
		return st, nil
	}
	st := &sr.run.Stages[i]
	st.Rules.Keep = compactSorted(append(st.Rules.Keep, rules.Keep...))
	st.Rules.ExecOK = compactSorted(append(st.Rules.ExecOK, rules.ExecOK...))
	st.Rules.Protected = compactSorted(append(st.Rules.Protected, rules.Protected...))
	if err := resetWork(*st, id); err != nil {
		return changeset.Stage{}, fmt.Errorf("stage %s: reuse the layers of %s: %w", s.Dir, st.Rules.Dir, err)
	}
	return *st, nil
}

// resetWork empties a stage's work directory for its next mount: overlay refuses one a
// volatile mount used (work/incompat/volatile).
func resetWork(st changeset.Stage, id sandbox.Identity) error {
	changeset.ChmodDirs(st.Work)
	if err := os.RemoveAll(st.Work); err != nil {
		return err
	}
	if err := os.Mkdir(st.Work, 0o755); err != nil {
		return err
	}
	if os.Geteuid() == 0 {
		return os.Lchown(st.Work, id.FileUID, id.FileGID)
	}
	return nil
}

func compactSorted(s []string) []string {
	slices.Sort(s)
	return slices.Compact(s)
}

// remove drops a run whose command never ran (setup failed before finish).
func (sr *stagedRun) remove() {
	if sr == nil || sr.shared || sr.done || sr.run == nil {
		return
	}
	_ = sr.run.Drop()
}

// finish applies the run's changeset as mode says and reports it (nil for a shared changeset:
// its caller finishes it once every step ran).
func (sr *stagedRun) finish(mode changeset.ApplyMode) (*report.Changes, []string) {
	if sr == nil {
		return nil, nil
	}
	sr.done = true
	if sr.shared {
		return nil, nil
	}
	return FinishChangeset(sr.run, mode, "")
}

// FinishChangeset applies run's changes as mode says (nothing when gate names a failed gate:
// everything is held) once nothing writes into its layers any more, and marks it finished
// (removed when nothing is left). It returns the report's view (every change not simply
// applied, with its class, reason and the write rule that would make it learned) and notes.
func FinishChangeset(run *changeset.Run, mode changeset.ApplyMode, gate string) (*report.Changes, []string) {
	if mode == "" {
		mode = changeset.ApplyLearned
	}
	if gate != "" {
		mode = changeset.ApplyNone
	}
	var notes []string
	res, err := run.Apply(mode, nil)
	phase.Mark("changeset apply")
	out := res.Report(run.ID)
	out.Apply, out.Gate = string(mode), gate
	if err != nil {
		out.Errors = append(out.Errors, err.Error())
		notes = append(notes, fmt.Sprintf("changeset %s: not applied (%v): what the command wrote is held: `sysprof changes diff %s`", run.ID, err, run.ID))
	}
	out.Errors = append(out.Errors, res.Errors...)
	if err := run.Finish(); err != nil {
		out.Errors = append(out.Errors, err.Error())
	}
	if out.Applied > 0 {
		notes = append(notes, fmt.Sprintf("changeset %s: %d learned change(s) applied", run.ID, out.Applied))
	}
	if out.Dropped > 0 {
		notes = append(notes, fmt.Sprintf("changeset %s: %d bytecode cache file(s) not kept (python writes them again from their sources; bytecode written in a run never reaches the host)", run.ID, out.Dropped))
	}
	return out, notes
}
