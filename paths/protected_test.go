package paths

import (
	"reflect"
	"sort"
	"strings"
	"testing"
)

func TestProtectedPathsSortedAndComplete(t *testing.T) {
	got := ProtectedPaths()
	if !sort.StringsAreSorted(got) {
		t.Fatalf("not sorted: %v", got)
	}
	for _, want := range []string{
		"$WORKDIR/.git", "$WORKDIR/.github", "$WORKDIR/.gitlab-ci.yml", "$WORKDIR/.sysprof",
		"$WORKDIR/sysprof.yaml", "$WORKDIR/.vscode", "$WORKDIR/.idea", "$WORKDIR/.husky",
		"$WORKDIR/.claude", "$WORKDIR/.cursor", "$HOME/.bashrc", "$HOME/.profile",
		"$HOME/.bash_profile", "$HOME/.bash_login", "$HOME/.zshenv", "$HOME/.zprofile",
		"$HOME/.zshrc", "$HOME/.config/fish", "$HOME/.config/systemd", "$HOME/.config/autostart",
		"$HOME/.config/git", "$HOME/.gitconfig", "$HOME/.local/bin", "$CARGO_HOME/bin",
		"$GOPATH/bin", "$HOME/.claude", "$HOME/.codex",
		// The third red team's (issue 23): what hook managers, direnv, dev containers, cargo,
		// pnpm, npm, yarn, mercurial and other CIs run or obey later.
		"$WORKDIR/.pre-commit-config.yaml", "$WORKDIR/lefthook.yml", "$WORKDIR/.envrc",
		"$WORKDIR/.devcontainer/devcontainer.json", "$WORKDIR/.cargo/config.toml",
		"$WORKDIR/.pnpmfile.cjs", "$WORKDIR/.npmrc", "$WORKDIR/.yarnrc.yml", "$WORKDIR/.hg/hgrc",
		"$WORKDIR/.circleci/config.yml", "$WORKDIR/.gitlab/ci.yml", "$WORKDIR/Jenkinsfile",
		"$HOME/.bash_aliases", "$CARGO_HOME/config.toml", "$HOME/.local/state/sysprof/runs",
	} {
		if _, ok := IsProtected(want); !ok {
			t.Errorf("%s is not protected", want)
		}
	}
	got[0] = "changed"
	if ProtectedPaths()[0] == "changed" {
		t.Fatal("ProtectedPaths returns the package's own slice")
	}
}

func TestIsProtected(t *testing.T) {
	for _, c := range []struct {
		p, want string
		ok      bool
	}{
		{"$WORKDIR/.git/hooks/pre-commit", "$WORKDIR/.git/hooks", true}, {"$WORKDIR/.git/objects/ab", "$WORKDIR/.git", true},
		{"$WORKDIR/.git", "$WORKDIR/.git", true},
		// A submodule's hooks in the work tree's .git: deeper than .git; its config is .git's.
		{"$WORKDIR/.git/modules/m/hooks/post-checkout", "$WORKDIR/.git/modules/m/hooks", true},
		{"$WORKDIR/.git/modules/m/config", "$WORKDIR/.git", true},
		{"$WORKDIR/.github/workflows/x.yml", "$WORKDIR/.github", true},
		{"$WORKDIR/.sysprof/x.yaml", "$WORKDIR/.sysprof", true},
		{"$HOME/.config/git/config", "$HOME/.config/git", true},
		{"$WORKDIR/.gitignore", "", false},
		{"$WORKDIR/.gitattributes", "$WORKDIR/.gitattributes", true}, // picks filter and diff drivers
		{"$WORKDIR/src/.gitattributes", "", false},
		{"$WORKDIR/.git/info/attributes", "$WORKDIR/.git", true}, // judged by content inside an accepted .git (changeset)
		{"$HOME/.npmrc", "$HOME/.npmrc", true},
		{"$HOME/.pip/pip.conf", "$HOME/.pip", true},
		{"$HOME/.local/share/systemd/user/x.timer", "$HOME/.local/share/systemd", true},
		{"$HOME/.local/share/fonts/x.ttf", "", false},
		// A desktop entry's Exec runs when the user opens a file it handles (round six).
		{"$HOME/.local/share/applications/x.desktop", "$HOME/.local/share/applications", true},
		{"$HOME/.config/nvim/init.lua", "$HOME/.config/nvim", true},
		{"$HOME/.gradle/init.d/x.gradle", "$HOME/.gradle/init.d", true},
		{"$HOME/.gradle/caches/x", "", false},
		{"$WORKDIR/build/.git", "", false},
		{"$WORKDIR/src/main.go", "", false},
		{"$HOME/.config", "", false},
		{"$HOME/.cache/go-build/x", "", false},
		{"$CARGO_HOME/registry/x", "", false},
		{"$WORKDIR/.cargo/registry/x", "", false},
		{"$WORKDIR/.cargo/config.toml", "$WORKDIR/.cargo/config.toml", true},
		{"$WORKDIR/Makefile", "", false},
		{"$WORKDIR/package.json", "", false},
	} {
		got, ok := IsProtected(c.p)
		if got != c.want || ok != c.ok {
			t.Errorf("IsProtected(%q) = %q, %v; want %q, %v", c.p, got, ok, c.want, c.ok)
		}
	}
}

func TestProtectedBeneath(t *testing.T) {
	if got, want := ProtectedBeneath("$HOME/.config"), []string{
		"$HOME/.config/Code/User", "$HOME/.config/VSCodium/User", "$HOME/.config/autostart", "$HOME/.config/direnv",
		"$HOME/.config/emacs/init.el", "$HOME/.config/environment.d", "$HOME/.config/fish", "$HOME/.config/git",
		"$HOME/.config/github-copilot", "$HOME/.config/mimeapps.list", "$HOME/.config/nvim", "$HOME/.config/pip",
		"$HOME/.config/systemd", "$HOME/.config/tmux",
	}; !reflect.DeepEqual(got, want) {
		t.Errorf("ProtectedBeneath($HOME/.config) = %v, want %v", got, want)
	}
	inTree := 0
	for _, q := range protected {
		if strings.HasPrefix(q, "$WORKDIR/") {
			inTree++
		}
	}
	if got := ProtectedBeneath("$WORKDIR/"); len(got) != inTree {
		t.Errorf("ProtectedBeneath($WORKDIR/) = %v, want the %d work-tree paths", got, inTree)
	}
	if got := ProtectedBeneath("$WORKDIR/build"); got != nil {
		t.Errorf("ProtectedBeneath($WORKDIR/build) = %v, want none", got)
	}
	// Git's hooks stay protected inside a .git named whole (its config and info/ do not: git
	// writes them; their content is judged, changeset.GitRepoFileRuns).
	if got := ProtectedBeneath("$WORKDIR/.git"); !reflect.DeepEqual(got, []string{"$WORKDIR/.git", "$WORKDIR/.git/hooks"}) {
		t.Errorf("ProtectedBeneath($WORKDIR/.git) = %v", got)
	}
	if got := ProtectedBeneath("$WORKDIR/.git/objects"); got != nil {
		t.Errorf("ProtectedBeneath($WORKDIR/.git/objects) = %v, want none (use IsProtected)", got)
	}
}

func TestStartupHook(t *testing.T) {
	for _, c := range []struct{ p, want string }{
		{"$HOME/.local/lib/python3.12/site-packages/evil.pth", "site-packages/*.pth"},
		{"/usr/lib/python3/dist-packages/x.pth", "dist-packages/*.pth"},
		{"$WORKDIR/.venv/lib/python3.11/site-packages/distutils-precedence.pth", "site-packages/*.pth"},
		{"$WORKDIR/.venv/lib/python3.11/site-packages/sitecustomize.py", "sitecustomize.py"},
		{"$WORKDIR/usercustomize.py", "usercustomize.py"},
		{"$WORKDIR/.venv/lib/python3.11/site-packages/x.pth/inside", "site-packages/*.pth"},
		{"$WORKDIR/.venv/lib/python3.11/site-packages/pkg/x.pth", ""},
		{"$WORKDIR/.venv/lib/python3.11/site-packages/pkg/__init__.py", ""},
		{"$WORKDIR/notes.pth", ""},
		{"$WORKDIR/sitecustomize.pyc", ""},
	} {
		if got := StartupHook(c.p); got != c.want {
			t.Errorf("StartupHook(%q) = %q, want %q", c.p, got, c.want)
		}
		if _, ok := IsProtected(c.p); ok != (c.want != "") {
			t.Errorf("IsProtected(%q) = %v, want %v", c.p, ok, c.want != "")
		}
	}
}

func TestRepoHooks(t *testing.T) {
	for _, c := range []struct{ p, want string }{
		{"$WORKDIR/sub/.git/hooks/pre-commit", "$WORKDIR/sub/.git/hooks"},
		{"$WORKDIR/sub/.git/config", "$WORKDIR/sub/.git/config"},
		{"$WORKDIR/vendor/x.git/hooks", "$WORKDIR/vendor/x.git/hooks"},
		{"$WORKDIR/x.git/config", "$WORKDIR/x.git/config"},
		{"$WORKDIR/sub/.git/modules/m/hooks/post-checkout", "$WORKDIR/sub/.git/modules/m/hooks"},
		{"$WORKDIR/sub/.git/modules/a/modules/b/config", "$WORKDIR/sub/.git/modules/a/modules/b/config"},
		{"$TMPDIR/clone/.git/hooks/pre-push", ""},
		{"$CARGO_HOME/git/checkouts/dep-1a2b/3c4d/.git/config", ""},
		{"$HOME/.cache/pre-commit/repo1a2b/.git/hooks/x", ""},
		{"/abs/sub/.git/hooks/x", ""},
		{"$WORKDIR/sub/.git/objects/ab/cdef", ""},
		{"$WORKDIR/sub/.git/refs/heads/config", ""},
		{"$WORKDIR/sub/.git/HEAD", ""},
		{"$WORKDIR/src/hooks/config", ""},
		{"$WORKDIR/legit/hooks/x", ""},
		{"$WORKDIR/.github/hooks", ""},
	} {
		if got := RepoHooks(c.p); got != c.want {
			t.Errorf("RepoHooks(%q) = %q, want %q", c.p, got, c.want)
		}
		if _, ok := IsProtected(c.p); c.want != "" && !ok {
			t.Errorf("IsProtected(%q) = false, want true", c.p)
		}
	}
}
