package e2e

import (
	"os"
	"os/user"
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

	// Root's own HOME (a container's root login, HOME=/root): the command, the tree's owner,
	// cannot read it, so its HOME is the owner's (the password database's) and nothing is
	// read under root's home (git: EACCES on $HOME/.config/git/attributes, a denial).
	t.Run("roots-home", func(t *testing.T) {
		u, err := user.LookupId("65534")
		if err != nil {
			t.Fatalf("the password database has no uid %d: %v", owner, err)
		}
		rootHome := "/root"
		if r, err := user.LookupId("0"); err == nil {
			rootHome = r.HomeDir
		}
		fresh()
		want := c.Run(t, argv...) // trusted through $HOME/.gitconfig's safe.directory, as above
		fresh()
		h := c
		// The run state goes to the test's directory, not root's real home.
		h.Extra = append(slices.Clone(c.Extra), "HOME="+rootHome, "USER=root", "LOGNAME=root", "SYSPROF_STATE_DIR="+filepath.Join(root, "state"))
		rep := filepath.Join(root, "report-roots-home.json")
		got := h.Sysprof(t, append([]string{"enforce", "-p", profile, "--report", rep, "--"}, argv...)...)
		if got.Code != want.Code || got.Stdout != want.Stdout || strings.Contains(got.Stderr, rootHome+"/") {
			t.Errorf("enforce with HOME=%s (exit %d) differs from the run in the owner's HOME (exit %d), or read under it:\n%s\n%s", rootHome, got.Code, want.Code, got, want)
		}
		r := testutil.ReadReport(t, rep)
		for _, d := range r.Denials {
			t.Errorf("denial: [%s] %s by %s (%s)", d.Kind, d.What, d.Exe, d.Risk)
		}
		if !strings.Contains(strings.Join(r.Notes, "\n"), "environment: HOME="+u.HomeDir) {
			t.Errorf("the report does not say the command's HOME (%s): %q", u.HomeDir, r.Notes)
		}
	})

	// A tree of root's there keeps plain root's run (RootUID, to whom the tree shows as
	// nobody's): a build, python3 and node run as unsandboxed, and the run says why git may
	// refuse the repository and what to do. Never refused (CI runners' checkouts in a
	// container are root's), never host uid 0 unasked. --degrade=userns asks for host uid 0
	// (no capabilities, in a user namespace), to whom the tree is its own: git runs.
	t.Run("roots-tree", func(t *testing.T) {
		for _, d := range []string{b.Work, b.Home, b.Tmp} {
			chownTree(t, d, 0)
		}
		// Root's own tree: root trusts it unsandboxed, no safe.directory.
		testutil.RequireNoErr(t, "drop safe.directory", os.Remove(filepath.Join(b.Home, ".gitconfig")))
		rootsFresh := func() {
			t.Helper()
			fresh()
			testutil.RequireNoErr(t, "chown the upper", os.Chown(filepath.Join(o, "upper"), 0, 0))
		}
		const note = "the work tree is root's"
		build := []string{"sh", "-c", "cc -o hello hello.c && ./hello && python3 -c 'print(6*7)' && node -e 'console.log(\"node\")'"}
		git := []string{"sh", "-c", "git status --short && git rev-list --count HEAD"}
		learned := map[string]string{}
		for name, argv := range map[string][]string{"build": build, "git": git} {
			learned[name] = filepath.Join(root, "roots-"+name+".yaml")
			rootsFresh()
			testutil.MustCode(t, "learn "+name, c.Sysprof(t, append([]string{"learn", "-p", learned[name], "--"}, argv...)...), 0)
		}

		rootsFresh()
		want := c.Run(t, build...)
		if want.Code != 0 || want.Stdout != "hello\n42\nnode\n" {
			t.Fatalf("control: unsandboxed: %s", want)
		}
		rootsFresh()
		rep := filepath.Join(root, "report-roots.json")
		got := c.Sysprof(t, append([]string{"enforce", "-p", learned["build"], "--report", rep, "--"}, build...)...)
		if got.Code != 0 || got.Stdout != want.Stdout {
			t.Errorf("enforce in root's tree on an overlay (exit %d) differs from unsandboxed (exit %d):\n%s\n%s", got.Code, want.Code, got, want)
		}
		if !strings.Contains(got.Stderr, note) || !strings.Contains(got.Stderr, "dubious ownership") || !strings.Contains(got.Stderr, "--degrade=userns") {
			t.Errorf("enforce in root's tree on an overlay: want one line on why git may refuse it and what to do:\n%s", got.Stderr)
		}
		r := testutil.ReadReport(t, rep)
		if !slices.ContainsFunc(r.Notes, func(n string) bool { return strings.Contains(n, note) }) {
			t.Errorf("the report does not say why git may refuse the tree: notes %q", r.Notes)
		}
		for _, d := range r.Denials {
			t.Errorf("denial: [%s] %s by %s: suggest %q", d.Kind, d.What, d.Exe, d.Suggest)
		}

		// git: told that this one repository is safe (safe.directory; the command stays
		// RootUID), and --degrade=userns, the note's way out for other tools, works too.
		rootsFresh()
		wantGit := c.Run(t, git...)
		if wantGit.Code != 0 || !strings.HasSuffix(wantGit.Stdout, "\n1\n") {
			t.Fatalf("control: unsandboxed git: %s", wantGit)
		}
		rootsFresh()
		if g := c.Sysprof(t, append([]string{"enforce", "-p", learned["git"], "--"}, git...)...); g.Code != 0 || g.Stdout != wantGit.Stdout ||
			!strings.Contains(g.Stderr, "safe.directory") {
			t.Errorf("git as RootUID in root's tree on an overlay (exit %d) differs from unsandboxed, or the run does not say what it told git:\n%s\n%s", g.Code, g, wantGit)
		}
		rootsFresh()
		g := c.Sysprof(t, append([]string{"enforce", "--degrade=userns", "-p", learned["git"], "--"}, git...)...)
		if g.Code != 0 || g.Stdout != wantGit.Stdout || strings.Contains(g.Stderr, "dubious ownership") {
			t.Errorf("enforce --degrade=userns git (exit %d) differs from unsandboxed, or still says the note:\n%s\n%s", g.Code, g, wantGit)
		}
	})
}
