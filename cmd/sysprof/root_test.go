package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// cobra takes the first back-quoted words of a flag's usage as the value's name in --help:
// `sysprof refine` in the usage of --report printed "--report sysprof refine". Every value
// name is one word.
func TestFlagValueNames(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if name, _ := pflag.UnquoteUsage(f); strings.ContainsAny(name, " \t") {
				t.Errorf("%s --%s: --help shows the value as %q: back-quote only the value's name (FILE)", c.CommandPath(), f.Name, name)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd(streams{}))
}

// A subcommand built alone (newRootCmdFor) is the one of the whole tree: same help, flags
// and global flags.
func TestAloneIsTheSameCommand(t *testing.T) {
	for name := range alone {
		help := func(root *cobra.Command) string {
			var b strings.Builder
			root.SetOut(&b)
			root.SetErr(&b)
			root.SetArgs([]string{name, "--help"})
			if err := root.Execute(); err != nil {
				t.Fatal(err)
			}
			return b.String()
		}
		got, want := help(newRootCmdFor(streams{}, []string{name, "--help"})), help(newRootCmd(streams{}))
		if got != want || !strings.Contains(got, "Global Flags") {
			t.Errorf("%s --help built alone:\n%s\nin the whole tree:\n%s", name, got, want)
		}
	}
}
