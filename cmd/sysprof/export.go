package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sysprof/sysprof/enforcer"
	"github.com/sysprof/sysprof/export"
	"github.com/sysprof/sysprof/policy"
)

type exportOptions struct {
	streams
	Profile   string
	Format    string
	Output    string
	SeccompFD string
	Workdir   string
}

func init() {
	subcommands = append(subcommands, func(s streams) *cobra.Command { return newExportCmd(s, runExport) })
}

func newExportCmd(s streams, runF func(context.Context, *exportOptions) error) *cobra.Command {
	o := &exportOptions{streams: s}
	cmd := &cobra.Command{
		Use:   "export [-p FILE] --format oci|bpf|bwrap|systemd|spo",
		Short: "Convert a profile for Docker/Podman/runc (oci), bubblewrap, systemd or Kubernetes SPO",
		Long: `export writes the profile in another tool's format on stdout (or -o FILE). What a format
cannot express is printed on stderr. Paths are expanded for this host ($WORKDIR is --workdir,
default the current directory).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := resolveProfileFlag(cmd, o.Profile)
			if err != nil {
				return err
			}
			o.Profile = p
			return runF(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.Profile, "profile", "p", "", "profile file (default: the only file in .sysprof/)")
	f.StringVar(&o.Format, "format", "", "one of: "+strings.Join(export.Formats(), ", "))
	f.StringVarP(&o.Output, "output", "o", "", "write to FILE instead of stdout")
	f.StringVar(&o.SeccompFD, "seccomp-file", "", "bwrap: pass this compiled filter (from --format bpf) as --seccomp 3")
	f.StringVar(&o.Workdir, "workdir", "", "what $WORKDIR means (default: current directory)")
	return cmd
}

func runExport(_ context.Context, o *exportOptions) error {
	if o.Format == "" {
		return withCode(exitSysprof, fmt.Errorf("--format is required: one of %s", strings.Join(export.Formats(), ", ")))
	}
	p, err := policy.Load(o.Profile)
	if err != nil {
		return err
	}
	wd := o.Workdir
	if wd == "" {
		if wd, err = os.Getwd(); err != nil {
			return err
		}
	}
	env := enforcer.HostEnv(wd)
	opts := export.Options{
		Env:           export.Env(env.Vars),
		Name:          p.Metadata.Name,
		SeccompFDPath: o.SeccompFD,
		Arch:          env.Arch,
	}
	notes, err := export.Notes(p, o.Format, opts)
	if err != nil {
		return withCode(exitSysprof, err)
	}
	var buf strings.Builder
	if err := export.Write(&buf, p, o.Format, opts); err != nil {
		return withCode(exitSysprof, err)
	}
	for _, n := range notes {
		fmt.Fprintf(o.Err, "sysprof: note: %s\n", n)
	}
	if o.Output == "" {
		_, err = io.WriteString(o.Out, buf.String())
		return err
	}
	return writeFileAtomic(o.Output, []byte(buf.String()))
}
