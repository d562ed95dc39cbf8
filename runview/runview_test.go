package runview

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/sysprof/sysprof/audit"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/report"
	"github.com/sysprof/sysprof/trace"
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
	all := []string{"/usr/bin/env", "/usr/bin/node", "/usr/bin/dash", "/usr/bin/curl", report.Printable(hostile)}
	denied := map[string]bool{"/usr/bin/curl": true, report.Printable(hostile): true}
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

// A learn trace gives the real tree: every process under the one that started it, each
// binary's files and endpoints (by name) under it.
func TestFromTrace(t *testing.T) {
	tr := &trace.Trace{Command: []string{"make"}, Processes: []trace.Process{
		{ID: 1, Exe: "/usr/bin/make"},
		{ID: 2, Parent: 1, Exe: "/usr/bin/cc"},
		{ID: 3, Parent: 2, Exe: "/usr/bin/ld"},
		{ID: 4, Parent: 1, Exe: "/usr/bin/curl"},
	}, Files: []trace.FileAccess{
		{Exe: "/usr/bin/cc", Path: "/w/main.c", Access: "read", OK: true},
		{Exe: "/usr/bin/ld", Path: "/w/a.out", Access: "write", OK: true},
		{Exe: "/usr/bin/ld", Path: "/w/missing", Access: "read", OK: false},
	}, Network: []trace.NetworkAccess{{Exe: "/usr/bin/curl", Op: "connect", Family: "inet", Proto: "tcp", Addr: "192.0.2.1", Port: 443, Host: "example.com", OK: true}}}
	r := FromTrace(tr)
	var b bytes.Buffer
	r.WriteTree(&b)
	want := "/usr/bin/make\n" +
		"├── /usr/bin/cc  (1 read)\n" +
		"│   └── /usr/bin/ld  (1 write)\n" +
		"└── /usr/bin/curl  (1 network)\n"
	if b.String() != want {
		t.Errorf("tree:\n%s\nwant:\n%s", b.String(), want)
	}
	for _, n := range r.Nodes() {
		if n.Exe == "/usr/bin/curl" && (len(n.DNS) != 1 || n.DNS[0] != "example.com" || n.Network[0] != "connect example.com (192.0.2.1:443) tcp") {
			t.Errorf("curl's network %q dns %q", n.Network, n.DNS)
		}
	}
}
