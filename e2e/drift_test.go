package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/policy"
)

// driftProject is a copy of testdata/projects/cproj in a CI-like box whose HOME holds a fake SSH
// key, with the committed profile learned from `make` (Makefile replaced by base first, when
// base is set).
type driftProject struct {
	box     *testutil.Box
	profile string
}

func newDriftProject(t *testing.T, base string, env ...string) *driftProject {
	t.Helper()
	testutil.RequireRoot(t)
	testutil.RequireTools(t, hostPath, "make")
	testutil.RequireTools(t, hostPath, "gcc")
	root := t.TempDir()
	b := newBox(t, root, "ci", "runner", "project", "cproj")
	b.Extra = env
	testutil.WriteFile(t, filepath.Join(b.Home, ".ssh", "id_test"), "-----BEGIN FAKE KEY-----\nnot a real key\n", 0o600)
	p := &driftProject{box: b, profile: filepath.Join(root, "profiles", "make.yaml")}
	if base != "" {
		p.useMakefile(t, base)
	}
	testutil.MustCode(t, "learn", b.Sysprof(t, "learn", "-p", p.profile, "--", "make"), 0)
	return p
}

// useMakefile replaces the project's Makefile with testdata/e2e/<name>.
func (p *driftProject) useMakefile(t *testing.T, name string) {
	t.Helper()
	data, err := os.ReadFile(testutil.Testdata("e2e", name))
	if err != nil {
		t.Fatal(err)
	}
	testutil.WriteFile(t, filepath.Join(p.box.Work, "Makefile"), string(data), 0o644)
}

// drift cleans the build (so that it does everything again) and runs
// `sysprof drift -p PROFILE --format json -- make`.
func (p *driftProject) drift(t *testing.T) (testutil.Result, diffJSON) {
	t.Helper()
	testutil.MustCode(t, "make clean", p.box.Run(t, "make", "clean"), 0)
	r := p.box.Sysprof(t, "drift", "-p", p.profile, "--format", "json", "--", "make")
	if r.Code != 0 && r.Code != 1 {
		t.Fatalf("drift: want exit 0 or 1, got %s", r)
	}
	return r, parseDiff(t, r.Stdout) // stdout is only the diff: TestDriftStdoutIsOnlyTheDiff
}

// requireUnchanged asserts drift's "nothing changed": exit 0 and no change at all.
func requireUnchanged(t *testing.T, what string, r testutil.Result, d diffJSON) {
	t.Helper()
	if r.Code != 0 || d.Widens || len(d.Changes) != 0 {
		t.Fatalf("%s: want exit 0 and an empty diff, got exit %d, widens %v, changes:\n%s\n%s", what, r.Code, d.Widens, changesString(d.Changes), r.Stderr)
	}
}

// TestDrift is issue 5's CI gate on testdata/projects/cproj: drift twice on the unchanged
// project reports nothing; a build step that reads ~/.ssh is reported as exactly that change,
// critical; a build step that opens a connection to a loopback port is reported with that
// destination as its one critical change.
func TestDrift(t *testing.T) {
	newPort := testutil.LoopbackTCP(t)
	p := newDriftProject(t, "", fmt.Sprintf("NEW_PORT=%d", newPort))

	t.Run("unchanged", func(t *testing.T) {
		for i := 1; i <= 2; i++ {
			r, d := p.drift(t)
			requireUnchanged(t, fmt.Sprintf("drift #%d", i), r, d)
		}
	})

	t.Run("reads-ssh", func(t *testing.T) {
		// make itself reads $HOME/.ssh/id_test while parsing: no new binary, no new syscall.
		p.useMakefile(t, "Makefile.ssh")
		defer p.useMakefile(t, "../projects/cproj/Makefile")
		r, d := p.drift(t)
		w := widening(d.Changes)
		if r.Code != 1 || len(w) != 1 || w[0].Risk != policy.RiskCritical || !strings.Contains(w[0].Item, ".ssh") {
			t.Fatalf("drift after adding a read of $HOME/.ssh/id_test: want exit 1 and exactly one widening change, critical, naming .ssh; got exit %d, widening:\n%s\nall changes:\n%s\nstderr:\n%s",
				r.Code, changesString(w), changesString(d.Changes), r.Stderr)
		}
		t.Logf("reported: %s", w[0])
	})

	t.Run("connects-new-port", func(t *testing.T) {
		// A new step runs bash to open 127.0.0.1:NEW_PORT: bash and its syscalls are new too
		// (high and low); the destination must be the one critical change.
		p.useMakefile(t, "Makefile.net")
		defer p.useMakefile(t, "../projects/cproj/Makefile")
		r, d := p.drift(t)
		want := fmt.Sprintf("127.0.0.1:%d", newPort)
		var critical []policy.Change
		for _, c := range widening(d.Changes) {
			if c.Risk == policy.RiskCritical {
				critical = append(critical, c)
			}
		}
		if r.Code != 1 || len(critical) != 1 || !strings.HasPrefix(critical[0].Section, "network.") || !strings.Contains(critical[0].Item, want) {
			t.Fatalf("drift after adding a connection to %s: want exit 1 and exactly one critical change, in network, naming %s; got exit %d, critical:\n%s\nall changes:\n%s\nstderr:\n%s",
				want, want, r.Code, changesString(critical), changesString(d.Changes), r.Stderr)
		}
		t.Logf("reported: %s (all changes:\n%s)", critical[0], changesString(d.Changes))
	})
}

// TestDriftNewLoopbackPort: a build that already talks to a loopback cache starts connecting to
// a second port as well; drift must report exactly that one change, critical.
func TestDriftNewLoopbackPort(t *testing.T) {
	cachePort, newPort := testutil.LoopbackTCP(t), testutil.LoopbackTCP(t)
	p := newDriftProject(t, "Makefile.cache", fmt.Sprintf("CACHE_PORT=%d", cachePort), fmt.Sprintf("NEW_PORT=%d", newPort))
	for i := 1; i <= 2; i++ {
		r, d := p.drift(t)
		requireUnchanged(t, fmt.Sprintf("drift #%d on the unchanged project", i), r, d)
	}
	p.useMakefile(t, "Makefile.cache-leak")
	r, d := p.drift(t)
	want := fmt.Sprintf("127.0.0.1:%d", newPort)
	w := widening(d.Changes)
	if r.Code != 1 || len(w) != 1 || w[0].Risk != policy.RiskCritical || w[0].Section != policy.SectionConnect || !strings.Contains(w[0].Item, want) {
		t.Fatalf("drift after adding a connection to %s: want exit 1 and exactly one widening change, critical, in %s, naming %s; got exit %d, widening:\n%s\nall changes:\n%s\nstderr:\n%s",
			want, policy.SectionConnect, want, r.Code, changesString(w), changesString(d.Changes), r.Stderr)
	}
	t.Logf("reported: %s", w[0])
}

// TestDriftStdoutIsOnlyTheDiff: `sysprof drift --format json -- make > drift.json` must give a
// JSON file (SARIF for code scanning likewise), so the command's own stdout cannot share it;
// the default table goes to stderr.
func TestDriftStdoutIsOnlyTheDiff(t *testing.T) {
	p := newDriftProject(t, "")
	testutil.MustCode(t, "make clean", p.box.Run(t, "make", "clean"), 0)
	r := p.box.Sysprof(t, "drift", "-p", p.profile, "--format", "json", "--", "make")
	testutil.MustCode(t, "drift", r, 0)
	parseDiff(t, r.Stdout)

	// The default table is for humans: on stderr, with the build's output; stdout stays empty.
	testutil.MustCode(t, "make clean", p.box.Run(t, "make", "clean"), 0)
	r = p.box.Sysprof(t, "drift", "-p", p.profile, "--", "make")
	testutil.MustCode(t, "drift", r, 0)
	if r.Stdout != "" || !strings.Contains(strings.ToLower(r.Stderr), "no changes") {
		t.Errorf("drift's table: want it on stderr and nothing on stdout, got\n%s", r)
	}
}
