package e2e

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
)

// TestLearnEnforceVariables: a profile learned with a tool's variable set enforces with zero
// denials in the same environment. Learned with GOPATH set, enforce once exited 125 ("$GOPATH
// is not set on this host"); learned with npm_config_cache, enforce expanded $NPM_CACHE to
// ~/.npm and denied every cache write.
func TestLearnEnforceVariables(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireTools(t, hostPath, "sh")
	for _, c := range []struct {
		name    string
		setup   func(t *testing.T, b *testutil.Box, dir string) []string // the extra environment
		script  string
		wantVar string // a rule of the profile starts with it
	}{
		{
			name: "GOPATH",
			setup: func(t *testing.T, b *testutil.Box, dir string) []string {
				gp := filepath.Join(dir, "gopath")
				testutil.WriteFile(t, filepath.Join(gp, "src", "example.com", "m", "go.mod"), "module example.com/m\n", 0o644)
				testutil.WriteFile(t, filepath.Join(gp, "pkg", "sumdb", "latest"), "old\n", 0o644)
				return []string{"GOPATH=" + gp}
			},
			script:  `set -e; read -r m < "$GOPATH/src/example.com/m/go.mod"; echo new > "$GOPATH/pkg/sumdb/latest"; echo "$m"`,
			wantVar: "$GOPATH/",
		},
		{
			name: "npm_config_cache",
			setup: func(t *testing.T, b *testutil.Box, dir string) []string {
				return []string{"npm_config_cache=" + filepath.Join(dir, "npm-cache")}
			},
			script:  `set -e; mkdir -p "$npm_config_cache/_cacache/index-v5"; echo entry > "$npm_config_cache/_cacache/index-v5/ab"; cat "$npm_config_cache/_cacache/index-v5/ab"`,
			wantVar: "$NPM_CACHE",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			b := newBox(t, root, "side", "user", "work", "")
			b.Extra = c.setup(t, b, filepath.Join(root, "side"))
			p := filepath.Join(b.Home, "profile.yaml")
			testutil.MustCode(t, "learn", b.Sysprof(t, "learn", "-p", p, "--", "sh", "-c", c.script), 0)
			prof := loadProfile(t, p)
			all := append(pathsOf(prof.Filesystem.Read), pathsOf(prof.Filesystem.Write)...)
			if !slices.ContainsFunc(all, func(r string) bool { return strings.HasPrefix(r, c.wantVar) }) {
				t.Fatalf("learn wrote no rule under %s: read+write %v", c.wantVar, all)
			}
			rep := filepath.Join(b.Tmp, "report.json")
			r := b.Sysprof(t, "enforce", "-p", p, "--report", rep, "--", "sh", "-c", c.script)
			testutil.MustCode(t, "enforce", r, 0)
			testutil.RequireNoDenials(t, "enforce", rep, r)
		})
	}
}
