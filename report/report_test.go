package report

import (
	"bytes"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sysprof/sysprof/policy"
)

func sample() *Report {
	r := New([]string{"cargo", "build"}, ".sysprof/cargo-build.yaml", false)
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	r.Add(Denial{Kind: KindSyscall, What: "ptrace(PTRACE_ATTACH)", Syscall: "ptrace", Arch: "x86_64", Exe: "/usr/bin/evil",
		Parents: []string{"/usr/bin/cargo"}, First: t0.Add(time.Second), Suggest: "syscalls.allow: + ptrace", Risk: RiskCritical})
	r.Add(Denial{Kind: KindSyscall, What: "ptrace(PTRACE_ATTACH)", Syscall: "ptrace", Arch: "x86_64", Exe: "/usr/bin/evil",
		First: t0, Suggest: "syscalls.allow: + ptrace", Risk: RiskCritical})
	r.Add(Denial{Kind: KindFile, What: "$HOME/.ssh/id_ed25519 read", Path: "$HOME/.ssh/id_ed25519", Access: "read",
		Exe: "/usr/bin/cat", First: t0, Suggest: "filesystem.read: + $HOME/.ssh", Risk: RiskCritical})
	r.SetLayer(Layer{Name: "seccomp", State: LayerApplied})
	r.SetLayer(Layer{Name: "landlock", State: LayerDegraded, Detail: "kernel has no Landlock"})
	return r
}

func TestAddAggregates(t *testing.T) {
	r := sample()
	if len(r.Denials) != 2 {
		t.Fatalf("denials = %d, want 2 (same kind/what/exe aggregate)", len(r.Denials))
	}
	d := r.Denials[0]
	if d.Count != 2 || !d.First.Equal(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)) {
		t.Errorf("aggregate = count %d first %v, want 2 and the earliest time", d.Count, d.First)
	}
}

func TestSaveLoadRoundTrip(t *testing.T) {
	r := sample()
	path := filepath.Join(t.TempDir(), "report.json")
	if err := r.Save(path); err != nil {
		t.Fatal(err)
	}
	got, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(r, got); diff != "" {
		t.Errorf("round trip changed the report (-saved +loaded):\n%s", diff)
	}
	var a, b bytes.Buffer
	if err := r.WriteJSON(&a); err != nil {
		t.Fatal(err)
	}
	if err := got.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	if a.String() != b.String() {
		t.Errorf("JSON is not stable across save/load")
	}
	if !strings.Contains(a.String(), `"kind": "file"`) || strings.Index(a.String(), `"kind": "file"`) > strings.Index(a.String(), `"kind": "syscall"`) {
		t.Errorf("denials are not sorted by kind:\n%s", a.String())
	}
}

func TestParseRefusesNewerVersion(t *testing.T) {
	if _, err := Parse([]byte(`{"version": 99}`)); err == nil {
		t.Fatal("a report from a newer sysprof was accepted")
	}
	r, err := Parse([]byte(`{"version": 1, "futureField": true}`))
	if err != nil {
		t.Fatal(err)
	}
	if r.Denials == nil {
		t.Error("Denials is nil after Parse; want empty")
	}
}

func TestWriteTableEmptyPrintsNothing(t *testing.T) {
	r := New([]string{"true"}, "", false)
	r.SetLayer(Layer{Name: "seccomp", State: LayerApplied})
	var buf bytes.Buffer
	if err := r.WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	if buf.Len() != 0 {
		t.Errorf("no denials printed %q, want nothing", buf.String())
	}
}

func TestWriteTable(t *testing.T) {
	r := sample()
	r.Unobservable = []string{"file denials as an ordinary user"}
	var buf bytes.Buffer
	if err := r.WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"ptrace(PTRACE_ATTACH)", "syscalls.allow: + ptrace", "filesystem.read: + $HOME/.ssh",
		"/usr/bin/evil", "layer landlock was NOT applied", "3 operation(s) denied", "not observable"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestWriteTableDegradedOnly(t *testing.T) {
	r := New([]string{"true"}, "", false)
	r.SetLayer(Layer{Name: "netns", State: LayerDegraded, Detail: "no user namespaces"})
	var buf bytes.Buffer
	if err := r.WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "netns") {
		t.Errorf("degraded layer not printed: %q", buf.String())
	}
}

// TestChangeRoundTrip checks the structured suggestion: a denial's Change survives the JSON
// report, and a report written before Change existed (Suggest text only) still loads and gives
// the same change.
func TestChangeRoundTrip(t *testing.T) {
	for _, g := range []policy.Grant{
		{Section: policy.SectionArgs, Syscall: "socket", Arg: 0, Item: "AF_NETLINK"},
		{Section: policy.SectionArgs, Syscall: "clone", Arg: 0, Item: "CLONE_NEWNS|CLONE_NEWUSER"},
		{Section: policy.SectionSyscalls, Item: "ptrace"},
		{Section: policy.SectionArchitectures, Item: "i386"},
		{Section: policy.SectionConnect, Item: "api.example.test:443", Proto: "tcp"},
		{Section: policy.SectionWrite, Item: "$HOME/.ssh/known_hosts", Unhide: []string{"$HOME/.ssh"}},
	} {
		r := New([]string{"x"}, "", false)
		r.Add(Denial{Kind: KindSyscall, What: "x()", Exe: "/usr/bin/x", Change: &g, Suggest: g.String(), Risk: RiskHigh})
		var buf bytes.Buffer
		if err := r.WriteJSON(&buf); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(buf.String(), `"change": {`) {
			t.Errorf("the report carries no change:\n%s", buf.String())
		}
		back, err := Parse(buf.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		got, ok := back.Denials[0].Suggested()
		if !ok || !cmp.Equal(got, g) || back.Denials[0].Change == nil {
			t.Errorf("new report: %+v, %v; want %+v", got, ok, g)
		}
		// The same report as an older sysprof wrote it: no change field.
		old := strings.Replace(buf.String(), `"change"`, `"unknownField"`, 1)
		back, err = Parse([]byte(old))
		if err != nil {
			t.Fatal(err)
		}
		if back.Denials[0].Change != nil {
			t.Fatalf("old report: change %+v read from nowhere", back.Denials[0].Change)
		}
		got, ok = back.Denials[0].Suggested()
		if !ok || !cmp.Equal(got, g) {
			t.Errorf("old report %q: %+v, %v; want %+v", back.Denials[0].Suggest, got, ok, g)
		}
	}
	// The enforcer's MPTCP suggestion names an endpoint first and the argument value second.
	d := Denial{Suggest: "network.connect: + ENDPOINT proto: mptcp (or syscalls.args: socket arg 2: + IPPROTO_MPTCP)"}
	if g, ok := d.Suggested(); !ok || !cmp.Equal(g, policy.Grant{Section: policy.SectionArgs, Syscall: "socket", Arg: 2, Item: "IPPROTO_MPTCP"}) {
		t.Errorf("MPTCP suggestion read as %+v, %v", g, ok)
	}
	d = Denial{Suggest: "none: $HOME/.ssh is a credential store (learn --allow-secret names one)"}
	if g, ok := d.Suggested(); ok {
		t.Errorf("a suggestion that is no change read as %+v", g)
	}
}

// TestWriteTableSaysRecordsWereLost: lost records are printed after the table, and also when
// nothing was listed (an empty table would say the run was clean).
func TestWriteTableSaysRecordsWereLost(t *testing.T) {
	for _, r := range []*Report{
		{Denials: []Denial{}, LostRecords: 3},
		{Denials: []Denial{{Kind: KindSyscall, What: "bpf", Syscall: "bpf", Count: 1}}, LostRecords: 3},
	} {
		var buf bytes.Buffer
		if err := r.WriteTable(&buf); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(buf.String(), "3 record(s) lost") {
			t.Errorf("lost records not said (%d denials):\n%s", len(r.Denials), buf.String())
		}
	}
}

// A secret-looking variable enforce removed is on stderr's record (issue 23: an attack that
// reads $GITHUB_TOKEN or its parent's /proc/PID/environ makes no syscall a layer can refuse),
// with or without denials, and never as a denial.
func TestWriteTableNamesRemovedVariables(t *testing.T) {
	for _, denials := range []bool{false, true} {
		r := New([]string{"make"}, "p.yaml", false)
		r.SetEnvRemoved([]string{"GITHUB_TOKEN", "NPM_TOKEN"})
		if denials {
			r.Add(Denial{Kind: KindSyscall, What: "ptrace()", Syscall: "ptrace", Count: 1})
		}
		var b strings.Builder
		if err := r.WriteTable(&b); err != nil {
			t.Fatal(err)
		}
		want := "sysprof: environment (not a denial): 2 secret-looking variable(s) removed: GITHUB_TOKEN, NPM_TOKEN (to pass one: env: {pass: [NAME]})\n"
		if !strings.Contains(b.String(), want) {
			t.Errorf("denials %v: stderr does not name the removed variables:\n%s", denials, b.String())
		}
		if !slices.Contains(r.Notes, "environment: "+r.EnvNote()) {
			t.Errorf("the report's notes lack the removal: %q", r.Notes)
		}
	}
	var b strings.Builder
	New(nil, "", false).WriteTable(&b)
	if b.Len() != 0 {
		t.Errorf("nothing removed, yet stderr says %q", b.String())
	}
}
