package paths

import "testing"

func TestAppendOnlyEntry(t *testing.T) {
	for _, c := range []struct {
		p, entry string
		ok       bool
	}{
		{"$CARGO_HOME/registry/src", "", true},
		{"$CARGO_HOME/registry/src/index-1", "", true},
		{"$CARGO_HOME/registry/src/index-1/dep-1.0.0", "$CARGO_HOME/registry/src/index-1/dep-1.0.0", true},
		{"$CARGO_HOME/registry/src/index-1/dep-1.0.0/src/lib.rs", "$CARGO_HOME/registry/src/index-1/dep-1.0.0", true},
		{"$CARGO_HOME/registry/index/x/.cache/de/p/dep", "", false},
		{"$CARGO_HOME/.package-cache", "", false},
		{"$GOMODCACHE/github.com/a/b@v1.0.0/x.go", "$GOMODCACHE/github.com/a/b@v1.0.0", true},
		{"$GOMODCACHE/github.com/a", "", true},
		{"$GOMODCACHE/cache/download/github.com/a/b/@v/v1.0.0.lock", "", false},
		{"$NPM_CACHE/_npx/abc/node_modules/x/index.js", "$NPM_CACHE/_npx/abc", true},
		{"$NPM_CACHE/_cacache/index-v5/ab", "", false},
		{"$HOME/.cache/pip/wheels/ab/cd/x-1.0-py3-none-any.whl", "$HOME/.cache/pip/wheels/ab/cd/x-1.0-py3-none-any.whl", true},
	} {
		_, entry, ok := AppendOnlyEntry(c.p)
		if entry != c.entry || ok != c.ok {
			t.Errorf("AppendOnlyEntry(%s) = %q, %v; want %q, %v", c.p, entry, ok, c.entry, c.ok)
		}
	}
}
