package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/sysprof/sysprof/profiler"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

// streams are where a subcommand reads and writes; tests swap them.
type streams struct {
	In       io.Reader
	Out, Err io.Writer
}

func newRootCmd(s streams) *cobra.Command { return newRootCmdFor(s, nil) }

// newRootCmdFor is the root command for args: only the subcommand args start with when it is
// one of alone (a run's start does not build every other command's tree first), every one
// otherwise.
func newRootCmdFor(s streams, args []string) *cobra.Command {
	root := &cobra.Command{
		Use:   "sysprof",
		Short: "Learn what a dev tool needs from the kernel, then hold it to exactly that",
		Long: `sysprof runs an untrusted dev tool once under eBPF to learn what it really uses, writes a
minimal seccomp + filesystem + network profile, and enforces it on later runs.

  sysprof learn   -- cargo build     # permissive run, record what it uses -> profile
  sysprof enforce -- cargo build     # run under the profile, report every denial
  sysprof refine  --from report.json # accept reviewed denials into the profile
  sysprof drift   -- cargo build     # CI: re-learn, diff against the committed profile`,
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(s.In)
	root.SetOut(s.Out)
	root.SetErr(s.Err)
	root.PersistentFlags().Bool("debug", false, "print full kernel verifier logs and internal detail")
	addConfigFlags(root.PersistentFlags())
	if len(args) > 0 && alone[args[0]] != nil {
		root.AddCommand(alone[args[0]](s))
		return root
	}
	for _, add := range subcommands {
		root.AddCommand(add(s))
	}
	return root
}

// subcommands register themselves from their own files.
var subcommands []func(streams) *cobra.Command

// alone are the subcommands built without the others when named first: enforce, whose start
// is paid on every run.
var alone = map[string]func(streams) *cobra.Command{}

// run executes the CLI and returns the process exit status.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGPIPE)
	defer stop()
	root := newRootCmdFor(streams{In: stdin, Out: stdout, Err: stderr}, args)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	// A learn run's probe (learn, drift, their gates) is closed and handed on to the next run
	// in the background while the command synthesizes and reports; exiting before that is done
	// loses the hand-over, and the exit closes its perf events itself (~3 s for drift).
	profiler.Settle()
	if err != nil {
		var ee *exitError
		if !errors.As(err, &ee) || ee.err != nil {
			fmt.Fprintf(stderr, "sysprof: %v\n", err)
		}
	}
	return codeOf(err)
}

// commandArgs returns the command after "--" (or all positional args) and fails with a usage
// error when there is none.
func commandArgs(cmd *cobra.Command, args []string) ([]string, error) {
	if len(args) == 0 {
		return nil, withCode(exitSysprof, fmt.Errorf("no command given: usage: %s -- CMD [ARGS...]", cmd.CommandPath()))
	}
	return args, nil
}

func isTerminal(f *os.File) bool {
	_, err := unixIoctlGetTermios(int(f.Fd()))
	return err == nil
}
