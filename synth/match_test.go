package synth

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/trace"
)

type policyPathRule = policy.PathRule

func TestCovers(t *testing.T) {
	for _, c := range []struct {
		pat, p string
		want   bool
	}{
		{"/usr", "/usr", true},
		{"/usr", "/usr/lib/libc.so.6", true},
		{"/usr", "/usrx", false},
		{"/usr/lib", "/usr", false},
		{"/", "/etc/passwd", true},
		{"/tmp/go-build*", "/tmp/go-build123/b001/x.a", true},
		{"/tmp/go-build*", "/tmp/go-buil/x", false},
		{"/tmp/go-build*", "/tmp/go-build*", true},
		{"/tmp/go-build*", "/tmp/go-build*/b001", true},
		{"/tmp/cc*.o", "/tmp/ccAbC123.o", true},
		{"/tmp/cc*.o", "/tmp/ccAbC123.s", false},
		{"/w/**/.env", "/w/.env", true},
		{"/w/**/.env", "/w/a/b/.env", true},
		{"/w/**/.env", "/w/a/b/.env/inner", true},
		{"/w/**/.env", "/w/a/.envrc", false},
		{"/w/**/.env.*", "/w/config/.env.production", true},
		{"/w/**/.env.*", "/w/.env", false},
		{"/proc/*/status", "/proc/42/status", true},
		{"/proc/*/status", "/proc/42/stat", false},
		{"/a/*b*c", "/a/xxbyyc", true},
		{"/a/*b*c", "/a/xxbyy", false},
		{"/a/[x]", "/a/[x]", true},           // only * is special
		{"/*/.env/*", "$HOME/.env/x", false}, // a glob never matches a variable
		{"/**/x", "$HOME/x", false},
		{"/", "$HOME/x", true},
		{"$HOME", "$HOMEX/y", false},
		{"$HOME/*", "$HOME/a", true},
		{"$TMPDIR/go-build*", "/tmp/go-build1", false}, // different domains: expand first
		{"/a/[x]", "/a/x", false},
	} {
		if got := Covers(c.pat, c.p); got != c.want {
			t.Errorf("Covers(%q, %q) = %v, want %v", c.pat, c.p, got, c.want)
		}
	}
}

func TestAllows(t *testing.T) {
	p := &policy.Profile{Filesystem: policy.Filesystem{
		Read:   []policy.PathRule{{Path: "$WORKDIR"}, {Path: "/usr"}, {Path: "$HOME"}, {Path: "/proc/self/status"}},
		Write:  []policy.PathRule{{Path: "$WORKDIR/target"}, {Path: "$TMPDIR/go-build*"}},
		Exec:   []policy.PathRule{{Path: "/usr/bin/cc"}},
		List:   []policy.PathRule{{Path: "/"}},
		Hidden: []policy.PathRule{{Path: "$HOME/.ssh"}, {Path: "$WORKDIR/**/.env"}, {Path: "$UNKNOWN/x"}},
	}}
	ctx := map[string]string{"WORKDIR": "/w", "HOME": "/h", "TMPDIR": "/tmp"}
	for _, c := range []struct {
		a    Access
		want bool
	}{
		{Access{Kind: trace.AccessRead, Path: "/w/src/main.rs"}, true},
		{Access{Kind: trace.AccessList, Path: "/w/src"}, true},
		{Access{Kind: trace.AccessWrite, Path: "/w/src/main.rs"}, false},
		{Access{Kind: trace.AccessRead, Path: "/w/target/debug/x"}, true}, // write implies read
		{Access{Kind: trace.AccessCreate, Path: "/w/target/debug/x"}, true},
		{Access{Kind: trace.AccessDelete, Path: "/tmp/go-build42/b001"}, true},
		{Access{Kind: trace.AccessExec, Path: "/usr/bin/cc"}, true},
		{Access{Kind: trace.AccessExec, Path: "/usr/bin/ld"}, false},
		{Access{Kind: trace.AccessRead, Path: "/h/.ssh/id_rsa"}, false}, // hidden beats $HOME
		{Access{Kind: trace.AccessMetadata, Path: "/h/.ssh/id_rsa"}, false},
		{Access{Kind: trace.AccessMetadata, Path: "/etc/shadow"}, true}, // visible, not readable
		{Access{Kind: trace.AccessRead, Path: "/etc/shadow"}, false},
		{Access{Kind: trace.AccessList, Path: "/etc"}, true}, // list: names only
		{Access{Kind: trace.AccessRead, Path: "/etc"}, false},
		{Access{Kind: trace.AccessList, Path: "/h/.ssh"}, false},
		{Access{Kind: trace.AccessRead, Path: "/w/deploy/.env"}, false},
		{Access{Kind: trace.AccessRead, Path: "/proc/77/status", PID: 77}, true},
		{Access{Kind: trace.AccessRead, Path: "/proc/78/status", PID: 77}, false},
		{Access{Kind: "bogus", Path: "/w/x"}, false},
	} {
		if got := Allows(p, ctx, c.a); got != c.want {
			t.Errorf("Allows(%s %s) = %v, want %v", c.a.Kind, c.a.Path, got, c.want)
		}
	}
	// A rule whose variable the context lacks covers nothing.
	if Allows(p, map[string]string{"HOME": "/h"}, Access{Kind: trace.AccessRead, Path: "$WORKDIR/x"}) {
		t.Error("unexpanded $WORKDIR rule matched")
	}
}

func TestName(t *testing.T) {
	for _, c := range []struct {
		cmd  []string
		want string
	}{
		{[]string{"cargo", "build"}, "cargo-build"},
		{[]string{"cargo", "build", "--release"}, "cargo-build"},
		{[]string{"go", "build", "-o", "hello", "."}, "go-build"},
		{[]string{"go", "test", "./..."}, "go-test"},
		{[]string{"/usr/bin/npm", "run", "build"}, "npm-run-build"},
		{[]string{"npm", "run", "build", "extra"}, "npm-run-build"},
		{[]string{"make", "-j8"}, "make"},
		{[]string{"env", "FOO=bar", "make"}, "env-make"},
		{[]string{"./configure"}, "configure"},
		{[]string{"My Tool!", "Do It"}, "my-tool-do-it"},
		{[]string{".hidden"}, "hidden"},
		{[]string{"/"}, "profile"},
		{nil, "profile"},
		{[]string{"x", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}, "x-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"},
	} {
		if got := Name(c.cmd); got != c.want {
			t.Errorf("Name(%q) = %q, want %q", c.cmd, got, c.want)
		}
		if got := Name(c.cmd); len(got) > maxNameLen {
			t.Errorf("Name(%q) = %q: longer than %d", c.cmd, got, maxNameLen)
		}
	}
}

// coversModel is the plain, split-based statement of Covers that the in-place matcher must
// agree with.
func coversModel(pat, p string) bool {
	if pat == p {
		return true
	}
	if pv, vv := strings.HasPrefix(pat, "$"), strings.HasPrefix(p, "$"); pat != "/" && (pv || vv) {
		if !pv || !vv || firstComp(pat) != firstComp(p) {
			return false
		}
	}
	if !strings.Contains(pat, "*") {
		return pat == "/" || strings.HasPrefix(p, pat+"/")
	}
	split := func(p string) []string {
		if p == "/" {
			return nil
		}
		return strings.Split(strings.TrimPrefix(p, "/"), "/")
	}
	var comps func(pat, p []string) bool
	comps = func(pat, p []string) bool {
		for len(pat) > 0 {
			if pat[0] == "**" {
				for i := 0; i <= len(p); i++ {
					if comps(pat[1:], p[i:]) {
						return true
					}
				}
				return false
			}
			if len(p) == 0 || !globModel(pat[0], p[0]) {
				return false
			}
			pat, p = pat[1:], p[1:]
		}
		return true
	}
	return comps(split(pat), split(p))
}

func globModel(pat, s string) bool {
	if !strings.Contains(pat, "*") {
		return pat == s
	}
	parts := strings.Split(pat, "*")
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, mid := range parts[1 : len(parts)-1] {
		i := strings.Index(s, mid)
		if i < 0 {
			return false
		}
		s = s[i+len(mid):]
	}
	return len(s) >= len(last) && strings.HasSuffix(s, last)
}

// TestCoversModel checks Covers against coversModel on random short paths built from an
// alphabet that makes empty components, globs, `**`, variables and near-misses likely.
func TestCoversModel(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	pieces := []string{"/", "/", "/", "a", "b", "ab", "*", "**", "$H", "$HX", ".env", "*b", "a*", "a*b", "x.env.y", ""}
	gen := func() string {
		var b strings.Builder
		for n := r.IntN(7); n >= 0; n-- {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		return b.String()
	}
	for i := 0; i < 200000; i++ {
		pat, p := gen(), gen()
		if i%3 == 0 {
			p = pat + gen()
		}
		if got, want := Covers(pat, p), coversModel(pat, p); got != want {
			t.Fatalf("Covers(%q, %q) = %v, the model says %v", pat, p, got, want)
		}
	}
}
