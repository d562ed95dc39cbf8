package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sysprof/sysprof/project"
)

type initOptions struct {
	streams
	Dir    string // the project directory (the current one)
	Force  bool   // overwrite an existing sysprof.yaml
	Stdout bool   // print instead of writing
}

func init() {
	subcommands = append(subcommands, func(s streams) *cobra.Command { return newInitCmd(s, runInit) })
}

func newInitCmd(s streams, runF func(context.Context, *initOptions) error) *cobra.Command {
	o := &initOptions{streams: s}
	cmd := &cobra.Command{
		Use:   "init [--force] [--stdout]",
		Short: "Write a starter " + projectFile + " for the project in the current directory",
		Long: `init looks at the current directory and writes a starter ` + projectFile + ` with one step per gate
of the project it finds, each field explained by a comment:

  go.mod         vet, build, test     (go vet ./..., go build ./..., go test ./...)
  Cargo.toml     build, test          (cargo build --offline, cargo test --offline)
  package.json   install, test        (npm ci when there is a lockfile; npm test)
  Makefile       make                 (make)

Then learn every step's profile with ` + "`sudo sysprof learn --all`" + ` and run the gates with
` + "`sysprof enforce --all`" + `. init refuses to overwrite an existing file unless --force.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			wd, err := os.Getwd()
			if err != nil {
				return withCode(exitSysprof, err)
			}
			o.Dir = wd
			return runF(cmd.Context(), o)
		},
	}
	cmd.Flags().BoolVar(&o.Force, "force", false, "overwrite an existing "+projectFile)
	cmd.Flags().BoolVar(&o.Stdout, "stdout", false, "print the file instead of writing it")
	return cmd
}

func runInit(_ context.Context, o *initOptions) error {
	kinds, err := project.Detect(o.Dir)
	if err != nil {
		return withCode(exitSysprof, err)
	}
	if len(kinds) == 0 {
		return withCode(exitSysprof, fmt.Errorf("no go.mod, Cargo.toml, package.json or Makefile in %s: run init in the project's root, or write %s by hand (see `sysprof init --help`)", o.Dir, projectFile))
	}
	text := project.Starter(kinds)
	if o.Stdout {
		_, err := fmt.Fprint(o.Out, text)
		return err
	}
	path := filepath.Join(o.Dir, projectFile)
	if _, err := os.Lstat(path); err == nil && !o.Force {
		return withCode(exitSysprof, fmt.Errorf("%s exists: use --force to overwrite it (or --stdout to compare)", path))
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return withCode(exitSysprof, err)
	}
	if err := writeFileAtomic(path, []byte(text)); err != nil {
		return withCode(exitSysprof, fmt.Errorf("write %s: %w", path, err))
	}
	var names []string
	for _, k := range kinds {
		for _, s := range k.Steps {
			names = append(names, s.Name)
		}
	}
	fmt.Fprintf(o.Err, "sysprof: wrote %s (steps: %s)\n", path, strings.Join(names, ", "))
	fmt.Fprintf(o.Err, "sysprof: next: review it, then `sudo sysprof learn --all` and `sysprof enforce --all`\n")
	return nil
}
