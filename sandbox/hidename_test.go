package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestSplitForHidden(t *testing.T) {
	tree := map[string][]dirEntry{
		"/w":     {{name: ".env"}, {name: ".git", dir: true}, {name: "link", symlink: true}, {name: "out", dir: true}, {name: "src.txt"}, {name: "sub", dir: true}},
		"/w/sub": {{name: ".env"}, {name: "a.go"}},
	}
	list := func(d string) ([]dirEntry, error) {
		if e, ok := tree[d]; ok {
			return e, nil
		}
		return nil, errors.New("no such directory")
	}
	covered := func(p string) bool { return p == "/w/.env" } // /w/sub/.env appeared after the mounts
	show := func(rules []pathRule) string {
		var b []string
		for _, r := range rules {
			b = append(b, fmt.Sprintf("%s %s %s", r.Role, r.Path, fsRightsString(r.Access)))
		}
		return strings.Join(b, "\n")
	}
	read := pathRule{Path: "/w", Role: "read", Access: rightsRead}
	out := pathRule{Path: "/w/out", Role: "write", Access: rightsWrite}

	got, notes := splitForHidden([]pathRule{read, out}, []string{"/w/.env", "/w/sub/.env"}, covered, list)
	want := []string{
		"read /w {read_dir}",
		"read /w/.env {read_file,read_dir}", // the cover
		"read /w/.git {read_file,read_dir}",
		"read /w/out {read_file,read_dir}",
		"read /w/src.txt {read_file,read_dir}",
		"read /w/sub {read_dir}",
		"read /w/sub/a.go {read_file,read_dir}",
		"write /w/out " + fsRightsString(rightsWrite),
	}
	if show(got) != strings.Join(want, "\n") || len(notes) != 0 {
		t.Errorf("got\n%s\nnotes %v\nwant\n%s", show(got), notes, strings.Join(want, "\n"))
	}

	// Nothing to protect: the rules stay as they are.
	if got, _ := splitForHidden([]pathRule{read}, []string{"/home/u/.ssh"}, covered, list); !slices.Equal(got, []pathRule{read}) {
		t.Errorf("unrelated hidden path split the rules:\n%s", show(got))
	}
	// The directory is writable: the tool's own new files must stay readable, so no split,
	// and a note says what is left to the mount (for the one that is there).
	rw := pathRule{Path: "/w", Role: "write", Access: rightsWrite}
	got, notes = splitForHidden([]pathRule{read, rw}, []string{"/w/.env", "/w/.npmrc"}, covered, list)
	if !slices.Equal(got, []pathRule{read, rw}) || len(notes) != 1 || notes[0].Path != "/w/.env" {
		t.Errorf("writable parent: got\n%s\nnotes %v", show(got), notes)
	}
	// A directory that cannot be listed keeps its rule, noted.
	got, notes = splitForHidden([]pathRule{{Path: "/x", Role: "read", Access: rightsRead}}, []string{"/x/.env"}, covered, list)
	if len(got) != 1 || got[0].Path != "/x" || got[0].Access != rightsRead || len(notes) != 1 {
		t.Errorf("unlistable: got\n%s\nnotes %v", show(got), notes)
	}
}

// TestCoverReads: every covered hidden name gets the read rights on its own (the cover's)
// path, so that a hidden secret reads as empty whether or not a rule reaches its directory; a
// hidden name without its cover (the mounts degraded, or a name that does not exist) gets none.
func TestCoverReads(t *testing.T) {
	covered := func(p string) bool { return p != "/h/.netrc" }
	got := coverReads([]string{"/h/.npmrc", "/h/.netrc", "/h/.ssh"}, rightsRead, covered)
	if len(got) != 2 || got[0].Path != "/h/.npmrc" || got[1].Path != "/h/.ssh" || got[0].Access != rightsRead {
		t.Errorf("coverReads = %+v, want read rules on /h/.npmrc and /h/.ssh only", got)
	}
	if got := coverReads([]string{"/h/.npmrc"}, 0, covered); len(got) != 0 {
		t.Errorf("coverReads without read rights handled = %+v, want none", got)
	}
}

// TestIsCover: a file of the host is never taken for a cover (that would give the secret a
// read rule), even on a tmpfs.
func TestIsCover(t *testing.T) {
	f := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(f, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if isCover(f) {
		t.Errorf("isCover(%s) = true for a plain (non-mount-root) file", f)
	}
}
