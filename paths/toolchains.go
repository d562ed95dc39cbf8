package paths

import (
	"path"
	"strings"
)

// execTwins are the places one toolchain runs the same binary from, by the state of its cache:
// a binary seen run from one is run from the others on another day. Each is a directory pattern
// the binary's own name follows.
var execTwins = [][]string{
	// go run, go generate's `go run ./gen`, go tool (Go ≥ 1.24): linked into the work dir on a
	// cache miss, run from the cache entry it was copied to on a hit.
	{"$TMPDIR/go-build*/b001/exe/", "$GOCACHE/*/*-d/"},
}

// ExecTwins returns the other places the toolchain that ran portable path p (an exec rule or a
// binaries: entry) runs the same binary from, by the state of its cache (see execTwins); none
// for a path no toolchain runs from two places.
func ExecTwins(p string) []string {
	var out []string
	for _, set := range execTwins {
		for i, dir := range set {
			name, ok := strings.CutPrefix(p, dir)
			if !ok || name == "" || strings.Contains(name, "/") {
				continue
			}
			for j, other := range set {
				if j != i {
					out = append(out, other+name)
				}
			}
		}
	}
	return out
}

// companions are the programs a tool runs by whether its output is a terminal, not by what the
// command asks, from the tool's own directory: man-db's man pipes the page through `col -bpx`
// into a file or a pipe (at a terminal it hands the page to the pager instead), so a profile
// learned at a terminal never saw col.
var companions = map[string][]string{"man": {"col"}}

// Companions returns the exec rules that go with portable exec path p (see companions); none
// for a tool that has none.
func Companions(p string) []string {
	dir, name := path.Split(p)
	var out []string
	for _, c := range companions[name] {
		out = append(out, dir+c)
	}
	return out
}
