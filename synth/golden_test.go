package synth

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/trace"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/synth")

const goldenDir = "../testdata/synth"

func testOpts() Options {
	return Options{
		SysprofVersion: "0.0.0-test",
		Now:            func() time.Time { return time.Date(2026, 11, 30, 4, 20, 0, 0, time.UTC) },
	}
}

func loadTrace(t *testing.T, name string) *trace.Trace {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(goldenDir, name+".trace.json"))
	if err != nil {
		t.Fatal(err)
	}
	var tr trace.Trace
	if err := json.Unmarshal(b, &tr); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return &tr
}

// marshal is the profile file, as policy writes it; the profile must also pass the checks
// policy.Save applies, or sysprof could not write it.
func marshal(t *testing.T, p *policy.Profile) []byte {
	t.Helper()
	if err := policy.Validate(p); err != nil {
		t.Fatalf("synthesized profile does not validate: %v", err)
	}
	b, err := policy.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func explainText(r *Result) []byte {
	var b strings.Builder
	for _, s := range r.Explain {
		b.WriteString(s.String() + "\n")
	}
	for _, w := range r.Warnings {
		b.WriteString("WARNING: " + w + "\n")
	}
	return []byte(b.String())
}

// goldenCases are the fixtures; a case with its own options names the trace it reuses.
type goldenCase struct {
	name, trace string
	opts        func(*Options)
}

func goldenCases(t *testing.T) []goldenCase {
	matches, err := filepath.Glob(filepath.Join(goldenDir, "*.trace.json"))
	if err != nil || len(matches) == 0 {
		t.Fatalf("no traces in %s: %v", goldenDir, err)
	}
	var cases []goldenCase
	for _, m := range matches {
		n := strings.TrimSuffix(filepath.Base(m), ".trace.json")
		cases = append(cases, goldenCase{name: n, trace: n})
	}
	return append(cases,
		goldenCase{name: "ssh-reader-allowed", trace: "ssh-reader", opts: func(o *Options) {
			o.AllowSecrets = []string{"~/.npmrc", "/home/alice/.aws/credentials"}
		}},
		goldenCase{name: "go-build-exact", trace: "go-build", opts: func(o *Options) { o.Exact = true }},
	)
}

func TestGolden(t *testing.T) {
	for _, c := range goldenCases(t) {
		t.Run(c.name, func(t *testing.T) {
			opts := testOpts()
			if c.opts != nil {
				c.opts(&opts)
			}
			res, err := Synthesize(loadTrace(t, c.trace), opts)
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, filepath.Join(goldenDir, c.name+".golden.yaml"), marshal(t, res.Profile))
			checkGolden(t, filepath.Join(goldenDir, c.name+".explain.golden"), explainText(res))
		})
	}
}

func checkGolden(t *testing.T, file string, got []byte) {
	t.Helper()
	testutil.Golden(t, file, got, *update)
}

// TestDeterministic: the same trace gives byte-identical profiles, whatever the order of its
// observations.
func TestDeterministic(t *testing.T) {
	for _, c := range goldenCases(t) {
		tr := loadTrace(t, c.trace)
		a, err := Synthesize(tr, testOpts())
		if err != nil {
			t.Fatal(err)
		}
		rev := *tr
		rev.Files = reversed(tr.Files)
		rev.Processes = reversed(tr.Processes)
		rev.Syscalls = reversed(tr.Syscalls)
		rev.Args = reversed(tr.Args)
		rev.Network = reversed(tr.Network)
		rev.DNS = reversed(tr.DNS)
		b, err := Synthesize(&rev, testOpts())
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(string(marshal(t, a.Profile)), string(marshal(t, b.Profile))); d != "" {
			t.Errorf("%s: order of observations changed the profile:\n%s", c.name, d)
		}
		if d := cmp.Diff(string(explainText(a)), string(explainText(b))); d != "" {
			t.Errorf("%s: order of observations changed the explain lines or warnings:\n%s", c.name, d)
		}
	}
}

func reversed[T any](s []T) []T {
	out := make([]T, len(s))
	for i, v := range s {
		out[len(s)-1-i] = v
	}
	return out
}

// TestIdempotent: running synthesis on its own output changes nothing.
func TestIdempotent(t *testing.T) {
	for _, c := range goldenCases(t) {
		t.Run(c.name, func(t *testing.T) {
			opts := testOpts()
			if c.opts != nil {
				c.opts(&opts)
			}
			first, err := Synthesize(loadTrace(t, c.trace), opts)
			if err != nil {
				t.Fatal(err)
			}
			again, err := Resynthesize(first.Profile, opts)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(string(marshal(t, first.Profile)), string(marshal(t, again.Profile))); d != "" {
				t.Errorf("resynthesis changed the profile (-first +again):\n%s", d)
			}
		})
	}
}

// TestGoldenFilesAreFixedPoints: a golden profile file, loaded the way sysprof loads profiles
// and synthesized again, gives the same file.
func TestGoldenFilesAreFixedPoints(t *testing.T) {
	for _, c := range goldenCases(t) {
		t.Run(c.name, func(t *testing.T) {
			file := filepath.Join(goldenDir, c.name+".golden.yaml")
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			p, err := policy.Parse(file, b)
			if err != nil {
				t.Fatalf("golden profile does not load: %v", err)
			}
			opts := testOpts()
			if c.opts != nil {
				c.opts(&opts)
			}
			again, err := Resynthesize(p, opts)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(string(b), string(marshal(t, again.Profile))); d != "" {
				t.Errorf("synthesis changed its own output (-golden +again):\n%s", d)
			}
		})
	}
}

// TestArgRuleForms checks the rules the YAML cannot show yet (policy.Marshal does not write
// ArgRule.Deny): the ioctl deny list and the clone3 errno-only rule.
func TestArgRuleForms(t *testing.T) {
	res, err := Synthesize(loadTrace(t, "victim"), testOpts())
	if err != nil {
		t.Fatal(err)
	}
	var ioctl, clone3 *policy.ArgRule
	for i, r := range res.Profile.Syscalls.Args {
		switch r.Syscall {
		case "ioctl":
			ioctl = &res.Profile.Syscalls.Args[i]
		case "clone3":
			clone3 = &res.Profile.Syscalls.Args[i]
		}
	}
	if ioctl == nil || !slices.Equal(ioctl.Deny, []string{"TIOCLINUX", "TIOCSTI"}) || ioctl.Mask != "0xffffffff" || len(ioctl.Values) > 0 {
		t.Errorf("ioctl rule = %+v, want a deny list of TIOCLINUX, TIOCSTI on the 32-bit request", ioctl)
	}
	if clone3 == nil || clone3.Errno != "ENOSYS" || len(clone3.Values)+len(clone3.Flags)+len(clone3.Deny) != 0 {
		t.Errorf("clone3 rule = %+v, want errno-only ENOSYS", clone3)
	}
}
