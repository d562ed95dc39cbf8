package enforcer

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestNoExecTrees(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "home")
	work := filepath.Join(home, "proj")
	rustup := filepath.Join(home, ".rustup")
	for _, d := range []string{work + "/bin", work + "/target/debug", work + "/vendor", rustup + "/toolchains", home + "/.venv/lib"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{work + "/bin/tool", work + "/vendor/x.so", home + "/.venv/lib/y.so", work + "/secret.so"} {
		if err := os.WriteFile(f, nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("bin/tool", work+"/tool-link"); err != nil {
		t.Fatal(err)
	}
	env := Env{Vars: map[string]string{"WORKDIR": work, "HOME": home, "RUSTUP_HOME": rustup}}
	for _, tc := range []struct {
		name                string
		exec, writable      []string
		hidden              []string
		wantTrees, wantKeep []string
		note                string
	}{
		{name: "learned files, a glob, a link, a toolchain root",
			exec:      []string{work + "/bin/tool", work + "/vendor/*.so", home + "/.venv/lib/y.so", work + "/tool-link", "/usr/bin/cc"},
			wantTrees: []string{home, work},
			wantKeep:  []string{rustup, home + "/.venv/lib/y.so", work + "/bin/tool", work + "/vendor"}},
		{name: "a writable target keeps its own decision",
			exec: []string{work + "/target/debug/app"}, writable: []string{work + "/target"},
			wantTrees: []string{home, work}, wantKeep: []string{rustup}},
		{name: "a missing file: its nearest existing directory",
			exec:      []string{work + "/bin/new/tool"},
			wantTrees: []string{home, work}, wantKeep: []string{rustup, work + "/bin"}},
		{name: "a hidden path is not kept",
			exec: []string{home + "/.venv/lib/y.so"}, hidden: []string{home + "/.venv"},
			wantTrees: []string{home, work}, wantKeep: []string{rustup}},
		{name: "a rule on the whole work tree leaves it exec, noted",
			exec:      []string{work + "/*.sh"},
			wantTrees: []string{home}, wantKeep: []string{rustup}, note: "covers all of " + work},
		{name: "a writable work tree is not a tree",
			writable:  []string{work},
			wantTrees: []string{home}, wantKeep: []string{rustup}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Compiled{}
			trees, keep := c.noExecTrees(tc.exec, tc.writable, tc.hidden, env)
			if !slices.Equal(trees, tc.wantTrees) || !slices.Equal(keep, tc.wantKeep) {
				t.Errorf("trees %q keep %q, want %q %q", trees, keep, tc.wantTrees, tc.wantKeep)
			}
			if tc.note != "" && !slices.ContainsFunc(c.Notes, func(n string) bool { return strings.Contains(n, tc.note) }) {
				t.Errorf("notes %q lack %q", c.Notes, tc.note)
			}
		})
	}
}
