package audit

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/sysprof/sysprof/report"
)

// Percent is n of total as a whole percentage ("0%" of nothing).
func Percent(n, total int) string {
	if total == 0 {
		return "0%"
	}
	return strconv.Itoa((n*100+total/2)/total) + "%"
}

// Summary is the one paragraph that heads every format: how much was read and the split.
func (r *Result) Summary() string {
	s := r.Split()
	total, occ := 0, 0
	for _, c := range Classes {
		total += s.Findings[c]
		occ += s.Occurrences[c]
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d run report(s) from %d machine(s) and %d project(s)", r.Runs, r.Machines, r.Projects)
	if !r.First.IsZero() {
		fmt.Fprintf(&b, ", %s to %s", r.First.UTC().Format(time.DateOnly), r.Last.UTC().Format(time.DateOnly))
	}
	fmt.Fprintf(&b, ": %d finding(s) (%d occurrence(s))", total, occ)
	if total > 0 {
		var parts []string
		for _, c := range []Class{Legitimate, Overbroad, Suspicious} {
			parts = append(parts, fmt.Sprintf("%s %d (%s)", c, s.Findings[c], Percent(s.Occurrences[c], occ)))
		}
		fmt.Fprintf(&b, " — %s of occurrences", strings.Join(parts, ", "))
	}
	if len(r.Skipped) > 0 {
		fmt.Fprintf(&b, "; %d report(s) skipped", len(r.Skipped))
	}
	return b.String()
}

// Chain is "EXE < PARENT < …", escaped.
func (f *Finding) Chain() string {
	s := []string{report.Printable(f.Exe)}
	for _, p := range f.Parents {
		s = append(s, report.Printable(p))
	}
	return strings.Join(s, " < ")
}

// Describe is the finding in a few words, escaped: access and target, with the DNS name.
func (f *Finding) Describe() string {
	s := f.Access + " " + f.Target
	if f.Host != "" && !strings.Contains(f.Target, f.Host) {
		s += " (" + f.Host + ")"
	}
	return report.Printable(strings.TrimSpace(s))
}

// Where is the project/steps and how many machines, escaped.
func (f *Finding) Where() string {
	return report.Printable(strings.Join(f.Steps, ", ")) + " on " + strconv.Itoa(len(f.Machines)) + " machine(s)"
}

// Seen is how many runs, first and last day.
func (f *Finding) Seen() string {
	if f.First.IsZero() {
		return strconv.Itoa(f.Runs) + " run(s)"
	}
	return fmt.Sprintf("%d run(s), %s – %s", f.Runs, f.First.UTC().Format(time.DateOnly), f.Last.UTC().Format(time.DateOnly))
}

// WriteTable prints the summary, the findings (most urgent first) and the skipped reports.
func (r *Result) WriteTable(w io.Writer) error {
	fmt.Fprintln(w, r.Summary())
	if len(r.Findings) > 0 {
		// The header as printed (no auto-format, which spaces out "<"): Fit measures it.
		t := tablewriter.NewTable(w, tablewriter.WithRenderer(renderer.NewBlueprint()), tablewriter.WithHeaderAutoFormat(tw.Off))
		header := []string{"CLASS", "WHAT", "BINARY < PARENTS", "WHERE", "SEEN", "WHY", "TO DO"}
		t.Header(header)
		var rows [][]string
		for _, f := range r.Findings {
			rows = append(rows, []string{string(f.Class), f.Describe(), f.Chain(), f.Where(), f.Seen(), report.Printable(f.Reason), f.Todo()})
		}
		// Fitted to the terminal's width; whole lines into a file or a pipe.
		for _, row := range report.Fit(report.Width(w), header, rows) {
			if err := t.Append(row); err != nil {
				return fmt.Errorf("table: %w", err)
			}
		}
		if err := t.Render(); err != nil {
			return fmt.Errorf("table: %w", err)
		}
	}
	for _, s := range r.Skipped {
		fmt.Fprintf(w, "skipped: %s\n", report.Printable(s))
	}
	return nil
}

// Todo is the class's action in short, with the profile change for a legitimate finding.
func (f *Finding) Todo() string {
	switch {
	case f.Class == Legitimate && f.Change != "":
		return "refine: " + report.Printable(f.Change)
	case f.Class == Legitimate:
		return "refine (learn the step again)"
	case f.Class == Overbroad:
		return "tighten the " + f.Role + " role: keep it denied"
	default:
		return "investigate: keep it denied"
	}
}

// WriteMarkdown writes the audit as a markdown document (for an issue or a wiki page).
func (r *Result) WriteMarkdown(w io.Writer) error {
	fmt.Fprintf(w, "# sysprof escape audit\n\n%s\n\n", report.MarkdownText(r.Summary()))
	fmt.Fprintf(w, "What to do: **suspicious**: %s. **overbroad**: %s. **legitimate**: %s.\n\n", Suspicious.Action(), Overbroad.Action(), Legitimate.Action())
	for _, c := range Classes {
		var fs []Finding
		for _, f := range r.Findings {
			if f.Class == c {
				fs = append(fs, f)
			}
		}
		if len(fs) == 0 {
			continue
		}
		fmt.Fprintf(w, "## %s (%d)\n\n| What | Binary < parents | Where | Seen | Why | To do |\n|---|---|---|---|---|---|\n", c, len(fs))
		for _, f := range fs {
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", report.MarkdownCode(f.Describe()), report.MarkdownCode(f.Chain()), report.MarkdownText(f.Where()), f.Seen(), report.MarkdownText(f.Reason), report.MarkdownText(f.Todo()))
		}
		fmt.Fprintln(w)
	}
	if len(r.Skipped) > 0 {
		fmt.Fprintf(w, "## Skipped reports (%d)\n\n", len(r.Skipped))
		for _, s := range r.Skipped {
			fmt.Fprintf(w, "- %s\n", report.MarkdownText(s))
		}
	}
	return nil
}

// jsonResult is the JSON form: the result with its split, timeline and summary.
type jsonResult struct {
	Schema   string     `json:"schema"`
	Version  int        `json:"version"`
	Summary  string     `json:"summary"`
	Split    Split      `json:"split"`
	Timeline []DaySplit `json:"timeline"`
	*Result
}

// JSONSchema and JSONVersion name the JSON output of `sysprof audit --format json`.
const (
	JSONSchema  = "sysprof.audit"
	JSONVersion = 1
)

// WriteJSON writes the audit as JSON (names are left as they are: JSON escapes them itself).
func (r *Result) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(jsonResult{Schema: JSONSchema, Version: JSONVersion, Summary: r.Summary(), Split: r.Split(), Timeline: r.Timeline(), Result: r})
}
