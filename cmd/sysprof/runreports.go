package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/project"
	"github.com/sysprof/sysprof/report"
)

// runReporter leaves one run report (report.Envelope) per enforce, audit, drift or held run in
// the reports directory (--reports-dir, SYSPROF_REPORTS_DIR, reports: of sysprof.yaml). A nil
// *runReporter writes nothing.
type runReporter struct {
	dir     string
	project string
	err     io.Writer
}

// newRunReporter returns the reporter cfg asks for, or nil. The directory is made and checked
// writable now, before anything runs (exit 125 otherwise), so that a run's report is not lost
// at its end.
func newRunReporter(cfg config, w io.Writer) (*runReporter, error) {
	if cfg.ReportsDir == "" {
		return nil, nil
	}
	if err := checkWritable(filepath.Join(cfg.ReportsDir, "x.json")); err != nil {
		return nil, withCode(exitSysprof, fmt.Errorf("reports directory %s: %w (set another with --reports-dir)", cfg.ReportsDir, err))
	}
	name := ""
	if cfg.Project != nil {
		name = filepath.Base(cfg.Project.Dir)
	} else if wd, err := os.Getwd(); err == nil {
		name = filepath.Base(wd)
	}
	return &runReporter{dir: cfg.ReportsDir, project: name, err: w}, nil
}

// save writes the run report of one run: kind is report.Run*, st the step (no name for a plain
// command), profilePath and p the profile enforced or compared against, rep the enforce
// report (enforce, audit, held) or drift the changes (drift). A failure is a warning: the run
// itself is done and its result stands.
func (r *runReporter) save(kind string, st project.Step, profilePath string, p *policy.Profile, rep *report.Report, drift []policy.Change) {
	if r == nil {
		return
	}
	e := report.NewEnvelope(kind, version)
	e.Project, e.Step, e.Role, e.Command = r.project, st.Name, st.Role, st.Command
	if rep != nil && len(e.Command) == 0 {
		e.Command = rep.Command
	}
	if err := e.HashProfile(profilePath); err != nil {
		fmt.Fprintf(r.err, "sysprof: WARNING: run report: %v (written without the profile's hash)\n", err)
	}
	if p != nil {
		e.ProfileHosts = report.ProfileNamedHosts(p)
	}
	e.Report, e.Drift = rep, drift
	path, err := e.SaveIn(r.dir)
	if err != nil {
		fmt.Fprintf(r.err, "sysprof: WARNING: run report not written to %s: %v\n", r.dir, err)
		return
	}
	giveToSudoUser(r.err, path)
}

// enforceKind is the run-report kind of an enforce report.
func enforceKind(rep *report.Report) string {
	if rep.Audit {
		return report.RunAudit
	}
	return report.RunEnforce
}
