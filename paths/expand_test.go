package paths

import (
	"math/rand/v2"
	"strings"
	"testing"
)

func TestExpand(t *testing.T) {
	v := map[string]string{"HOME": "/home/bob", "WORKDIR": "/srv/x", "TMPDIR": "/tmp", "REL": "rel"}
	for _, c := range []struct{ in, want, err string }{
		{"$HOME/.gitconfig", "/home/bob/.gitconfig", ""},
		{"${HOME}/.gitconfig", "/home/bob/.gitconfig", ""},
		{"$WORKDIR", "/srv/x", ""},
		{"$TMPDIR/go-build*", "/tmp/go-build*", ""},
		{"$WORKDIR/**/.env", "/srv/x/**/.env", ""},
		{"/usr//lib/", "/usr/lib", ""},
		{"$GOPATH/bin", "", "$GOPATH is not set"},
		{"$REL/x", "", "not absolute"},
		{"${HOME/x", "", "unterminated"},
		{"usr/lib", "", "neither absolute"},
	} {
		got, err := Expand(c.in, v)
		switch {
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("Expand(%q) = %q, %v; want %q", c.in, got, err, c.want)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("Expand(%q) = %q, %v; want an error with %q", c.in, got, err, c.err)
		}
	}
}

func TestKnown(t *testing.T) {
	for _, p := range []string{"/", "/usr", "$HOME", "$HOME/x", "$NPM_CACHE/_cacache", "$GOPATH/pkg"} {
		if !Known(p) {
			t.Errorf("Known(%q) = false", p)
		}
	}
	for _, p := range []string{"", "usr", "$CACHE/x", "$HOMEX", "$HOME.x", "${HOME}/x", "~/x"} {
		if Known(p) {
			t.Errorf("Known(%q) = true", p)
		}
	}
}

func TestPortable(t *testing.T) {
	rs := NewRoots(map[string]string{
		"WORKDIR": "/home/a/src/p", "HOME": "/home/a", "TMPDIR": "/tmp", "GOCACHE": "/home/a/.cache/go-build",
		"GOPATH": "/home/a/go", "GOMODCACHE": "/home/a/go/pkg/mod", "CARGO_HOME": "rel", "GOROOT": "/",
	})
	for _, c := range []struct{ in, want string }{
		{"/home/a/src/p/main.go", "$WORKDIR/main.go"},
		{"/home/a/src/p", "$WORKDIR"},
		{"/home/a/src/px", "$HOME/src/px"},
		{"/home/a/.cache/go-build/ab", "$GOCACHE/ab"},
		{"/home/a/go/pkg/mod/x@v1", "$GOMODCACHE/x@v1"},
		{"/home/a/go/bin/tool", "$GOPATH/bin/tool"},
		{"/home/a//x/", "$HOME/x"},
		{"/usr/bin/cc", "/usr/bin/cc"}, // GOROOT=/ is no root
		{"rel/x", "rel/x"},
	} {
		if got := rs.Portable(c.in); got != c.want {
			t.Errorf("Portable(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	// Equal values: the more specific name.
	if got := NewRoots(map[string]string{"HOME": "/h", "WORKDIR": "/h", "TMPDIR": "/h"}).Portable("/h/x"); got != "$WORKDIR/x" {
		t.Errorf("WORKDIR = TMPDIR = HOME: Portable = %q, want $WORKDIR/x", got)
	}
}

// TestRoundTrip: portable → expand → portable gives the portable path back, and host → portable
// → expand the host path, for random paths under random, overlapping roots.
func TestRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	dirs := []string{"/h", "/h/a", "/h/a/b", "/h/.cache", "/h/.cache/go-build", "/t", "/w", "/h/go", "/h/go/pkg/mod"}
	comps := []string{"a", "b", "x", ".cache", "go-build", "go", "pkg", "mod"}
	for i := 0; i < 20000; i++ {
		values := map[string]string{}
		for _, n := range Names() {
			if r.IntN(4) > 0 {
				values[n] = dirs[r.IntN(len(dirs))]
			}
		}
		rs := NewRoots(values)
		host := dirs[r.IntN(len(dirs))]
		for n := r.IntN(4); n > 0; n-- {
			host += "/" + comps[r.IntN(len(comps))]
		}
		port := rs.Portable(host)
		back, err := Expand(port, values)
		if err != nil || back != host {
			t.Fatalf("values %v: %s → %s → %s, %v", values, host, port, back, err)
		}
		if again := rs.Portable(back); again != port {
			t.Fatalf("values %v: %s → %s → %s → %s", values, host, port, back, again)
		}
	}
}
