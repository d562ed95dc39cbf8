package changeset

import (
	"strings"
	"testing"

	"github.com/sysprof/sysprof/paths"

	"github.com/sysprof/sysprof/policy"
)

// persistence is every file a package's step may write so that the host runs its code later
// (an editor opening the folder, a shell starting, git, a CI, the next install or build, the
// next login): each must be dangerous even under a rule covering the whole work tree or home,
// and named so in its reason. TestClassifyPersistence fails when one of its protections is
// removed (paths' protected list, the start-up hooks).
var persistence = []string{
	// The work tree: editors, direnv, git, hook managers, CIs, package managers' project config.
	"/w/.vscode/tasks.json",    // "runOn": "folderOpen"
	"/w/.vscode/settings.json", // terminal.integrated.*, python.defaultInterpreterPath
	"/w/.idea/runConfigurations/build.xml",
	"/w/.idea/workspace.xml",
	"/w/.envrc",
	"/w/.gitattributes", // a filter, diff or merge driver's attribute
	"/w/.git/hooks/post-checkout",
	"/w/.husky/pre-commit",
	"/w/.pre-commit-config.yaml",
	"/w/.github/workflows/ci.yml",
	"/w/.gitlab-ci.yml",
	"/w/.npmrc", // node-options=--require, script-shell
	"/w/.yarnrc.yml",
	"/w/.cargo/config.toml",
	"/w/.devcontainer/devcontainer.json",
	"/w/venv/lib/python3.12/site-packages/zz.pth",
	"/w/venv/lib/python3.12/site-packages/sitecustomize.py",
	"/w/lib/usercustomize.py",
	// The home.
	"/home/u/.config/autostart/helper.desktop",
	"/home/u/.config/systemd/user/helper.service",
	"/home/u/.config/systemd/user/default.target.wants/helper.service",
	"/home/u/.local/share/systemd/user/helper.service",
	"/home/u/.profile",
	"/home/u/.bashrc",
	"/home/u/.zshenv",
	"/home/u/.ssh/authorized_keys",
	"/home/u/.ssh/config", // ProxyCommand
	"/home/u/.gitconfig",  // core.pager, core.fsmonitor, include.path
	"/home/u/.config/git/config",
	"/home/u/.npmrc", // script-shell, node-options
	"/home/u/.yarnrc.yml",
	"/home/u/.cargo/config.toml",
	"/home/u/.pip/pip.conf", // index-url: the next install's packages
	"/home/u/.config/pip/pip.conf",
	"/home/u/.config/direnv/direnvrc",
	"/home/u/.local/lib/python3.12/site-packages/zz.pth",
	"/home/u/.local/bin/git",
	// Editors, multiplexer, desktop, X session, JVM builds (supply-chain round six).
	"/home/u/.config/nvim/init.lua",
	"/home/u/.vimrc",
	"/home/u/.config/Code/User/settings.json",
	"/home/u/.config/Code/User/tasks.json",
	"/home/u/.config/tmux/tmux.conf",
	"/home/u/.config/mimeapps.list",
	"/home/u/.local/share/applications/evil.desktop",
	"/home/u/.xprofile",
	"/home/u/.pam_environment",
	"/home/u/.gradle/init.d/evil.gradle",
	"/home/u/.gradle/gradle.properties",
	"/home/u/.mavenrc",
	"/home/u/.ipython/profile_default/startup/00-evil.py",
	"/home/u/.pyenv/shims/git", // a PATH shadow
	"/home/u/.npm-global/bin/git",
}

func TestClassifyPersistence(t *testing.T) {
	vars := map[string]string{"WORKDIR": "/w", "HOME": "/home/u", "CARGO_HOME": "/home/u/.cargo"}
	for _, r := range []Rules{
		{Dir: "/w", Tree: "/w", Keep: []string{"/w/**"}, Vars: vars},
		// A profile that names .git whole (a learned git commit): what the enforcer protects
		// inside it is the one list's paths below it.
		{Dir: "/w", Tree: "/w", Keep: []string{"/w/.git"}, Protected: oneListBelow("/w/.git", "/w"), Vars: vars},
		{Dir: "/home/u", Tree: "/home/u", Keep: []string{"/home/u/**"}, Vars: vars},
	} {
		for _, p := range persistence {
			if (r.Dir == "/w") != (p[:3] == "/w/") {
				continue
			}
			for _, op := range []Op{OpCreate, OpModify} {
				c := Change{Path: p, Op: op, Type: TypeFile, Mode: 0o644, HostExists: op == OpModify, HostMode: 0o644}
				got := Classify(c, r)
				if got.Class != Dangerous || got.Risk != policy.RiskCritical {
					t.Errorf("%s %s under %v: %s (%s), want dangerous", op, p, r.Keep, got.Class, got.Reason)
				}
			}
		}
	}
}

// oneListBelow expands the protected paths strictly below $WORKDIR/REL for work tree w.
func oneListBelow(p, w string) []string {
	var out []string
	for _, q := range paths.ProtectedPaths() {
		if h, ok := strings.CutPrefix(q, "$WORKDIR/"); ok && paths.Within(w+"/"+h, p) && w+"/"+h != p {
			out = append(out, w+"/"+h)
		}
	}
	return out
}

// A build definition's edit (a Makefile, package.json) is an ordinary change: held when no
// rule covers it, learned when one does, but its reason says what it is and --apply safe
// leaves it held (fails with the check in selected removed).
func TestClassifyBuildDefinitions(t *testing.T) {
	mk := Change{Path: "/w/Makefile", Op: OpModify, Type: TypeFile, Mode: 0o644, HostExists: true, HostMode: 0o644}
	got := Classify(mk, testRules)
	if got.Class != Held || got.BuildDefinition != "Makefile" || !strings.Contains(got.Reason, "build definition") {
		t.Fatalf("Makefile edit: %s %q (%s), want held as a build definition", got.Class, got.BuildDefinition, got.Reason)
	}
	if selected(got, ApplySafe, nil, "/w") {
		t.Errorf("--apply safe applies a build definition's edit")
	}
	if !selected(got, ApplySafe, []string{"/w/Makefile"}, "/w") {
		t.Errorf("a build definition named by the person is not applied")
	}
	other := Classify(Change{Path: "/w/notes.txt", Op: OpCreate, Type: TypeFile, Mode: 0o644}, testRules)
	if other.BuildDefinition != "" || !selected(other, ApplySafe, nil, "/w") {
		t.Errorf("an ordinary held file: %+v, not applied by --apply safe", other)
	}
	named := testRules
	named.Keep = append([]string{"/w/Makefile"}, testRules.Keep...)
	if got := Classify(mk, named); got.Class != Learned || got.BuildDefinition != "" {
		t.Errorf("a Makefile a rule names: %s %q, want learned (configure writes it)", got.Class, got.BuildDefinition)
	}
	if got := Classify(Change{Path: "/w/Makefile", Op: OpDelete, Type: TypeFile, HostExists: true}, testRules); got.BuildDefinition != "" {
		t.Errorf("a deleted Makefile runs nothing: %+v", got)
	}
}
