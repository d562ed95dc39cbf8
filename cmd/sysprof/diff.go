package main

import (
	"io"

	"context"

	"github.com/spf13/cobra"

	"github.com/sysprof/sysprof/diffreport"
	"github.com/sysprof/sysprof/policy"
)

type diffOptions struct {
	streams
	Old, New string
	Format   string
	FailOn   string
}

func init() {
	subcommands = append(subcommands, func(s streams) *cobra.Command { return newDiffCmd(s, runDiff) })
}

func newDiffCmd(s streams, runF func(context.Context, *diffOptions) error) *cobra.Command {
	o := &diffOptions{streams: s}
	cmd := &cobra.Command{
		Use:   "diff OLD NEW [--format table|markdown|json|sarif]",
		Short: "Semantic diff of two profiles with a risk class per change",
		Long: `diff compares what two profiles allow. Exit 1 when NEW widens OLD at or above --fail-on; narrowing alone exits 0.

diff runs no command: its report, the table included, is its output and goes to stdout, as
diff(1) and git diff print theirs (sysprof diff a.yaml b.yaml | less, > changes.txt). drift
and enforce print their tables on stderr because the command they run owns stdout. The table
fits the terminal's width (or $COLUMNS); into a file or a pipe its lines stay whole.

OLD is compared as enforce compiles it, as drift compares the committed profile: its terminal
requests and families closed, so a profile learned before either grew is no widening against
a newer learn of the same behaviour.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Old, o.New = args[0], args[1]
			return runF(cmd.Context(), o)
		},
	}
	addDiffFlags(cmd, &o.Format, &o.FailOn)
	return cmd
}

func addDiffFlags(cmd *cobra.Command, format, failOn *string) {
	cmd.Flags().StringVar(format, "format", "table", "output: table, markdown, json or sarif")
	cmd.Flags().StringVar(failOn, "fail-on", "low", "exit 1 when a widening is at least this risky: low, high or critical")
}

func runDiff(_ context.Context, o *diffOptions) error {
	oldP, err := policy.Load(o.Old)
	if err != nil {
		return err
	}
	newP, err := policy.Load(o.New)
	if err != nil {
		return err
	}
	return renderDiff(o.Out, oldP, newP, o.Old, o.New, o.Format, o.FailOn)
}

// renderDiff prints the changes and turns a widening at or above failOn into exit status 1.
func renderDiff(w io.Writer, oldP, newP *policy.Profile, oldPath, newPath, format, failOn string) error {
	return renderChanges(w, diffAsEnforced(oldP, newP), oldPath, newPath, format, failOn)
}

// diffAsEnforced is what newP allows beyond oldP as enforce compiles oldP: its terminal
// requests and its families closed, a toolchain root it reads below read whole, the syscalls
// every filter allows (dropFamilyMates). diff and drift compare through it alike, so that two
// profiles of the same behaviour, one learned before a family or the terminal list grew, do
// not differ by it.
func diffAsEnforced(oldP, newP *policy.Profile) []policy.Change {
	base := oldP
	if oldP.ClosesFamilies() {
		base = policy.Clone(oldP)
		base.Syscalls.Args = policy.CloseTerminalRequests(base.Syscalls.Args)
	}
	return dropFamilyMates(policy.Diff(base, newP), oldP)
}

// renderChanges prints changes and turns a widening at or above failOn into exit status 1.
func renderChanges(w io.Writer, changes []policy.Change, oldPath, newPath, format, failOn string) error {
	threshold, err := policy.ParseRisk(failOn)
	if err != nil {
		return withCode(exitSysprof, err)
	}
	if err := diffreport.Render(w, changes, format, diffreport.Options{ProfilePath: newPath, BasePath: oldPath, Version: version}); err != nil {
		return withCode(exitSysprof, err)
	}
	if policy.Widens(changes, threshold) {
		return withCode(exitWidened, nil)
	}
	return nil
}
