package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/sysprof/sysprof/paths"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/project"
	"github.com/sysprof/sysprof/report"
	"github.com/sysprof/sysprof/synth"
)

type driftOptions struct {
	streams
	Command  []string
	Profile  string
	Format   string
	FailOn   string
	TraceOut string
	Debug    bool
	// Steps and All select steps of sysprof.yaml instead of a command (see learn).
	Steps []string
	All   bool
	Gates []project.Step
	// Reports leaves a run report per run in the reports directory (nil: none is set).
	Reports *runReporter
}

func init() {
	subcommands = append(subcommands, func(s streams) *cobra.Command { return newDriftCmd(s, runDrift) })
}

func newDriftCmd(s streams, runF func(context.Context, *driftOptions) error) *cobra.Command {
	o := &driftOptions{streams: s}
	cmd := &cobra.Command{
		Use:   "drift [-p FILE] [--format ...] [--fail-on ...] -- CMD [ARGS...] | drift --step NAME | --all",
		Short: "CI gate: learn CMD again and fail when it now does more than its committed profile",
		Long: `drift learns CMD into a temporary profile and diffs it against the committed one. It exits 1
when the new behaviour widens the profile at or above --fail-on, so a change that makes a build
read ~/.ssh or talk to a new host fails the CI job. The command's own failure exits with its status.

The report is a table on stderr; --format markdown, json or sarif writes it on stdout, which
then holds nothing else (the command's own output goes to stderr): redirect it into a file or a
job summary.

With --step NAME (repeatable) or --all, drift checks the steps of sysprof.yaml and prints one
report for all of them; it exits 1 when any step widens its profile.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if gates, cfg, ok, err := resolveGates(cmd, args, o.Steps, o.All, o.Profile); ok || err != nil {
				if err != nil {
					return err
				}
				o.Gates, o.Debug = gates, cfg.Debug
				if o.Reports, err = newRunReporter(cfg, o.Err); err != nil {
					return err
				}
				return runF(cmd.Context(), o)
			}
			cfg, err := commandTarget(cmd, args, &o.Command, &o.Profile)
			if err != nil {
				return err
			}
			o.Debug = cfg.Debug
			if o.Reports, err = newRunReporter(cfg, o.Err); err != nil {
				return err
			}
			return runF(cmd.Context(), o)
		},
	}
	cmd.Flags().SetInterspersed(false)
	cmd.Flags().StringVarP(&o.Profile, "profile", "p", "", "committed profile (default .sysprof/<name>.yaml)")
	cmd.Flags().StringVar(&o.TraceOut, "trace-out", "", "also write the raw trace of this run (JSON)")
	addDiffFlags(cmd, &o.Format, &o.FailOn)
	addStepFlags(cmd.Flags(), &o.Steps, &o.All)
	return cmd
}

func runDrift(ctx context.Context, o *driftOptions) error {
	if len(o.Gates) > 0 {
		return runDriftGates(ctx, o)
	}
	committed, err := policy.Load(o.Profile)
	if err != nil {
		return withCode(exitSysprof, fmt.Errorf("%w (commit a profile first: `sudo sysprof learn -p %s -- CMD`)", err, o.Profile))
	}
	changes, err := driftChanges(ctx, o, project.Step{Command: o.Command}, committed)
	if err != nil {
		return err
	}
	o.Reports.save(report.RunDrift, project.Step{Command: o.Command}, o.Profile, committed, nil, changes)
	return renderChanges(o.reportOut(), changes, o.Profile, "(this run)", o.Format, o.FailOn)
}

// reportOut is where drift writes its report. stdout holds only what a machine reads (the
// markdown, JSON or SARIF a CI job redirects into a file or a job summary); the default table
// is for humans and goes to stderr, with the command's own output and sysprof's other lines,
// as enforce's denial table does.
func (o *driftOptions) reportOut() io.Writer {
	if o.Format == "table" {
		return o.Err
	}
	return o.Out
}

// secretChanges turns the credential-store accesses synthesis kept hidden into findings. A
// secret the committed profile says the tool reads (its hidden rule has by:, set by learn) is
// information, not a widening: it stays hidden and reads as empty (npm and ~/.npmrc, every
// run). A secret the tool did not reach for when learned is new behaviour: critical. Drift
// also fails when a profile starts to allow a secret (a hidden path removed: policy.Diff).
func secretChanges(touches []synth.SecretTouch, committed *policy.Profile) []policy.Change {
	known := map[string]bool{}
	for _, h := range committed.Filesystem.Hidden {
		if h.By != "" {
			known[h.Path] = true
		}
	}
	var out []policy.Change
	for _, t := range touches {
		c := policy.Change{Kind: policy.Added, Section: policy.SectionHidden,
			Item: fmt.Sprintf("%s: %s by %s", t.Path, t.Access, t.Exe), By: t.Exe,
			Risk:   policy.RiskCritical,
			Reason: "the command now touches credential store " + t.Store + " (the profile keeps it hidden)",
			Widens: true}
		if known[t.Store] {
			c.Risk, c.Widens = policy.RiskLow, false
			c.Reason = "the command reads credential store " + t.Store + " as when learned: hidden (it reads as empty)"
		}
		out = append(out, c)
	}
	return out
}

// allowedSecrets keeps the credential paths a committed profile explicitly allows readable, so
// that re-learning does not hide them again and report that as drift.
func allowedSecrets(p *policy.Profile) []string {
	hidden := map[string]bool{}
	for _, h := range p.Filesystem.Hidden {
		hidden[h.Path] = true
	}
	var out []string
	for _, cs := range paths.CredentialStores() {
		if hidden[cs] {
			continue
		}
		for _, r := range p.Filesystem.Read {
			if r.Path == cs {
				out = append(out, cs)
			}
		}
	}
	return out
}
