package audit

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/report"
)

var t0 = time.Date(2026, 11, 10, 9, 0, 0, 0, time.UTC)

func envelope(host, project, step string, at time.Time, denials ...report.Denial) *report.Envelope {
	e := report.NewEnvelope(report.RunEnforce, "test")
	e.Host, e.Project, e.Step, e.Time = host, project, step, at
	e.Report = report.New([]string{"x"}, "p.yaml", false)
	for _, d := range denials {
		e.Report.Add(d)
	}
	return e
}

func save(t *testing.T, dir string, e *report.Envelope) string {
	t.Helper()
	p, err := e.SaveIn(dir)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

var (
	hookWrite = report.Denial{Kind: report.KindFile, What: "$WORKDIR/.git/hooks/pre-commit write", Path: "$WORKDIR/.git/hooks/pre-commit", Access: "write",
		Exe: "/usr/bin/node", Parents: []string{"/usr/bin/npx"}, Suggest: "filesystem.write: + $WORKDIR/.git/hooks/pre-commit", Risk: policy.RiskCritical}
	sdkRead = report.Denial{Kind: report.KindFile, What: "$WORKDIR/node_modules/@aws-sdk/client-s3/index.js read", Path: "$WORKDIR/node_modules/@aws-sdk/client-s3/index.js", Access: "read",
		Exe: "/usr/bin/node", Parents: []string{"/usr/bin/npx"}, Suggest: "filesystem.read: + $WORKDIR/node_modules/@aws-sdk", Risk: policy.RiskLow}
	cacheWrite = report.Denial{Kind: report.KindFile, What: "$HOME/.cache/markdownlint/x write", Path: "$HOME/.cache/markdownlint/x", Access: "write",
		Exe: "/usr/bin/node", Suggest: "filesystem.write: + $HOME/.cache/markdownlint", Risk: policy.RiskLow}
)

func TestReadFoldsClassifiesAndSkips(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "host-a"), filepath.Join(dir, "host-b", "nested")
	// The same cache write on 2 machines × 2 projects on 3 days: one finding.
	save(t, a, envelope("a", "webapp", "lint", t0, cacheWrite, sdkRead))
	save(t, a, envelope("a", "docs", "lint", t0.Add(24*time.Hour), cacheWrite))
	save(t, b, envelope("b", "webapp", "lint", t0.Add(48*time.Hour), cacheWrite, hookWrite))
	// Too old for --since.
	save(t, b, envelope("b", "webapp", "lint", t0.Add(-60*24*time.Hour), hookWrite, report.Denial{Kind: report.KindSyscall, What: "ptrace(x)", Syscall: "ptrace", Exe: "/old", Risk: policy.RiskCritical}))
	// Broken ones, each skipped with a line.
	good, _ := os.ReadFile(save(t, a, envelope("a", "webapp", "lint", t0, cacheWrite)))
	writeFile := func(name, s string) {
		if err := os.WriteFile(filepath.Join(b, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeFile("truncated.json", string(good[:len(good)/3]))
	writeFile("garbage.json", "\x00\x01 not json")
	writeFile("future.json", strings.Replace(string(good), `"version": 1`, `"version": 7`, 1))
	writeFile("notes.txt", "ignored: not .json")

	var lines []string
	res, err := Read([]string{dir}, Options{Since: 30 * 24 * time.Hour, Now: t0.Add(72 * time.Hour), Skip: func(l string) { lines = append(lines, l) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 3 || len(res.Skipped) != 3 {
		t.Fatalf("skipped %q, want the truncated, garbage and future reports", lines)
	}
	for _, want := range []string{"future.json: skipped: run report version 7: newer format", "garbage.json: skipped (malformed", "truncated.json: skipped (malformed"} {
		if !strings.Contains(strings.Join(lines, "\n"), want) {
			t.Errorf("no skip line with %q in\n%s", want, strings.Join(lines, "\n"))
		}
	}
	if res.Runs != 4 || res.Machines != 2 || res.Projects != 2 {
		t.Errorf("runs %d machines %d projects %d, want 4, 2, 2 (the old report left out)", res.Runs, res.Machines, res.Projects)
	}
	if len(res.Findings) != 3 {
		t.Fatalf("%d findings, want 3: %+v", len(res.Findings), res.Findings)
	}
	hook, sdk, cache := res.Findings[0], res.Findings[1], res.Findings[2]
	if hook.Class != Suspicious || hook.Target != hookWrite.Path || hook.Runs != 1 {
		t.Errorf("first finding %s %s (%d runs), want the suspicious hook write in 1 run (ranked first)", hook.Class, hook.Target, hook.Runs)
	}
	if sdk.Class != Overbroad || sdk.Role != RoleLint {
		t.Errorf("second finding %s %s role %s, want the overbroad SDK read of a lint step", sdk.Class, sdk.Target, sdk.Role)
	}
	if cache.Class != Legitimate || cache.Runs != 4 || len(cache.Machines) != 2 || len(cache.Projects) != 2 ||
		!cache.First.Equal(t0) || !cache.Last.Equal(t0.Add(48*time.Hour)) || len(cache.Days) != 3 {
		t.Errorf("cache finding %+v: want legitimate, 4 runs on 2 machines in 2 projects over 3 days", cache)
	}
	if got := strings.Join(cache.Steps, ","); got != "docs/lint,webapp/lint" {
		t.Errorf("steps %q", got)
	}
	if s := res.Summary(); !strings.Contains(s, "legitimate 1 (67%), overbroad 1 (17%), suspicious 1 (17%)") {
		t.Errorf("summary %q", s)
	}
	if tl := res.Timeline(); len(tl) != 3 || tl[0].Counts[Legitimate] != 2 || tl[2].Counts[Suspicious] != 1 {
		t.Errorf("timeline %+v", tl)
	}
}

// Hostile names are escaped in the table and markdown outputs.
func TestOutputsEscapeNames(t *testing.T) {
	dir := t.TempDir()
	d := cacheWrite
	d.Exe = "/usr/bin/\u202egnp.sh\x1b[2J"
	d.Path = "$HOME/.cache/a|b\nc"
	save(t, dir, envelope("h\u202eost", "p", "lint", t0, d))
	res, err := Read([]string{dir}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for name, write := range map[string]func(*bytes.Buffer) error{
		"table":    func(b *bytes.Buffer) error { return res.WriteTable(b) },
		"markdown": func(b *bytes.Buffer) error { return res.WriteMarkdown(b) },
	} {
		var buf bytes.Buffer
		if err := write(&buf); err != nil {
			t.Fatal(err)
		}
		out := buf.String()
		if strings.ContainsAny(out, "\u202e\x1b") || !strings.Contains(out, `\u202e`) {
			t.Errorf("%s output carries a raw control or bidi character:\n%s", name, out)
		}
	}
}

func TestReadMissingPathIsAnError(t *testing.T) {
	if _, err := Read([]string{filepath.Join(t.TempDir(), "nope")}, Options{}); err == nil {
		t.Error("a missing path: no error")
	}
}

// A denial's host path (/home/alice/w/.git/...) folds by its portable change, so the same
// escape on two machines is one finding, judged by its portable path.
func TestFoldsByPortablePath(t *testing.T) {
	dir := t.TempDir()
	for _, h := range []string{"alice", "bob"} {
		d := report.Denial{Kind: report.KindFile, What: "x", Path: "/tmp/" + h + "/w/.git/hooks/pre-commit", Access: "create", Exe: "/usr/bin/dash",
			Suggest: "filesystem.write: + $WORKDIR/.git/hooks/pre-commit", Risk: policy.RiskCritical}
		save(t, dir, envelope(h, "w", "lint", t0, d))
	}
	res, err := Read([]string{dir}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Findings) != 1 || res.Findings[0].Class != Suspicious || res.Findings[0].Runs != 2 {
		t.Errorf("findings %+v, want one suspicious hook write seen twice", res.Findings)
	}
}

// A FIFO among the reports (or named) is skipped with a line, not waited on.
func TestReadSkipsFIFO(t *testing.T) {
	dir := t.TempDir()
	save(t, dir, envelope("a", "p", "lint", t0, cacheWrite))
	fifo := filepath.Join(dir, "planted.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := Read([]string{dir, fifo}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Runs != 1 || len(res.Skipped) != 1 || !strings.Contains(res.Skipped[0], "not a regular file") {
		t.Errorf("runs %d, skipped %q: want the report read and the named FIFO skipped", res.Runs, res.Skipped)
	}
}

// A run's held changes are escapes too: a dangerous one (no rule to suggest) included.
func TestHeldChangesAreEscapes(t *testing.T) {
	e := envelope("a", "webapp", "build", t0)
	g := policy.Grant{Section: policy.SectionWrite, Item: "$WORKDIR/newfile.txt"}
	e.Report.Changes = &report.Changes{Run: "r1", Held: []report.Change{
		{Path: "/w/newfile.txt", Op: "create", Type: "file", Class: "held", State: report.ChangeHeld, Reason: "no learned write rule covers it", Change: &g, Risk: policy.RiskLow},
		{Path: "/w/.git/hooks/pre-commit", Op: "create", Type: "file", Class: "dangerous", State: report.ChangeHeld, Reason: "protected path", Risk: policy.RiskCritical},
		{Path: "/w/bin/tool", Op: "mode", Type: "file", Class: "learned", State: report.ChangeStripped, Reason: "set-id bits removed"},
	}}
	got := Escapes(e)
	if len(got) != 2 {
		t.Fatalf("escapes = %d, want the held and the dangerous change (not the stripped one): %+v", len(got), got)
	}
	var hook *Escape
	for i := range got {
		if strings.Contains(got[i].Target, ".git/hooks") {
			hook = &got[i]
		}
	}
	if hook == nil {
		t.Fatalf("the dangerous hook write is not an escape: %+v", got)
	}
	if c, why := Classify(Subject{Dangerous: hook.Dangerous, Kind: hook.Kind, Access: hook.Access, Target: hook.Target, What: hook.What, Change: hook.Change, Exe: hook.Exe, Role: "build", Risk: hook.Risk}); c != Suspicious {
		t.Errorf("held hook write classified %s (%s), want suspicious", c, why)
	}
}
