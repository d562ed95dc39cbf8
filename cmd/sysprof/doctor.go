package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sysprof/sysprof/internal/hostcheck"
	"github.com/sysprof/sysprof/internal/kernrun"
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
	checks := append(hostcheck.Run(), hostState(), limitsCheck())
	if err := hostcheck.Render(o.Out, checks); err != nil {
		return err
	}
	if !hostcheck.LearnPossible(checks) {
		fmt.Fprintln(o.Out, "learning is not possible on this host: see the missing items above")
		return withCode(1, nil)
	}
	return nil
}

// limitsCheck says where enforce keeps a run's limits on this host: in a cgroup of the run's
// own (made, written and removed here), or as rlimits only.
func limitsCheck() hostcheck.Check {
	c := hostcheck.Check{Name: "resource limits", For: hostcheck.ForEnforce, Optional: true}
	err := kernrun.LimitsAvailable()
	var g *kernrun.LimitGroup
	if err == nil {
		if g, err = kernrun.NewLimitGroup(nil); err == nil {
			err = g.Set(64, 256<<20)
			g.Remove()
		}
	}
	if err != nil {
		c.Status, c.Reason = hostcheck.Missing, err.Error()
		c.Detail = "rlimits only (RLIMIT_NPROC per uid in the sandbox's user namespace, RLIMIT_DATA per process): a hit is not recorded"
		c.Remedy = "run enforce as root, or as a user with a delegated cgroup subtree (systemd: user@UID.service, Delegate=yes), to keep the limits in the run's cgroup"
		return c
	}
	c.Status, c.Detail = hostcheck.Available, "in the run's cgroup (cgroup2 pids and memory)"
	if !g.V2 {
		c.Detail = "in the run's cgroup (the cgroup v1 pids and memory hierarchies)"
	}
	if g.Delegated {
		c.Detail += ", in the subtree delegated to this user"
	}
	return c
}
