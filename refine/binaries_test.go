package refine

import (
	"strings"
	"testing"

	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/report"
)

// The package's tests see no host binaries unless a test says which (fakeExecutables).
func init() { Executable = func(string) (string, string, bool) { return "", "", false } }

// fakeExecutables makes Executable answer from m (host path → resolved path, sha256) for t.
func fakeExecutables(t *testing.T, m map[string][2]string) {
	old := Executable
	t.Cleanup(func() { Executable = old })
	Executable = func(p string) (string, string, bool) {
		e, ok := m[p]
		return e[0], e[1], ok
	}
}

// An accepted exec also lists the binary under binaries: with the path and sha256 learn would
// record (symlinks resolved), or the next drift reports a "new executed binary" and fails
// (issue 15). A binary the profile lists already is left alone; one the run writes gets no hash.
func TestExecAddsBinary(t *testing.T) {
	sum := strings.Repeat("c", 64)
	fakeExecutables(t, map[string][2]string{
		"/bin/curl":                      {"/usr/bin/curl", sum},
		"/home/alice/src/hello-rs/tools": {"/home/alice/src/hello-rs/target/debug/tools", sum},
	})
	p := base()
	r := rep(report.Denial{Kind: report.KindFile, Path: "/bin/curl", Access: "exec", Exe: cargo},
		report.Denial{Kind: report.KindFile, Path: "/home/alice/src/hello-rs/tools", Access: "exec", Exe: cargo})
	ps, err := Propose(p, r, aliceEnv)
	if err != nil {
		t.Fatal(err)
	}
	var ds []Decision
	for _, pr := range ps {
		ds = append(ds, Decision{pr, AllowExact})
	}
	out, err := Apply(p, ds)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"/usr/bin/curl": sum, "$WORKDIR/target/debug/tools": ""}
	if len(out.Binaries) != len(want) {
		t.Fatalf("binaries: want %v, got %v", want, out.Binaries)
	}
	for _, b := range out.Binaries {
		if s, ok := want[b.Path]; !ok || s != b.SHA256 {
			t.Errorf("binaries: got %s sha256 %q, want %v", b.Path, b.SHA256, want)
		}
		if b.By != cargoP {
			t.Errorf("binaries: %s by %q, want %q", b.Path, b.By, cargoP)
		}
	}
	// Already listed (another hash): refine adds no second entry.
	q := base()
	q.Binaries = []policy.Binary{{Path: "/usr/bin/curl", SHA256: strings.Repeat("d", 64)}}
	ps, _ = Propose(q, rep(r.Denials[0]), aliceEnv)
	if len(ps) != 1 || ps[0].Exact.Binary != nil {
		t.Fatalf("a listed binary: want one exec proposal without a binaries entry, got %v", ps)
	}
}
