package e2e

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
)

// removesOutput is a command that removes its output directory and makes it again (issue 24
// item 7, the write model of issue 22): learned once, then enforced unchanged in a tree where
// the directory exists (so a write rule names an existing directory).
type removesOutput struct {
	name  string
	need  []string
	setup func(t *testing.T, b *testutil.Box)
	argv  []string
	// warm runs unsandboxed before the compared runs (the output directory then exists), and
	// stale is a file put into it then, which the command's removal must take away.
	warm  []string
	stale string
	// namesOnly: below these directories only names and types are compared (cargo's
	// fingerprints hold times), and below skip nothing (incremental session names are random).
	namesOnly, skip []string
	asUser          bool // also as an ordinary user (the toolchain must be reachable for it)
	keepStale       bool // the command leaves stale (as it does unsandboxed)
}

// buildCrate is a crate whose build script runs from target/ (an exec rule inside the output
// directory) and whose docs cargo doc writes.
func buildCrate(t *testing.T, b *testutil.Box) {
	b.CopyFixture(t, "projects", "crate")
	testutil.WriteFile(t, filepath.Join(b.Work, "build.rs"), "fn main() { println!(\"cargo:rerun-if-changed=build.rs\"); }\n", 0o644)
}

var removesOutputs = []removesOutput{
	{name: "rm-rf-dist", need: []string{"sh", "rm", "mkdir"}, argv: []string{"sh", "-c", "rm -rf dist && mkdir dist && echo x > dist/a && echo built"},
		warm: []string{"sh", "-c", "mkdir -p dist/sub && echo old > dist/sub/old"}, stale: "dist/stale.txt", asUser: true},
	{name: "rm-rf-build-nested", need: []string{"sh", "rm", "mkdir"}, argv: []string{"sh", "-c", "rm -rf web/build && mkdir -p web/build/js && echo x > web/build/js/app.js && echo built"},
		warm: []string{"sh", "-c", "mkdir -p web/build/css && echo old > web/build/css/old.css && echo keep > web/index.html"}, stale: "web/build/stale.txt", asUser: true},
	{name: "cargo-clean-build", need: []string{"cargo"}, setup: buildCrate, argv: []string{"sh", "-c", "cargo clean -q && cargo build -q --offline && ./target/debug/crate"},
		warm: []string{"cargo", "build", "-q", "--offline"}, stale: "target/stale.txt", namesOnly: []string{"target"}, skip: []string{"target/debug/incremental"}},
	// cargo doc over its old output (the source edited since: rustdoc writes the crate's pages
	// again); stale is a file beside them, which cargo leaves.
	{name: "cargo-doc", need: []string{"cargo"}, setup: buildCrate, argv: []string{"sh", "-c", "sed -i s/hello,/hi,/ src/main.rs && cargo doc -q --offline"},
		warm: []string{"cargo", "doc", "-q", "--offline"}, stale: "target/doc/stale.txt", keepStale: true, namesOnly: []string{"target"}, skip: []string{"target/debug/incremental"}},
}

// TestWriteModelRemovesOutputDirs: a build that removes its output directory and makes it
// again (`rm -rf dist && mkdir dist`, cargo clean, cargo doc over its old output), learned once
// and enforced unchanged where the directory exists, exits 0 with the output of the same run
// unsandboxed, no denial, nothing held, and leaves the host's work tree as the unsandboxed run
// leaves it: the stale file removed, the new files there. On main the directory was bound
// writable over itself, a mount point: rm failed EBUSY/EROFS, and cargo's build script in the
// new target/ was refused exec (the Landlock rule named the removed directory's inode). As root
// and, where the toolchain is reachable for it, as an ordinary user.
func TestWriteModelRemovesOutputDirs(t *testing.T) {
	testutil.RequireRoot(t)
	for _, c := range removesOutputs {
		users := []string{"root"}
		if c.asUser {
			users = append(users, "ordinary-user")
		}
		for _, user := range users {
			t.Run(c.name+"/"+user, func(t *testing.T) {
				testutil.RequireTools(t, hostPath, slices.Concat(c.need, []string{"setpriv"})...)
				root := t.TempDir()
				profile := filepath.Join(root, "profile.yaml")
				learner := newBox(t, root, "learn", "alice", "project", "")
				if c.setup != nil {
					c.setup(t, learner)
				}
				// The learn run sees the directory removed and made again, as every later run does.
				learner.Run(t, c.warm...)
				testutil.MustCode(t, "learn", learner.Sysprof(t, append([]string{"learn", "-p", profile, "--"}, c.argv...)...), 0)

				// One work tree, used in turn by the unsandboxed and the enforced run: paths in
				// the outputs (cargo's dep-info) are then the same.
				b := newBox(t, root, "x", "alice", "project", "")
				var wrap []string
				if user != "root" {
					wrap = []string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"}
				}
				prepare := func() {
					if err := os.RemoveAll(b.Work); err != nil {
						t.Fatal(err)
					}
					testutil.NewBox(t, b)
					if c.setup != nil {
						c.setup(t, b)
					}
					if user != "root" {
						chownTree(t, root, 65534)
						openForNobody(t, root)
					}
					testutil.MustCode(t, "warm-up run", b.Run(t, append(slices.Clone(wrap), c.warm...)...), 0)
					testutil.WriteFile(t, filepath.Join(b.Work, c.stale), "stale\n", 0o644)
					if user != "root" {
						chownTree(t, b.Work, 65534)
					}
				}
				prepare()
				want := b.Run(t, append(slices.Clone(wrap), c.argv...)...)
				testutil.MustCode(t, "unsandboxed", want, 0)
				wantTree := snapshotTree(t, b.Work, c.namesOnly, c.skip)

				prepare()
				rep := filepath.Join(root, "report.json")
				got := b.Run(t, append(append(slices.Clone(wrap), testutil.SysprofBin, "enforce", "-p", profile, "--report", rep, "--"), c.argv...)...)
				testutil.MustCode(t, "enforce", got, 0)
				testutil.RequireNoDenials(t, "enforce", rep, got)
				if norm(got.Stdout) != norm(want.Stdout) {
					t.Errorf("enforce output differs from the unsandboxed run:\n--- enforced:\n%s\n--- unsandboxed:\n%s", got.Stdout, want.Stdout)
				}
				if ch := testutil.ReadReport(t, rep).Changes; ch != nil {
					for _, h := range ch.Held {
						t.Errorf("enforce: change held (%s, %s): %s %s: %s", h.Class, h.State, h.Op, h.Path, h.Reason)
					}
				}
				gotTree := snapshotTree(t, b.Work, c.namesOnly, c.skip)
				for _, d := range diffTrees(wantTree, gotTree) {
					t.Errorf("work tree after enforce differs from the unsandboxed run's: %s", d)
				}
				if _, err := os.Lstat(filepath.Join(b.Work, c.stale)); err == nil && !c.keepStale {
					t.Errorf("%s, removed with its directory by the command, is still on the host", c.stale)
				}
			})
		}
	}
}

var timingRe = regexp.MustCompile(`in [0-9.]+m?s`)

func norm(s string) string { return timingRe.ReplaceAllString(s, "in TIME") }

// snapshotTree describes every entry below dir: type, permission bits, and a file's content
// hash or a link's target (below namesOnly: type only; below skip: nothing).
func snapshotTree(t *testing.T, dir string, namesOnly, skip []string) map[string]string {
	t.Helper()
	out := map[string]string{}
	under := func(rel string, ds []string) bool {
		return slices.ContainsFunc(ds, func(d string) bool { return rel == d || strings.HasPrefix(rel, d+"/") })
	}
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "." {
			return nil
		}
		if under(rel, skip) {
			if e.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		fi, err := e.Info()
		if err != nil {
			return err
		}
		desc := fi.Mode().Type().String()
		if !under(rel, namesOnly) {
			desc = fi.Mode().String()
			switch {
			case fi.Mode().IsRegular():
				bs, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				desc += fmt.Sprintf(" %x", sha256.Sum256(bs))
			case fi.Mode()&fs.ModeSymlink != 0:
				l, _ := os.Readlink(p)
				desc += " -> " + l
			}
		}
		out[rel] = desc
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// diffTrees lists what differs between two snapshots.
func diffTrees(want, got map[string]string) []string {
	var out []string
	for p, w := range want {
		if g, ok := got[p]; !ok {
			out = append(out, "missing "+p)
		} else if g != w {
			out = append(out, fmt.Sprintf("%s: %s, want %s", p, g, w))
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			out = append(out, "extra "+p)
		}
	}
	slices.Sort(out)
	return out
}
