package shipped

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/profiles"
)

// TestLearnFromProfile: `sysprof learn --from-profile go-build -- go build` writes a profile
// that keeps everything the shipped go-build allows (the diff from the shipped one to it
// removes nothing), carries the learned command, and counts the shipped runs plus this one.
// An unknown name fails before running anything (exit 125, the names listed).
func TestLearnFromProfile(t *testing.T) {
	testutil.RequireRoot(t)
	b := newBox(t, "dana", filepath.Join("src", "from-profile", "project"), "projects/gomod")
	testutil.RequireTools(t, b.Path, "go")
	out := filepath.Join(t.TempDir(), "mine.yaml")
	r := b.Sysprof(t, "learn", "--from-profile", "go-build", "-p", out, "--", "go", "build", "./...")
	testutil.MustCode(t, "learn --from-profile go-build", r, 0)
	if !strings.Contains(r.Stderr, "started from the shipped profile go-build") {
		t.Errorf("learn does not say it started from the shipped profile:\n%s", r.Stderr)
	}
	shipped, err := profiles.Load("go-build")
	if err != nil {
		t.Fatal(err)
	}
	mine, err := policy.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"go", "build", "./..."}; !slices.Equal(mine.Metadata.Command, want) {
		t.Errorf("command = %q, want %q", mine.Metadata.Command, want)
	}
	if mine.Metadata.Runs != shipped.Metadata.Runs+1 {
		t.Errorf("runs = %d, want the shipped %d + 1", mine.Metadata.Runs, shipped.Metadata.Runs)
	}
	for _, c := range policy.Diff(shipped, mine) {
		if !c.Widens {
			t.Errorf("the learned profile lost a shipped allowance: %s", c)
		}
	}

	r = b.Sysprof(t, "learn", "--from-profile", "no-such-tool", "-p", filepath.Join(t.TempDir(), "x.yaml"), "--", "go", "version")
	testutil.MustCode(t, "learn --from-profile no-such-tool", r, 125)
	if !strings.Contains(r.Stderr, "go-build") {
		t.Errorf("the error does not list the shipped profiles:\n%s", r.Stderr)
	}
}
