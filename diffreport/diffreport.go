package diffreport

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"slices"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/report"
)

// Formats are the formats Render writes.
var Formats = []string{"table", "markdown", "json", "sarif"}

// Options say where the diff comes from. All fields are optional.
type Options struct {
	// ProfilePath names the new profile file, ideally relative to the repository root: the
	// location of SARIF results and the subject of the markdown summary.
	ProfilePath string
	// BasePath names the old profile (or git revision) the new one is compared with.
	BasePath string
	// Version is the sysprof version recorded in SARIF and JSON output.
	Version string
	// Line gives the line of each change in the new profile file (0 when unknown), for SARIF
	// regions; see policy.Locator.
	Line func(policy.Change) int
}

// Option configures Render: an Options value, or one of the With functions.
type Option interface{ apply(*Options) }

// apply sets the fields o sets.
func (o Options) apply(t *Options) {
	if o.ProfilePath != "" {
		t.ProfilePath = o.ProfilePath
	}
	if o.BasePath != "" {
		t.BasePath = o.BasePath
	}
	if o.Version != "" {
		t.Version = o.Version
	}
	if o.Line != nil {
		t.Line = o.Line
	}
}

type optionFunc func(*Options)

func (f optionFunc) apply(o *Options) { f(o) }

// WithProfile sets Options.ProfilePath.
func WithProfile(path string) Option { return optionFunc(func(o *Options) { o.ProfilePath = path }) }

// WithBase sets Options.BasePath.
func WithBase(path string) Option { return optionFunc(func(o *Options) { o.BasePath = path }) }

// WithVersion sets Options.Version.
func WithVersion(v string) Option { return optionFunc(func(o *Options) { o.Version = v }) }

// WithLines sets Options.Line.
func WithLines(line func(policy.Change) int) Option {
	return optionFunc(func(o *Options) { o.Line = line })
}

// Render writes changes in format (one of Formats). The changes are reported widening first,
// by risk, whatever order they come in; the slice is not modified.
// Options are applied in order.
func Render(w io.Writer, changes []policy.Change, format string, opts ...Option) error {
	var o Options
	for _, opt := range opts {
		opt.apply(&o)
	}
	cs := slices.Clone(changes)
	policy.SortChanges(cs)
	switch format {
	case "table", "":
		return renderTable(w, cs, &o)
	case "markdown", "md":
		return renderMarkdown(w, cs, &o)
	case "json":
		return renderJSON(w, cs, &o)
	case "sarif":
		return renderSARIF(w, cs, &o)
	}
	return fmt.Errorf("unknown diff format %q: want one of %s", format, strings.Join(Formats, ", "))
}

// Summary counts changes: widening ones by risk, and narrowing ones.
type Summary struct {
	Critical  int `json:"critical"`
	High      int `json:"high"`
	Low       int `json:"low"`
	Narrowing int `json:"narrowing"`
}

// Summarize counts changes by risk.
func Summarize(changes []policy.Change) Summary {
	var s Summary
	for _, c := range changes {
		switch {
		case !c.Widens || c.Risk == policy.RiskNone:
			s.Narrowing++
		case c.Risk == policy.RiskCritical:
			s.Critical++
		case c.Risk == policy.RiskHigh:
			s.High++
		default:
			s.Low++
		}
	}
	return s
}

// Widening is the number of widening changes.
func (s Summary) Widening() int { return s.Critical + s.High + s.Low }

// String is the one-line summary used by the table and markdown formats.
func (s Summary) String() string {
	if s.Widening() == 0 && s.Narrowing == 0 {
		return "no changes"
	}
	var parts []string
	if s.Widening() > 0 {
		parts = append(parts, fmt.Sprintf("%d widening (%d critical, %d high, %d low)", s.Widening(), s.Critical, s.High, s.Low))
	} else {
		parts = append(parts, "nothing widens")
	}
	if s.Narrowing > 0 {
		parts = append(parts, fmt.Sprintf("%d narrowing", s.Narrowing))
	}
	return strings.Join(parts, ", ")
}

func kindWord(c policy.Change) string {
	if c.Widens {
		return "+ " + string(c.Kind)
	}
	return "- " + string(c.Kind)
}

func riskWord(c policy.Change) string {
	if c.Risk == policy.RiskNone {
		return "-"
	}
	return c.Risk.String()
}

func renderTable(w io.Writer, cs []policy.Change, o *Options) error {
	if len(cs) == 0 {
		_, err := fmt.Fprintln(w, "no changes")
		return err
	}
	t := tablewriter.NewTable(w,
		tablewriter.WithRenderer(renderer.NewBlueprint()),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithRowAlignment(tw.AlignLeft),
	)
	header := []string{"RISK", "CHANGE", "SECTION", "ITEM", "REASON", "BY"}
	t.Header(header)
	rows := make([][]string, 0, len(cs))
	for _, c := range cs {
		rows = append(rows, []string{riskWord(c), kindWord(c), pr(c.Section), pr(c.Item), pr(c.Reason), pr(c.By)})
	}
	// Fitted to the terminal's width (report.Width), wrapped where a name can break.
	for _, row := range report.Fit(report.Width(w), header, rows) {
		if err := t.Append(row); err != nil {
			return fmt.Errorf("render table: %w", err)
		}
	}
	if err := t.Render(); err != nil {
		return fmt.Errorf("render table: %w", err)
	}
	_, err := fmt.Fprintln(w, Summarize(cs))
	return err
}

// pr is report.Printable: every name a diff shows (an item, a binary) is escaped.
func pr(s string) string { return report.Printable(s) }

func renderMarkdown(w io.Writer, cs []policy.Change, o *Options) error {
	s := Summarize(cs)
	subject := "the profile"
	if o.ProfilePath != "" {
		subject = report.MarkdownCode(o.ProfilePath)
	}
	if o.BasePath != "" {
		subject += " (against " + report.MarkdownCode(o.BasePath) + ")"
	}
	verdict := "does not widen"
	if s.Widening() > 0 {
		verdict = "**widens**"
	}
	if _, err := fmt.Fprintf(w, "**sysprof diff**: %s %s the policy: %s.\n", subject, verdict, s); err != nil {
		return err
	}
	if len(cs) == 0 {
		return nil
	}
	if _, err := fmt.Fprintln(w); err != nil {
		return err
	}
	t := tablewriter.NewTable(w,
		tablewriter.WithRenderer(renderer.NewMarkdown()),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithRowAlignment(tw.AlignLeft),
	)
	t.Header("Risk", "Change", "Section", "Item", "Reason", "By")
	for _, c := range cs {
		risk := riskWord(c)
		if c.Risk == policy.RiskCritical {
			risk = "**critical**"
		}
		if err := t.Append(risk, string(c.Kind), report.MarkdownCode(c.Section), report.MarkdownCode(c.Item), report.MarkdownText(c.Reason), report.MarkdownCode(c.By)); err != nil {
			return fmt.Errorf("render markdown: %w", err)
		}
	}
	if err := t.Render(); err != nil {
		return fmt.Errorf("render markdown: %w", err)
	}
	return nil
}

// jsonReport is the stable JSON shape; see the package documentation.
type jsonReport struct {
	Format  string          `json:"format"`
	Sysprof string          `json:"sysprofVersion,omitempty"`
	Old     string          `json:"old,omitempty"`
	New     string          `json:"new,omitempty"`
	Widens  bool            `json:"widens"`
	Summary Summary         `json:"summary"`
	Changes []policy.Change `json:"changes"`
}

// JSONFormat identifies the JSON report shape; it changes only if the shape does.
const JSONFormat = "sysprof.dev/diff/v1"

func renderJSON(w io.Writer, cs []policy.Change, o *Options) error {
	if cs == nil {
		cs = []policy.Change{}
	}
	r := jsonReport{Format: JSONFormat, Sysprof: o.Version, Old: o.BasePath, New: o.ProfilePath,
		Widens: policy.Widens(cs, policy.RiskLow), Summary: Summarize(cs), Changes: cs}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("render json: %w", err)
	}
	return nil
}

// SARIF 2.1.0, the subset sysprof emits.
type sarifLog struct {
	Schema  string     `json:"$schema"`
	Version string     `json:"version"`
	Runs    []sarifRun `json:"runs"`
}

type sarifRun struct {
	Tool    sarifTool     `json:"tool"`
	Results []sarifResult `json:"results"`
}

type sarifTool struct {
	Driver sarifDriver `json:"driver"`
}

type sarifDriver struct {
	Name           string      `json:"name"`
	Version        string      `json:"version,omitempty"`
	InformationURI string      `json:"informationUri,omitempty"`
	Rules          []sarifRule `json:"rules"`
}

type sarifRule struct {
	ID               string       `json:"id"`
	Name             string       `json:"name"`
	ShortDescription sarifMessage `json:"shortDescription"`
	FullDescription  sarifMessage `json:"fullDescription"`
	Help             sarifMessage `json:"help"`
}

type sarifMessage struct {
	Text string `json:"text"`
}

type sarifResult struct {
	RuleID              string            `json:"ruleId"`
	RuleIndex           int               `json:"ruleIndex"`
	Level               string            `json:"level"`
	Message             sarifMessage      `json:"message"`
	Locations           []sarifLocation   `json:"locations,omitempty"`
	PartialFingerprints map[string]string `json:"partialFingerprints"`
	Properties          map[string]any    `json:"properties"`
}

type sarifLocation struct {
	PhysicalLocation sarifPhysical `json:"physicalLocation"`
}

type sarifPhysical struct {
	ArtifactLocation sarifArtifact `json:"artifactLocation"`
	Region           *sarifRegion  `json:"region,omitempty"`
}

type sarifArtifact struct {
	URI string `json:"uri"`
}

type sarifRegion struct {
	StartLine int `json:"startLine"`
}

// sarifSchema is the value of $schema in SARIF output.
const sarifSchema = "https://json.schemastore.org/sarif-2.1.0.json"

// ruleText describes each section's rule for SARIF consumers.
var ruleText = map[string][2]string{
	policy.SectionSyscalls:      {"NewSyscall", "The profile allows a syscall it did not allow before."},
	policy.SectionArgs:          {"WiderSyscallArgument", "A syscall argument rule allows new values or flags, or no longer restricts the argument."},
	policy.SectionArchitectures: {"NewArchitecture", "The profile allows entering the kernel through another architecture's syscall table."},
	policy.SectionRead:          {"NewReadablePath", "A path became readable."},
	policy.SectionWrite:         {"NewWritablePath", "A path became writable."},
	policy.SectionExec:          {"NewExecutablePath", "A path became executable."},
	policy.SectionHidden:        {"UnhiddenPath", "A path that was hidden inside the sandbox is no longer hidden."},
	policy.SectionPrivateTmp:    {"SharedTmp", "The command no longer gets a private /tmp."},
	policy.SectionConnect:       {"NewConnectEndpoint", "The command may connect to a new network endpoint."},
	policy.SectionSend:          {"NewSendEndpoint", "The command may send datagrams to a new network endpoint."},
	policy.SectionBind:          {"NewBindEndpoint", "The command may listen on a new address or socket."},
	policy.SectionEnvPass:       {"PassedSecretEnv", "A secret-looking environment variable now reaches the command."},
	policy.SectionBinaries:      {"NewOrChangedBinary", "The command runs a new executable, or one whose sha256 changed."},
	policy.SectionIncomplete:    {"IncompleteProfile", "The profile may miss behaviour."},
}

func sarifLevel(r policy.Risk) string {
	switch r {
	case policy.RiskCritical:
		return "error"
	case policy.RiskHigh:
		return "warning"
	}
	return "note"
}

// fileURI turns a file path into a SARIF uri-reference (relative paths stay relative).
func fileURI(p string) string {
	p = filepath.ToSlash(p)
	u := url.URL{Path: p}
	return u.EscapedPath()
}

func renderSARIF(w io.Writer, cs []policy.Change, o *Options) error {
	var rules []sarifRule
	ruleIndex := map[string]int{}
	results := []sarifResult{}
	for _, c := range cs {
		if !c.Widens || c.Risk == policy.RiskNone {
			continue
		}
		idx, ok := ruleIndex[c.Section]
		if !ok {
			idx = len(rules)
			ruleIndex[c.Section] = idx
			txt, ok := ruleText[c.Section]
			if !ok {
				txt = [2]string{"Widening", "The profile allows more than before."}
			}
			rules = append(rules, sarifRule{
				ID: c.Section, Name: txt[0],
				ShortDescription: sarifMessage{Text: txt[1]},
				FullDescription:  sarifMessage{Text: txt[1] + " sysprof rates each such change critical, high or low; see `go doc github.com/sysprof/sysprof/policy Diff`."},
				Help:             sarifMessage{Text: "Review the change. If it is expected, commit the new profile; otherwise find out why the tool started doing this."},
			})
		}
		msg := fmt.Sprintf("%s %s: %s (%s risk: %s)", c.Section, c.Kind, pr(c.Item), c.Risk, pr(c.Reason))
		if c.By != "" {
			msg += "; first needed by " + pr(c.By)
		}
		r := sarifResult{
			RuleID: c.Section, RuleIndex: idx, Level: sarifLevel(c.Risk),
			Message:             sarifMessage{Text: msg},
			PartialFingerprints: map[string]string{"sysprofChange/v1": c.Section + "|" + string(c.Kind) + "|" + c.Item},
			Properties:          map[string]any{"risk": c.Risk.String(), "kind": string(c.Kind), "item": c.Item, "reason": c.Reason},
		}
		if c.By != "" {
			r.Properties["by"] = c.By
		}
		if o.ProfilePath != "" {
			loc := sarifLocation{PhysicalLocation: sarifPhysical{ArtifactLocation: sarifArtifact{URI: fileURI(o.ProfilePath)}}}
			if o.Line != nil {
				if n := o.Line(c); n > 0 {
					loc.PhysicalLocation.Region = &sarifRegion{StartLine: n}
				}
			}
			r.Locations = []sarifLocation{loc}
		}
		results = append(results, r)
	}
	return writeSARIF(w, o.Version, rules, results)
}

// writeSARIF writes one SARIF 2.1.0 run of sysprof with its rules and results.
func writeSARIF(w io.Writer, version string, rules []sarifRule, results []sarifResult) error {
	if rules == nil {
		rules = []sarifRule{}
	}
	log := sarifLog{Schema: sarifSchema, Version: "2.1.0", Runs: []sarifRun{{
		Tool:    sarifTool{Driver: sarifDriver{Name: "sysprof", Version: version, Rules: rules}},
		Results: results,
	}}}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(log); err != nil {
		return fmt.Errorf("render sarif: %w", err)
	}
	return nil
}
