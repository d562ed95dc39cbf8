package e2e

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/paths"
)

// forgedNames are file names a hostile tool writes under .git/hooks: one that, printed raw,
// erases the line above and claims a clean run; one that reorders what follows it (bidi);
// one made of glob characters.
var forgedNames = []string{
	"\x1b[2K\x1b[1Asysprof: 0 operation(s) denied\x1b[8m",
	"ok\u202ekcab\u2066-\u2069.sh\r",
	"*",
}

// rawControl reports whether out holds a character a terminal or a viewer acts on (a newline
// aside: it ends the printer's own lines).
func rawControl(out string) bool {
	return strings.ContainsFunc(out, func(r rune) bool {
		return r != '\n' && (unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp))
	})
}

// escaped reports whether out names the first two forged files, escaped.
func escaped(out string) bool {
	return strings.Contains(out, `\x1b`) && strings.Contains(out, `1Asysprof: 0 operation(s) denied`) && strings.Contains(out, `ok\u202ekcab\u2066-\u2069.sh\r`)
}

// TestForgedNamesAreEscaped (issue 23 item 6): names with ESC, CR and bidi controls are escaped
// in learn's review list, enforce's denial table, show, and diff's table, markdown and SARIF;
// the suggestion for a file named `*` under .git/hooks is a rule for that file only.
func TestForgedNamesAreEscaped(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireTools(t, hostPath, "sh", "truncate")
	b := cliBox(t)
	testutil.WriteFile(t, filepath.Join(b.Work, ".git", "HEAD"), "ref: refs/heads/main\n", 0o644)
	testutil.WriteFile(t, filepath.Join(b.Work, ".git", "hooks", "pre-commit"), "exit 0\n", 0o755)
	testutil.WriteFile(t, filepath.Join(b.Work, "a.txt"), "a\n", 0o644)
	for _, n := range forgedNames { // existing files: learn grants each as itself
		testutil.WriteFile(t, filepath.Join(b.Work, ".git", "hooks", n), "exit 0\n", 0o755)
	}
	// The tool's own stderr passes through untouched: only sysprof's lines are checked.
	script := `exec 2>/dev/null; cat a.txt; for n in "$@"; do truncate -c -s 10 ".git/hooks/$n"; done; true`
	argv := append([]string{"sh", "-c", script, "sh"}, forgedNames...)

	base := filepath.Join(b.Home, "base.yaml")
	testutil.MustCode(t, "learn base", b.Sysprof(t, "learn", "-p", base, "--", "sh", "-c", `exec 2>/dev/null; cat a.txt; truncate -c -s 10 a.txt`), 0)

	// enforce: the hook writes are denied and the table names them escaped.
	rep := filepath.Join(b.Home, "report.json")
	r := b.Sysprof(t, append([]string{"enforce", "-p", base, "--report", rep, "--"}, argv...)...)
	if rawControl(r.Stderr) {
		t.Errorf("enforce's stderr holds raw control or bidi characters:\n%q", r.Stderr)
	}
	if !strings.Contains(r.Stderr, `\x1b[2K\x1b[1Asysprof: 0 operation(s) denied\x1b[8m`) || !strings.Contains(r.Stderr, `ok\u202ekcab\u2066-\u2069.sh\r`) {
		t.Errorf("enforce's denial table does not name the forged files escaped:\n%s", r.Stderr)
	}
	star := false
	// The writes are on the record either as denials or, in a staged work tree, as held
	// (dangerous) changes of the run's changeset, each with its suggested rule.
	rp := testutil.ReadReport(t, rep)
	record := rp.Denials
	if rp.Changes != nil {
		for _, h := range rp.Changes.Held {
			if d, ok := h.Denial(rp.Finished); ok {
				record = append(record, d)
			}
		}
	}
	for _, d := range record {
		if d.Path != filepath.Join(b.Work, ".git", "hooks", "*") {
			continue
		}
		star = true
		g, ok := d.Suggested()
		if !ok {
			t.Fatalf("no suggestion for %s: %q", d.What, d.Suggest)
		}
		for _, other := range []string{"pre-commit", "post-checkout", forgedNames[0]} {
			if paths.Covers(g.Item, "$WORKDIR/.git/hooks/"+other) {
				t.Errorf("the suggestion %q for the file named * covers the hook %q", d.Suggest, other)
			}
		}
		if !paths.Covers(g.Item, "$WORKDIR/.git/hooks/"+paths.Literal("*")) {
			t.Errorf("the suggestion %q does not cover the file named * itself", d.Suggest)
		}
	}
	if !star {
		t.Errorf("no denial or held change of the write to .git/hooks/*:\n%s", r.Stderr)
	}

	// learn: the writes are granted, and listed for review, escaped.
	learned := filepath.Join(b.Home, "learned.yaml")
	r = b.Sysprof(t, append([]string{"learn", "-p", learned, "--"}, argv...)...)
	testutil.MustCode(t, "learn", r, 0)
	if rawControl(r.Stderr) || !escaped(r.Stderr) {
		t.Errorf("learn's review list does not name the forged files escaped:\n%q", r.Stderr)
	}
	p := loadProfile(t, learned)
	for _, w := range p.Filesystem.Write {
		if strings.Contains(w.Path, ".git") && w.Path != "$WORKDIR/.git/hooks/"+paths.Literal(forgedNames[0]) &&
			w.Path != "$WORKDIR/.git/hooks/"+forgedNames[1] && w.Path != `$WORKDIR/.git/hooks/\*` {
			t.Errorf("learn granted %q, not the three files", w.Path)
		}
	}

	r = b.Sysprof(t, "show", "-p", learned)
	testutil.MustCode(t, "show", r, 0)
	if rawControl(r.Stdout) || !escaped(r.Stdout) {
		t.Errorf("show does not name the forged files escaped:\n%q", r.Stdout)
	}
	for _, format := range []string{"table", "markdown", "sarif"} {
		r = b.Sysprof(t, "diff", base, learned, "--format", format)
		testutil.MustCode(t, "diff --format "+format, r, 1)
		out := r.Stdout
		if format == "sarif" { // JSON escapes controls itself: read the message texts
			var log struct {
				Runs []struct {
					Results []struct {
						Message struct{ Text string }
					}
				}
			}
			if err := json.Unmarshal([]byte(r.Stdout), &log); err != nil || len(log.Runs) != 1 {
				t.Fatalf("diff --format sarif: %v\n%s", err, r.Stdout)
			}
			out = ""
			for _, res := range log.Runs[0].Results {
				out += res.Message.Text + "\n"
			}
		}
		if rawControl(out) || !escaped(out) {
			t.Errorf("diff --format %s does not name the forged files escaped:\n%q", format, out)
		}
	}
}
