package e2e

import (
	"os/user"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
)

// TestSudoInUsersTree: sysprof run through sudo as sudo runs it by default (env_reset: HOME,
// USER and LOGNAME root's) in a work tree the invoking user owns. The command is that user
// (sandbox "sudo"), to whom root's home is closed: its HOME is the user's, from the password
// database, so git reads no config under /root (EACCES on every run, a "high" denial). The
// git output is root's unsandboxed, zero denials, and the report says which HOME it got.
func TestSudoInUsersTree(t *testing.T) {
	testutil.RequireRoot(t)
	const uid = 65534
	u, err := user.LookupId("65534")
	if err != nil {
		t.Fatalf("the password database has no uid %d: %v", uid, err)
	}
	rootHome := "/root"
	if r, err := user.LookupId("0"); err == nil {
		rootHome = r.HomeDir
	}
	root := t.TempDir()
	b := newBox(t, root, "x", "alice", filepath.Join("src", "project"), "")
	gitRepo(t, b)
	openForNobody(t, root)
	for _, d := range []string{b.Work, b.Tmp} {
		chownTree(t, d, uid)
	}
	b.Extra = append(b.Extra, "SUDO_UID=65534", "SUDO_GID=65534", "SUDO_USER="+u.Username, "SUDO_COMMAND=/usr/bin/sysprof",
		"HOME="+rootHome, "USER=root", "LOGNAME=root")
	const show = `git status --short && git log --format=%s && echo "home $HOME $USER"`
	argv := []string{"sh", "-c", show}
	profile := filepath.Join(root, "profile.yaml")
	testutil.MustCode(t, "learn", b.Sysprof(t, append([]string{"learn", "-p", profile, "--"}, argv...)...), 0)

	want := b.Run(t, argv...)
	if want.Code != 0 || !strings.HasSuffix(want.Stdout, "home "+rootHome+" root\n") {
		t.Fatalf("control: unsandboxed: %s", want)
	}
	rep := filepath.Join(root, "report.json")
	got := b.Sysprof(t, append([]string{"enforce", "-p", profile, "--report", rep, "--"}, argv...)...)
	wantOut := strings.TrimSuffix(want.Stdout, "home "+rootHome+" root\n") + "home " + u.HomeDir + " " + u.Username + "\n"
	if got.Code != 0 || got.Stdout != wantOut || strings.Contains(got.Stderr, rootHome+"/") {
		t.Errorf("enforce under sudo in the user's tree: want exit 0, stdout %q and nothing read under %s:\n%s", wantOut, rootHome, got)
	}
	r := testutil.ReadReport(t, rep)
	for _, d := range r.Denials {
		t.Errorf("denial: [%s] %s by %s (%s): suggest %q", d.Kind, d.What, d.Exe, d.Risk, d.Suggest)
	}
	note := "environment: HOME=" + u.HomeDir + ", the command's user's"
	if !strings.Contains(strings.Join(r.Notes, "\n"), note) {
		t.Errorf("the report does not say which HOME the command got (%q): %q", note, r.Notes)
	}
}
