package synth

import (
	"math/rand/v2"
	"testing"

	"github.com/sysprof/sysprof/paths"
	"github.com/sysprof/sysprof/trace"
)

func TestTooBroad(t *testing.T) {
	for _, p := range []string{"/", "/tmp", "$WORKDIR", "$WORKDIR/*", "$HOME/*/*", "$HOME/*/.env.local", "/*/x", "$HOME/.cache", "$TMPDIR/**"} {
		if !tooBroadToWrite(p) {
			t.Errorf("tooBroadToWrite(%q) = false", p)
		}
	}
	for _, p := range []string{"$WORKDIR/target", "$WORKDIR/target*", "$TMPDIR/go-build*", "$TMPDIR/go-build*/b001", "/dev/null", "$WORKDIR/go.sum", "$WORKDIR/target/*/x"} {
		if tooBroadToWrite(p) {
			t.Errorf("tooBroadToWrite(%q) = true", p)
		}
	}
	for _, p := range []string{"/", "/etc", "$HOME", "$HOME/*", "/tmp/*"} {
		if !tooBroadToRead(p) {
			t.Errorf("tooBroadToRead(%q) = false", p)
		}
	}
}

func TestExpand(t *testing.T) {
	ctx := map[string]string{"HOME": "/home/bob", "WORKDIR": "/srv/build/x", "TMPDIR": "/tmp"}
	for _, c := range []struct{ in, want string }{
		{"$HOME/.gitconfig", "/home/bob/.gitconfig"},
		{"${HOME}/.gitconfig", "/home/bob/.gitconfig"},
		{"$WORKDIR", "/srv/build/x"},
		{"$TMPDIR/go-build*", "/tmp/go-build*"},
		{"$WORKDIR/**/.env", "/srv/build/x/**/.env"},
		{"$GOCACHE/x", "$GOCACHE/x"}, // unknown: unchanged, for the caller to refuse
		{"/usr/lib", "/usr/lib"},
	} {
		if got := expandOr(c.in, ctx); got != c.want {
			t.Errorf("expandOr(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestPortableAcrossUsers: learned by alice in ~/src/proj, enforced for bob in /srv/build/x.
func TestPortableAcrossUsers(t *testing.T) {
	alice := map[string]string{"HOME": "/home/alice", "WORKDIR": "/home/alice/src/proj", "TMPDIR": "/tmp",
		"GOCACHE": "/home/alice/.cache/go-build"}
	bob := map[string]string{"HOME": "/home/bob", "WORKDIR": "/srv/build/x", "TMPDIR": "/var/tmp/bob",
		"GOCACHE": "/home/bob/.cache/go-build"}
	exe := "/usr/bin/tool"
	tr := &trace.Trace{
		Version: trace.Version, Command: []string{"tool"}, Context: alice,
		Processes: []trace.Process{{ID: 1, PID: 10, Exe: exe}},
		Files: []trace.FileAccess{
			{Exe: exe, Path: "/home/alice/src/proj/main.go", Access: trace.AccessRead, OK: true},
			{Exe: exe, Path: "/home/alice/src/proj/out", Access: trace.AccessCreate, OK: true, Dir: true},
			{Exe: exe, Path: "/home/alice/.cache/go-build/ab/abcdef", Access: trace.AccessCreate, OK: true},
			{Exe: exe, Path: "/home/alice/.toolrc", Access: trace.AccessRead, OK: true},
			{Exe: exe, Path: "/tmp/go-build123456/b001", Access: trace.AccessCreate, OK: true, Dir: true},
			{Exe: exe, Path: "/tmp/go-build123456", Access: trace.AccessCreate, OK: true, Dir: true},
		},
	}
	res, err := Synthesize(tr, testOpts())
	if err != nil {
		t.Fatal(err)
	}
	p := res.Profile
	var got []string
	for _, r := range append(append([]string{}, rulePaths(p.Filesystem.Read)...), rulePaths(p.Filesystem.Write)...) {
		got = append(got, expandOr(r, bob))
	}
	want := []string{"/home/bob/.toolrc", "/srv/build/x", "/home/bob/.cache/go-build", "/var/tmp/bob/go-build*", "/srv/build/x/out"}
	want = append(want, localeData...) // absolute: the same for everyone
	want = append(want, controllingTerminal)
	want = append(want, "/proc/sys/vm/overcommit_memory", "/sys/kernel/mm/transparent_hugepage") // portable: newer runtimes read them
	if !sameSet(got, want) {
		t.Errorf("expanded for bob: %q, want %q", got, want)
	}
	for _, a := range []Access{
		{Kind: trace.AccessRead, Path: "/srv/build/x/main.go"},
		{Kind: trace.AccessWrite, Path: "/srv/build/x/out/bin"},
		{Kind: trace.AccessCreate, Path: "/home/bob/.cache/go-build/cd/cdef"},
		{Kind: trace.AccessCreate, Path: "/var/tmp/bob/go-build987654/b002/x.a"},
		{Kind: trace.AccessRead, Path: "/home/bob/.toolrc"},
	} {
		if !Allows(p, bob, a) {
			t.Errorf("bob: %s %s denied", a.Kind, a.Path)
		}
	}
	for _, a := range []Access{
		{Kind: trace.AccessRead, Path: "/home/alice/src/proj/main.go"},
		{Kind: trace.AccessWrite, Path: "/srv/build/x/main.go"},
		{Kind: trace.AccessRead, Path: "/home/bob/.ssh/id_ed25519"},
		{Kind: trace.AccessRead, Path: "/srv/build/x/deploy/.env"},
	} {
		if Allows(p, bob, a) {
			t.Errorf("bob: %s %s allowed", a.Kind, a.Path)
		}
	}
}

func rulePaths(rules []policyPathRule) []string {
	var out []string
	for _, r := range rules {
		out = append(out, r.Path)
	}
	return out
}

func sameSet(a, b []string) bool {
	m := map[string]int{}
	for _, x := range a {
		m[x]++
	}
	for _, x := range b {
		m[x]--
	}
	for _, n := range m {
		if n != 0 {
			return false
		}
	}
	return len(a) == len(b)
}

func TestSecretPattern(t *testing.T) {
	s := newState(Options{})
	s.ctx = map[string]string{"HOME": "/home/alice", "WORKDIR": "/home/alice/src/p"}
	s.vars = paths.NewRoots(s.ctx)
	for _, c := range []struct{ in, want string }{
		{"~/.npmrc", "$HOME/.npmrc"},
		{"~", "$HOME"},
		{"/home/alice/.aws/credentials", "$HOME/.aws/credentials"},
		{"${HOME}/.ssh/known_hosts", "$HOME/.ssh/known_hosts"},
		{"$HOME/.ssh/", "$HOME/.ssh"},
		{".env", "$WORKDIR/.env"},
		{"config/.env.local", "$WORKDIR/config/.env.local"},
		{"/home/alice/src/p/.env", "$WORKDIR/.env"},
	} {
		if got := s.secretPattern(c.in); got != c.want {
			t.Errorf("secretPattern(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestHostFirst checks hostFirst and cleanRest, which let credentials judge a path by its
// first component, against Expand.
func TestHostFirst(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	values := []string{"", "/", "/usr/local/go", "/home/u/", "/home/u/../v", "/x/../y", "/./a", "rel/dir", "/opt//x", "/a/./b", "/*/x", "$HOME"}
	firsts := []string{"usr", "$GOROOT", "${GOROOT}", "$HOME", "$UNSET", "home"}
	rests := []string{"", "/a", "/a/b", "/..", "/../..", "/./a", "//a", "/a/", "/a/../b", "x"}
	checked := 0
	for i := 0; i < 50000; i++ {
		ctx := map[string]string{"GOROOT": values[r.IntN(len(values))], "HOME": values[r.IntN(len(values))]}
		k, rest := firsts[r.IntN(len(firsts))], rests[r.IntN(len(rests))]
		hk, ok := hostFirst(k, ctx)
		if !ok || !cleanRest(rest) {
			continue
		}
		checked++
		if got, _ := plainFirst(expandOr(k+rest, ctx)); got != hk {
			t.Fatalf("ctx %v: expandOr(%q) starts with %q, hostFirst(%q) says %q", ctx, k+rest, got, k, hk)
		}
	}
	if checked < 5000 {
		t.Fatalf("only %d cases checked", checked)
	}
}
