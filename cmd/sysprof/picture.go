package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/spf13/pflag"

	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/report"
	"github.com/sysprof/sysprof/runview"
	"github.com/sysprof/sysprof/trace"
)

// pictureOptions are show's --tree and --html: the process tree of a profile, an enforce
// report laid over it, or a learn trace.
type pictureOptions struct {
	HTML   string
	Tree   bool
	Report string
	Trace  string
}

func (o pictureOptions) wanted() bool { return o.HTML != "" || o.Tree }

func addPictureFlags(f *pflag.FlagSet, o *pictureOptions) {
	f.StringVar(&o.HTML, "html", "", "write the process tree and what each binary does as one self-contained HTML page to `FILE`")
	f.BoolVar(&o.Tree, "tree", false, "draw the process tree in the terminal")
	f.StringVar(&o.Report, "report", "", "with --tree/--html: mark the denials of this enforce report (or run report) `FILE`")
	f.StringVar(&o.Trace, "trace", "", "with --tree/--html: draw this learn trace (learn --trace-out `FILE`): the full process tree")
}

// showPicture draws what o asks for of profile p (at path).
func showPicture(s streams, path string, p *policy.Profile, o pictureOptions) error {
	var r *runview.Run
	if o.Trace != "" {
		b, err := os.ReadFile(o.Trace)
		if err != nil {
			return withCode(exitSysprof, fmt.Errorf("trace: %w", err))
		}
		var tr trace.Trace
		if err := json.Unmarshal(b, &tr); err != nil {
			return withCode(exitSysprof, fmt.Errorf("trace %s: %w (write one with `sudo sysprof learn --trace-out FILE -- CMD`)", o.Trace, err))
		}
		r = runview.FromTrace(&tr)
	} else {
		r = runview.FromProfile(path, p)
	}
	if o.Report != "" {
		b, err := os.ReadFile(o.Report)
		if err != nil {
			return withCode(exitSysprof, fmt.Errorf("report: %w", err))
		}
		e, err := report.ParseEnvelope(b)
		if err != nil {
			return withCode(exitSysprof, fmt.Errorf("report %s: %w", o.Report, err))
		}
		if e.Report != nil {
			r.AddReport(e.Report)
		}
	}
	if o.Tree {
		r.WriteTree(s.Out)
	}
	if o.HTML != "" {
		return writeRunHTML(s.Err, o.HTML, r)
	}
	return nil
}

// writeRunHTML writes r's page to file and says where.
func writeRunHTML(w io.Writer, file string, r *runview.Run) error {
	if err := writeOutput(w, file, func(out io.Writer) error { return r.WriteHTML(out, version) }); err != nil {
		return err
	}
	fmt.Fprintf(w, "sysprof: process tree written to %s\n", file)
	return nil
}
