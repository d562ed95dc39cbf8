package main

import (
	"bytes"
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/olekukonko/tablewriter/pkg/twwidth"
	"github.com/spf13/cobra"

	"github.com/sysprof/sysprof/enforcer"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/project"
	"github.com/sysprof/sysprof/report"
	"github.com/sysprof/sysprof/trace"
)

const gatesYAML = `version: 1
steps:
  - name: vet
    command: [go, vet, ./...]
  - name: build
    command: go build ./...
    env: [CGO_ENABLED=0]
  - name: test
    command: [go, test, ./...]
    workdir: sub
`

// seamRoot is newRootCmd with one subcommand whose runF the test supplies.
func seamRoot(sub *cobra.Command) *cobra.Command {
	root := &cobra.Command{Use: "sysprof", SilenceUsage: true, SilenceErrors: true}
	root.PersistentFlags().Bool("debug", false, "")
	addConfigFlags(root.PersistentFlags())
	root.AddCommand(sub)
	return root
}

func execSeam(t *testing.T, sub *cobra.Command, args ...string) error {
	t.Helper()
	root := seamRoot(sub)
	root.SetArgs(args)
	root.SetOut(&bytes.Buffer{})
	root.SetErr(&bytes.Buffer{})
	return root.ExecuteContext(context.Background())
}

func gateNames(steps []project.Step) []string {
	var out []string
	for _, s := range steps {
		out = append(out, s.Name)
	}
	return out
}

func TestStepFlags(t *testing.T) {
	dir := newProjectDir(t, gatesYAML)
	s := streams{}
	type got struct {
		gates   []string
		command []string
		profile string
		report  string
		format  string
	}
	learn := func(args ...string) (got, error) {
		var g got
		err := execSeam(t, newLearnCmd(s, func(_ context.Context, o *learnOptions) error {
			g = got{gates: gateNames(o.Gates), command: o.Command, profile: o.Profile}
			return nil
		}), append([]string{"learn"}, args...)...)
		return g, err
	}
	enforce := func(args ...string) (got, error) {
		var g got
		err := execSeam(t, newEnforceCmd(s, func(_ context.Context, o *enforceOptions) error {
			g = got{gates: gateNames(o.Gates), command: o.Command, profile: o.Profile, report: o.Report}
			return nil
		}), append([]string{"enforce"}, args...)...)
		return g, err
	}
	drift := func(args ...string) (got, error) {
		var g got
		err := execSeam(t, newDriftCmd(s, func(_ context.Context, o *driftOptions) error {
			g = got{gates: gateNames(o.Gates), command: o.Command, profile: o.Profile, format: o.Format}
			return nil
		}), append([]string{"drift"}, args...)...)
		return g, err
	}

	for _, tc := range []struct {
		name string
		run  func(...string) (got, error)
		args []string
		want got
	}{
		{"learn --all", learn, []string{"--all"}, got{gates: []string{"vet", "build", "test"}}},
		{"learn --step in the order given", learn, []string{"--step", "test", "--step", "vet"}, got{gates: []string{"test", "vet"}}},
		{"learn --step=NAME", learn, []string{"--step=build"}, got{gates: []string{"build"}}},
		{"learn without steps is unchanged", learn, []string{"--", "cargo", "build"}, got{command: []string{"cargo", "build"}, profile: filepath.Join(dir, ".sysprof/cargo-build.yaml")}},
		{"learn -p is unchanged", learn, []string{"-p", "x.yaml", "true"}, got{command: []string{"true"}, profile: "x.yaml"}},
		{"enforce --all --report", enforce, []string{"--all", "--report", "r.json"}, got{gates: []string{"vet", "build", "test"}, report: "r.json"}},
		{"enforce --step", enforce, []string{"--step", "test"}, got{gates: []string{"test"}}},
		{"enforce without steps is unchanged", enforce, []string{"--", "make"}, got{command: []string{"make"}, profile: filepath.Join(dir, ".sysprof/make.yaml")}},
		{"drift --all --format", drift, []string{"--all", "--format", "sarif"}, got{gates: []string{"vet", "build", "test"}, format: "sarif"}},
		{"drift --step", drift, []string{"--step", "vet"}, got{gates: []string{"vet"}, format: "table"}},
		{"drift without steps is unchanged", drift, []string{"--", "go", "vet"}, got{command: []string{"go", "vet"}, profile: filepath.Join(dir, ".sysprof/go-vet.yaml"), format: "table"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := tc.run(tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, g, cmp.AllowUnexported(got{})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}

	// The gates carry what the step resolved to.
	t.Run("resolved step", func(t *testing.T) {
		var gates []project.Step
		err := execSeam(t, newEnforceCmd(s, func(_ context.Context, o *enforceOptions) error {
			gates = o.Gates
			return nil
		}), "enforce", "--step", "build", "--step", "test")
		if err != nil {
			t.Fatal(err)
		}
		want := []project.Step{
			{Name: "build", Command: []string{"go", "build", "./..."}, Profile: filepath.Join(dir, ".sysprof/build.yaml"), Workdir: dir, Env: []string{"CGO_ENABLED=0"}},
			{Name: "test", Command: []string{"go", "test", "./..."}, Profile: filepath.Join(dir, ".sysprof/test.yaml"), Workdir: filepath.Join(dir, "sub")},
		}
		if diff := cmp.Diff(want, gates); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})

	for _, tc := range []struct {
		name string
		run  func(...string) (got, error)
		args []string
		want string
	}{
		{"command and --all", learn, []string{"--all", "--", "make"}, "drop `-- make`"},
		{"--step and --all", enforce, []string{"--all", "--step", "vet"}, "exclude each other"},
		{"-p and --step", enforce, []string{"-p", "x.yaml", "--step", "vet"}, "-p does not go with --step/--all"},
		{"unknown step", drift, []string{"--step", "lint"}, `no step "lint" (steps: vet, build, test)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.run(tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) || codeOf(err) != exitSysprof {
				t.Fatalf("err = %v (status %d), want %q and status %d", err, codeOf(err), tc.want, exitSysprof)
			}
		})
	}

	t.Run("--config after the subcommand", func(t *testing.T) {
		other := filepath.Join(t.TempDir(), "other.yaml")
		writeFile(t, other, "version: 1\nsteps:\n  - {name: only, command: [x]}\n")
		g, err := learn("--config", other, "--all")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"only"}, g.gates); diff != "" {
			t.Error(diff)
		}
	})

	t.Run("no project", func(t *testing.T) {
		newProjectDir(t, "")
		_, err := learn("--all")
		if err == nil || !strings.Contains(err.Error(), "sysprof init") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestStepFile(t *testing.T) {
	if got := stepFile("out/gates.json", "test"); got != "out/gates.json.test.json" {
		t.Errorf("stepFile = %q", got)
	}
}

func TestShellQuote(t *testing.T) {
	got := shellQuote([]string{"sh", "-c", "cat out.txt", "it's", "", "a=b"})
	if want := `sh -c 'cat out.txt' 'it'\''s' '' a=b`; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	back, err := project.SplitCommand(got)
	if err != nil || !cmp.Equal(back, []string{"sh", "-c", "cat out.txt", "it's", "", "a=b"}) {
		t.Errorf("round trip: %q %v", back, err)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The denials of every step that ran are printed as one table, each row naming its step.
func TestGateTable(t *testing.T) {
	build := report.New([]string{"make"}, ".sysprof/build.yaml", false)
	build.Add(report.Denial{Kind: report.KindSyscall, What: "ptrace(PTRACE_ATTACH)", Exe: "/usr/bin/cc", Count: 2, Risk: report.RiskCritical, Suggest: "syscalls.allow: + ptrace"})
	build.SetLayer(report.Layer{Name: "landlock", State: report.LayerDegraded, Detail: "ABI 1"})
	test := report.New([]string{"go", "test"}, ".sysprof/test.yaml", false)
	test.Add(report.Denial{Kind: report.KindNetwork, What: "127.0.0.1:4444 tcp", Exe: "/tmp/x.test", Parents: []string{"/usr/bin/go"}, Risk: report.RiskCritical, Suggest: "network.connect: + tcp 127.0.0.1:4444"})
	steps := []project.Step{{Name: "build"}, {Name: "test"}, {Name: "lint"}}
	results := []gateResult{{step: steps[0], rep: build}, {step: steps[1], rep: test, code: 1}}
	var buf bytes.Buffer
	if err := writeGateTable(&buf, results); err != nil {
		t.Fatal(err)
	}
	writeGateSummary(&buf, steps, results, nil)
	got := buf.String()
	if strings.Count(got, "┌") != 1 {
		t.Errorf("want exactly one table:\n%s", got)
	}
	for _, want := range []string{
		"sysprof: 3 operation(s) denied:",
		"│ build │ syscall │ ptrace(PTRACE_ATTACH)",
		"│ test  │ network │ 127.0.0.1:4444 tcp",
		"/usr/bin/go",
		"sysprof: step build: layer landlock was NOT applied (degraded): ABI 1",
		"  build        passed (1 denial(s))",
		"  test         FAILED with status 1 (1 denial(s))",
		"  lint         not run",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}

	buf.Reset()
	if err := writeGateTable(&buf, []gateResult{{step: steps[0], rep: report.New([]string{"make"}, "", false)}}); err != nil || buf.Len() != 0 {
		t.Errorf("no denials: %q %v", buf.String(), err)
	}
}

// enforce's flags reach enforcer.Run for a step as for a plain command: --verify-binaries,
// --resolve and --report's log of allowed connections once did not for --step/--all.
func TestEnforceRunOptions(t *testing.T) {
	o := &enforceOptions{Audit: true, Degrade: enforcer.DegradeAll, VerifyBinaries: true, Report: "r.json"}
	resolve := map[string][]netip.Addr{"registry.example.com": {netip.MustParseAddr("127.0.0.1")}}
	p := &policy.Profile{}
	st := project.Step{Name: "build", Command: []string{"make"}, Profile: "/p/build.yaml", Workdir: "/p/sub", Env: []string{"A=b"}}
	for _, tc := range []struct {
		name          string
		st            project.Step
		wantDir       string
		wantOwnEnvVar bool
	}{
		{"step", st, "/p/sub", true},
		{"plain command", project.Step{Command: []string{"make"}, Profile: "/p/build.yaml"}, "", false},
	} {
		got := o.runOptions(p, tc.st, resolve)
		if got.Profile != p || got.ProfilePath != "/p/build.yaml" || !slices.Equal(got.Command, []string{"make"}) || got.Dir != tc.wantDir {
			t.Errorf("%s: target %+v", tc.name, got)
		}
		if !got.Audit || got.Degrade == nil || !got.VerifyBinaries || !got.LogAllowed || len(got.Resolve) != 1 {
			t.Errorf("%s: flags not passed on: audit %v degrade %v verify-binaries %v log-allowed %v resolve %v",
				tc.name, got.Audit, got.Degrade, got.VerifyBinaries, got.LogAllowed, got.Resolve)
		}
		if hasA := len(got.Env) > 0 && got.Env[len(got.Env)-1] == "A=b"; hasA != tc.wantOwnEnvVar || !tc.wantOwnEnvVar && got.Env != nil {
			t.Errorf("%s: env %v", tc.name, got.Env)
		}
	}
}

func TestDriftDropsFamilyMates(t *testing.T) {
	committed := &policy.Profile{Syscalls: policy.Syscalls{Allow: []policy.Syscall{{Name: "sendto"}}}}
	changes := []policy.Change{
		{Kind: policy.Added, Section: policy.SectionSyscalls, Item: "sendmmsg", Widens: true},
		{Kind: policy.Added, Section: policy.SectionSyscalls, Item: "ptrace", Widens: true},
		// Every filter allows it (seccomp.AlwaysAllowed): less at a terminal, learned to a file.
		{Kind: policy.Added, Section: policy.SectionSyscalls, Item: "rt_sigaction", Widens: true},
	}
	got := dropFamilyMates(slices.Clone(changes), committed)
	if len(got) != 1 || got[0].Item != "ptrace" {
		t.Errorf("dropFamilyMates = %+v, want ptrace only", got)
	}
	// A profile learned --exact closes no family: sendmmsg is new behaviour there.
	committed.Metadata.Exact = true
	if got := dropFamilyMates(slices.Clone(changes), committed); len(got) != 2 || got[0].Item != "sendmmsg" {
		t.Errorf("dropFamilyMates of an --exact profile = %+v, want sendmmsg and ptrace", got)
	}
}

// A profile learned before $GOROOT was read whole read below it: the whole root is not a
// widening; it is for a profile that read nothing there.
func TestDriftDropsToolchainRootRead(t *testing.T) {
	change := policy.Change{Kind: policy.Added, Section: policy.SectionRead, Item: "$GOROOT", Widens: true}
	below := &policy.Profile{Filesystem: policy.Filesystem{Read: []policy.PathRule{{Path: "$GOROOT/src"}}}}
	if got := dropFamilyMates([]policy.Change{change}, below); len(got) != 0 {
		t.Errorf("dropFamilyMates = %+v, want none", got)
	}
	if got := dropFamilyMates([]policy.Change{change}, &policy.Profile{}); len(got) != 1 {
		t.Errorf("dropFamilyMates without a read below $GOROOT = %+v, want the change", got)
	}
}

// The gate table, the learn summary and the changes tables at an 80-column terminal ($COLUMNS;
// report.Width) take at most 80 columns.
func TestTablesFitTheTerminal(t *testing.T) {
	t.Setenv("COLUMNS", "80")
	fits := func(what, out string) {
		t.Helper()
		for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
			if strings.HasPrefix(l, "sysprof:") {
				continue // prose
			}
			if w := twwidth.Width(l); w > 80 {
				t.Errorf("%s: a line of %d columns:\n%s", what, w, out)
				return
			}
		}
	}
	build := report.New([]string{"make"}, ".sysprof/build.yaml", false)
	build.Add(report.Denial{Kind: report.KindFile, What: "/home/alice/src/some/deeply/nested/project/directory/.git/hooks/pre-commit create (openat: EROFS)",
		Exe: "/usr/bin/python3.11", Parents: []string{"/usr/bin/make", "/usr/bin/bash"}, Count: 2, Risk: report.RiskCritical,
		Suggest: "filesystem.write: + $WORKDIR/some/deeply/nested/project/directory/.git/hooks/pre-commit"})
	var buf bytes.Buffer
	if err := writeGateTable(&buf, []gateResult{{step: project.Step{Name: "build-and-test-everything"}, rep: build}}); err != nil {
		t.Fatal(err)
	}
	fits("gates", buf.String())

	fits("learn summary", string(renderLearnSummary(&trace.Trace{}, time.Second, report.Width(&buf))))

	buf.Reset()
	tbl := newTable(&buf, "table")
	header := []string{"RESULT", "CLASS", "OP", "PATH", "WHY"}
	tbl.Header(header)
	if err := appendFitted(tbl, &buf, "table", header, [][]string{{"refused", "dangerous", "create",
		"/home/alice/src/some/deeply/nested/project/directory/.git/hooks/pre-commit", "a protected path (.git/hooks): held and rated critical, whatever a rule says"}}); err != nil {
		t.Fatal(err)
	}
	if err := tbl.Render(); err != nil {
		t.Fatal(err)
	}
	fits("changes", buf.String())
}

// A tree in /tmp learned where TMPDIR was elsewhere lists /tmp/...; a CI-like run without
// TMPDIR learns the same directory as $TMPDIR/...: covered on this host, no widening. The
// reverse, and a path the literal rule does not cover, stay.
func TestDriftDropsWhatALiteralRuleCoversHere(t *testing.T) {
	committed := &policy.Profile{Filesystem: policy.Filesystem{
		List:  []policy.PathRule{{Path: "/tmp/Test*/001/x/src"}},
		Write: []policy.PathRule{{Path: "$TMPDIR/cache"}, {Path: "/tmp/Test*/001/x/out"}},
	}}
	host := map[string]string{"TMPDIR": "/tmp", "HOME": "/root"}
	changes := []policy.Change{
		{Kind: policy.Added, Section: policy.SectionList, Item: "$TMPDIR/Test*/001/x/src", Widens: true},
		{Kind: policy.Added, Section: policy.SectionRead, Item: "$TMPDIR/Test*/001/x/out/a.o", Widens: true}, // a write rule reads
		{Kind: policy.Added, Section: policy.SectionWrite, Item: "$TMPDIR/Test*/001/x/src", Widens: true},    // listed only: a write is new
		{Kind: policy.Added, Section: policy.SectionList, Item: "$HOME/x", Widens: true},
		{Kind: policy.Added, Section: policy.SectionList, Item: "/tmp/cache", Widens: true}, // literal: a real difference
	}
	got := dropCoveredHere(slices.Clone(changes), committed, host)
	var items []string
	for _, c := range got {
		items = append(items, c.Section+" "+c.Item)
	}
	want := []string{"filesystem.write $TMPDIR/Test*/001/x/src", "filesystem.list $HOME/x", "filesystem.list /tmp/cache"}
	if !slices.Equal(items, want) {
		t.Errorf("dropCoveredHere left %q, want %q", items, want)
	}
}

// TMPDIR inside the work tree (or a cache inside the home) is named $TMPDIR by this run: the
// committed `$WORKDIR` rules cover it here. A run's $WORKDIR path is never covered by another
// variable's rule that names the same place here ($HOME/src/p/out), nor a write where the
// committed rule grants only a listing.
func TestDriftDropsAMovableVariableInsideACommittedOne(t *testing.T) {
	committed := &policy.Profile{Filesystem: policy.Filesystem{
		List:  []policy.PathRule{{Path: "$WORKDIR"}},
		Read:  []policy.PathRule{{Path: "$WORKDIR/.tmp"}},
		Write: []policy.PathRule{{Path: "$HOME/.cache/x"}, {Path: "$HOME/src/p/out"}},
	}}
	host := map[string]string{"WORKDIR": "/home/u/src/p", "TMPDIR": "/home/u/src/p/.tmp", "HOME": "/home/u", "GOCACHE": "/home/u/.cache/x/go-build"}
	changes := []policy.Change{
		{Kind: policy.Added, Section: policy.SectionList, Item: "$TMPDIR", Widens: true},
		{Kind: policy.Added, Section: policy.SectionRead, Item: "$TMPDIR/a", Widens: true},
		{Kind: policy.Added, Section: policy.SectionWrite, Item: "$GOCACHE/ab/c", Widens: true},
		{Kind: policy.Added, Section: policy.SectionWrite, Item: "$TMPDIR/b", Widens: true},    // listed and read only
		{Kind: policy.Added, Section: policy.SectionWrite, Item: "$WORKDIR/out", Widens: true}, // not movable: $HOME/src/p/out never covers it
	}
	got := dropCoveredHere(slices.Clone(changes), committed, host)
	var items []string
	for _, c := range got {
		items = append(items, c.Section+" "+c.Item)
	}
	want := []string{"filesystem.write $TMPDIR/b", "filesystem.write $WORKDIR/out"}
	if !slices.Equal(items, want) {
		t.Errorf("dropCoveredHere left %q, want %q", items, want)
	}
}
