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

// A git repository nested in an output directory that is bound writable over itself (a warm
// out/ holding an exec rule: its writes land on the host at once) runs its hooks and config when
// the user works in it later, as the top repository's do (paths.RepoHooks). A hook the run
// writes into a repository it makes there (`cargo new` inside target/) and a config it appends
// to in a vendored one are taken off the host when the command ends and held in the run's
// changeset as dangerous, as root and as an ordinary user; the build's own output stays.
func TestNestedRepoInBoundOutputIsHeld(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireTools(t, hostPath, "gcc", "git", "setpriv")
	root := t.TempDir()
	b := newBox(t, root, "x", "dev", "work", "")
	testutil.WriteFile(t, filepath.Join(b.Work, "main.c"), "#include <stdio.h>\nint main(void) { puts(\"APP RAN\"); return 0; }\n", 0o644)
	build := "mkdir -p out/gen && gcc -o out/app main.c && ./out/app && printf x > out/gen/f"
	b.Sh(t, "cd "+b.Work+" && "+build)
	profile := filepath.Join(root, "p.yaml")
	if r := b.Sysprof(t, "learn", "-p", profile, "--", "sh", "-c", build); r.Code != 0 || !strings.Contains(r.Stdout, "APP RAN") {
		t.Fatalf("learn: %s", r)
	}
	vendor := filepath.Join(b.Work, "out", "vendor")
	b.Sh(t, "git init -q "+vendor)
	config, err := os.ReadFile(filepath.Join(vendor, ".git", "config"))
	if err != nil {
		t.Fatal(err)
	}
	hook := filepath.Join(b.Work, "out", "gen", "sub", ".git", "hooks", "pre-commit")
	attack := build + " && mkdir -p out/gen/sub/.git/hooks && printf '#!/bin/sh\\necho HOOK RAN\\n' > out/gen/sub/.git/hooks/pre-commit; printf '[core]\\n\\tfsmonitor = ./evil\\n' >> out/vendor/.git/config"
	openForNobody(t, root)
	for _, as := range []struct {
		name string
		wrap []string
	}{{"root", nil}, {"ordinary-user", []string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"}}} {
		t.Run(as.name, func(t *testing.T) {
			if as.name == "ordinary-user" {
				chownTree(t, b.Work, 65534)
				chownTree(t, b.Home, 65534)
			}
			if err := os.RemoveAll(filepath.Dir(filepath.Dir(filepath.Dir(hook)))); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(vendor, ".git", "config"), config, 0o644); err != nil {
				t.Fatal(err)
			}
			rep := filepath.Join(root, as.name+".json")
			argv := append(slicesClone(as.wrap), testutil.SysprofBin, "enforce", "-p", profile, "--report", rep, "--", "sh", "-c", attack)
			r := runPerturbed(t, b, perturbation{name: as.name, stdout: "pipe", stdin: "null"}, argv)
			if !strings.Contains(r.Stdout, "APP RAN") {
				t.Errorf("the build did not run: exit %d, stdout %q\n%s", r.Code, r.Stdout, r.Stderr)
			}
			if _, err := os.Lstat(hook); err == nil {
				t.Errorf("the hook written into a repository made in the bound out/ is on the host: %s", hook)
			}
			if got, _ := os.ReadFile(filepath.Join(vendor, ".git", "config")); strings.Contains(string(got), "fsmonitor") {
				t.Errorf("the vendored repository's config kept the run's fsmonitor:\n%s", got)
			}
			if _, err := os.Stat(filepath.Join(b.Work, "out", "gen", "f")); err != nil {
				t.Errorf("the build's own output is gone: %v", err)
			}
			got := testutil.ReadReport(t, rep)
			var held []report.Change
			if got.Changes != nil {
				held = got.Changes.Held
			}
			for _, want := range []string{hook, filepath.Join(vendor, ".git", "config")} {
				if !slices.ContainsFunc(held, func(c report.Change) bool { return c.Path == want && c.Class == "dangerous" }) {
					t.Errorf("the report does not hold %s as dangerous: %+v", want, held)
				}
			}
		})
	}
}
