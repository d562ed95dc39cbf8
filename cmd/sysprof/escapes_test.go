package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/report"
)

func TestParseSince(t *testing.T) {
	for in, want := range map[string]time.Duration{"": 0, "30d": 30 * 24 * time.Hour, "2w": 14 * 24 * time.Hour, "12h": 12 * time.Hour} {
		if got, err := parseSince(in); err != nil || got != want {
			t.Errorf("parseSince(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"30", "d", "-3d", "0d", "soon"} {
		if _, err := parseSince(bad); err == nil {
			t.Errorf("parseSince(%q): no error", bad)
		}
	}
}

// sysprof audit over a directory of run reports: the formats, the skip lines, the reports
// directory as the default, and the usage errors.
func TestAuditCommand(t *testing.T) {
	dir := newProjectDir(t, "version: 1\nreports: runs\n")
	runs := filepath.Join(dir, "runs")
	e := report.NewEnvelope(report.RunEnforce, "t")
	e.Host, e.Project, e.Step = "ci-1", "webapp", "lint"
	e.Report = report.New([]string{"npx", "markdownlint", "."}, "p.yaml", false)
	e.Report.Add(report.Denial{Kind: report.KindFile, What: "hook", Path: "$WORKDIR/.git/hooks/pre-commit", Access: "write", Exe: "/usr/bin/node", Risk: policy.RiskCritical})
	if _, err := e.SaveIn(runs); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(runs, "broken.json"), `{"schema": "sysprof.run-report", "version": 1, "kind": "enf`)

	audit := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := run(append([]string{"audit"}, args...), strings.NewReader(""), &out, &errb)
		return code, out.String(), errb.String()
	}
	code, out, errs := audit() // the reports directory of sysprof.yaml
	if code != 0 || !strings.Contains(out, "suspicious") || !strings.Contains(out, "writes protected path $WORKDIR/.git") {
		t.Errorf("audit: status %d\n%s\n%s", code, out, errs)
	}
	if !strings.Contains(errs, "broken.json: skipped (malformed or truncated)") {
		t.Errorf("the broken report is not named on stderr:\n%s", errs)
	}
	code, out, _ = audit(runs, "--format", "json", "--since", "30d")
	var j struct {
		Schema   string
		Findings []struct{ Class, Reason string }
		Skipped  []string
	}
	if err := json.Unmarshal([]byte(out), &j); code != 0 || err != nil || j.Schema != "sysprof.audit" || len(j.Findings) != 1 || j.Findings[0].Class != "suspicious" || len(j.Skipped) != 1 {
		t.Errorf("--format json: status %d, %v: %+v\n%s", code, err, j, out)
	}
	if code, out, _ = audit(runs, "--format", "markdown"); code != 0 || !strings.Contains(out, "## suspicious (1)") {
		t.Errorf("--format markdown: status %d\n%s", code, out)
	}
	page := filepath.Join(dir, "audit.html")
	if code, _, errs = audit(runs, "--format", "html", "-o", page); code != 0 {
		t.Errorf("--format html: status %d\n%s", code, errs)
	}
	if b, err := os.ReadFile(page); err != nil || !bytes.Contains(b, []byte(`data-class="suspicious"`)) {
		t.Errorf("html page: %v\n%.300s", err, b)
	}
	if code, _, errs = audit(runs, "--format", "yaml"); code != exitSysprof || !strings.Contains(errs, "want one of table, markdown, json, html") {
		t.Errorf("--format yaml: status %d\n%s", code, errs)
	}
	if code, _, errs = audit(filepath.Join(dir, "nope")); code != exitSysprof || !strings.Contains(errs, "nope") {
		t.Errorf("missing path: status %d\n%s", code, errs)
	}
	newProjectDir(t, "")
	if code, _, errs = audit(); code != exitSysprof || !strings.Contains(errs, "no reports to read") {
		t.Errorf("no path, no reports directory: status %d\n%s", code, errs)
	}
}

// show --tree draws a profile's tree with a report's denials; --html writes the page.
func TestShowTreeAndHTML(t *testing.T) {
	dir := newProjectDir(t, "")
	prof := filepath.Join(dir, "p.yaml")
	p := &policy.Profile{Metadata: policy.Metadata{Name: "x", Command: []string{"sh"}, Runs: 1},
		Syscalls: policy.Syscalls{Architectures: []string{"x86_64"}, Allow: []policy.Syscall{{Name: "read"}}},
		Binaries: []policy.Binary{{Path: "/usr/bin/sh", Provenance: policy.Provenance{By: "/usr/bin/sh"}}, {Path: "/usr/bin/mkdir", Provenance: policy.Provenance{By: "/usr/bin/sh"}}}}
	if err := policy.Save(prof, p); err != nil {
		t.Fatal(err)
	}
	rep := report.New([]string{"sh"}, prof, false)
	rep.Add(report.Denial{Kind: report.KindFile, What: "$WORKDIR/.git/hooks/x write", Path: "$WORKDIR/.git/hooks/x", Access: "write", Exe: "/usr/bin/tee", Parents: []string{"/usr/bin/sh"}})
	rpath := filepath.Join(dir, "r.json")
	if err := rep.Save(rpath); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run([]string{"show", "-p", prof, "--tree", "--report", rpath}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("show --tree: status %d\n%s", code, errb.String())
	}
	want := "/usr/bin/sh\n├── /usr/bin/mkdir\n└── /usr/bin/tee  [1 DENIED]\n      ! denied file: $WORKDIR/.git/hooks/x write\n"
	if out.String() != want {
		t.Errorf("show --tree:\n%s\nwant:\n%s", out.String(), want)
	}
	page := filepath.Join(dir, "tree.html")
	if code := run([]string{"show", "-p", prof, "--html", page, "--report", rpath}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("show --html: status %d\n%s", code, errb.String())
	}
	if b, err := os.ReadFile(page); err != nil || !bytes.Contains(b, []byte(`data-exe="/usr/bin/tee" data-denied="true"`)) {
		t.Errorf("show --html: %v\n%.400s", err, b)
	}
}
