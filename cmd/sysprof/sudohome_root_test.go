package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/trace"
)

// TestGiveHomeFilesToSudoUser: what a learn's command (root, with the user's HOME under sudo)
// created in that home goes to the user, with the directories it made; a hard link to a
// root-owned file, a file reached through a symlink, the home itself and anything outside it
// stay root's.
func TestGiveHomeFilesToSudoUser(t *testing.T) {
	testutil.RequireRoot(t)
	const uid = 65534
	t.Setenv("SUDO_UID", "65534")
	t.Setenv("SUDO_GID", "65534")
	home := filepath.Join(t.TempDir(), "home")
	outside := filepath.Join(t.TempDir(), "secret")
	writeFile(t, outside, "root's\n")
	linked := filepath.Join(t.TempDir(), "secret")
	writeFile(t, linked, "root's\n")
	cache := filepath.Join(home, ".cache", "tool")
	made := filepath.Join(cache, "entry")
	writeFile(t, made, "x\n")
	hard := filepath.Join(home, "hard")
	if err := os.Link(outside, hard); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Dir(linked), filepath.Join(home, "link")); err != nil {
		t.Fatal(err)
	}
	viaLink := filepath.Join(home, "link", filepath.Base(linked))
	tr := &trace.Trace{Files: []trace.FileAccess{
		{Path: made, Access: trace.AccessCreate, OK: true},
		{Path: hard, Access: trace.AccessWrite, OK: true},
		{Path: viaLink, Access: trace.AccessWrite, OK: true},
		{Path: outside, Access: trace.AccessWrite, OK: true},
		{Path: filepath.Join(home, "failed"), Access: trace.AccessCreate, OK: false},
	}}
	giveHomeFilesToSudoUser(tr, home)
	for _, p := range []string{made, cache, filepath.Dir(cache)} {
		if got := ownerOf(t, p); got != uid {
			t.Errorf("%s: owner %d, want %d (made by the command in the user's home)", p, got, uid)
		}
	}
	for _, p := range []string{home, outside, linked} {
		if got := ownerOf(t, p); got != 0 {
			t.Errorf("%s: owner %d, want root's", p, got)
		}
	}
	// Not under sudo: nothing changes.
	t.Setenv("SUDO_UID", "")
	other := filepath.Join(home, "other")
	writeFile(t, other, "")
	giveHomeFilesToSudoUser(&trace.Trace{Files: []trace.FileAccess{{Path: other, Access: trace.AccessCreate, OK: true}}}, home)
	if got := ownerOf(t, other); got != 0 {
		t.Errorf("%s: owner %d without sudo, want root", other, got)
	}
}
