package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sysprof/sysprof/audit"
	"github.com/sysprof/sysprof/report"
	"github.com/sysprof/sysprof/runview"
)

// `sysprof audit` is the monthly escape audit over many run reports. (`enforce --audit` is
// another thing: audit.go.)

type escapesOptions struct {
	streams
	Paths  []string
	Since  time.Duration
	Format string
	Output string
	Now    time.Time
}

var auditFormats = []string{"table", "markdown", "json", "html"}

func init() {
	subcommands = append(subcommands, func(s streams) *cobra.Command { return newEscapesCmd(s, runEscapes) })
}

func newEscapesCmd(s streams, runF func(context.Context, *escapesOptions) error) *cobra.Command {
	o := &escapesOptions{streams: s}
	var since string
	cmd := &cobra.Command{
		Use:   "audit [PATH...] [--since 30d] [--format table|markdown|json|html] [-o FILE]",
		Short: "Fold and classify the escapes of many run reports (the monthly escape audit)",
		Long: `audit reads run reports (files, or directories searched recursively for *.json: what
enforce, enforce --audit and drift leave in the reports directory, from any number of machines
and projects, and plain enforce --report files), folds the same escape seen many times into one
finding, and classifies each: legitimate (refine it), overbroad (tighten the tool's role) or
suspicious (investigate), with the reason. Suspicious findings come first; the summary gives the
split. Without PATH it reads the reports directory (--reports-dir, SYSPROF_REPORTS_DIR, reports:
of sysprof.yaml). Reports that are malformed, truncated or of a newer version are skipped with a
line each on stderr.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !slices.Contains(auditFormats, o.Format) {
				return withCode(exitSysprof, fmt.Errorf("--format %q: want one of %s", o.Format, strings.Join(auditFormats, ", ")))
			}
			d, err := parseSince(since)
			if err != nil {
				return withCode(exitSysprof, err)
			}
			o.Since, o.Paths, o.Now = d, args, time.Now()
			if len(o.Paths) == 0 {
				cfg, err := loadConfig(cmd)
				if err != nil {
					return err
				}
				if cfg.ReportsDir == "" {
					return withCode(exitSysprof, errors.New("no reports to read: name files or directories (sysprof audit DIR), or set the reports directory (--reports-dir, SYSPROF_REPORTS_DIR, reports: in "+projectFile+")"))
				}
				o.Paths = []string{cfg.ReportsDir}
			}
			return runF(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&since, "since", "", "only runs of the last `D` (30d, 2w, 12h; default: all)")
	f.StringVar(&o.Format, "format", "table", "output: "+strings.Join(auditFormats, ", ")+" (html: one self-contained page)")
	f.StringVarP(&o.Output, "output", "o", "", "write to `FILE` instead of stdout")
	return cmd
}

// parseSince reads 30d, 2w, or a Go duration (12h, 90m).
func parseSince(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	for suffix, unit := range map[string]time.Duration{"d": 24 * time.Hour, "w": 7 * 24 * time.Hour} {
		if n, ok := strings.CutSuffix(s, suffix); ok {
			v, err := strconv.Atoi(n)
			if err != nil || v <= 0 {
				return 0, fmt.Errorf("--since %q: want a positive number of days (30d), weeks (2w) or a duration (12h)", s)
			}
			return time.Duration(v) * unit, nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("--since %q: want a positive number of days (30d), weeks (2w) or a duration (12h)", s)
	}
	return d, nil
}

func runEscapes(_ context.Context, o *escapesOptions) error {
	// Decoding thousands of small reports allocates much and keeps little (the findings): with
	// the default goal the collector ran a third of the time (BENCHMARKS.md).
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	res, err := audit.Read(o.Paths, audit.Options{Since: o.Since, Now: o.Now, Skip: func(line string) {
		fmt.Fprintf(o.Err, "sysprof: audit: %s\n", report.Printable(line))
	}})
	if err != nil {
		return withCode(exitSysprof, fmt.Errorf("%w (name report files or directories)", err))
	}
	return writeOutput(o.Out, o.Output, func(w io.Writer) error {
		switch o.Format {
		case "markdown":
			return res.WriteMarkdown(w)
		case "json":
			return res.WriteJSON(w)
		case "html":
			return writeAuditHTML(w, res)
		default:
			return res.WriteTable(w)
		}
	})
}

// writeOutput writes to path (atomically) or, without one, to out.
func writeOutput(out io.Writer, path string, write func(io.Writer) error) error {
	if path == "" {
		if err := write(out); err != nil {
			return withCode(exitSysprof, err)
		}
		return nil
	}
	var b strings.Builder
	if err := write(&b); err != nil {
		return withCode(exitSysprof, err)
	}
	if err := checkWritable(path); err != nil {
		return withCode(exitSysprof, err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(b.String()), 0o644); err != nil {
		return withCode(exitSysprof, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return withCode(exitSysprof, err)
	}
	giveToSudoUser(os.Stderr, path)
	return nil
}

func writeAuditHTML(w io.Writer, res *audit.Result) error {
	return runview.WriteAuditHTML(w, res, version)
}
