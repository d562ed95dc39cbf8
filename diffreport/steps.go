package diffreport

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/report"
)

// Step is the diff of one step of a project (a gate in sysprof.yaml): what a new run of the
// step needs compared with its committed profile.
type Step struct {
	Name        string
	ProfilePath string // the step's committed profile
	Changes     []policy.Change
}

// StepsJSONFormat identifies the JSON shape RenderSteps writes.
const StepsJSONFormat = "sysprof.dev/drift-steps/v1"

// RenderSteps writes the diffs of several steps as one report in format (one of Formats):
// one table with a step column, one markdown comment, one JSON document, or one SARIF run whose
// results point at each step's profile. Only Options.Version is used from opts.
func RenderSteps(w io.Writer, steps []Step, format string, opts ...Option) error {
	var o Options
	for _, opt := range opts {
		opt.apply(&o)
	}
	sorted := make([]Step, len(steps))
	for i, s := range steps {
		cs := slices.Clone(s.Changes)
		policy.SortChanges(cs)
		sorted[i] = Step{Name: s.Name, ProfilePath: s.ProfilePath, Changes: cs}
	}
	switch format {
	case "table", "":
		return renderStepsTable(w, sorted)
	case "markdown", "md":
		return renderStepsMarkdown(w, sorted)
	case "json":
		return renderStepsJSON(w, sorted, &o)
	case "sarif":
		return renderStepsSARIF(w, sorted, &o)
	}
	return fmt.Errorf("unknown diff format %q: want one of %s", format, strings.Join(Formats, ", "))
}

func stepTable(w io.Writer, r tw.Renderer) *tablewriter.Table {
	return tablewriter.NewTable(w,
		tablewriter.WithRenderer(r),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithRowAlignment(tw.AlignLeft),
	)
}

func renderStepsTable(w io.Writer, steps []Step) error {
	n := 0
	for _, s := range steps {
		n += len(s.Changes)
	}
	if n > 0 {
		t := stepTable(w, renderer.NewBlueprint())
		header := []string{"STEP", "RISK", "CHANGE", "SECTION", "ITEM", "REASON", "BY"}
		t.Header(header)
		var rows [][]string
		for _, s := range steps {
			for _, c := range s.Changes {
				rows = append(rows, []string{pr(s.Name), riskWord(c), kindWord(c), pr(c.Section), pr(c.Item), pr(c.Reason), pr(c.By)})
			}
		}
		for _, row := range report.Fit(report.Width(w), header, rows) {
			if err := t.Append(row); err != nil {
				return fmt.Errorf("render table: %w", err)
			}
		}
		if err := t.Render(); err != nil {
			return fmt.Errorf("render table: %w", err)
		}
	}
	for _, s := range steps {
		if _, err := fmt.Fprintf(w, "step %s (%s): %s\n", pr(s.Name), pr(s.ProfilePath), Summarize(s.Changes)); err != nil {
			return err
		}
	}
	return nil
}

func renderStepsMarkdown(w io.Writer, steps []Step) error {
	var widening []string
	n := 0
	for _, s := range steps {
		if Summarize(s.Changes).Widening() > 0 {
			widening = append(widening, report.MarkdownCode(s.Name))
		}
		n += len(s.Changes)
	}
	verdict := "no step widens its profile"
	if len(widening) > 0 {
		verdict = fmt.Sprintf("**%d of %d steps widen** their profile (%s)", len(widening), len(steps), strings.Join(widening, ", "))
	}
	if _, err := fmt.Fprintf(w, "**sysprof drift**: %s.\n\n", verdict); err != nil {
		return err
	}
	for _, s := range steps {
		if _, err := fmt.Fprintf(w, "- %s (%s): %s\n", report.MarkdownCode(s.Name), report.MarkdownCode(s.ProfilePath), Summarize(s.Changes)); err != nil {
			return err
		}
	}
	if n == 0 {
		return nil
	}
	if _, err := fmt.Fprintln(w); err != nil {
		return err
	}
	t := stepTable(w, renderer.NewMarkdown())
	t.Header("Step", "Risk", "Change", "Section", "Item", "Reason", "By")
	for _, s := range steps {
		for _, c := range s.Changes {
			risk := riskWord(c)
			if c.Risk == policy.RiskCritical {
				risk = "**critical**"
			}
			if err := t.Append(report.MarkdownCode(s.Name), risk, string(c.Kind), report.MarkdownCode(c.Section), report.MarkdownCode(c.Item), report.MarkdownText(c.Reason), report.MarkdownCode(c.By)); err != nil {
				return fmt.Errorf("render markdown: %w", err)
			}
		}
	}
	if err := t.Render(); err != nil {
		return fmt.Errorf("render markdown: %w", err)
	}
	return nil
}

type jsonStep struct {
	Name    string          `json:"name"`
	Profile string          `json:"profile"`
	Widens  bool            `json:"widens"`
	Summary Summary         `json:"summary"`
	Changes []policy.Change `json:"changes"`
}

type jsonSteps struct {
	Format  string     `json:"format"`
	Sysprof string     `json:"sysprofVersion,omitempty"`
	Widens  bool       `json:"widens"`
	Steps   []jsonStep `json:"steps"`
}

func renderStepsJSON(w io.Writer, steps []Step, o *Options) error {
	r := jsonSteps{Format: StepsJSONFormat, Sysprof: o.Version, Steps: []jsonStep{}}
	for _, s := range steps {
		cs := s.Changes
		if cs == nil {
			cs = []policy.Change{}
		}
		js := jsonStep{Name: s.Name, Profile: s.ProfilePath, Widens: policy.Widens(cs, policy.RiskLow), Summary: Summarize(cs), Changes: cs}
		r.Widens = r.Widens || js.Widens
		r.Steps = append(r.Steps, js)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("render json: %w", err)
	}
	return nil
}

// renderStepsSARIF renders each step as renderSARIF does, then merges the runs into one: rules
// are shared, each result names its step and points at the step's profile.
func renderStepsSARIF(w io.Writer, steps []Step, o *Options) error {
	var rules []sarifRule
	ruleIndex := map[string]int{}
	results := []sarifResult{}
	for _, s := range steps {
		var buf bytes.Buffer
		so := Options{ProfilePath: s.ProfilePath, Version: o.Version}
		if err := renderSARIF(&buf, s.Changes, &so); err != nil {
			return err
		}
		var one sarifLog
		if err := json.Unmarshal(buf.Bytes(), &one); err != nil {
			return fmt.Errorf("render sarif: %w", err)
		}
		for _, run := range one.Runs {
			for _, r := range run.Results {
				rule := run.Tool.Driver.Rules[r.RuleIndex]
				idx, ok := ruleIndex[rule.ID]
				if !ok {
					idx = len(rules)
					ruleIndex[rule.ID] = idx
					rules = append(rules, rule)
				}
				r.RuleIndex = idx
				r.Message.Text = "step " + pr(s.Name) + ": " + r.Message.Text
				r.Properties["step"] = s.Name
				for k, v := range r.PartialFingerprints {
					r.PartialFingerprints[k] = s.Name + "|" + v
				}
				results = append(results, r)
			}
		}
	}
	return writeSARIF(w, o.Version, rules, results)
}
