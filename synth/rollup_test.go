package synth

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/trace"
)

// TestRollupModel checks rollup, which walks the tree of rules once, against rollupModel, the
// level-by-level statement of what it does, on random rule sets.
func TestRollupModel(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	names := []string{"a", "b", "c", "d", "lib", "x86_64", "*", ""}
	totalMade := 0
	for iter := 0; iter < 3000; iter++ {
		rules := map[string]*pathRule{}
		tops := []string{"/usr", "/etc", "$HOME", "/", "/opt/t", "rel", "//x"}
		for n := r.IntN(60); n >= 0; n-- {
			var b strings.Builder
			b.WriteString(tops[r.IntN(len(tops))])
			for k := r.IntN(6); k > 0; k-- {
				b.WriteString("/" + names[r.IntN(len(names))])
			}
			exe := fmt.Sprintf("/bin/t%d", r.IntN(3))
			if r.IntN(5) == 0 {
				exe = ""
			}
			rules[b.String()] = &pathRule{prov: prov{by: exe, rank: r.IntN(3), seen: 1 + r.IntN(2)}, files: r.IntN(3)}
		}
		clone := func() map[string]*pathRule {
			out := map[string]*pathRule{}
			for k, v := range rules {
				c := *v
				out[k] = &c
			}
			return out
		}
		threshold := 1 + r.IntN(5)
		allowed := func(d string) bool { return !strings.HasSuffix(d, "/c") && d != "/etc" }
		blocked := func(d string) bool { return strings.HasSuffix(d, "/d") }
		// The set holds its rules in sorted order (as from sorted observations), in its map, or
		// some of each: each must give the model's answer.
		got, want := &ruleSet{rules: clone()}, clone()
		for _, p := range slices.Sorted(maps.Keys(got.rules)) {
			if iter%3 == 0 || iter%3 == 1 && r.IntN(2) == 0 {
				got.sorted = append(got.sorted, ruleRef{p, got.rules[p]})
				delete(got.rules, p)
			}
		}
		gotMade := rollup(got, threshold, "files", allowed, blocked)
		wantMade := slices.DeleteFunc(rollupModel(want, threshold, "files", allowed, blocked), func(d string) bool { return want[d] == nil })
		totalMade += len(gotMade)
		if !slices.Equal(gotMade, wantMade) {
			t.Fatalf("rules %v threshold %d: rollup made %v, the model %v", slices.Sorted(maps.Keys(rules)), threshold, gotMade, wantMade)
		}
		if !maps.EqualFunc(got.byPath(), want, func(a, b *pathRule) bool {
			return a.by == b.by && a.seen == b.seen && (a.by == "" || a.rank == b.rank) && a.note == b.note && a.files == b.files
		}) {
			t.Fatalf("rules %v threshold %d: rollup and the model differ", slices.Sorted(maps.Keys(rules)), threshold)
		}
	}
	if totalMade < 1000 {
		t.Fatalf("only %d roll-ups in all: the rule sets do not exercise rollup", totalMade)
	}
}

// rollupModel replaces, deepest directory first, every set of at least threshold rules under one
// allowed directory by that directory, until nothing changes. It returns the directories it
// made, with how many files each stands for.
func rollupModel(rules map[string]*pathRule, threshold int, noun string, allowed, blocked func(string) bool) []string {
	maxDepth := 0
	for p := range rules {
		maxDepth = max(maxDepth, depth(p))
	}
	var made []string
	for dd := maxDepth - 1; dd > 0; dd-- {
		groups := map[string][]string{}
		ok := map[string]bool{}
		for p := range rules {
			if depth(p) <= dd {
				continue
			}
			d := ancestorAt(p, dd)
			a, seen := ok[d]
			if !seen {
				a = d != "/" && allowed(d)
				ok[d] = a
			}
			if a {
				groups[d] = append(groups[d], p)
			}
		}
		for _, d := range sortedKeys(groups) {
			under := groups[d]
			if len(under) < threshold || blocked(d) {
				continue
			}
			slices.Sort(under)
			r := &pathRule{}
			if old := rules[d]; old != nil {
				*r = *old
			}
			for _, p := range under {
				r.prov = earliest(r.prov, rules[p].prov)
				r.files += max(rules[p].files, 1)
				delete(rules, p)
			}
			r.note = fmt.Sprintf("rolled up from %d %s", r.files, noun)
			rules[d] = r
			made = append(made, d)
		}
	}
	slices.Sort(made)
	return slices.Compact(made)
}

// ancestorAt returns the ancestor of p with n components ("/usr/lib" for /usr/lib/x/y and 2).
func ancestorAt(p string, n int) string {
	i, seen := 0, 0
	if strings.HasPrefix(p, "/") {
		i = 1
	}
	for ; i < len(p); i++ {
		if p[i] == '/' {
			seen++
			if seen == n {
				return p[:i]
			}
		}
	}
	return p
}

// TestListRollupIgnoresReadCoveredDirs: python lists six stdlib directories under /usr/lib (all
// read, and rolled up to a read /usr/lib) and one site-packages directory per host. Whether this
// host has one more site-packages directory (/usr/lib/python3/dist-packages) may not decide
// whether the listing rule is that directory or all of /usr: the listings a read rule covers
// count for no roll-up.
func TestListRollupIgnoresReadCoveredDirs(t *testing.T) {
	exe := "/usr/bin/python3.11"
	learn := func(extraSite bool) []string {
		tr := &trace.Trace{Version: trace.Version, Command: []string{"python3", "main.py"},
			Context:   map[string]string{"HOME": "/home/alice", "WORKDIR": "/home/alice/src/p", "TMPDIR": "/tmp"},
			Processes: []trace.Process{{ID: 1, PID: 10, Exe: exe}},
			Files: []trace.FileAccess{
				{Exe: exe, Path: "/home/alice/src/p/main.py", Access: trace.AccessRead, OK: true},
				{Exe: exe, Path: "/usr/local/lib/python3.11/dist-packages", Access: trace.AccessList, OK: true},
			},
		}
		add := func(p, a string) {
			tr.Files = append(tr.Files, trace.FileAccess{Exe: exe, Path: p, Access: a, OK: true})
		}
		for _, d := range []string{"", "/collections", "/encodings", "/importlib", "/lib-dynload", "/re"} {
			add("/usr/lib/python3.11"+d, trace.AccessList)
			add("/usr/lib/python3.11"+d+"/__init__.py", trace.AccessRead)
		}
		add("/usr/lib/x86_64-linux-gnu/libc.so.6", trace.AccessRead)
		add("/usr/lib/locale/C.utf8/LC_CTYPE", trace.AccessRead)
		if extraSite {
			add("/usr/lib/python3/dist-packages", trace.AccessList)
			add("/usr/lib/python3/dist-packages/distutils-precedence.pth", trace.AccessRead)
		}
		res, err := Synthesize(tr, testOpts())
		if err != nil {
			t.Fatal(err)
		}
		return rulePaths(res.Profile.Filesystem.List)
	}
	with, without := learn(true), learn(false)
	want := []string{"/usr/local/lib/python3.*/dist-packages"} // portable: the version globbed
	if !slices.Equal(with, want) || !slices.Equal(without, want) {
		t.Errorf("list rules: %q with /usr/lib/python3/dist-packages, %q without; want %q on both hosts", with, without, want)
	}
}
