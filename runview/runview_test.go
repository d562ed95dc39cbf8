package runview

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/sysprof/sysprof/audit"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/report"
)

// hostile is a binary name that reads as "evil.sh" reversed and clears the terminal.
const hostile = "/tmp/x/\u202ehs.live\x1b[2J"

// knownRun is a small run: env starts node, node runs dash, dash runs curl; curl was denied a
// connection and a hostile binary under dash was denied a write to a git hook.
func knownRun() (*Run, []string, map[string]bool) {
	p := &policy.Profile{Binaries: []policy.Binary{
		{Path: "/usr/bin/env", Provenance: policy.Provenance{By: "/usr/bin/env"}},
		{Path: "/usr/bin/node", Provenance: policy.Provenance{By: "/usr/bin/env"}},
		{Path: "/usr/bin/dash", Provenance: policy.Provenance{By: "/usr/bin/node"}},
	}}
	p.Filesystem.Read = []policy.PathRule{{Path: "$WORKDIR", Provenance: policy.Provenance{By: "/usr/bin/node"}}, {Path: "$HOME/.npmrc", Provenance: policy.Provenance{By: "/usr/bin/node"}}}
	p.Filesystem.Write = []policy.PathRule{{Path: "$WORKDIR/dist", Provenance: policy.Provenance{By: "/usr/bin/node"}}}
	p.Network.Connect = []policy.Endpoint{{Endpoint: "registry.example.com:443", Proto: "tcp", Provenance: policy.Provenance{By: "/usr/bin/node"}}}
	r := FromProfile(".sysprof/build.yaml", p)
	rep := report.New([]string{"npm", "run", "build"}, ".sysprof/build.yaml", false)
	rep.Add(report.Denial{Kind: report.KindNetwork, What: "203.0.113.9:443 tcp", Endpoint: "203.0.113.9:443", Exe: "/usr/bin/curl",
		Parents: []string{"/usr/bin/dash", "/usr/bin/node", "/usr/bin/env"}, Suggest: "network.connect: + 203.0.113.9:443 tcp", Risk: policy.RiskCritical, First: time.Now()})
	rep.Add(report.Denial{Kind: report.KindFile, What: "$WORKDIR/.git/hooks/pre-commit write", Path: "$WORKDIR/.git/hooks/pre-commit", Access: "write",
		Exe: hostile, Parents: []string{"/usr/bin/dash", "/usr/bin/node", "/usr/bin/env"}, Suggest: "filesystem.write: + $WORKDIR/.git/hooks/pre-commit", Risk: policy.RiskCritical})
	r.AddReport(rep)
	all := []string{"/usr/bin/env", "/usr/bin/node", "/usr/bin/dash", "/usr/bin/curl", audit.Printable(hostile)}
	denied := map[string]bool{"/usr/bin/curl": true, audit.Printable(hostile): true}
	return r, all, denied
}

func TestTreeFromProfileAndReport(t *testing.T) {
	r, _, _ := knownRun()
	var b bytes.Buffer
	r.WriteTree(&b)
	got := b.String()
	for _, line := range []string{
		"/usr/bin/env\n",
		"└── /usr/bin/node  (1 write, 2 read, 1 network)\n",
		"    └── /usr/bin/dash\n",
		"        ├── /tmp/x/\\u202ehs.live\\x1b[2J  [1 DENIED]\n",
		"        │     ! denied file: $WORKDIR/.git/hooks/pre-commit write\n",
		"        └── /usr/bin/curl  [1 DENIED]\n",
		"              ! denied network: 203.0.113.9:443 tcp\n",
	} {
		if !strings.Contains(got, line) {
			t.Errorf("tree lacks %q:\n%s", line, got)
		}
	}
	if strings.ContainsAny(got, "\u202e\x1b") {
		t.Errorf("tree carries a raw bidi or escape character:\n%s", got)
	}
}

func TestHTMLIsSelfContainedAndEscaped(t *testing.T) {
	r, _, _ := knownRun()
	var b bytes.Buffer
	if err := r.WriteHTML(&b, "test"); err != nil {
		t.Fatal(err)
	}
	checkSelfContained(t, b.String())
	res := &audit.Result{Findings: []audit.Finding{{Class: audit.Suspicious, Kind: audit.KindFile, Access: "write", Target: "$WORKDIR/.git/hooks/pre-commit", Exe: hostile,
		Days: map[string]int{"2026-11-02": 1}, Runs: 1}}}
	b.Reset()
	if err := WriteAuditHTML(&b, res, "test"); err != nil {
		t.Fatal(err)
	}
	checkSelfContained(t, b.String())
}

func checkSelfContained(t *testing.T, page string) {
	t.Helper()
	for _, bad := range []string{"src=", "href=", "@import", "url(", "\u202e", "\x1b"} {
		if strings.Contains(page, bad) {
			t.Errorf("page contains %q: it must load nothing and carry no raw control or bidi character", bad)
		}
	}
	for _, want := range []string{"default-src 'none'", `\u202e`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}
