package e2e

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
)

// TestCargoTestDoctest is issue 22's "an exec rule under $TMPDIR turns the whole private /tmp
// read-only": `cargo test` of a crate with a doctest (rustdoc writes and runs
// $TMPDIR/rustdoctest*/rust_out) and a unit test writing in std::env::temp_dir(), with TMPDIR
// unset as most users have it, learned then enforced: exit 0, no denials, both tests ran.
func TestCargoTestDoctest(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireTools(t, hostPath, "cargo")
	root := t.TempDir()
	b := newBox(t, root, "x", "alice", filepath.Join("src", "project"), "doctest")
	b.Extra = append(b.Extra, "TMPDIR=/tmp") // the default: the private /tmp is $TMPDIR
	profile := filepath.Join(root, "cargo-test.yaml")
	argv := []string{"cargo", "test", "--offline"}
	testutil.MustCode(t, "learn", b.Sysprof(t, append([]string{"learn", "-p", profile, "--"}, argv...)...), 0)
	b.Sh(t, "rm -rf target")
	rep := filepath.Join(root, "report.json")
	r := b.Sysprof(t, append([]string{"enforce", "-p", profile, "--report", rep, "--"}, argv...)...)
	testutil.MustCode(t, "enforce", r, 0)
	testutil.RequireNoDenials(t, "enforce", rep, r)
	for _, want := range []string{"test tests::writes_temp_dir ... ok", "src/lib.rs - add_one (line 6) ... ok"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("enforce: %q missing from the output:\n%s", want, r.Stdout)
		}
	}
}
