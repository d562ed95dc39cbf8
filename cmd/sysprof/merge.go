package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sysprof/sysprof/policy"
)

type mergeOptions struct {
	streams
	Inputs []string
	Out    string
	Force  bool
}

func init() {
	subcommands = append(subcommands, func(s streams) *cobra.Command { return newMergeCmd(s, runMerge) })
}

func newMergeCmd(s streams, runF func(context.Context, *mergeOptions) error) *cobra.Command {
	o := &mergeOptions{streams: s}
	cmd := &cobra.Command{
		Use:   "merge A B... -o OUT",
		Short: "Union profiles learned on different machines, keeping provenance",
		Long:  "merge unions profiles of the same command (seen counts add up, incomplete is kept). Profiles of different commands are refused unless --force.",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Inputs = args
			if o.Out == "" {
				return withCode(exitSysprof, fmt.Errorf("merge needs -o OUT"))
			}
			return runF(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVarP(&o.Out, "output", "o", "", "where to write the merged profile")
	cmd.Flags().BoolVar(&o.Force, "force", false, "merge profiles of different commands")
	return cmd
}

func runMerge(_ context.Context, o *mergeOptions) error {
	var out *policy.Profile
	for _, in := range o.Inputs {
		p, err := policy.Load(in)
		if err != nil {
			return err
		}
		if out == nil {
			out = p
			continue
		}
		if !o.Force && !policy.SameCommand(out, p) {
			return withCode(exitSysprof, fmt.Errorf("%s is a profile of %q, not %q: use --force to merge anyway", in, p.Metadata.Command, out.Metadata.Command))
		}
		out = policy.Merge(out, p)
	}
	if err := policy.Save(o.Out, out); err != nil {
		return err
	}
	fmt.Fprintf(o.Err, "sysprof: merged %d profiles (%d runs) into %s\n", len(o.Inputs), out.Metadata.Runs, o.Out)
	return nil
}
