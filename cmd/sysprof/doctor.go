package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sysprof/sysprof/internal/hostcheck"
)

func init() {
	subcommands = append(subcommands, func(s streams) *cobra.Command { return newDoctorCmd(s, runDoctor) })
}

type doctorOptions struct{ streams }

func newDoctorCmd(s streams, runF func(context.Context, *doctorOptions) error) *cobra.Command {
	o := &doctorOptions{streams: s}
	return &cobra.Command{
		Use:   "doctor",
		Short: "Show what this host supports for learning and enforcing, and why not",
		Long:  "doctor probes the kernel features sysprof uses and prints each with the reason and remedy when missing. Exit 1 if learning cannot work here.",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return runF(cmd.Context(), o) },
	}
}

func runDoctor(_ context.Context, o *doctorOptions) error {
	checks := append(hostcheck.Run(), hostState())
	if err := hostcheck.Render(o.Out, checks); err != nil {
		return err
	}
	if !hostcheck.LearnPossible(checks) {
		fmt.Fprintln(o.Out, "learning is not possible on this host: see the missing items above")
		return withCode(1, nil)
	}
	return nil
}
