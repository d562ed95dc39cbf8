package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/report"
)

// gitBox is a work tree with a git repository (a submodule from a local repository, deinit),
// a profile learned from `git commit` and `git submodule update` (--accept-risky: .git is
// written whole, so it is bound writable) and the commands to run git as the learn did.
type gitBox struct {
	b                *testutil.Box
	root, profile    string
	git, sub, deinit string // git with an identity; submodule update; its undoing
}

func gitCommitBox(t *testing.T) gitBox {
	t.Helper()
	testutil.RequireRoot(t)
	testutil.RequireTools(t, hostPath, "git", "setpriv")
	root := t.TempDir()
	b := newBox(t, root, "x", "dev", "work", "")
	git := "git -c user.email=dev@example.invalid -c user.name=dev"
	b.Sh(t, "cd "+b.Work+" && git init -q && echo a > a && git add a && "+git+" commit -qm a")
	work := git + " commit -qam $1 && git config branch.main.description d && git remote add o$1 https://example.invalid/o.git && git remote remove o$1"
	testutil.WriteFile(t, filepath.Join(b.Work, "w.sh"), "#!/bin/sh\nset -e\necho $1 > a\n"+work+"\n", 0o755)
	b.Sh(t, "cd "+b.Work+" && "+git+" add w.sh && "+git+" commit -qm w")
	// A submodule from a local repository; `submodule update --init` clones it again (and
	// writes .git/modules/lib/config and core.worktree there).
	lib := filepath.Join(b.Home, "lib")
	b.Sh(t, "git init -q "+lib+" && cd "+lib+" && echo l > l && git add l && "+git+" commit -qm l")
	sub := "git -c protocol.file.allow=always submodule --quiet update --init"
	deinit := "cd " + b.Work + " && git submodule --quiet deinit -f lib && rm -rf .git/modules/lib"
	b.Sh(t, "cd "+b.Work+" && git -c protocol.file.allow=always submodule --quiet add "+lib+" lib && "+git+" commit -qm sub && "+deinit)
	profile := filepath.Join(root, "p.yaml")
	if r := b.Sysprof(t, "learn", "--accept-risky", "-p", profile, "--", "sh", "w.sh", "b"); r.Code != 0 {
		t.Fatalf("learn git commit: %s", r)
	}
	if r := b.Sysprof(t, "learn", "--accept-risky", "--force", "-p", profile, "--", "sh", "-c", sub); r.Code != 0 {
		t.Fatalf("learn git submodule update: %s", r)
	}
	b.Sh(t, deinit)
	return gitBox{b: b, root: root, profile: profile, git: git, sub: sub, deinit: deinit}
}

// TestGitConfigCodeHeld (issue 23): a profile that writes the work tree's .git whole (a learned
// git commit, --accept-risky) binds it writable, and git's own config writes land (remote add).
// A run that sets core.fsmonitor there (which the user's next `git status` would run) leaves
// the host's config as it was: the run's file is held as a dangerous change, on the report
// and on enforce's stderr, as root and as an ordinary user.
func TestGitConfigCodeHeld(t *testing.T) {
	g := gitCommitBox(t)
	b, root, profile, git, sub := g.b, g.root, g.profile, g.git, g.sub
	config := filepath.Join(b.Work, ".git", "config")
	openForNobody(t, root)
	for _, as := range asUsers {
		t.Run(as.name, func(t *testing.T) {
			if as.wrap != nil {
				chownTree(t, filepath.Join(root, "x"), 65534)
			}
			enforce := func(what, script string) (testutil.Result, *report.Report) {
				rep := filepath.Join(root, as.name+"-"+what+".json")
				argv := append(slicesClone(as.wrap), testutil.SysprofBin, "enforce", "-p", profile, "--report", rep, "--", "sh", "-c", script)
				r := runPerturbed(t, b, perturbation{name: as.name, stdout: "pipe", stdin: "null"}, argv)
				if r.Code != 0 {
					t.Fatalf("%s: %s", what, r)
				}
				return r, testutil.ReadReport(t, rep)
			}
			// Git's ordinary config writes land on the host.
			enforce("submodule", sub)
			if got, err := os.ReadFile(filepath.Join(b.Work, ".git", "modules", "lib", "config")); err != nil || !strings.Contains(string(got), "worktree") {
				t.Errorf("git submodule update did not write the submodule's config (%v):\n%s", err, got)
			}
			if _, err := os.Stat(filepath.Join(b.Work, "lib", "l")); err != nil {
				t.Errorf("git submodule update did not check the submodule out: %v", err)
			}
			enforce("remote", "git remote add up-"+as.name+" https://example.invalid/u.git && git config submodule.lib2.url https://example.invalid/lib.git")
			before, err := os.ReadFile(config)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(before), `[remote "up-`+as.name+`"]`) || !strings.Contains(string(before), `[submodule "lib2"]`) {
				t.Fatalf("git remote add / a submodule's url did not reach the host's config:\n%s", before)
			}
			// The payload: git itself, as a hook or a build step would run it.
			r, rp := enforce("fsmonitor", "echo "+as.name+" > a && "+git+" commit -qam "+as.name+" && git config core.fsmonitor 'touch PWNED'")
			if after, _ := os.ReadFile(config); string(after) != string(before) {
				t.Errorf("the host's .git/config changed:\n%s", after)
			}
			var held []report.Change
			if rp.Changes != nil {
				held = rp.Changes.Held
			}
			if !slices.ContainsFunc(held, func(c report.Change) bool {
				return c.Path == config && c.Class == "dangerous" && strings.Contains(c.Reason, "core.fsmonitor")
			}) {
				t.Errorf("the report does not hold %s as dangerous for core.fsmonitor: %+v", config, held)
			}
			if !strings.Contains(r.Stderr, config) || !strings.Contains(r.Stderr, "core.fsmonitor") {
				t.Errorf("enforce's stderr does not say the config was held:\n%s", r.Stderr)
			}
			if as.wrap == nil && rp.Changes != nil {
				// A person saying yes: sysprof changes lists it and applies it by its path.
				if l := b.Sysprof(t, "changes", "diff", rp.Changes.Run); !strings.Contains(l.Stdout+l.Stderr, "fsmonitor") {
					t.Errorf("sysprof changes diff does not show the held config: %s", l)
				}
				if l := b.Sysprof(t, "changes", "apply", rp.Changes.Run, config); l.Code != 0 || strings.Contains(l.Stdout, "conflict:") {
					t.Errorf("sysprof changes apply RUN %s: %s", config, l)
				}
				if got, _ := os.ReadFile(config); !strings.Contains(string(got), "fsmonitor") {
					t.Errorf("the approved config did not land:\n%s", got)
				}
				b.Sh(t, "git -C "+b.Work+" config --unset core.fsmonitor")
			}
			if l := b.Run(t, "git", "-C", b.Work, "-c", "safe.directory=*", "log", "-1", "--format=%s"); strings.TrimSpace(l.Stdout) != as.name {
				t.Errorf("the commit of the same run did not land: %s", l)
			}
			b.Sh(t, "cd "+b.Work+" && git -c safe.directory=* submodule --quiet deinit -f lib && rm -rf .git/modules/lib")
		})
	}
}
