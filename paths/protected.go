package paths

import (
	"sort"
	"strings"
)

// protected is the one list of paths that stay read-only inside any writable tree unless a
// profile names them explicitly (issue 14 item 4). Writing any of them lets a tool run code
// outside its sandbox later: a git hook or fsmonitor, a CI workflow, an editor task, the
// sysprof profile itself, a shell rc file, a user service, a binary on $PATH, an agent's config.
var protected = []string{
	// The work tree: things git, CI, editors, hooks managers, agents and sysprof itself run.
	// Git's hooks stay protected inside a .git a rule names whole (what a learned git commit
	// writes): no git command but init writes them (its *.sample files are inert, see
	// changeset), and they run code later. .git/config is not: submodule update, remote add
	// and clone write it, and a rule naming .git whole was accepted as such.
	"$WORKDIR/.git",
	"$WORKDIR/.git/hooks",
	"$WORKDIR/.github",
	"$WORKDIR/.gitlab-ci.yml",
	"$WORKDIR/.sysprof",
	"$WORKDIR/sysprof.yaml",
	"$WORKDIR/.vscode",
	"$WORKDIR/.idea",
	"$WORKDIR/.husky",
	"$WORKDIR/.claude",
	"$WORKDIR/.cursor",
	// Hook managers, direnv, dev containers (initializeCommand runs on the host), cargo's
	// runner and rustc-wrapper, pnpm's install hooks, npm's and yarn's project config
	// (node-options, script-shell, yarnPath), mercurial's hooks, other CIs' definitions.
	"$WORKDIR/.pre-commit-config.yaml",
	"$WORKDIR/lefthook.yml",
	"$WORKDIR/.lefthook.yml",
	"$WORKDIR/lefthook-local.yml",
	"$WORKDIR/.envrc",
	"$WORKDIR/.devcontainer",
	"$WORKDIR/.cargo/config.toml",
	"$WORKDIR/.cargo/config",
	"$WORKDIR/.pnpmfile.cjs",
	"$WORKDIR/.npmrc",
	"$WORKDIR/.yarnrc",
	"$WORKDIR/.yarnrc.yml",
	"$WORKDIR/.hg",
	"$WORKDIR/.circleci",
	"$WORKDIR/.gitlab",
	"$WORKDIR/.forgejo",
	"$WORKDIR/.gitea",
	"$WORKDIR/.buildkite",
	"$WORKDIR/.woodpecker",
	"$WORKDIR/.woodpecker.yml",
	"$WORKDIR/.drone.yml",
	"$WORKDIR/.travis.yml",
	"$WORKDIR/azure-pipelines.yml",
	"$WORKDIR/bitbucket-pipelines.yml",
	"$WORKDIR/Jenkinsfile",
	// Git attributes pick the filter, diff and merge drivers git runs at checkout, add, diff
	// and merge (a driver from any config git reads): the work tree's top file. The
	// repository's info/attributes is judged by its content like its config
	// (changeset.GitRepoFileRuns: any change is held), not covered: git init writes info/exclude
	// and gc's update-server-info info/refs there. Nested .gitattributes are not covered:
	// packages ship them in node_modules and registries' checkouts.
	"$WORKDIR/.gitattributes",

	// Shell start-up files.
	"$HOME/.bashrc",
	"$HOME/.bash_profile",
	"$HOME/.bash_login",
	"$HOME/.bash_logout",
	"$HOME/.profile",
	"$HOME/.zshenv",
	"$HOME/.zprofile",
	"$HOME/.zshrc",
	"$HOME/.zlogin",
	"$HOME/.zlogout",
	"$HOME/.config/fish",
	"$HOME/.inputrc",
	"$HOME/.bash_aliases", // Debian's and Ubuntu's .bashrc source it

	// Things that run later: user services, autostart, git's own hooks and config, $PATH.
	"$HOME/.config/systemd",
	"$HOME/.config/autostart",
	"$HOME/.config/environment.d",
	"$HOME/.local/share/systemd", // user units ($XDG_DATA_HOME/systemd/user), timers too
	"$HOME/.config/direnv",       // direnvrc runs at every direnv load
	"$HOME/.config/git",
	"$HOME/.gitconfig",
	"$HOME/.local/bin",
	"$HOME/bin",
	"$HOME/.ssh",
	"$CARGO_HOME/bin",
	"$CARGO_HOME/config.toml", // a runner or rustc-wrapper every later cargo run starts
	"$CARGO_HOME/config",
	"$GOPATH/bin",
	// Version managers' shims and global installs' bins, on the user's PATH ahead of the
	// system's: a planted `git` there runs at the user's next `git`.
	"$HOME/.pyenv/shims",
	"$HOME/.rbenv/shims",
	"$HOME/.asdf/shims",
	"$HOME/.volta/bin",
	"$HOME/.npm-global/bin",
	"$HOME/.yarn/bin",
	"$HOME/.deno/bin",
	"$HOME/.bun/bin",
	"$GOCONFIG/env", // go env -w: GOFLAGS=-toolexec=... runs at every later go build
	// Package managers' user config: npm's script-shell and node-options, yarn's yarnPath run
	// at every later install or script; pip's index-url chooses the next install's packages.
	"$HOME/.npmrc",
	"$HOME/.yarnrc",
	"$HOME/.yarnrc.yml",
	"$HOME/.pip",
	"$HOME/.config/pip",

	// What the user's editors, terminal multiplexer, desktop, X session and JVM builds run
	// later, found in directories a profile may bind writable whole ($HOME/.config,
	// $HOME/.local/share, gradle's and maven's homes): an editor's init, VS Code's user
	// settings and tasks, tmux's run-shell, the desktop's file handlers (a .desktop's Exec),
	// the session's start-up files and environment (LD_PRELOAD), gradle's init scripts and
	// JVM arguments (-javaagent), mvn's own rc.
	"$HOME/.config/nvim",
	"$HOME/.vimrc",
	"$HOME/.vim",
	"$HOME/.emacs",
	"$HOME/.emacs.d/init.el",
	"$HOME/.config/emacs/init.el",
	"$HOME/.config/Code/User",
	"$HOME/.config/VSCodium/User",
	"$HOME/.config/tmux",
	"$HOME/.tmux.conf",
	"$HOME/.config/mimeapps.list",
	"$HOME/.local/share/applications",
	"$HOME/.xprofile",
	"$HOME/.xsessionrc",
	"$HOME/.xinitrc",
	"$HOME/.pam_environment",
	"$HOME/.gradle/init.d",
	"$HOME/.gradle/init.gradle",
	"$HOME/.gradle/init.gradle.kts",
	"$HOME/.gradle/gradle.properties",
	"$HOME/.mavenrc",
	"$HOME/.ipython/profile_default/startup",

	// Cron and agent configuration.
	"$HOME/.crontab",
	"$HOME/.claude",
	"$HOME/.claude.json",
	"$HOME/.codex",
	// sysprof's own state in the user cache (the binary-hash cache enforce trusts) and its
	// runs' changesets (changeset.StateDir: a run held for review must not be rewritten by a
	// later run whose profile writes in ~/.local/state).
	"$HOME/.cache/sysprof",
	"$HOME/.local/state/sysprof",
	"$HOME/.cursor",
	"$HOME/.aider.conf.yml",
	"$HOME/.config/github-copilot",
}

// startupHooks are the protected names that can lie anywhere: an interpreter runs them at every
// start, wherever its site directory is (issue 22 item 2). They are patterns matched against the
// tail of a path (a .pth file directly in a site-packages or dist-packages directory, a
// sitecustomize.py or usercustomize.py in any directory), so they are not mount points: they
// are not in ProtectedPaths, which the enforcer and export bind read-only, but IsProtected
// and StartupHook name them.
var startupHooks = []string{
	"site-packages/*.pth",
	"dist-packages/*.pth",
	"sitecustomize.py",
	"usercustomize.py",
}

// StartupHook returns the start-up hook pattern (site-packages/*.pth, sitecustomize.py, ...)
// that path p (absolute or portable, clean) names, or "". A path below one (a directory named
// x.pth) counts too.
func StartupHook(p string) string {
	comps := strings.Split(p, "/")
	for _, h := range startupHooks {
		hc := strings.Split(h, "/")
		// Any suffix window of p's components may match the pattern (p below a hook counts).
		for end := len(hc); end <= len(comps); end++ {
			ok := true
			for i, c := range hc {
				if !MatchComponent(c, comps[end-len(hc)+i]) {
					ok = false
					break
				}
			}
			if ok {
				return h
			}
		}
	}
	return ""
}

// StartupHooks returns the start-up hook patterns StartupHook matches.
func StartupHooks() []string { return append([]string(nil), startupHooks...) }

var sortedProtected = func() []string {
	s := append([]string(nil), protected...)
	sort.Strings(s)
	return s
}()

// ProtectedPaths returns the protected paths in portable form ($WORKDIR/..., $HOME/...,
// $CARGO_HOME/bin, $GOPATH/bin), sorted. The caller may modify the returned slice.
func ProtectedPaths() []string {
	return append([]string(nil), sortedProtected...)
}

// IsProtected reports whether portable path p is a protected path or lies beneath one, or
// names an interpreter start-up hook (StartupHook), and which (the deepest). p must be clean (no trailing
// slash, no "..").
func IsProtected(p string) (protected string, ok bool) {
	// The deepest: .git/hooks inside .git (a rule naming .git does not name its hooks).
	for _, q := range sortedProtected {
		if Within(p, q) && len(q) > len(protected) {
			protected, ok = q, true
		}
	}
	if ok {
		// A submodule's hooks inside the work tree's .git (.git/modules/m/hooks): deeper than
		// .git, and a rule naming .git whole does not name them. (Its config stays .git's: git
		// writes it, judged by content as the top config is.)
		if r := RepoHooks(p); strings.HasSuffix(r, "/hooks") && len(r) > len(protected) {
			return r, true
		}
		return protected, true
	}
	if h := StartupHook(p); h != "" {
		return h, true
	}
	if r := RepoHooks(p); r != "" {
		return r, true
	}
	return "", false
}

// RepoHooks returns the hooks directory or config file of a git repository that portable path
// p is or lies in below the work tree, or "": a nested repository's (sub/.git/hooks), a bare
// one's (x.git/config) and a submodule's git directory (.git/modules/m/hooks). git runs what
// they name (a hook, core.fsmonitor, core.pager) when the user works in that repository later.
// Only the work tree's: the checkouts tools keep in their caches (cargo's git checkouts,
// pre-commit's repositories) are the tools' own, run by libraries that run no hooks. A bare
// repository not named *.git is not recognized by its path.
func RepoHooks(p string) string {
	if !strings.HasPrefix(p, "$WORKDIR/") {
		return ""
	}
	comps := strings.Split(p, "/")
	for i := 0; i+1 < len(comps); i++ {
		if !strings.HasSuffix(comps[i], ".git") {
			continue
		}
		// The git directory itself, or a module's below it (modules/a/modules/b/...).
		for j := i + 1; j < len(comps); j++ {
			atGitDir := j == i+1 || (j >= i+3 && comps[j-2] == "modules")
			if atGitDir && (comps[j] == "hooks" || comps[j] == "config") {
				return strings.Join(comps[:j+1], "/")
			}
		}
	}
	return ""
}

// ProtectedBeneath returns the protected paths that equal or lie beneath portable dir d (what
// granting d would expose), sorted. A protected path that contains d is not returned: use
// IsProtected for that.
func ProtectedBeneath(d string) []string {
	d = strings.TrimSuffix(d, "/")
	var out []string
	for _, q := range sortedProtected {
		if Within(q, d) {
			out = append(out, q)
		}
	}
	return out
}
