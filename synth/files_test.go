package synth

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/trace"
)

// A delete that found no file in the work tree (rm -f, eslint's unlink of a .eslintcache it
// never made) is kept as a write rule of exactly that path, so that the enforcer stages its
// directory and the unlink answers ENOENT again instead of the read-only mount's EROFS.
// Nothing wider: never a protected path, a file of the home, a tool cache, a temp directory or
// a system path; never rolled up into the directory; a path the tool also wrote keeps its own
// rule; and resynthesis keeps the rules as they are.
func TestDeleteOfMissingFile(t *testing.T) {
	exe := "/usr/bin/rm"
	const home, work = "/home/alice", "/home/alice/src/p"
	tr := &trace.Trace{Version: trace.Version, Command: []string{"rm", "-f", "x"},
		Context:   map[string]string{"HOME": home, "WORKDIR": work, "TMPDIR": home + "/tmp"},
		Processes: []trace.Process{{ID: 1, PID: 10, Exe: exe}},
	}
	add := func(p, access string, ok bool, errno int) {
		tr.Files = append(tr.Files, trace.FileAccess{Exe: exe, Path: p, Access: access, OK: ok, Errno: errno})
	}
	missing := func(p string) { add(p, trace.AccessDelete, false, 2) }
	missing(work + "/.eslintcache")
	missing(work + "/node_modules/.cache/x") // a directory that does not exist: still the path
	missing(work + "/.git/hooks/pre-commit") // protected
	missing(work + "/.github/workflows/ci.yml")
	missing(home + "/.bash_logout.lock") // a file of the home itself rates critical
	missing(home + "/tmp/stale")         // $TMPDIR: granted whole by the enforcer
	missing(home + "/.cache/tool/ab/cd") // a tool cache: hashed names
	missing("/tmp/stale")
	missing("/usr/lib/stale")
	add(work+"/locked", trace.AccessDelete, false, 13) // EACCES: not a missing file
	add(work+"/config", trace.AccessRead, false, 2)    // a failed probe of another kind
	for i := range 12 {
		missing(fmt.Sprintf("%s/build/obj%02d.o", work, i))
	}
	// Deleted when missing, then written: the write's own rule, without the note.
	missing(work + "/out.txt")
	add(work+"/out.txt", trace.AccessCreate, true, 0)

	res, err := Synthesize(tr, testOpts())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range res.Profile.Filesystem.Write {
		got[r.Path] = r.Note
	}
	want := map[string]string{
		"$WORKDIR/.eslintcache":          noteMissing,
		"$WORKDIR/node_modules/.cache/x": noteMissing,
		"$WORKDIR/out.txt":               "",
		"/dev/tty":                       got["/dev/tty"], // the terminal family's, whatever it says
	}
	for i := range 12 {
		want[fmt.Sprintf("$WORKDIR/build/obj%02d.o", i)] = noteMissing
	}
	for p, n := range want {
		if g, ok := got[p]; !ok || g != n {
			t.Errorf("write %s: got note %q (present %v), want %q", p, g, ok, n)
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			t.Errorf("write %s: not wanted (note %q)", p, got[p])
		}
	}
	if !slices.ContainsFunc(res.Explain, func(st Step) bool {
		return st.Pass == "write" && strings.HasPrefix(st.Message, "14 write rules that the tool deletes only if present")
	}) {
		t.Errorf("the write pass does not say what it granted:\n%v", res.Explain)
	}

	again, err := Resynthesize(res.Profile, testOpts())
	if err != nil {
		t.Fatal(err)
	}
	if a, b := rulePaths(res.Profile.Filesystem.Write), rulePaths(again.Profile.Filesystem.Write); !slices.Equal(a, b) {
		t.Errorf("resynthesis changed the write rules:\n%q\n%q", a, b)
	}
	for _, r := range res.Profile.Filesystem.Write {
		if risk, why := policy.PathRisk("write", r.Path, nil); r.Note == noteMissing && risk != policy.RiskLow {
			t.Errorf("write %s rates %s (%s)", r.Path, risk, why)
		}
	}
}

// TestTempSiblingCollapses: cargo makes target as targetXXXXXX (Rust's tempfile crate) and
// renames it. Without a digit in the random part paths.GlobComponent keeps the name; the sibling the
// tool also wrote makes it target* all the same, so that the next run's name is no new rule.
// A name without such a sibling, or whose tail is a plain word, stays exact.
func TestTempSiblingCollapses(t *testing.T) {
	exe := "/usr/bin/cargo"
	const work = "/home/alice/src/p"
	tr := &trace.Trace{Version: trace.Version, Command: []string{"cargo", "build"},
		Context:   map[string]string{"HOME": "/home/alice", "WORKDIR": work, "TMPDIR": "/tmp"},
		Processes: []trace.Process{{ID: 1, PID: 10, Exe: exe}},
	}
	// distqwerty: all six random letters lower-case (the CI flake of issue 24: drift + target*).
	for _, p := range []string{work + "/targetcaMppw", work + "/target/debug/crate", work + "/cachesKqWxyz", work + "/reportsummary",
		work + "/distqwerty", work + "/dist/app.js"} {
		tr.Files = append(tr.Files, trace.FileAccess{Exe: exe, Path: p, Access: trace.AccessCreate, OK: true})
	}
	res, err := Synthesize(tr, testOpts())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range res.Profile.Filesystem.Write {
		got = append(got, r.Path)
	}
	for _, want := range []string{"$WORKDIR/target*", "$WORKDIR/cachesKqWxyz", "$WORKDIR/reportsummary", "$WORKDIR/dist*"} {
		if !slices.Contains(got, want) {
			t.Errorf("write rules %v lack %s", got, want)
		}
	}
	if slices.Contains(got, "$WORKDIR/targetcaMppw") || slices.Contains(got, "$WORKDIR/distqwerty") {
		t.Errorf("write rules %v keep the temp name", got)
	}
}
