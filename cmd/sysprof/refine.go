package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sysprof/sysprof/diffreport"
	"github.com/sysprof/sysprof/enforcer"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/refine"
	"github.com/sysprof/sysprof/report"
	"github.com/sysprof/sysprof/synth"
)

type refineOptions struct {
	streams
	Profile string
	From    string
	Yes     bool
	Only    []string
	MaxRisk string
	Force   bool
	Workdir string
	Format  string
	DryRun  bool
	// Interactive says whether to ask on the terminal; nil: when stdin is a terminal.
	Interactive func() bool
	// Now stamps metadata.updated; nil: the clock.
	Now func() time.Time
}

func init() {
	subcommands = append(subcommands, func(s streams) *cobra.Command { return newRefineCmd(s, runRefine) })
}

var refineKinds = []string{string(report.KindSyscall), string(report.KindFile), string(report.KindNetwork), string(report.KindLimit)}

func newRefineCmd(s streams, runF func(context.Context, *refineOptions) error) *cobra.Command {
	o := &refineOptions{streams: s}
	cmd := &cobra.Command{
		Use:   "refine [-p FILE] --from REPORT [--yes] [--only KIND] [--max-risk RISK]",
		Short: "Review the denials of an enforce report and accept them into the profile",
		Long: `refine reads a report written by ` + "`sysprof enforce --report FILE`" + ` (or --audit) and proposes the
smallest profile change for each denial, worst risk first, rated like ` + "`sysprof diff`" + `.

On a terminal it asks about each change, showing its risk first, the binary that asked, its
parent chain and how often: [a]llow exactly, allow the [d]irectory, [k]eep denied, [h]ide the
path, or [q]uit (stop asking: the answers given so far are written, the rest stay denied). Enter
takes the default in brackets: keep denied for credential stores, allow exactly otherwise.
Ctrl-C aborts without writing anything. Questions go to stderr; stdout holds only the diff.

Without a terminal it needs --yes (accept every proposal at or below --max-risk, which defaults
to high: critical changes such as reading ~/.ssh, a privileged syscall or a raw IP destination
are only accepted with --max-risk critical) or --only KIND (accept just syscall, file or network
proposals, still capped by --max-risk). Neither: exit 125.

Three kinds of change are never accepted by --yes or --only KIND, at any --max-risk: a write to
a protected path (.git, .github, .sysprof, shell rc files, ~/.config/systemd, ... as
` + "`sysprof show`" + ` lists them) or to a directory holding one, a new executable, and a new network
destination (connect or send). They need an interactive yes (their default answer is keep), or
--only naming the proposal's path or endpoint exactly (--only '$WORKDIR/.git/hooks/pre-commit',
--only api.example.test:443), which accepts that one at any risk.

The profile is written atomically under its lock, and the semantic diff of the old profile and
the new one is printed. A report of a different command than the profile's is refused unless
--force. Paths are made portable with this host's variables ($HOME, $TMPDIR, toolchain roots)
and --workdir for $WORKDIR. Exit 0 after writing (or when there is nothing to change).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.From == "" {
				return withCode(exitSysprof, fmt.Errorf("refine needs --from REPORT (written by `sysprof enforce --report FILE`)"))
			}
			for _, k := range o.Only {
				if !slices.Contains(refineKinds, k) && !strings.ContainsAny(k, "/:$.") {
					return withCode(exitSysprof, fmt.Errorf("--only %q: want one of %s, or the path or endpoint of one proposal", k, strings.Join(refineKinds, ", ")))
				}
			}
			if _, err := policy.ParseRisk(o.MaxRisk); err != nil {
				return withCode(exitSysprof, fmt.Errorf("--max-risk: %w", err))
			}
			if o.Profile == "" {
				r, err := report.Load(o.From)
				if err != nil {
					return withCode(exitSysprof, err)
				}
				cfg, err := loadConfig(cmd)
				if err != nil {
					return err
				}
				o.Profile = cfg.defaultProfilePath(synth.Name(r.Command))
			}
			if o.Workdir == "" {
				wd, err := os.Getwd()
				if err != nil {
					return withCode(exitSysprof, fmt.Errorf("working directory: %w", err))
				}
				o.Workdir = wd
			}
			return runF(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.Profile, "profile", "p", "", "profile file (default .sysprof/<name>.yaml, the name from the report's command)")
	f.StringVar(&o.From, "from", "", "the `REPORT` to refine from (written by sysprof enforce --report FILE)")
	f.BoolVarP(&o.Yes, "yes", "y", false, "accept every proposal at or below --max-risk without asking")
	f.StringSliceVar(&o.Only, "only", nil, "accept only proposals of these kinds without asking: syscall, file, network, limit; or the one proposal whose path or endpoint is named (repeat or comma-separate)")
	f.StringVar(&o.MaxRisk, "max-risk", "high", "with --yes or --only: accept proposals up to this risk: low, high or critical")
	f.BoolVar(&o.Force, "force", false, "refine from a report of a different command than the profile's")
	f.StringVar(&o.Workdir, "workdir", "", "the directory the command ran in, for $WORKDIR (default: the current directory)")
	f.StringVar(&o.Format, "format", "table", "format of the printed diff: table, markdown, json or sarif")
	f.BoolVar(&o.DryRun, "dry-run", false, "print the diff the answers would make, write nothing")
	return cmd
}

func (o *refineOptions) interactive() bool {
	if o.Interactive != nil {
		return o.Interactive()
	}
	f, ok := o.In.(*os.File)
	return ok && isTerminal(f)
}

func (o *refineOptions) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

func runRefine(ctx context.Context, o *refineOptions) error {
	ask := !o.Yes && len(o.Only) == 0
	if ask && !o.interactive() {
		return withCode(exitSysprof, fmt.Errorf("refine: stdin is not a terminal, so there is nobody to ask: pass --yes to accept every proposal up to --max-risk (%s), or --only KIND (%s)", o.MaxRisk, strings.Join(refineKinds, ", ")))
	}
	maxRisk, err := policy.ParseRisk(o.MaxRisk)
	if err != nil {
		return withCode(exitSysprof, fmt.Errorf("--max-risk: %w", err))
	}
	rep, err := report.Load(o.From)
	if err != nil {
		return withCode(exitSysprof, err)
	}
	prof, err := policy.Load(o.Profile)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return withCode(exitSysprof, fmt.Errorf("no profile at %s: pass -p FILE, or learn one with `sudo sysprof learn -p %s -- %s`", o.Profile, o.Profile, strings.Join(rep.Command, " ")))
		}
		return withCode(exitSysprof, err)
	}
	if !o.Force && !sameProfileFile(o.Profile, rep) && !sameCommand(prof, rep) {
		return withCode(exitSysprof, fmt.Errorf("%s is a report of %q, but %s is the profile of %q: use --force to refine anyway", o.From, rep.Command, o.Profile, prof.Metadata.Command))
	}
	if len(rep.Unobservable) > 0 {
		fmt.Fprintf(o.Err, "sysprof: note: the run behind %s could not observe %s: its denials are not in the report\n", o.From, strings.Join(rep.Unobservable, "; "))
	}
	env := enforcer.HostEnv(o.Workdir).Vars
	props, err := refine.Propose(prof, rep, env)
	if err != nil {
		return withCode(exitSysprof, err)
	}
	if len(props) == 0 {
		fmt.Fprintf(o.Err, "sysprof: nothing to refine: %s already allows everything %s reports (%d denials, %d held changes)\n", o.Profile, o.From, len(rep.Denials), rep.Changes.Review())
		return nil
	}

	var decisions []refine.Decision
	if ask {
		decisions, err = askAll(ctx, o, props, env)
		if err != nil {
			return withCode(exitSysprof, err)
		}
	} else {
		decisions = acceptAll(o, props, maxRisk)
	}
	accepted := 0
	for _, d := range decisions {
		if d.Choice != refine.KeepDenied {
			accepted++
		}
	}
	if accepted == 0 {
		fmt.Fprintf(o.Err, "sysprof: no change accepted: %s left as it was\n", o.Profile)
		return nil
	}

	var oldP, newP *policy.Profile
	refineInto := func(cur *policy.Profile) (*policy.Profile, error) {
		if cur == nil {
			return nil, fmt.Errorf("%s vanished while refining", o.Profile)
		}
		next, err := refine.Apply(cur, decisions)
		if err != nil {
			return nil, err
		}
		next.Metadata.Updated = o.now().UTC().Format(time.RFC3339)
		oldP, newP = cur, next
		return next, nil
	}
	if o.DryRun {
		if _, err := refineInto(prof); err != nil {
			return withCode(exitSysprof, err)
		}
	} else if err := policy.Update(o.Profile, refineInto); err != nil {
		return withCode(exitSysprof, err)
	}
	changes := policy.Diff(oldP, newP)
	if ask {
		fmt.Fprintf(o.Err, "\nchanges to %s:\n", o.Profile)
	}
	if err := diffreport.Render(o.Out, changes, o.Format, diffreport.Options{ProfilePath: o.Profile, BasePath: o.Profile, Version: version}); err != nil {
		return withCode(exitSysprof, err)
	}
	verb := "wrote"
	if o.DryRun {
		verb = "would write (--dry-run)"
	}
	fmt.Fprintf(o.Err, "sysprof: %s %s: %d of %d proposed changes accepted, %d kept denied\n", verb, o.Profile, accepted, len(props), len(props)-accepted)
	return nil
}

// sameCommand is policy.SameCommand for a report: the same argv when both record one, else
// the same name.
// sameProfileFile reports whether the report was made by enforcing this very profile file: then
// it belongs to it whatever command ran (a gate script, a wider command under --audit).
func sameProfileFile(path string, r *report.Report) bool {
	if r.ProfilePath == "" {
		return false
	}
	a, err1 := os.Stat(path)
	b, err2 := os.Stat(r.ProfilePath)
	return err1 == nil && err2 == nil && os.SameFile(a, b)
}

func sameCommand(p *policy.Profile, r *report.Report) bool {
	if len(r.Command) == 0 {
		return true // nothing to compare with
	}
	if len(p.Metadata.Command) > 0 {
		return slices.Equal(p.Metadata.Command, r.Command)
	}
	return p.Metadata.Name == synth.Name(r.Command)
}

// acceptAll answers without asking: AllowExact for every proposal of the --only kinds (all
// kinds with --yes) at or below maxRisk that needs no review (refine.Proposal.Review), and
// for each proposal --only names; KeepDenied for the rest. Each answer is printed.
func acceptAll(o *refineOptions, props []refine.Proposal, maxRisk policy.Risk) []refine.Decision {
	// --only KIND limits the kinds; names alone limit them only without --yes.
	filterKinds := len(o.Only) > 0 && !o.Yes || slices.ContainsFunc(o.Only, func(k string) bool { return slices.Contains(refineKinds, k) })
	var out []refine.Decision
	for _, p := range props {
		d := refine.Decision{Proposal: p, Choice: refine.KeepDenied}
		why := ""
		switch {
		case !slices.Contains(p.Choices, refine.AllowExact):
			why = "cannot be allowed"
		case slices.ContainsFunc(o.Only, p.AcceptNamed):
			d.Choice = refine.AllowExact // named exactly: the reviewer's decision, at any risk
		case p.Review != "":
			why = p.Review + ": needs an interactive yes, or --only naming " + p.Exact.Item
		case filterKinds && !slices.Contains(o.Only, string(p.Kind)):
			why = "not --only " + strings.Join(o.Only, ",")
		case p.Risk > maxRisk:
			why = fmt.Sprintf("%s is above --max-risk %s", p.Risk, maxRisk)
		default:
			d.Choice = refine.AllowExact
		}
		if d.Choice == refine.AllowExact {
			fmt.Fprintf(o.Err, "sysprof: accepted %-8s %s\n", p.Risk, report.Printable(p.Summary))
		} else {
			fmt.Fprintf(o.Err, "sysprof: kept     %-8s %s (%s)\n", p.Risk, report.Printable(p.Summary), report.Printable(why))
		}
		out = append(out, d)
	}
	return out
}

// errQuit ends a session early: the answers so far stand, the rest stay denied.
var errQuit = errors.New("quit")

// askAll asks about each proposal on the terminal, worst risk first.
func askAll(ctx context.Context, o *refineOptions, props []refine.Proposal, env map[string]string) ([]refine.Decision, error) {
	in := bufio.NewReader(o.In)
	w := o.Err // questions go to stderr, so that stdout holds only the diff
	fmt.Fprintf(w, "sysprof refine: %d proposed change(s) to %s\n", len(props), o.Profile)
	var out []refine.Decision
	for i, p := range props {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		printProposal(w, i+1, len(props), p, env)
		c, err := ask(in, w, p)
		if errors.Is(err, errQuit) {
			fmt.Fprintf(w, "quit: %d answered, the remaining %d stay denied\n", i, len(props)-i)
			break
		}
		if err != nil {
			return nil, err
		}
		out = append(out, refine.Decision{Proposal: p, Choice: c})
	}
	return out, nil
}

// printProposal shows one proposal, risk first, the way a reviewer decides on it.
func printProposal(w io.Writer, i, n int, p refine.Proposal, env map[string]string) {
	fmt.Fprintf(w, "\n[%d/%d] %s  %s\n", i, n, strings.ToUpper(p.Risk.String()), report.Printable(p.Summary))
	if p.Reason != "" {
		fmt.Fprintf(w, "  why:     %s\n", report.Printable(p.Reason))
	}
	fmt.Fprintf(w, "  asked by %s\n", report.Printable(strings.Join(p.Exes, ", ")))
	if len(p.Denial.Parents) > 0 {
		parents := make([]string, len(p.Denial.Parents))
		for j, x := range p.Denial.Parents {
			parents[j] = refine.Portable(x, env)
		}
		fmt.Fprintf(w, "  under    %s\n", report.Printable(strings.Join(parents, " < ")))
	}
	times := "times"
	if p.Denial.Count == 1 {
		times = "time"
	}
	fmt.Fprintf(w, "  denied   %d %s: %s\n", p.Denial.Count, times, report.Printable(p.Denial.What))
	if p.Exact.Section != "" {
		fmt.Fprintf(w, "  change   %s\n", report.Printable(p.Exact.String()))
	}
	if p.Dir != nil {
		fmt.Fprintf(w, "  or dir   %s (%s)\n", report.Printable(p.Dir.String()), p.DirRisk)
	}
	if p.Hide != nil {
		fmt.Fprintf(w, "  or hide  %s\n", report.Printable(p.Hide.String()))
	}
}

// ask reads one answer: a choice's key, q, or enter for the default.
func ask(in *bufio.Reader, w io.Writer, p refine.Proposal) (refine.Choice, error) {
	var labels []string
	for _, c := range p.Choices {
		labels = append(labels, c.Label())
	}
	labels = append(labels, "[q]uit")
	for {
		fmt.Fprintf(w, "%s [%c]: ", strings.Join(labels, " / "), p.Default.Key())
		line, err := in.ReadString('\n')
		if err != nil && line == "" {
			if err == io.EOF {
				fmt.Fprintln(w)
				return 0, errQuit
			}
			return 0, fmt.Errorf("read answer: %w", err)
		}
		a := strings.ToLower(strings.TrimSpace(line))
		if a == "" {
			return p.Default, nil
		}
		if a[0] == 'q' {
			return 0, errQuit
		}
		for _, c := range p.Choices {
			if a[0] == c.Key() {
				return c, nil
			}
		}
		fmt.Fprintf(w, "  %q is not one of the answers\n", a)
	}
}
