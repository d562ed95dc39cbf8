package paths

import "strings"

// AppendOnlyCache is a tool cache whose entries every later build, of every project, uses
// again without checking them (issue 23): a run may add entries, never rewrite one the host
// has. The enforcer stages such a tree rather than binding it writable, and changeset.Classify
// holds a change to an existing entry as dangerous.
type AppendOnlyCache struct {
	Tree string // portable
	// Entry is how many components below Tree name one entry (a crate's extracted directory is
	// two: the registry's directory, then NAME-VERSION); 0: every file is an entry of its own.
	Entry int
	// AtVersion: an entry ends at the first component holding '@' (Go's module@version).
	AtVersion bool
	// Skip are subtrees (portable) that are not entries (Go's download cache of lock files).
	Skip []string
	// Rewritten are files (relative to an entry) the tool itself rewrites in an entry it uses
	// (npm's lock files of an npx package, on every npx): its bookkeeping, not code it runs.
	Rewritten []string
	Why       string
}

// AppendOnlyCaches is the one list of append-only tool caches.
var AppendOnlyCaches = []AppendOnlyCache{
	{Tree: "$CARGO_HOME/registry/src", Entry: 2, Why: "cargo's extracted crate sources, compiled by every later build without a new check"},
	{Tree: "$CARGO_HOME/registry/cache", Entry: 2, Why: "cargo's downloaded crates, extracted again without a new check"},
	{Tree: "$CARGO_HOME/git/checkouts", Entry: 2, Why: "cargo's checkouts of git dependencies, compiled by every later build"},
	{Tree: "$GOMODCACHE", AtVersion: true, Skip: []string{"$GOMODCACHE/cache"}, Why: "go's extracted modules, compiled by every later build without a new check"},
	{Tree: "$NPM_CACHE/_npx", Entry: 1, Rewritten: []string{"package-lock.json", "node_modules/.package-lock.json"}, Why: "the packages the next npx runs"},
	{Tree: "$HOME/.cache/pip/wheels", Why: "the wheels pip installs again without building them"},
}

// AppendOnlyEntry returns the append-only cache portable path p lies in and the entry of it p
// is in or is (portable); entry is "" for p at or above the entries (the tree, a registry's
// directory).
func AppendOnlyEntry(p string) (c AppendOnlyCache, entry string, ok bool) {
	for _, c := range AppendOnlyCaches {
		if !Within(p, c.Tree) {
			continue
		}
		for _, s := range c.Skip {
			if Within(p, s) {
				return AppendOnlyCache{}, "", false
			}
		}
		if p == c.Tree {
			return c, "", true
		}
		rest := strings.Split(p[len(c.Tree)+1:], "/")
		n := c.Entry
		switch {
		case c.AtVersion:
			n = 0
			for i, comp := range rest {
				if strings.Contains(comp, "@") {
					n = i + 1
					break
				}
			}
			if n == 0 {
				return c, "", true
			}
		case n == 0:
			return c, p, true
		}
		if len(rest) < n {
			return c, "", true
		}
		return c, c.Tree + "/" + strings.Join(rest[:n], "/"), true
	}
	return AppendOnlyCache{}, "", false
}
