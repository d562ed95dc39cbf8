package guard

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/report"
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
	if resolvePath("/a/../b", "/x") != "/b" || resolvePath("", "/x") != "/x" || resolvePath("", "") != "" || tl.components(0) != "" {
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

// A failed hard link of a writable file to a random name in a read-only directory (pnpm's
// probe for where its store can live: /_tmp_<pid>_<hex>) is no denial; a link to a chosen
// name, of a file the tool may not write, or failing for another reason, is.
func TestGuardLinkProbe(t *testing.T) {
	g := &Guard{cfg: Config{Landlock: &sandbox.Landlock{Read: []string{"/"}, Write: []string{"/w"}}}}
	erofs, eacces, exdev := -int32(unix.EROFS), -int32(unix.EACCES), -int32(unix.EXDEV)
	for _, c := range []struct {
		ret      int32
		from, to string
		want     bool
	}{
		{erofs, "/w/_tmp_9_8acf2942ebd4d7cf8030f088e15e1553", "/_tmp_9_e8f320ac314ec97475791223ef510ecb", true},
		{eacces, "/w/_tmp_31337_8acf2942ebd4d7cf8030f088e15e1553", "/home/_tmp_31337_e8f320ac314ec97475791223ef510ecb", true},
		{erofs, "/w/payload", "/usr/bin/evil", false},                                         // a chosen name
		{erofs, "/home/u/.ssh/id_ed25519", "/_tmp_9_e8f320ac314ec97475791223ef510ecb", false}, // not the tool's to write
		{exdev, "/w/_tmp_9_8acf2942ebd4d7cf8030f088e15e1553", "/_tmp_9_e8f320ac314ec97475791223ef510ecb", false},
	} {
		if got := g.linkProbe(c.ret, c.from, c.to); got != c.want {
			t.Errorf("linkProbe(%d, %s, %s) = %v, want %v", c.ret, c.from, c.to, got, c.want)
		}
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

// The guard asks for a caller's parent chain (a walk of /proc) only for a denial it will list:
// a repeat, or one past MaxDistinct, is only counted.
func TestGuardKnownOnlyForRepeats(t *testing.T) {
	g := &Guard{index: map[string]int{}, cfg: Config{MaxDistinct: 2}}
	d := report.Denial{Kind: report.KindFile, What: "/etc/x write (openat: EROFS)", Exe: "/usr/bin/x", Suggest: "filesystem.write: + /etc/x", Count: 1}
	if g.known(d) {
		t.Fatal("a first denial is known")
	}
	g.record(d)
	if !g.known(d) {
		t.Error("a repeat is not known")
	}
	other := d
	other.Exe = "/usr/bin/y"
	if g.known(other) {
		t.Error("another executable's denial is known")
	}
	g.record(other)
	other.What, other.Suggest = "/etc/y write (openat: EROFS)", "filesystem.write: + /etc/y"
	if !g.known(other) {
		t.Error("a denial past MaxDistinct of a kind listed already (only counted) is not known")
	}
	// Past MaxDistinct a new kind is still listed (up to twice as many): a write to a protected
	// path after a flood of other writes.
	hook := d
	hook.What, hook.Suggest = "/w/.git/hooks/pre-commit write (openat: EROFS)", "filesystem.write: + $WORKDIR/.git/hooks/pre-commit"
	if g.known(hook) {
		t.Error("a write to a protected path past MaxDistinct is only counted")
	}
	g.record(hook)
	other.Exe = "/usr/bin/z"
	g.record(other)
	other.Exe = "/usr/bin/w"
	if !g.known(other) {
		t.Error("a denial past twice MaxDistinct is not only counted")
	}
}
