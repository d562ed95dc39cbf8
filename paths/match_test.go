package paths

import (
	"math/rand/v2"
	"path"
	"strings"
	"testing"
)

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
		{"/a/[x]", "/a/[x]", true},           // a name matches itself
		{"/*/.env/*", "$HOME/.env/x", false}, // a glob never matches a variable
		{"/**/x", "$HOME/x", false},
		{"/", "$HOME/x", true},
		{"$HOME", "$HOMEX/y", false},
		{"$HOME/*", "$HOME/a", true},
		{"$TMPDIR/go-build*", "/tmp/go-build1", false}, // different domains: expand first
		{"/a/[x]", "/a/x", true},                       // and [...] is a class, as in path.Match
		{"/a/[x]", "/a/y", false},
		{"/a/b?", "/a/bc/d", true},
		{"/a/b?", "/a/b", false},
		{"$HOME/.cargo/credentials*", "$HOME/.cargo/credentials.toml", true},
		{"$HOME/.cargo/credentials*", "$HOME/.cargo/registry", false},
		{"$WORKDIR/.env.*", "$WORKDIR/.env.local", true},
		{"$WORKDIR", "$HOME", false},
		{"$WORKDIR/**/.env", "$WORKDIR/.env", true},
		{"$WORKDIR/**/.env", "$WORKDIR/a/b/.env", true},
		{"$WORKDIR/**", "$WORKDIR", true},
		{"**", "$HOME/x", false},
		{"/**", "/usr/lib", true},
		{"/usr/**/*.so", "/usr/lib/x/libc.so", true},
		{"/usr/**/*.so", "/usr/lib/x/libc.so.6", false},
	} {
		if got := Covers(c.pat, c.p); got != c.want {
			t.Errorf("Covers(%q, %q) = %v, want %v", c.pat, c.p, got, c.want)
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
	if !strings.ContainsAny(pat, "*?[") {
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
	if pat == s {
		return true
	}
	if strings.ContainsAny(pat, "?[") {
		ok, err := path.Match(pat, s)
		return err == nil && ok
	}
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
	pieces := []string{"/", "/", "/", "a", "b", "ab", "*", "**", "$H", "$HX", ".env", "*b", "a*", "a*b", "x.env.y", "", "?", "[ab]", "a?"}
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

func TestCredentialStore(t *testing.T) {
	for _, c := range []struct{ p, want string }{
		{"$HOME/.ssh/id_ed25519", "$HOME/.ssh"},
		{"$WORKDIR/.env", "$WORKDIR/.env"},
		{"$WORKDIR/services/api/.env", "$WORKDIR/**/.env"},
		{"$WORKDIR/services/.env.production", "$WORKDIR/**/.env.*"},
		{"$CARGO_HOME/credentials.toml", "$CARGO_HOME/credentials*"},
		{"$HOME/.pgpass", "$HOME/.pgpass"},
		// The session's secrets (issue 23's sixth supply-chain round): hidden inside a rule
		// that reads $HOME/.config or $HOME whole.
		{"$HOME/.config/google-chrome/Default/Login Data", "$HOME/.config/google-chrome"},
		{"$HOME/.mozilla/firefox/p.default/logins.json", "$HOME/.mozilla"},
		{"$HOME/.bash_history", "$HOME/.bash_history"},
		{"$HOME/.config/gh/hosts.yml", "$HOME/.config/gh"},
		{"$HOME/.config/go/env", ""},
		{"$WORKDIR/.envrc", ""},
		{"$HOME/.sshx", ""},
		{"/home/a/.ssh", ""}, // portable forms only
	} {
		if got := CredentialStore(c.p); got != c.want {
			t.Errorf("CredentialStore(%q) = %q, want %q", c.p, got, c.want)
		}
	}
}
