package report

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sysprof/sysprof/policy"
)

func TestEnvelopeSaveParseRoundTrip(t *testing.T) {
	dir := t.TempDir()
	prof := filepath.Join(dir, "p.yaml")
	if err := os.WriteFile(prof, []byte("apiVersion: x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e := NewEnvelope(RunEnforce, "1.2.3")
	e.Project, e.Step, e.Role, e.Command = "webapp", "lint", "lint", []string{"markdownlint", "."}
	e.Report = sample()
	if err := e.HashProfile(prof); err != nil {
		t.Fatal(err)
	}
	// sha256 of "apiVersion: x\n"
	if len(e.ProfileSHA256) != 64 {
		t.Fatalf("profile hash %q", e.ProfileSHA256)
	}
	path, err := e.SaveIn(filepath.Join(dir, "reports"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(path, ".json") || !strings.Contains(filepath.Base(path), "-enforce-lint-") {
		t.Errorf("file name %s: want TIME-HOST-enforce-lint-RANDOM.json", path)
	}
	ents, _ := os.ReadDir(filepath.Dir(path))
	if len(ents) != 1 {
		t.Errorf("reports directory holds %d entries, want only the report (no temporary file left)", len(ents))
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseEnvelope(b)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(e, got); diff != "" {
		t.Errorf("round trip (-saved +parsed):\n%s", diff)
	}
}

func TestParseEnvelopeRefuses(t *testing.T) {
	e := NewEnvelope(RunDrift, "1")
	e.Drift = []policy.Change{{Kind: policy.Added, Section: policy.SectionRead, Item: "$HOME/.aws", Risk: policy.RiskCritical, Widens: true}}
	var buf strings.Builder
	if err := e.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	good := buf.String()
	if _, err := ParseEnvelope([]byte(good)); err != nil {
		t.Fatalf("a good drift report: %v", err)
	}
	for name, in := range map[string]string{
		"truncated":  good[:len(good)/2],
		"not json":   "hello",
		"other json": `{"a": 1}`,
		"bad schema": strings.Replace(good, Schema, "other", 1),
		"bad kind":   strings.Replace(good, `"kind": "drift"`, `"kind": "lunch"`, 1),
		"bad risk":   strings.Replace(good, `"critical"`, `"dire"`, 1),
	} {
		if _, err := ParseEnvelope([]byte(in)); err == nil || errors.Is(err, ErrFutureVersion) {
			t.Errorf("%s: err = %v, want a parse error", name, err)
		}
	}
	future := strings.Replace(good, `"version": 1`, `"version": 99`, 1)
	if _, err := ParseEnvelope([]byte(future)); !errors.Is(err, ErrFutureVersion) {
		t.Errorf("future version: err = %v, want ErrFutureVersion", err)
	}
}

func TestParseEnvelopeAcceptsPlainReport(t *testing.T) {
	r := sample()
	r.Audit = true
	var buf strings.Builder
	if err := r.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	e, err := ParseEnvelope([]byte(buf.String()))
	if err != nil {
		t.Fatal(err)
	}
	if e.Kind != RunAudit || e.Report == nil || len(e.Report.Denials) != 2 {
		t.Errorf("plain report read as kind %q with %v", e.Kind, e.Report)
	}
}
