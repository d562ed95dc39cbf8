package hostcheck

import (
	"fmt"
	"io"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/sysprof/sysprof/report"
)

// Render writes the checks as a table: check, for, status, detail, reason/remedy, fitted to
// the terminal's width (report.Width, report.Fit; whole lines into a file or a pipe).
func Render(w io.Writer, cs []Check) error {
	ew := &errWriter{w: w}
	t := tablewriter.NewTable(ew,
		tablewriter.WithRenderer(renderer.NewBlueprint()),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
	)
	header := []string{"check", "for", "status", "detail", "reason / remedy"}
	t.Header(header)
	var rows [][]string
	for _, c := range cs {
		// Details and reasons name host paths (mounts, the cgroup, a sudo owner's home).
		rows = append(rows, []string{c.Name, c.For, statusCell(c), report.Printable(c.Detail), report.Printable(reasonCell(c))})
	}
	for _, row := range report.Fit(report.Width(w), header, rows) {
		if err := t.Append(row); err != nil {
			return fmt.Errorf("render checks: %w", err)
		}
	}
	if err := t.Render(); err != nil {
		return fmt.Errorf("render checks: %w", err)
	}
	if ew.err != nil {
		return fmt.Errorf("render checks: %w", ew.err)
	}
	return nil
}

// errWriter keeps the first write error: tablewriter does not report them.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	if err != nil {
		e.err = err
	}
	return n, err
}

func statusCell(c Check) string {
	s := c.Status.String()
	switch {
	case c.Status == Available:
		s = "ok"
	case c.Optional:
		s += " (optional)"
	}
	return s
}

func reasonCell(c Check) string {
	switch {
	case c.Reason != "" && c.Remedy != "":
		return c.Reason + ". Fix: " + c.Remedy
	case c.Remedy != "":
		return "Fix: " + c.Remedy
	}
	return c.Reason
}
