package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/internal/testutil"
)

// TestOverlayTreeOfItsOwner (issue 24): a work tree of an ordinary user's on an overlay mount
// that is not / (a CI runner's checkout in a container) cannot be idmapped, so a root enforce
// runs the command as the tree's owner (sandbox "root-owner"), not as sandbox.RootUID to whom
// the tree is nobody's. A build and a git commit in it, as root and as that user: the output of
// the run unsandboxed, zero denials, drift finds nothing, and what root's run made is the
// owner's on disk.
func TestOverlayTreeOfItsOwner(t *testing.T) {
	testutil.RequireRoot(t)
	const owner = 65534
	root := t.TempDir()
	b := newBox(t, root, "x", "alice", filepath.Join("src", "project"), "")
	testutil.WriteFile(t, filepath.Join(b.Work, "hello.c"), "#include <stdio.h>\nint main(void){puts(\"hello\");return 0;}\n", 0o644)
	gitRepo(t, b)
	// Root unsandboxed would refuse the user's repository (dubious ownership): trusted for
	// both, so that the two runs compare.
	testutil.WriteFile(t, filepath.Join(b.Home, ".gitconfig"), "[safe]\n\tdirectory = *\n", 0o644)
	openForNobody(t, root)
	for _, d := range []string{b.Work, b.Home, b.Tmp} {
		chownTree(t, d, owner)
	}

	o := filepath.Join(root, "ovl")
	merged := filepath.Join(o, "project")
	// fresh mounts a new overlay over the tree (an empty upper of the owner's, which the
	// merged root takes its owner from): every run starts from the same tree.
	fresh := func() {
		t.Helper()
		if mounted(merged) {
			testutil.RequireNoErr(t, "unmount the overlay", unix.Unmount(merged, unix.MNT_DETACH))
		}
		for _, d := range []string{"upper", "work"} {
			testutil.RequireNoErr(t, "clear the overlay", os.RemoveAll(filepath.Join(o, d)))
		}
		for _, d := range []string{"upper", "work", "project"} {
			testutil.RequireNoErr(t, "make the overlay's dirs", os.MkdirAll(filepath.Join(o, d), 0o755))
		}
		testutil.RequireNoErr(t, "chown the upper", os.Chown(filepath.Join(o, "upper"), owner, owner))
		opts := "lowerdir=" + b.Work + ",upperdir=" + filepath.Join(o, "upper") + ",workdir=" + filepath.Join(o, "work")
		testutil.RequireNoErr(t, "mount an overlay", unix.Mount("overlay", merged, "overlay", 0, opts))
	}
	t.Cleanup(func() {
		if mounted(merged) {
			_ = unix.Unmount(merged, unix.MNT_DETACH)
		}
	})
	c := *b
	c.Work = merged
	// The user's PATH: root's own entries (/root/.cargo/bin, mode 0700 above) are closed to
	// the owner, and cc looking for `as` there would meet EACCES where root meets ENOENT.
	c.Path = "/usr/local/bin:/usr/bin:/bin"
	argv := []string{"sh", "-c", "cc -o hello hello.c && ./hello && git status --short && git add -A && git commit -q -m build && git rev-list --count HEAD"}

	profile := filepath.Join(root, "profile.yaml")
	fresh()
	testutil.MustCode(t, "learn", c.Sysprof(t, append([]string{"learn", "-p", profile, "--"}, argv...)...), 0)
	testutil.RequireNoErr(t, "let the user read the profile", os.Chmod(profile, 0o644))

	for _, as := range []struct {
		name string
		wrap []string
	}{
		{"root", nil},
		{"nobody", []string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"}},
	} {
		t.Run(as.name, func(t *testing.T) {
			fresh()
			want := c.Run(t, slices.Concat(as.wrap, argv)...)
			if want.Code != 0 || !strings.Contains(want.Stdout, "hello") {
				t.Fatalf("control: unsandboxed: %s", want)
			}
			fresh()
			rep := filepath.Join(root, "report-"+as.name+".json")
			got := c.Run(t, slices.Concat(as.wrap, []string{testutil.SysprofBin, "enforce", "-p", profile, "--report", rep, "--"}, argv)...)
			if got.Code != want.Code || got.Stdout != want.Stdout {
				t.Errorf("enforced (exit %d) differs from unsandboxed (exit %d):\n--- enforced:\n%s\n--- unsandboxed:\n%s", got.Code, want.Code, got, want)
			}
			for _, d := range testutil.ReadReport(t, rep).Denials {
				t.Errorf("denial: [%s] %s by %s: suggest %q", d.Kind, d.What, d.Exe, d.Suggest)
			}
			// What the command made is the tree owner's on disk (not root's, not RootUID's).
			var st unix.Stat_t
			if err := unix.Lstat(filepath.Join(o, "upper", "hello"), &st); err != nil || st.Uid != owner || st.Gid != owner {
				t.Errorf("the built file in the overlay's upper: %v, uid/gid %d/%d, want %d", err, st.Uid, st.Gid, owner)
			}
			if as.wrap != nil {
				return // drift learns: eBPF needs root
			}
			fresh()
			dr := c.Sysprof(t, append([]string{"drift", "--fail-on", "low", "-p", profile, "--"}, argv...)...)
			if dr.Code != 0 {
				t.Errorf("drift widened (exit %d):\n%s%s", dr.Code, dr.Stdout, strings.TrimSpace(dr.Stderr))
			}
		})
	}

	// A tree of root's there: no uid but host 0 owns it, so the run refuses, saying what to
	// do, unless --degrade=userns accepts host uid 0 (without capabilities, in a user
	// namespace); never silently as RootUID, to whom the tree is nobody's.
	t.Run("roots-tree", func(t *testing.T) {
		chownTree(t, b.Work, 0)
		fresh()
		testutil.RequireNoErr(t, "chown the upper", os.Chown(filepath.Join(o, "upper"), 0, 0))
		r := c.Sysprof(t, append([]string{"enforce", "-p", profile, "--"}, argv...)...)
		if r.Code == 0 || !strings.Contains(r.Stderr, "the work tree is root's") || !strings.Contains(r.Stderr, "--degrade=userns") {
			t.Errorf("enforce in root's tree on an overlay: want a refusal naming the tree and --degrade=userns: %s", r)
		}
		if _, err := os.Lstat(filepath.Join(o, "upper", "hello")); err == nil {
			t.Error("the refused run wrote the tree")
		}
		want := c.Run(t, argv...)
		fresh()
		testutil.RequireNoErr(t, "chown the upper", os.Chown(filepath.Join(o, "upper"), 0, 0))
		got := c.Sysprof(t, append([]string{"enforce", "--degrade=userns", "-p", profile, "--"}, argv...)...)
		if got.Code != want.Code || got.Stdout != want.Stdout {
			t.Errorf("enforce --degrade=userns (exit %d) differs from unsandboxed (exit %d):\n%s\n%s", got.Code, want.Code, got, want)
		}
	})
}
