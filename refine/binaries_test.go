package refine

import (
	"slices"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/report"
)

// The package's tests see no host binaries unless a test says which (fakeExecutables), and a
// merged-/usr host (/bin → usr/bin, as Debian and Fedora have) whatever this one is.
func init() {
	Executable = func(string) (string, string, bool) { return "", "", false }
	UsrMerged = func(string) bool { return true }
}

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

// On a merged-/usr host a denied /bin/ls becomes the /usr/bin/ls row learn records (one binary,
// one row); where /bin is a directory of its own it stays /bin/ls.
func TestMergedUsrAliasTakesTheUsrForm(t *testing.T) {
	r := rep(report.Denial{Kind: report.KindFile, Path: "/bin/ls", Access: "exec", Exe: cargo},
		report.Denial{Kind: report.KindFile, Path: "/lib64/ld-linux-x86-64.so.2", Access: "read", Exe: cargo})
	for _, merged := range []bool{true, false} {
		old := UsrMerged
		UsrMerged = func(string) bool { return merged }
		ps, err := Propose(base(), r, aliceEnv)
		UsrMerged = old
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, p := range ps {
			got = append(got, p.Exact.Item)
		}
		slices.Sort(got)
		want := []string{"/bin/ls", "/lib64/ld-linux-x86-64.so.2"}
		if merged {
			want = []string{"/usr/bin/ls", "/usr/lib64/ld-linux-x86-64.so.2"}
		}
		if !slices.Equal(got, want) {
			t.Errorf("merged-/usr %v: want %v, got %v", merged, want, got)
		}
	}
}
