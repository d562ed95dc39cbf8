package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/paths"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/report"
)

// The supply-chain suite's fifth round: more ways a package's code comes to run (an in-tree
// build backend under pip and python -m build, a Makefile's generated include, go test's
// TestMain, pytest's conftest.py, CMake's execute_process, meson's run_command, npm's
// preinstall of a directory dependency, npx of a local bin, node-options in the project's
// .npmrc, cargo's proc-macro) and the files a payload writes so that the host runs its code later (an
// editor's tasks, direnv, git attributes, hook managers, CIs, interpreter and package-manager
// config, user units, shell start-up, ssh, git's config). Each persistence write must leave
// the run only as a dangerous change (or be refused), whatever tree the profile lets the run
// write, and be on the record; a build definition's edit (Makefile, package.json) is an
// ordinary change: held for review, never applied unlearned.

// persistRow is a write of a file the host runs later; the record names key, or the file (the
// payload makes the file's directories: a refused one is what the record names).
func persistRow(p string, key ...string) supplyRow {
	k := strings.TrimPrefix(strings.TrimPrefix(strings.TrimPrefix(p, "$WORKDIR"), "$HOME"), "$USERSITE")
	if len(key) > 0 {
		k = key[0]
	}
	return supplyRow{action: "write=" + p, host: p, kind: report.KindFile, key: k, unobservable: fileDenied}
}

// heldRow is a write of an ordinary file of the work tree: held for review (kind held).
func heldRow(p string) supplyRow {
	return supplyRow{action: "write=" + p, host: p, kind: "held", key: strings.TrimPrefix(p, "$WORKDIR")}
}

var supply5Persist = []supplyRow{
	persistRow("$WORKDIR/.vscode/tasks.json"),    // "runOn": "folderOpen"
	persistRow("$WORKDIR/.vscode/settings.json"), // terminal and interpreter paths
	persistRow("$WORKDIR/.idea/runConfigurations/build.xml"),
	persistRow("$WORKDIR/.envrc"),
	persistRow("$WORKDIR/.gitattributes"),    // a filter driver's attribute
	heldRow("$WORKDIR/.git/info/attributes"), // judged by content inside a staged or bound .git: held dangerous
	persistRow("$WORKDIR/.git/config"),       // the driver, core.fsmonitor, core.pager
	persistRow("$WORKDIR/.husky/pre-commit"),
	persistRow("$WORKDIR/.pre-commit-config.yaml"),
	persistRow("$WORKDIR/.gitlab-ci.yml"),
	persistRow("$WORKDIR/.npmrc"), // node-options, script-shell
	persistRow("$WORKDIR/.cargo/config.toml"),
	persistRow("$WORKDIR/tools/sitecustomize.py"), // the payload's own directory is on its sys.path
	persistRow("$USERSITE/usercustomize.py"),
	persistRow("$HOME/.config/systemd/user/helper.service", "/.config/systemd"),
	persistRow("$HOME/.local/share/systemd/user/helper.service", "/.local/share"),
	persistRow("$HOME/.profile"),
	persistRow("$HOME/.zshenv"),
	persistRow("$HOME/.ssh/authorized_keys"),
	persistRow("$HOME/.ssh/config"), // ProxyCommand
	persistRow("$HOME/.gitconfig"),  // core.pager, core.fsmonitor, include.path
	persistRow("$HOME/.npmrc"),      // script-shell
	persistRow("$HOME/.cargo/config.toml"),
	persistRow("$HOME/.pip/pip.conf", "/.pip"),
	persistRow("$HOME/.config/pip/pip.conf", "/.config/pip"),
	heldRow("$WORKDIR/Makefile"),
	heldRow("$WORKDIR/package.json"),
}

var supply5Vectors = []supplyVector{
	{name: "make-include", fixture: "makeinclude", need: []string{"make"}, argv: []string{"make"}, again: "rm -rf out"},
	{name: "pip-pyproject-backend", fixture: "pybackend", need: []string{"pip3"},
		argv:  []string{"pip3", "install", "-v", "--no-index", "--no-build-isolation", "--no-deps", "--no-cache-dir", "--target", "vendor", "."},
		again: "rm -rf vendor build"},
	{name: "go-test-TestMain", fixture: "gotest", need: []string{"go"},
		setup: func(t *testing.T, sc *supplyEnv, b *testutil.Box) {
			// Fill the box's build cache outside the sandbox (the payload dormant): a cold
			// build of the testing package under learn took most of a minute here.
			b.Sh(t, "go test -count=1 -run '^$' ./... >/dev/null")
		},
		argv: []string{"go", "test", "-count=1", "-v", "./..."}},
	{name: "npm-dir-dep-preinstall", fixture: "npmdep", need: []string{"npm", "node"},
		argv:  []string{"npm", "install", "--offline", "--no-audit", "--no-fund", "--foreground-scripts"},
		again: "rm -rf node_modules package-lock.json"},
	{name: "npx-local-bin", fixture: "npxbin", need: []string{"npm", "npx", "node"},
		setup: func(t *testing.T, sc *supplyEnv, b *testutil.Box) {
			b.Sh(t, "npm install --offline --no-audit --no-fund --ignore-scripts >/dev/null")
		},
		argv: []string{"npx", "--offline", "--no-install", "helper"}},
	{name: "cargo-proc-macro", fixture: "procmacro", need: []string{"cargo"}, argv: []string{"cargo", "build", "--offline"},
		again:    "touch src/main.rs", // the app compiles again: rustc expands the macro again
		rootOnly: "rustup's toolchains live in root's home, which nobody cannot reach"},
	{name: "pytest-conftest", fixture: "pytestconf", need: []string{"pytest-3"}, argv: []string{"pytest-3", "-q", "-s", "-p", "no:cacheprovider"}},
	{name: "cmake-execute_process", fixture: "cmakeexec", need: []string{"cmake"}, argv: []string{"cmake", "-S", ".", "-B", "build"}, again: "rm -rf build"},
	{name: "meson-run_command", fixture: "mesonrun", need: []string{"meson", "ninja"}, argv: []string{"meson", "setup", "build"}, again: "rm -rf build"},
	// python -m build of the in-tree backend (Debian's python3-build, without isolation: no index).
	{name: "python-m-build", fixture: "pybackend", need: []string{"python3"},
		argv: []string{"python3", "-m", "build", "--no-isolation", "--wheel", "--outdir", "dist", "."}, again: "rm -rf dist build"},
	{name: "npmrc-node-options", fixture: "npmrcopts", need: []string{"npm", "node"},
		setup: func(t *testing.T, sc *supplyEnv, b *testutil.Box) {
			b.Sh(t, "mv npmrc .npmrc && mv hook.js tools/hook.js")
		},
		argv: []string{"npm", "run", "build"},
		// The project's .npmrc is a credential store: enforce hides it, so its node-options
		// never reach the script's node, and the payload never runs.
		closed: ".npmrc"},
}

// TestSupplyChainNewWaysAndPersistence runs every row of both rounds through the new ways in.
func TestSupplyChainNewWaysAndPersistence(t *testing.T) {
	runSupplySuite(t, supply5Vectors, slices.Concat(supplyRows, supply5Persist))
}

// TestSupplyChainPoisonedLearnPersists (issue 23 item 4): every persistence write of the fifth
// round live at learn is written pending (or not granted at all), and enforce of the same
// payload leaves the host's files as they were.
func TestSupplyChainPoisonedLearnPersists(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireTools(t, hostPath, "unshare", "nsenter", "ip", "python3", "git", "make")
	root, sc, b, site := poisonedMakeBox(t, "sysprof-e2e-poisoned5-")
	expand := func(s string) string {
		return strings.NewReplacer("$HOME", b.Home, "$WORKDIR", b.Work, "$USERSITE", site).Replace(s)
	}
	var persist []string
	var rows []supplyRow
	for _, r := range supply5Persist {
		if r.kind != "held" {
			persist = append(persist, r.action)
			rows = append(rows, r)
		}
	}
	arm := []string{"SUPPLY_ARM=" + strings.Join(persist, "\n")}
	snapshot := func() map[string]string { return hostState(b, rows, expand) }
	clean := snapshot()
	profile := filepath.Join(root, "make.yaml")
	r := sc.run(t, b, nil, arm, testutil.SysprofBin, "learn", "-p", profile, "--", "make")
	testutil.MustCode(t, "learn the live payload", r, 0)
	prof := loadProfile(t, profile)
	for _, row := range rows {
		host := expand(row.host)
		portable := strings.NewReplacer(b.Work, "$WORKDIR", b.Home, "$HOME").Replace(host)
		if got := snapshot()[row.host]; got == clean[row.host] {
			t.Errorf("%s: the live payload did not write it at learn", row.action)
		}
		// A granted rule above a protected path does not name it (enforce keeps it read-only
		// or stages the tree, and the changeset holds a start-up hook in the work tree): a
		// rule at or below one must be pending.
		for _, w := range prof.Filesystem.Write {
			if paths.Covers(w.Path, portable) && !w.Pending && policy.ProtectedPath(w.Path) != "" {
				t.Errorf("%s: learn granted %s (not pending)", row.action, w.Path)
			}
		}
	}
	// Put the host back as it was, then enforce the same payload.
	b.Sh(t, "rm -rf .git .vscode .idea .envrc .gitattributes .husky .pre-commit-config.yaml .gitlab-ci.yml .npmrc .cargo tools/sitecustomize.py out")
	for _, p := range []string{".config/systemd", ".local/share/systemd", ".profile", ".zshenv", ".ssh/authorized_keys", ".ssh/config", ".gitconfig", ".cargo", ".pip", ".config/pip", filepath.Join(strings.TrimPrefix(site, b.Home+"/"), "usercustomize.py")} {
		os.RemoveAll(filepath.Join(b.Home, p))
	}
	plantSecrets(t, b)
	before := snapshot()
	rep := filepath.Join(root, "report.json")
	r = sc.run(t, b, nil, arm, testutil.SysprofBin, "enforce", "-p", profile, "--report", rep, "--", "make")
	after := snapshot()
	rp := testutil.ReadReport(t, rep)
	for _, row := range rows {
		if before[row.host] != after[row.host] {
			t.Errorf("%s: enforce let a pending write through: %q", row.action, after[row.host])
		}
		if _, ok := supplyRecord(rp, row); !ok {
			t.Errorf("%s: not on the record", row.action)
		}
	}
	if t.Failed() {
		t.Logf("pending: %v\nenforce stderr:\n%s", policy.Pending(prof), r.Stderr)
	}
}
