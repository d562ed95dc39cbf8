package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sysprof/sysprof/changeset"
	"github.com/sysprof/sysprof/diffreport"
	"github.com/sysprof/sysprof/enforcer"
	"github.com/sysprof/sysprof/paths"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/profiler"
	"github.com/sysprof/sysprof/project"
	"github.com/sysprof/sysprof/report"
	"github.com/sysprof/sysprof/seccomp"
	"github.com/sysprof/sysprof/synth"
	"github.com/sysprof/sysprof/trace"
)

// Steps of sysprof.yaml as gates: learn, enforce and drift take --step NAME (repeatable) or
// --all instead of a command, and run the steps in order, each in its workdir with its env and
// under its own profile. This file holds what the three share and their step-mode runs.

func addStepFlags(f *pflag.FlagSet, steps *[]string, all *bool) {
	f.StringArrayVar(steps, "step", nil, "run this step of "+projectFile+" instead of a command (repeatable)")
	f.BoolVar(all, "all", false, "run every step of "+projectFile+", in order")
}

// resolveGates returns the steps selected by --step/--all, and ok=false when neither was given
// (the command runs as usual).
func resolveGates(cmd *cobra.Command, args, names []string, all bool, profileFlag string) ([]project.Step, config, bool, error) {
	if len(names) == 0 && !all {
		return nil, config{}, false, nil
	}
	switch {
	case all && len(names) > 0:
		return nil, config{}, true, withCode(exitSysprof, errors.New("--step and --all exclude each other"))
	case len(args) > 0:
		return nil, config{}, true, withCode(exitSysprof, fmt.Errorf("--step/--all run the commands of %s: drop `-- %s`", projectFile, strings.Join(args, " ")))
	case profileFlag != "":
		return nil, config{}, true, withCode(exitSysprof, fmt.Errorf("-p does not go with --step/--all: set `profile:` of the step in %s", projectFile))
	}
	cfg, err := loadConfig(cmd)
	if err != nil {
		return nil, config{}, true, err
	}
	proj, err := cfg.requireProject()
	if err != nil {
		return nil, config{}, true, err
	}
	steps, err := proj.Select(names, all)
	if err != nil {
		return nil, config{}, true, withCode(exitSysprof, err)
	}
	return steps, cfg, true, nil
}

// stepFile is FILE.<step>.json, where a step-mode run writes what FILE holds for one command.
func stepFile(file, name string) string {
	return file + "." + name + ".json"
}

// stepRun is what learn, enforce or drift does with the steps of a --step/--all run: every
// step is checked before the first one runs (its workdir, then check), then the steps run in
// order, each announced, until one returns an error.
type stepRun struct {
	verb  string // what the announcement says the step does: learn, enforce
	check func(i int, st project.Step) error
	run   func(ctx context.Context, i int, st project.Step) error
}

func runSteps(ctx context.Context, w io.Writer, steps []project.Step, r stepRun) error {
	for i, st := range steps {
		if err := st.CheckWorkdir(); err != nil {
			return withCode(exitSysprof, err)
		}
		if r.check != nil {
			if err := r.check(i, st); err != nil {
				return err
			}
		}
	}
	for i, st := range steps {
		fmt.Fprintf(w, "sysprof: step %s: %s %s (in %s)\n", st.Name, r.verb, shellQuote(st.Command), st.Workdir)
		if err := r.run(ctx, i, st); err != nil {
			return err
		}
	}
	return nil
}

// learnFunc learns a command: learnOnce, or learnRuns for learn's --runs.
type learnFunc func(context.Context, profiler.Options, synth.Options) (*trace.Trace, *synth.Result, time.Duration, error)

// learnStep runs one step with learn (po and so say how; the step gives the command, its
// directory and environment), writes its trace to traceOut (traceOut.<step>.json for a named
// step) when traceOut is set, and prints synthesis's warnings. A plain command is a step
// without a name (run here, with sysprof's environment): its messages name no step. The
// profile is res.Profile, without the step's allowances.
func learnStep(ctx context.Context, w io.Writer, st project.Step, traceOut string, learn learnFunc, po profiler.Options, so synth.Options) (*trace.Trace, *synth.Result, time.Duration, error) {
	po.Command, po.Dir = st.Command, st.Workdir
	env := os.Environ()
	if st.Name != "" {
		env = st.Environ()
	}
	po.Env = append(env, po.Env...) // the caller's entries win (paths.RunEnv)
	// Under sudo in the user's tree enforce runs the command as the user, with the user's
	// HOME: learn (and drift) run it with that environment too, or the profile is root's home's.
	userHome := ""
	if uenv, note := enforcer.UserEnviron(cmp.Or(st.Workdir, "."), po.Env); uenv != nil {
		po.Env = uenv
		userHome, _ = paths.EnvList(uenv)("HOME")
		fmt.Fprintf(w, "sysprof: %s%s (as enforce runs it)\n", stepPrefix(st), note)
	}
	tr, res, wall, err := learn(ctx, po, so)
	if tr != nil && userHome != "" {
		giveHomeFilesToSudoUser(tr, userHome)
	}
	if err != nil {
		return nil, nil, 0, stepError(st, err)
	}
	if traceOut != "" {
		if st.Name != "" {
			traceOut = stepFile(traceOut, st.Name)
		}
		if err := writeJSONAtomic(traceOut, tr); err != nil {
			return nil, nil, 0, withCode(exitSysprof, fmt.Errorf("%swrite trace: %w", stepPrefix(st), err))
		}
		giveToSudoUser(w, traceOut)
	}
	for _, m := range res.Warnings {
		fmt.Fprintf(w, "sysprof: WARNING: %s%s\n", stepPrefix(st), report.Printable(m))
	}
	return tr, res, wall, nil
}

// stepPrefix is "step NAME: " for a step of sysprof.yaml, "" for a plain command.
func stepPrefix(st project.Step) string {
	if st.Name == "" {
		return ""
	}
	return "step " + st.Name + ": "
}

func runLearnGates(ctx context.Context, o *learnOptions) error {
	return runSteps(ctx, o.Err, o.Gates, stepRun{
		verb: "learn",
		check: func(_ int, st project.Step) error {
			if err := checkWritable(st.Profile); err != nil {
				return withCode(exitSysprof, fmt.Errorf("step %s: %w", st.Name, err))
			}
			return nil
		},
		run: func(ctx context.Context, _ int, st project.Step) error {
			return learnTarget(ctx, o, st, nil)
		},
	})
}

// gateResult is what one enforced step did.
type gateResult struct {
	step project.Step
	rep  *report.Report
	code int
	// denied: failed by failOnDenial (the command succeeded with denials).
	denied bool
}

func runEnforceGates(ctx context.Context, o *enforceOptions) error {
	resolve, err := parseResolve(o.Resolve)
	if err != nil {
		return withCode(exitSysprof, err)
	}
	// Every profile loads and every directory exists before the first gate runs.
	profiles := make([]*policy.Profile, len(o.Gates))
	var results []gateResult
	// setupErr: the step could not run; abort: stop without the table (a report not written).
	var setupErr, abort error
	started := false // past the checks
	// The ratchet (issue 22 item 4): every step writes into one changeset, each sees what the
	// steps before it wrote, and nothing is applied until every step passed.
	var cs *changeset.Run
	defer func() {
		if cs != nil { // a check failed before any step ran
			_ = cs.Drop()
		}
	}()
	failed := runSteps(ctx, o.Err, o.Gates, stepRun{
		verb: "enforce",
		check: func(i int, st project.Step) error {
			p, err := policy.Load(st.Profile)
			if err != nil {
				return withCode(exitSysprof, fmt.Errorf("step %s: %w (learn it with `sudo sysprof learn --step %s`)", st.Name, err, st.Name))
			}
			addPublished(p, o.Publish)
			profiles[i] = p
			warnIncomplete(o.Err, "step "+st.Name+": ", st.Profile, p)
			if o.Report != "" {
				if err := checkWritable(stepFile(o.Report, st.Name)); err != nil {
					return withCode(exitSysprof, err)
				}
			}
			return nil
		},
		run: func(ctx context.Context, i int, st project.Step) error {
			if !started {
				var err error
				if cs, err = beginGates(o.Gates); err != nil {
					setupErr = withCode(exitSysprof, err)
					return setupErr
				}
			}
			started = true
			// Each step at a terminal gets a relay of its own (enforce.go's for a command).
			relay, rerr := enforcer.OpenTerminalRelay()
			if rerr != nil {
				fmt.Fprintf(o.Err, "sysprof: step %s: %v; the step runs without a terminal of its own\n", st.Name, rerr)
			}
			opts := enforcer.Relayed(o.runOptions(profiles[i], st, resolve), relay)
			opts.Changeset = cs
			rep, code, err := enforcer.Run(ctx, opts)
			relay.Close()
			if rep != nil {
				rep.Notes = append(rep.Notes, relay.Notes()...)
			}
			report.ResetTerminal(o.Err)
			if err != nil {
				setupErr = commandErrorEnforce(code, fmt.Errorf("step %s: %w", st.Name, err))
				return setupErr
			}
			results = append(results, gateResult{step: st, rep: rep, code: code})
			o.Reports.save(enforceKind(rep), st, st.Profile, profiles[i], rep, nil)
			if o.Report != "" {
				if err := rep.Save(stepFile(o.Report, st.Name)); err != nil {
					abort = withCode(exitSysprof, fmt.Errorf("step %s: write report: %w", st.Name, err))
					return abort
				}
				giveToSudoUser(o.Err, stepFile(o.Report, st.Name))
			}
			if o.FailOnDenial {
				if err := denialVerdict(o.Err, "step "+st.Name+": ", rep, code); err != nil {
					results[len(results)-1].denied = true
					return err
				}
			}
			if code != 0 {
				return withCode(code, fmt.Errorf("step %s: %s exited with status %d", st.Name, shellQuote(st.Command), code))
			}
			return nil
		},
	})
	if !started {
		return failed // a check failed: no table
	}
	changes := finishGates(o, cs, results, failed)
	cs = nil
	if abort != nil {
		return failed // a report could not be written: no table
	}
	if err := writeGateTable(o.Err, results); err != nil {
		return withCode(exitSysprof, err)
	}
	writeGateSummary(o.Err, o.Gates, results, setupErr)
	writeGateReview(o.Err, changes)
	if failed == nil && o.FailOnDenial && changes.Review() > 0 {
		failed = withCode(exitDenied, fmt.Errorf("--fail-on-denial: every step passed, but %d change(s) were held for review (run %s) (exit %d)", changes.Review(), changes.Run, exitDenied))
	}
	if o.Report != "" {
		for _, r := range results {
			fmt.Fprintf(o.Err, "sysprof: report of step %s written to %s\n", r.step.Name, stepFile(o.Report, r.step.Name))
		}
	}
	return failed
}

// writeGateTable prints the denials of every step that ran as one table, then the layers that
// were not in force. It prints nothing when there is nothing to say.
func writeGateTable(w io.Writer, results []gateResult) error {
	total, audit := 0, false
	for _, r := range results {
		r.rep.Sort()
		for _, d := range r.rep.Denials {
			total += d.Count
		}
		audit = audit || r.rep.Audit
	}
	if total > 0 {
		verb := "denied"
		if audit {
			verb = "would be denied (audit: allowed)"
		}
		fmt.Fprintf(w, "sysprof: %d operation(s) %s:\n", total, verb)
		t := tablewriter.NewTable(w, tablewriter.WithRenderer(renderer.NewBlueprint()))
		header := []string{"Step", "Kind", "What", "Executable", "Parents", "Count", "Risk", "To allow"}
		t.Header(header)
		var rows [][]string
		for _, r := range results {
			for _, d := range r.rep.Denials {
				rows = append(rows, []string{report.Printable(r.step.Name), string(d.Kind), report.Printable(d.What), report.Printable(d.Exe), report.Printable(strings.Join(d.Parents, " < ")), strconv.Itoa(d.Count), d.Risk.String(), report.Printable(d.Suggest)})
			}
		}
		for _, row := range report.Fit(report.Width(w), header, rows) {
			if err := t.Append(row); err != nil {
				return fmt.Errorf("table: %w", err)
			}
		}
		if err := t.Render(); err != nil {
			return fmt.Errorf("table: %w", err)
		}
	}
	for _, r := range results {
		for _, l := range r.rep.Degraded() {
			fmt.Fprintf(w, "sysprof: step %s: layer %s was NOT applied (degraded): %s\n", report.Printable(r.step.Name), l.Name, report.Printable(l.Detail))
		}
		if len(r.rep.Denials) > 0 && len(r.rep.Unobservable) > 0 {
			fmt.Fprintf(w, "sysprof: step %s: not observable in this run: %s\n", report.Printable(r.step.Name), report.Printable(strings.Join(r.rep.Unobservable, "; ")))
		}
	}
	return nil
}

// writeGateSummary prints one line per selected step: passed, failed with its status, could
// not run (setupErr, the step after the last result), or not run.
func writeGateSummary(w io.Writer, steps []project.Step, results []gateResult, setupErr error) {
	fmt.Fprintln(w, "sysprof: gates:")
	for i, st := range steps {
		var state string
		switch {
		case i < len(results) && results[i].denied:
			state = fmt.Sprintf("FAILED: %d denial(s) (fail on denial)", len(results[i].rep.Denials))
		case i < len(results) && results[i].code == 0:
			state = fmt.Sprintf("passed (%d denial(s))", len(results[i].rep.Denials))
		case i < len(results):
			state = fmt.Sprintf("FAILED with status %d (%d denial(s))", results[i].code, len(results[i].rep.Denials))
		case i == len(results) && setupErr != nil:
			state = fmt.Sprintf("could not run (status %d)", codeOf(setupErr))
		default:
			state = "not run"
		}
		fmt.Fprintf(w, "  %-12s %s\n", st.Name, state)
	}
}

func runDriftGates(ctx context.Context, o *driftOptions) error {
	threshold, err := policy.ParseRisk(o.FailOn)
	if err != nil {
		return withCode(exitSysprof, err)
	}
	committed := make([]*policy.Profile, len(o.Gates))
	var diffs []diffreport.Step
	widens := false
	err = runSteps(ctx, o.Err, o.Gates, stepRun{
		verb: "learn",
		check: func(i int, st project.Step) error {
			p, err := policy.Load(st.Profile)
			if err != nil {
				return withCode(exitSysprof, fmt.Errorf("step %s: %w (commit a profile first: `sudo sysprof learn --step %s`)", st.Name, err, st.Name))
			}
			committed[i] = p
			return nil
		},
		run: func(ctx context.Context, i int, st project.Step) error {
			changes, err := driftChanges(ctx, o, st, committed[i])
			if err != nil {
				return err
			}
			widens = widens || policy.Widens(changes, threshold)
			o.Reports.save(report.RunDrift, st, st.Profile, committed[i], nil, changes)
			diffs = append(diffs, diffreport.Step{Name: st.Name, ProfilePath: displayPath(st.Profile), Changes: changes})
			return nil
		},
	})
	if err != nil {
		return err
	}
	if err := diffreport.RenderSteps(o.reportOut(), diffs, o.Format, diffreport.Options{Version: version}); err != nil {
		return withCode(exitSysprof, err)
	}
	if widens {
		return withCode(exitWidened, nil)
	}
	return nil
}

// driftChanges learns a step (or a plain command: a step without a name) again and returns
// what it now does beyond its committed profile: the diff, and the credential stores it
// touched, which synthesis keeps hidden so that no diff shows them.
func driftChanges(ctx context.Context, o *driftOptions, st project.Step, committed *policy.Profile) ([]policy.Change, error) {
	// The command writes to stderr: stdout is the report's (reportOut).
	// The environment enforce would give the command under the committed profile: at a
	// terminal git pages only where the profile runs a pager, less keeps no history.
	environ := paths.EnvList(append(os.Environ(), st.Env...))
	runEnv := paths.RunEnv(committed.ExecPaths(), environ)
	// A profile learned --exact is compared with this run learned so too: no families.
	so := synth.Options{Exact: committed.Metadata.Exact, AllowSecrets: allowedSecrets(committed), SysprofVersion: version,
		Stores: learnStores(o.Err, st.Workdir), EnvTokens: learnEnvTokens()}
	tr, res, _, err := learnStep(ctx, o.Err, st, o.TraceOut, learnOnce,
		profiler.Options{Stdout: o.Err, Debug: o.Debug, Env: runEnv}, so)
	if err != nil {
		return nil, err
	}
	if tr.ExitCode != 0 {
		return nil, withCode(tr.ExitCode, fmt.Errorf("%s%s exited with status %d; drift needs a successful run", stepPrefix(st), shellQuote(st.Command), tr.ExitCode))
	}
	if st.Name != "" {
		// The committed profile carries the step's sysprof.yaml allowances; so does this run.
		st.AddAllowances(res.Profile)
	}
	// As learn writes it: what the committed profile holds pending is no drift, and a new
	// persistence or secret allowance shows as PENDING.
	policy.MarkPending(committed, res.Profile)
	// The committed profile as enforce compiles it (diffAsEnforced, as sysprof diff), with
	// what enforce allows this environment's user preload (policy.WithUserPreload).
	asRun, _ := policy.WithUserPreload(committed, environ)
	changes := diffAsEnforced(asRun, res.Profile)
	// A profile learned before portable was the default (or with --portable=false) is
	// compared with this run synthesized the same way: the run's behaviour, not the default,
	// decides. The closer of the two wins (fewer widenings, then fewer changes).
	if old, err := synth.Synthesize(tr, synth.Options{Unportable: true, Exact: committed.Metadata.Exact, AllowSecrets: allowedSecrets(committed), SysprofVersion: version}); err == nil {
		if st.Name != "" {
			st.AddAllowances(old.Profile)
		}
		policy.MarkPending(committed, old.Profile)
		if alt := diffAsEnforced(asRun, old.Profile); closer(alt, changes) {
			changes = alt
		}
	}
	// A roll-up is a generalization, not behaviour: one rule more under a directory (python
	// importing a few more modules for a cold cache) rolls all of /usr up where the committed
	// profile already covers every file this run read. This run without roll-ups is compared
	// too, and the closer diff wins: a read the committed profile does not cover still shows.
	flat := so
	flat.RollupThreshold = math.MaxInt
	if alt, err := synth.Synthesize(tr, flat); err == nil {
		if st.Name != "" {
			st.AddAllowances(alt.Profile)
		}
		policy.MarkPending(committed, alt.Profile)
		if d := diffAsEnforced(asRun, alt.Profile); closer(d, changes) {
			changes = d
		}
	}
	changes = dropCoveredHere(changes, asRun, tr.Context)
	return append(changes, secretChanges(res.SecretTouches, committed)...), nil
}

// dropCoveredHere leaves out a path this run learned under a variable that a literal rule of
// the committed profile covers on this host, as enforce here compiles it: a tree in /tmp
// listed as /tmp/... where the learn had TMPDIR elsewhere is $TMPDIR/... in a run where
// TMPDIR is unset (a CI runner's env -i), the same directory. The reverse (a committed
// $TMPDIR/x, this run's /tmp/x where TMPDIR is elsewhere) is a real difference and stays.
// A movable variable (paths.Movable: TMPDIR, a cache) placed inside a directory a committed
// variable rule names is covered by that rule expanded here: TMPDIR in the work tree makes
// git's listing of it $TMPDIR, which the committed `$WORKDIR` read grants here. Only a
// movable variable: a run naming the work tree or the home is never covered by a rule of
// another variable that happens to hold it on this host.
func dropCoveredHere(changes []policy.Change, committed *policy.Profile, host map[string]string) []policy.Change {
	fs := committed.Filesystem
	type grant struct{ name, path string } // name: the rule's variable, "" for a literal rule
	expanded := func(rules ...[]policy.PathRule) []grant {
		var out []grant
		for _, rs := range rules {
			for _, r := range rs {
				switch name, _, isVar := paths.Split(r.Path); {
				case r.Pending:
				case strings.HasPrefix(r.Path, "/"):
					out = append(out, grant{path: r.Path})
				case isVar:
					if abs, err := paths.Expand(r.Path, host); err == nil && abs != r.Path {
						out = append(out, grant{name: name, path: abs})
					}
				}
			}
		}
		return out
	}
	// What grants each access on the committed side (a write rule lists and reads, an exec
	// rule reads: as policy.Diff's impliedBy).
	grants := map[string][]grant{
		policy.SectionRead:  expanded(fs.Read, fs.Write, fs.Exec),
		policy.SectionWrite: expanded(fs.Write),
		policy.SectionExec:  expanded(fs.Exec),
		policy.SectionList:  expanded(fs.List, fs.Read, fs.Write),
	}
	return slices.DeleteFunc(changes, func(c policy.Change) bool {
		rules, ok := grants[c.Section]
		if !ok || !c.Widens || c.Kind != policy.Added || !strings.HasPrefix(c.Item, "$") {
			return false
		}
		name, _, _ := paths.Split(c.Item)
		abs, err := paths.Expand(c.Item, host)
		if err != nil || abs == c.Item {
			return false
		}
		return slices.ContainsFunc(rules, func(g grant) bool {
			return (g.name == "" || paths.Movable(name) && g.name != name) && paths.Covers(g.path, abs)
		})
	})
}

// dropFamilyMates leaves out the syscalls a family of the committed profile already covers
// (policy.FamilyMates, as enforce closes them): a profile learned before a family existed (or
// grew) allowed one member, the run now shows another (glibc's sendmmsg on a dual-stack host
// where sendto was learned); and a toolchain root now read whole ($GOROOT) where the committed
// profile read below it. A profile learned --exact closes none. The syscalls every filter
// allows (seccomp.AlwaysAllowed) are dropped for every profile.
func dropFamilyMates(changes []policy.Change, committed *policy.Profile) []policy.Change {
	// Every filter allows these, --exact or not (less installs its signal handlers only at a
	// terminal): they are no drift.
	mates := map[string]string{}
	for _, n := range seccomp.AlwaysAllowed {
		mates[n] = "always allowed"
	}
	var readMates map[string]bool
	if committed.ClosesFamilies() {
		maps.Copy(mates, policy.FamilyMates(committed))
		var reads []string
		for _, r := range committed.Filesystem.Read {
			reads = append(reads, r.Path)
		}
		readMates = synth.ReadMates(reads) // a toolchain root read whole ($GOROOT)
	}
	return slices.DeleteFunc(changes, func(c policy.Change) bool {
		_, mate := mates[c.Item]
		return c.Widens && (c.Section == policy.SectionSyscalls && mate || c.Section == policy.SectionRead && readMates[c.Item])
	})
}

// closer reports whether diff a is closer to no change than b: fewer widenings, then fewer
// changes.
func closer(a, b []policy.Change) bool {
	wa, wb := 0, 0
	for _, c := range a {
		if c.Widens {
			wa++
		}
	}
	for _, c := range b {
		if c.Widens {
			wb++
		}
	}
	if wa != wb {
		return wa < wb
	}
	return len(a) < len(b)
}

// stepError names the step in a learn error and keeps its exit status.
func stepError(st project.Step, err error) error {
	if st.Name == "" {
		return err
	}
	code := codeOf(err)
	var ee *exitError
	if errors.As(err, &ee) && ee.err != nil {
		err = ee.err
	}
	return withCode(code, fmt.Errorf("step %s: %w", st.Name, err))
}

// displayPath is p relative to the current directory when it is below it (SARIF locations
// relative to the repository), else p.
func displayPath(p string) string {
	wd, err := os.Getwd()
	if err != nil {
		return p
	}
	rel, err := filepath.Rel(wd, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return p
	}
	return rel
}

// shellQuote prints argv so that a shell would split it back the same way.
func shellQuote(argv []string) string {
	out := make([]string, len(argv))
	for i, a := range argv {
		if a != "" && strings.IndexFunc(a, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r))
		}) < 0 {
			out[i] = a
			continue
		}
		out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(out, " ")
}
