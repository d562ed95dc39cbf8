package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/policy"
)

// The tool as learned: it imports foo (python writes foo's bytecode cache) and, in the staged
// case, writes out.txt (a file rule: the work tree is staged under enforce).
const bytecodeTool = `import os, sys
import foo
if len(sys.argv) > 1:
    with open("out.txt", "w") as f:
        f.write("ok\n")
print("tool ran")
`

// The same tool compromised: after the same work it plants foo's cache, a valid .pyc for
// foo.py's mtime and size whose code writes PWNED when a later python imports foo.
const bytecodePlanter = bytecodeTool + `import importlib.util, importlib._bootstrap_external as be
st = os.stat("foo.py")
code = compile("open('PWNED', 'w').write('x')\nVALUE = 'evil'\n", os.path.abspath("foo.py"), "exec")
pyc = importlib.util.cache_from_source("foo.py")
try:
    os.makedirs(os.path.dirname(pyc), exist_ok=True)
    with open(pyc, "wb") as f:
        f.write(be._code_to_timestamp_pyc(code, st.st_mtime, st.st_size))
    print("planted", pyc)
except OSError as e:
    print("plant refused:", e)
`

// TestPlantedBytecodeDoesNotRunLater is issue 23's persistence through Python's bytecode cache:
// a tool learned while python wrote the work tree's __pycache__ is compromised and plants
// foo's .pyc (valid header for foo.py's mtime and size); the next unsandboxed
// `python3 -c 'import foo'` must run foo.py, not the payload. Bound: the cache is never
// granted, so the write is refused (and no denial: python goes on without it). Staged (the
// tool also writes a file in the work tree, `--apply safe` applies held changes in the work
// tree): the run's bytecode is dropped from the changeset and the report counts it. Granted (a
// profile that names $WORKDIR/__pycache__, as one learned before or the shipped python3 does,
// the directory there): it is staged, not bound, and the run's bytecode dropped.
func TestPlantedBytecodeDoesNotRunLater(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireTools(t, hostPath, "python3")
	for _, c := range []struct {
		name  string
		argv  []string
		apply []string
		grant string // a write rule the test adds to the learned profile
	}{
		{"bound", []string{"python3", "tool.py"}, nil, ""},
		{"staged", []string{"python3", "tool.py", "out"}, []string{"--apply", "safe"}, ""},
		{"granted", []string{"python3", "tool.py"}, nil, "$WORKDIR/__pycache__"},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			b := newBox(t, root, "x", "alice", "project", "")
			testutil.WriteFile(t, filepath.Join(b.Work, "foo.py"), "VALUE = 'clean'\n", 0o644)
			testutil.WriteFile(t, filepath.Join(b.Work, "tool.py"), bytecodeTool, 0o644)
			profile := filepath.Join(root, "tool.yaml")
			testutil.MustCode(t, "learn", b.Sysprof(t, append([]string{"learn", "-p", profile, "--"}, c.argv...)...), 0)
			b.Sh(t, "rm -f out.txt")
			if c.grant != "" {
				p := loadProfile(t, profile)
				p.Filesystem.Write = append(p.Filesystem.Write, policy.PathRule{Path: c.grant})
				if err := policy.Save(profile, p); err != nil {
					t.Fatal(err)
				}
			}

			testutil.WriteFile(t, filepath.Join(b.Work, "tool.py"), bytecodePlanter, 0o644)
			rep := filepath.Join(root, "report.json")
			args := append([]string{"enforce", "-p", profile, "--report", rep}, c.apply...)
			r := b.Sysprof(t, append(append(args, "--"), c.argv...)...)
			testutil.MustCode(t, "enforce", r, 0)
			testutil.RequireNoDenials(t, "enforce", rep, r)
			if !strings.Contains(r.Stdout, "tool ran") {
				t.Fatalf("enforce: the tool did not run:\n%s", r)
			}
			if c.name != "bound" {
				got := testutil.ReadReport(t, rep)
				if ch := got.Changes; ch == nil || ch.Dropped == 0 || !strings.Contains(strings.Join(got.Notes, "\n"), "bytecode cache file(s) not kept") {
					t.Errorf("enforce: the report does not count the bytecode cache not kept: %+v %q\n%s", ch, got.Notes, r)
				}
			}

			h := b.Run(t, "python3", "-c", "import foo; print(foo.VALUE)")
			if _, err := os.Stat(filepath.Join(b.Work, "PWNED")); err == nil || strings.Contains(h.Stdout, "evil") {
				t.Fatalf("the bytecode planted in the run ran outside the sandbox (enforce said %q):\n%s", r.Stdout, h)
			}
			if h.Code != 0 || !strings.Contains(h.Stdout, "clean") {
				t.Errorf("import foo on the host: %s", h)
			}
		})
	}
}
