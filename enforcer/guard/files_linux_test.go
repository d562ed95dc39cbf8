package guard

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/sandbox"
)

func TestTailParsing(t *testing.T) {
	// exe components leaf first, then a relative path and its directory's components.
	b := []byte("escape\x00bin\x00usr\x00out/x.txt\x00w\x00tmp\x00")
	tl := newTail(b)
	if got := tl.components(len("escape\x00bin\x00usr\x00")); got != "/usr/bin/escape" {
		t.Errorf("exe %q", got)
	}
	p := tl.str(len("out/x.txt\x00"))
	base := tl.components(len("w\x00tmp\x00"))
	if got := resolvePath(p, base); got != "/tmp/w/out/x.txt" {
		t.Errorf("path %q (p %q base %q)", got, p, base)
	}
	if resolvePath("/a/../b", "/x") != "/b" || resolvePath("", "/x") != "" || tl.components(0) != "" {
		t.Error("absolute or empty paths")
	}
}

func TestOpenAccess(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		flags uint64
		path  string
		want  string
	}{
		{unix.O_RDONLY, dir, "read"},
		{unix.O_RDONLY | unix.O_DIRECTORY, dir, "list"},
		{unix.O_WRONLY, dir, "write"},
		{unix.O_RDWR | unix.O_CREAT, dir, "write"},
		{unix.O_WRONLY | unix.O_CREAT, filepath.Join(dir, "new"), "create"},
		{unix.O_RDONLY | unix.O_TRUNC, dir, "write"},
	} {
		if got := openAccess(c.flags, c.path); got != c.want {
			t.Errorf("flags %#o on %s: %s, want %s", c.flags, c.path, got, c.want)
		}
	}
}

func TestGuardPortableAndLandlockAllows(t *testing.T) {
	g := &Guard{cfg: Config{Vars: map[string]string{"HOME": "/home/u", "WORKDIR": "/home/u/src", "TMPDIR": "/tmp"}}}
	for in, want := range map[string]string{
		"/home/u/src/a.go": "$WORKDIR/a.go",
		"/home/u/.ssh/id":  "$HOME/.ssh/id",
		"/home/u/src":      "$WORKDIR",
		"/home/usr/x":      "/home/usr/x",
		"/usr/bin/true":    "/usr/bin/true",
		"/tmp/x/y":         "$TMPDIR/x/y",
	} {
		if got := g.portable(in); got != want {
			t.Errorf("portable(%s) = %s, want %s", in, got, want)
		}
	}
	g.cfg.Landlock = &sandbox.Landlock{Read: []string{"/usr"}, Write: []string{"/w"}, Exec: []string{"/usr/bin/x"}, List: []string{"/l"}}
	for _, c := range []struct {
		access, path string
		want         bool
	}{
		{"read", "/usr/lib/a", true}, {"read", "/w/a", true}, {"read", "/etc/a", false},
		{"list", "/l/d", true}, {"write", "/usr/a", false}, {"create", "/w/n", true},
		{"exec", "/usr/bin/x", true}, {"exec", "/usr/bin/y", false},
	} {
		if got := g.landlockAllows(c.access, c.path); got != c.want {
			t.Errorf("landlockAllows(%s, %s) = %v", c.access, c.path, got)
		}
	}
	// A rule on / covers everything: an EACCES there is the file's permissions, not Landlock.
	g.cfg.Landlock = &sandbox.Landlock{Read: []string{"/"}}
	if !g.landlockAllows("read", "/etc/shadow") || g.landlockAllows("write", "/etc/shadow") {
		t.Errorf("a Landlock read rule on / must cover /etc/shadow (read only)")
	}
}

// Every hidden path, however many and however long, starts with one of the at most
// hiddenSlots prefixes guard.c compares (the 17th and later ones too), and a few short ones
// are kept exactly.
func TestHiddenPrefixesCoverEveryHiddenPath(t *testing.T) {
	long := "/home/u/" + strings.Repeat("d", 300) + "/.env"
	few := []string{"/home/u/.ssh", "/home/u/.aws", "/home/u/.ssh/id", "/home/u/src/.env"}
	if got := hiddenPrefixes(few); !slices.Equal(got, []string{"/home/u/.aws", "/home/u/.ssh", "/home/u/src/.env"}) {
		t.Errorf("a few hidden paths: %q, want them exactly (a path under another left out)", got)
	}
	for _, n := range []int{hiddenSlots, hiddenSlots + 1, 40, 300} {
		var hidden []string
		for i := range n {
			hidden = append(hidden, fmt.Sprintf("/home/u/.cred%03d", i), fmt.Sprintf("/w/pkg%d/.env", i))
		}
		hidden = append(hidden, long, "relative/x")
		got := hiddenPrefixes(hidden)
		if len(got) > hiddenSlots {
			t.Errorf("%d hidden paths: %d prefixes, guard.c has room for %d", len(hidden), len(got), hiddenSlots)
		}
		for _, p := range got {
			if len(p) > hiddenBytes || !strings.HasPrefix(p, "/") {
				t.Errorf("prefix %q: not an absolute prefix of at most %d bytes", p, hiddenBytes)
			}
		}
		for _, h := range hidden[:len(hidden)-1] {
			if !slices.ContainsFunc(got, func(p string) bool { return strings.HasPrefix(h, p) }) {
				t.Errorf("%d hidden paths: %s starts with none of %q", len(hidden), h, got)
			}
		}
	}
}
