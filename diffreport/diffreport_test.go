package diffreport

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/policy"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/diffreport")

const dir = "../testdata/diffreport"

func load(t *testing.T, name string) (*policy.Profile, []byte) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.Parse(name, data)
	if err != nil {
		t.Fatal(err)
	}
	return p, data
}

// fixture is the diff of the committed old/new profiles, rendered with a locator into new.yaml.
func fixture(t *testing.T) ([]policy.Change, Options) {
	t.Helper()
	old, _ := load(t, "old.yaml")
	nw, data := load(t, "new.yaml")
	lines, err := policy.Locator("new.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	return policy.Diff(old, nw), Options{
		ProfilePath: ".sysprof/make.yaml", BasePath: "main:.sysprof/make.yaml", Version: "0.1.0-test", Line: lines,
	}
}

var goldenNames = map[string]string{
	"table":    "table.golden.txt",
	"markdown": "markdown.golden.md",
	"json":     "json.golden.json",
	"sarif":    "sarif.golden.sarif.json",
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	testutil.Golden(t, filepath.Join(dir, name), got, *update)
}

func TestGolden(t *testing.T) {
	t.Setenv("COLUMNS", "") // the golden table is the unlimited one
	changes, opts := fixture(t)
	for _, format := range Formats {
		t.Run(format, func(t *testing.T) {
			var buf bytes.Buffer
			if err := Render(&buf, changes, format, opts); err != nil {
				t.Fatal(err)
			}
			golden(t, goldenNames[format], buf.Bytes())
		})
	}
}

// The drift table at an 80-column terminal ($COLUMNS; report.Width) fits in 80 columns.
func TestTableFitsTheTerminal(t *testing.T) {
	t.Setenv("COLUMNS", "80")
	changes, opts := fixture(t)
	var buf bytes.Buffer
	if err := Render(&buf, changes, "table", opts); err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(strings.TrimRight(buf.String(), "\n"), "\n") {
		if w := utf8.RuneCountInString(l); w > 80 && strings.HasPrefix(l, "│") {
			t.Fatalf("a line of %d columns:\n%s", w, buf.String())
		}
	}
}

func TestEmptyDiff(t *testing.T) {
	old, _ := load(t, "old.yaml")
	changes := policy.Diff(old, old)
	if len(changes) != 0 {
		t.Fatalf("profile differs from itself: %v", changes)
	}
	for _, format := range Formats {
		var buf bytes.Buffer
		if err := Render(&buf, changes, format, Options{ProfilePath: "p.yaml"}); err != nil {
			t.Fatal(err)
		}
		golden(t, "empty."+goldenNames[format], buf.Bytes())
	}
}

func TestUnknownFormat(t *testing.T) {
	err := Render(&bytes.Buffer{}, nil, "xml")
	if err == nil || !strings.Contains(err.Error(), "table, markdown, json, sarif") {
		t.Errorf("unknown format: %v", err)
	}
}

func TestRenderDoesNotReorderInput(t *testing.T) {
	changes, opts := fixture(t)
	rev := make([]policy.Change, len(changes))
	for i, c := range changes {
		rev[len(changes)-1-i] = c
	}
	keep := append([]policy.Change(nil), rev...)
	var a, b bytes.Buffer
	if err := Render(&a, changes, "json", opts); err != nil {
		t.Fatal(err)
	}
	if err := Render(&b, rev, "json", opts); err != nil {
		t.Fatal(err)
	}
	if a.String() != b.String() {
		t.Error("output depends on input order")
	}
	if !cmp.Equal(keep, rev) {
		t.Error("Render reordered the caller's slice")
	}
}

func TestJSONShape(t *testing.T) {
	changes, opts := fixture(t)
	var buf bytes.Buffer
	if err := Render(&buf, changes, "json", opts); err != nil {
		t.Fatal(err)
	}
	var r struct {
		Format  string `json:"format"`
		Widens  bool   `json:"widens"`
		Summary struct{ Critical, High, Low, Narrowing int }
		Changes []policy.Change `json:"changes"`
	}
	if err := json.Unmarshal(buf.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	if r.Format != JSONFormat || !r.Widens || r.Summary.Critical == 0 || len(r.Changes) != len(changes) {
		t.Errorf("json report: %+v", r)
	}
	if !cmp.Equal(r.Changes, changes) {
		t.Error("changes do not read back")
	}
}

// compiledSARIFSchema is the SARIF 2.1.0 schema (testdata/diffreport), compiled with format checks.
func compiledSARIFSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "sarif-schema-2.1.0.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	const url = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	c.AssertFormat()
	schema, err := c.Compile(url)
	if err != nil {
		t.Fatal(err)
	}
	return schema
}

// validSARIF fails the test when the SARIF log in buf does not validate against schema.
func validSARIF(t *testing.T, schema *jsonschema.Schema, name string, buf *bytes.Buffer) {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(buf)
	if err != nil {
		t.Fatal(err)
	}
	if err := schema.Validate(inst); err != nil {
		t.Errorf("%s: SARIF output does not validate: %v", name, err)
	}
}

func TestSARIFValidatesAgainstSchema(t *testing.T) {
	schema := compiledSARIFSchema(t)
	changes, opts := fixture(t)
	for name, cs := range map[string][]policy.Change{"fixture": changes, "empty": nil} {
		var buf bytes.Buffer
		if err := Render(&buf, cs, "sarif", opts); err != nil {
			t.Fatal(err)
		}
		validSARIF(t, schema, name, &buf)
	}
	// The schema is not a rubber stamp: a broken log fails.
	bad, _ := jsonschema.UnmarshalJSON(strings.NewReader(`{"version":"2.1.0","runs":[{"tool":{"driver":{}},"results":[{"level":"fatal","message":{"text":"x"}}]}]}`))
	if err := schema.Validate(bad); err == nil {
		t.Error("schema accepted a log without driver name and with level fatal")
	}
}

func TestSARIFContent(t *testing.T) {
	changes, opts := fixture(t)
	var buf bytes.Buffer
	if err := Render(&buf, changes, "sarif", opts); err != nil {
		t.Fatal(err)
	}
	var log sarifLog
	if err := json.Unmarshal(buf.Bytes(), &log); err != nil {
		t.Fatal(err)
	}
	run := log.Runs[0]
	if run.Tool.Driver.Name != "sysprof" {
		t.Errorf("driver name %q", run.Tool.Driver.Name)
	}
	widening := 0
	for _, c := range changes {
		if c.Widens && c.Risk > policy.RiskNone {
			widening++
		}
	}
	if len(run.Results) != widening {
		t.Errorf("%d results, want one per widening change (%d)", len(run.Results), widening)
	}
	levels := map[string]string{}
	for _, r := range run.Results {
		if run.Tool.Driver.Rules[r.RuleIndex].ID != r.RuleID {
			t.Errorf("ruleIndex %d does not point at %s", r.RuleIndex, r.RuleID)
		}
		if len(r.Locations) != 1 || r.Locations[0].PhysicalLocation.ArtifactLocation.URI != ".sysprof/make.yaml" {
			t.Errorf("location %+v", r.Locations)
		}
		levels[r.Properties["item"].(string)] = r.Level
		if r.Properties["item"] == "$HOME/.ssh" && r.RuleID == policy.SectionRead {
			if reg := r.Locations[0].PhysicalLocation.Region; reg == nil || reg.StartLine != 35 {
				t.Errorf("region of $HOME/.ssh read: %+v, want line 35", reg)
			}
		}
	}
	for item, want := range map[string]string{"ptrace": "error", "/usr/bin/curl": "warning", "connect": "warning"} {
		if levels[item] != want {
			t.Errorf("level of %s = %q, want %q", item, levels[item], want)
		}
	}
}

func TestOptionStyles(t *testing.T) {
	changes, opts := fixture(t)
	var a, b bytes.Buffer
	if err := Render(&a, changes, "sarif", opts); err != nil {
		t.Fatal(err)
	}
	if err := Render(&b, changes, "sarif", WithProfile(opts.ProfilePath), WithBase(opts.BasePath), WithVersion(opts.Version), WithLines(opts.Line)); err != nil {
		t.Fatal(err)
	}
	if a.String() != b.String() {
		t.Error("Options{} and With… options render differently")
	}
}

// TestMarkdownKeepsHostileNamesInTheirCell: an item the command named (a pipe, a backtick,
// a newline, a comment opener, ESC, bidi) stays in its own cell of its own row, escaped.
func TestMarkdownKeepsHostileNamesInTheirCell(t *testing.T) {
	hostile := "$WORKDIR/a|b`c\n<!-- x\x1b[8m\u202e"
	cs := []policy.Change{{Kind: policy.Added, Section: "filesystem.write", Item: hostile, Reason: "writes " + hostile, By: "/w/t|ool", Risk: policy.RiskHigh}}
	var buf bytes.Buffer
	if err := Render(&buf, cs, "markdown", Options{ProfilePath: "p.yaml"}); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	var row string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "filesystem.write") {
			row = l
		}
	}
	// A row of 6 cells has 7 unescaped pipes.
	if n := strings.Count(row, "|") - strings.Count(row, `\|`); n != 7 {
		t.Errorf("the row splits into %d cells, want 6:\n%s", n-1, out)
	}
	if strings.ContainsAny(out, "\x1b\u202e") || strings.Count(out, "\n") != 5 {
		t.Errorf("raw control characters or line breaks in the markdown:\n%q", out)
	}
	if !strings.Contains(row, `writes \$WORKDIR/a\|b\`+"`"+`c\\n\<\!-- x\\x1b\[8m\\u202e`) {
		t.Errorf("the reason is not escaped as markdown text:\n%s", row)
	}
	if !strings.Contains(row, "``$WORKDIR/a\\|b`c\\n<!-- x\\x1b[8m\\u202e``") {
		t.Errorf("the item is not one code span:\n%s", row)
	}
}
