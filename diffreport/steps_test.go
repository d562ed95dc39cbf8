package diffreport

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sysprof/sysprof/policy"
)

// stepsFixture is two steps: build widens (the fixture diff), test does not change.
func stepsFixture(t *testing.T) []Step {
	changes, _ := fixture(t)
	return []Step{
		{Name: "build", ProfilePath: ".sysprof/build.yaml", Changes: changes},
		{Name: "test", ProfilePath: ".sysprof/test.yaml"},
	}
}

func TestStepsGolden(t *testing.T) {
	steps := stepsFixture(t)
	for _, format := range Formats {
		t.Run(format, func(t *testing.T) {
			var buf bytes.Buffer
			if err := RenderSteps(&buf, steps, format, WithVersion("0.1.0-test")); err != nil {
				t.Fatal(err)
			}
			golden(t, "steps."+goldenNames[format], buf.Bytes())
		})
	}
}

func TestStepsContent(t *testing.T) {
	steps := stepsFixture(t)
	var buf bytes.Buffer
	if err := RenderSteps(&buf, steps, "json"); err != nil {
		t.Fatal(err)
	}
	var r jsonSteps
	if err := json.Unmarshal(buf.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	if r.Format != StepsJSONFormat || !r.Widens || len(r.Steps) != 2 || !r.Steps[0].Widens || r.Steps[1].Widens || r.Steps[1].Changes == nil {
		t.Errorf("json: %+v", r)
	}

	buf.Reset()
	if err := RenderSteps(&buf, steps, "sarif"); err != nil {
		t.Fatal(err)
	}
	var log sarifLog
	if err := json.Unmarshal(buf.Bytes(), &log); err != nil {
		t.Fatal(err)
	}
	if len(log.Runs) != 1 || len(log.Runs[0].Results) == 0 {
		t.Fatalf("sarif: %+v", log)
	}
	rules := log.Runs[0].Tool.Driver.Rules
	for _, res := range log.Runs[0].Results {
		if rules[res.RuleIndex].ID != res.RuleID {
			t.Errorf("result %s points at rule %s", res.RuleID, rules[res.RuleIndex].ID)
		}
		if res.Properties["step"] != "build" || !strings.HasPrefix(res.Message.Text, "step build: ") {
			t.Errorf("result does not name its step: %+v", res)
		}
		if res.Locations[0].PhysicalLocation.ArtifactLocation.URI != ".sysprof/build.yaml" {
			t.Errorf("result points at %+v", res.Locations)
		}
	}

	// The caller's changes are not reordered.
	before := append([]policy.Change(nil), steps[0].Changes...)
	if err := RenderSteps(&bytes.Buffer{}, steps, "table"); err != nil {
		t.Fatal(err)
	}
	for i := range before {
		if before[i].Item != steps[0].Changes[i].Item {
			t.Fatal("RenderSteps reordered the caller's slice")
		}
	}
	if err := RenderSteps(&bytes.Buffer{}, steps, "xml"); err == nil {
		t.Error("unknown format accepted")
	}
}

func TestStepsSARIFValidatesAgainstSchema(t *testing.T) {
	schema := compiledSARIFSchema(t)
	for name, steps := range map[string][]Step{"fixture": stepsFixture(t), "none": nil} {
		var buf bytes.Buffer
		if err := RenderSteps(&buf, steps, "sarif"); err != nil {
			t.Fatal(err)
		}
		validSARIF(t, schema, name, &buf)
	}
}

// drift --step's table at an 80-column terminal ($COLUMNS; report.Width) fits in 80 columns.
func TestStepsTableFitsTheTerminal(t *testing.T) {
	t.Setenv("COLUMNS", "80")
	var buf bytes.Buffer
	if err := RenderSteps(&buf, stepsFixture(t), "table"); err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(strings.TrimRight(buf.String(), "\n"), "\n") {
		if w := utf8.RuneCountInString(l); w > 80 && strings.HasPrefix(l, "│") {
			t.Fatalf("a line of %d columns:\n%s", w, buf.String())
		}
	}
}
