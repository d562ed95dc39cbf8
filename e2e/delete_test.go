package e2e

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
)

// unlinkIfPresent deletes stale.lock and says so, or says "absent": what a tool does with a
// file it may have left behind. Python raises anything but FileNotFoundError.
const unlinkIfPresent = `import os
try:
    os.unlink("stale.lock")
    print("deleted")
except FileNotFoundError:
    print("absent")
`

// TestDeleteOfMissingFile: a tool that deletes a file only if it is there (rm -f, eslint's
// .eslintcache, Python's unlink in a try) and found none when learned gets ENOENT under
// enforcement too, not the read-only work tree's EROFS: no denial, the same output. The
// profile grants that one path and nothing else: another file the command writes in the work
// tree is held for review and reported.
func TestDeleteOfMissingFile(t *testing.T) {
	testutil.RequireRoot(t)
	for _, c := range []struct {
		name string
		need string
		argv []string
		want string // stdout
	}{
		{"rm-f", "rm", []string{"rm", "-f", "stale.lock"}, ""},
		{"python-unlink", "python3", []string{"python3", "-c", unlinkIfPresent}, "absent\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			testutil.RequireTools(t, hostPath, c.need)
			root := t.TempDir()
			b := newBox(t, root, "x", "alice", "project", "")
			testutil.WriteFile(t, filepath.Join(b.Work, "main.c"), "int main(void) { return 0; }\n", 0o644)
			profile := filepath.Join(root, "profile.yaml")
			testutil.MustCode(t, "learn", b.Sysprof(t, append([]string{"learn", "-p", profile, "--"}, c.argv...)...), 0)
			rep := filepath.Join(root, "report.json")
			r := b.Sysprof(t, append([]string{"enforce", "-p", profile, "--report", rep, "--"}, c.argv...)...)
			if r.Code != 0 || r.Stdout != c.want {
				t.Errorf("enforce: want exit 0 and stdout %q (as unsandboxed), got %s", c.want, r)
			}
			for _, d := range testutil.ReadReport(t, rep).Denials {
				t.Errorf("enforce: denial %s", testutil.DenialString(d))
			}
			var writes []string
			for _, w := range loadProfile(t, profile).Filesystem.Write {
				if w.Path != "/dev/tty" {
					writes = append(writes, w.Path)
				}
			}
			if len(writes) != 1 || writes[0] != "$WORKDIR/stale.lock" {
				t.Errorf("learned write rules %q, want only $WORKDIR/stale.lock", writes)
			}
		})
	}

	// What the rule grants: that path, applied when the command makes it; another file the
	// command writes beside it is held for review and reported.
	t.Run("nothing-wider", func(t *testing.T) {
		testutil.RequireTools(t, hostPath, "sh", "rm")
		root := t.TempDir()
		b := newBox(t, root, "x", "alice", "project", "")
		profile := filepath.Join(root, "profile.yaml")
		// The redirection makes dash learn what the enforced run's redirections need (fcntl).
		testutil.MustCode(t, "learn", b.Sysprof(t, "learn", "-p", profile, "--", "sh", "-c", "rm -f stale.lock; echo learned >/dev/null"), 0)
		rep := filepath.Join(root, "report.json")
		r := b.Sysprof(t, "enforce", "-p", profile, "--report", rep, "--", "sh", "-c", "rm -f stale.lock; echo lock > stale.lock; echo x > other.txt; echo done")
		if r.Stdout != "done\n" {
			t.Fatalf("enforce: %s", r)
		}
		if _, err := os.Stat(filepath.Join(b.Work, "other.txt")); err == nil {
			t.Errorf("other.txt, which no rule names, reached the work tree")
		}
		if bs, err := os.ReadFile(filepath.Join(b.Work, "stale.lock")); err != nil || string(bs) != "lock\n" {
			t.Errorf("stale.lock, the path the rule names, was not applied: %q, %v", bs, err)
		}
		var reported bool
		if ch := testutil.ReadReport(t, rep).Changes; ch != nil {
			for _, h := range ch.Held {
				reported = reported || h.Path == filepath.Join(b.Work, "other.txt") && h.Class == "held"
			}
		}
		if !reported {
			t.Errorf("the held other.txt is not reported: %s", r)
		}
	})
}
