package synth

import (
	"math/rand/v2"
	"os"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/paths"
	"github.com/sysprof/sysprof/trace"
)

func TestGlobComponent(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		// per-run names
		{"id_ed25519", "id_ed25519"},
		{"libfoo12345.so", "libfoo12345.so"},
		{"go-build3411254890", "go-build*"},
		{"go-build3201711235", "go-build*"}, // 20171123 inside it is no date stamp
		{"2026-11-30T04_00_00_000Z-debug.log", "*-debug.log"},
		{"go-link-123456", "go-link-*"},
		{"tmp.Qw3rTy8UiO", "tmp.*"},
		{"tmp.abcdefghij", "tmp.*"},
		{".tmpAb3dEf", ".tmp*"},
		{".tmpabcdef", ".tmp*"},
		{"tmpk3_x9qzp", "tmp*"},         // Python's tempfile.mkstemp / mkdtemp
		{"tmpabc4efgh.txt", "tmp*.txt"}, // NamedTemporaryFile(suffix=".txt")
		{"tmpfiles.d", "tmpfiles.d"},
		{"tmplatesdir", "tmplatesdir"},
		{"rustcXk3Lm9", "rustc*"},
		{"rustdoctestWrEynv", "rustdoctest*"},
		{"rustdoctestmuP9LF", "rustdoctest*"},
		{"ccA1b2C3.o", "cc*.o"},
		{"ccQz9Yx8.res", "cc*.res"},
		{"ssh-XXXXk3j9QmZp", "ssh-*"},
		{"agent.4242", "agent.*"},
		{"1000", "*"},
		{"hello-rs-1a2b3c4d5e6f7a8b", "hello-rs-*"},
		{"libstd-9c3a1b2d.rlib", "libstd-*.rlib"},
		{"3f8a1c0d92b7e4f6a5c3d2e1f0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a1-a", "*-a"},
		{"systemd-private-0123456789abcdef0123456789abcdef-chronyd.service-AbC123", "systemd-private-*-chronyd.service-*"},
		{"XyZ12a", "*"},
		{"targeteVpTA7", "target*"},
		{"crate-0a1b2c3d4e5f6a7b.00v5zyg4h84nypw5fqyxdz1el.070xhhp.rcgu.o", "crate-*.*.070xhhp.rcgu.o"},
		{"crate-0a1b2c3d4e5f6a7b.06183a3juirv882cyv5xg2e6h.rcgu.o", "crate-*.*.rcgu.o"},
		{"2026-11-30T04_00_00_000Z-debug-0.log", "*-debug-0.log"},
		{"index.crates.io-6f17d22bba15001f", "index.crates.io-*"},
		{"go@go1.26.8-go1.26.8-linux-amd64-2026-11-30.v1.count", "go@go1.26.8-go1.26.8-linux-amd64-*.v1.count"},
		{"nightly-2024-01-15-x86_64-unknown-linux-gnu", "nightly-*-x86_64-unknown-linux-gnu"},
		{"backup-20261130-040000.tar", "backup-*.tar"},
		// stable names
		{"go", "go"},
		{"rustc", "rustc"},
		{"cc", "cc"},
		{"cc1plus", "cc1plus"},
		{"ccache", "ccache"},
		{"x86_64-linux-gnu", "x86_64-linux-gnu"},
		{"libc.so.6", "libc.so.6"},
		{"ld-linux-x86-64.so.2", "ld-linux-x86-64.so.2"},
		{"python3.11", "python3.11"},
		{"serde-1.0.197", "serde-1.0.197"},
		{"go1.26.0", "go1.26.0"},
		{"linux_amd64", "linux_amd64"},
		{"stable-x86_64-unknown-linux-gnu", "stable-x86_64-unknown-linux-gnu"},
		{"libLLVM.so.19.1-rust-1.86.0-stable", "libLLVM.so.19.1-rust-1.86.0-stable"},
		{"CMakeLists.txt", "CMakeLists.txt"},
		{"Cargo.toml", "Cargo.toml"},
		{"README", "README"},
		{"deadbeef", "deadbeef"}, // hex letters only: a word, not a hash
		{"sha256", "sha256"},
		{"ab", "ab"},
		{"b001", "b001"},
		{"123", "123"},
		{"$TMPDIR", "$TMPDIR"},
		// A host name that looks like a pattern is that name exactly, never a glob.
		{"go-build*", `go-build\*`},
		{"*", `\*`},
		{"**", `\*\*`},
		{"a?[b]\\c", `a\?\[b]\\c`},
		{"{a,b}", "{a,b}"},
		{"", ""},
	} {
		if got := GlobComponent(c.in); got != c.want {
			t.Errorf("GlobComponent(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestPortablePath(t *testing.T) {
	vars := paths.NewRoots(map[string]string{
		"WORKDIR": "/home/alice/src/proj", "HOME": "/home/alice", "TMPDIR": "/tmp",
		"GOCACHE": "/home/alice/.cache/go-build", "GOROOT": "/usr/local/go", "USER": "alice",
		"CARGO_HOME": "relative/ignored",
	})
	pids := map[string]bool{"4100": true}
	for _, c := range []struct{ in, want string }{
		{"/home/alice/src/proj/main.go", "$WORKDIR/main.go"},
		{"/home/alice/src/proj", "$WORKDIR"},
		{"/home/alice/src/projother/x", "$HOME/src/projother/x"},
		{"/home/alice/.cache/go-build/ab/abc", "$GOCACHE/ab/abc"},
		{"/home/alice/.cache/other", "$HOME/.cache/other"},
		{"/home/alice2/x", "/home/alice2/x"},
		{"/tmp/go-build3411254890/b001/_pkg_.a", "$TMPDIR/go-build*/b001/_pkg_.a"},
		{"/usr/local/go/pkg/tool/linux_amd64/compile", "$GOROOT/pkg/tool/linux_amd64/compile"},
		{"/proc/4100/status", "/proc/self/status"},
		{"/proc/4111/status", "/proc/*/status"},
		{"/proc/4100/task/4105/stat", "/proc/self/task/*/stat"},
		{"/proc/self/task/4105/stat", "/proc/self/task/*/stat"},
		{"/proc/sys/kernel/pid_max", "/proc/sys/kernel/pid_max"},
		{"/dev/pts/3", "/dev/pts"},
		{"/dev/null", "/dev/null"},
		{"/sys/devices/system/cpu/cpu12345/online", "/sys/devices/system/cpu/cpu12345/online"},
		{"/run/user/1000/bus", "/run/user/*/bus"},
		{"/usr/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libc.so.6"},
		{"/a/../home/alice/x", "$HOME/x"},
		{"relative/path", "relative/path"},
	} {
		if got := portablePath(c.in, vars, pids); got != c.want {
			t.Errorf("portablePath(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

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

// TestPortablePathShortcuts checks the shortcuts portablePath takes against what they stand
// for: cleanAbs against path.Clean, mayGlob (false: GlobComponent leaves the name alone), and
// portableMemo against portablePath itself.
func TestPortablePathShortcuts(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	pieces := []string{"/", "/", ".", "..", "a", "tmp.", "cc", "ssh-", "rustc", ".tmp", "B", "7", "2026", "-", "x9Z", "deadbeef", "_",
		"/proc/", "/dev/", "/sys", "12345", "/a/b", "/tmp", "home", "/home/u"}
	vars := paths.NewRoots(map[string]string{"HOME": "/home/u", "WORKDIR": "/a/b", "TMPDIR": "/tmp", "GOROOT": "/a/b/7", "GOCACHE": "/proc/x"})
	memo := newPortableMemo(vars)
	pids := map[string]bool{"12345": true}
	for i := 0; i < 100000; i++ {
		var b strings.Builder
		b.WriteString("/")
		for n := r.IntN(8); n >= 0; n-- {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		p := b.String()
		if got, want := cleanAbs(p), path.Clean(p) == p; got != want {
			t.Fatalf("cleanAbs(%q) = %v, want %v", p, got, want)
		}
		if got, want := memo.path(p, func() map[string]bool { return pids }), portablePath(p, vars, pids); got != want {
			t.Fatalf("portableMemo.path(%q) = %q, portablePath gives %q", p, got, want)
		}
		for _, c := range strings.Split(p, "/") {
			if !mayGlob(c) && GlobComponent(c) != c {
				t.Fatalf("mayGlob(%q) = false, but GlobComponent gives %q", c, GlobComponent(c))
			}
		}
	}
}

// TestMayGlob checks that a name mayGlob passes over is one GlobComponent leaves alone, on
// random names made of the characters its rules look at.
func TestMayGlob(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	pieces := []string{"a", "f", "z", "B", "Z", "0", "1", "9", "20", "26", "-", ".", "_", "T", ":", "tmp.", ".tmp", "cc", "rustc", "ssh-", "*"}
	skipped := 0
	for i := 0; i < 200000; i++ {
		var b strings.Builder
		for n := r.IntN(14); n >= 0; n-- {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		c := b.String()
		if !mayGlob(c) {
			skipped++
			if g := GlobComponent(c); g != c {
				t.Fatalf("mayGlob(%q) = false, but GlobComponent gives %q", c, g)
			}
		}
	}
	if skipped < 10000 {
		t.Fatalf("mayGlob passed over only %d names: the test does not exercise it", skipped)
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

// TestPortableNeverGlobsAName: a file a tool named with glob characters under .git/hooks is
// written as a rule for that one file, which covers no other hook.
func TestPortableNeverGlobsAName(t *testing.T) {
	ctx := map[string]string{"WORKDIR": "/w", "HOME": "/home/u"}
	hooks := []string{"pre-commit", "post-checkout", "*", "x", "[p]re-commit"}
	for _, name := range []string{"*", "**", "pre-*", "?re-commit", "[p]re-commit", "[a-z]*", `\*`} {
		host := "/w/.git/hooks/" + name
		for _, p := range []string{Portable(host, ctx), Portable("/dev/shm/"+name, ctx)} {
			if strings.Count(p, "/") < 2 {
				t.Fatalf("Portable(%q) = %q", host, p)
			}
		}
		rule := Portable(host, ctx)
		for _, other := range hooks {
			if other == name {
				continue
			}
			if paths.Covers(rule, "$WORKDIR/.git/hooks/"+other) {
				t.Errorf("the rule %q for the file %q covers the hook %q", rule, name, other)
			}
		}
		if ok, _ := path.Match(path.Base(rule), name); !ok {
			t.Errorf("the rule %q does not match the file %q itself", rule, name)
		}
	}
	// On a host: the rule expanded and globbed finds the one file.
	dir := t.TempDir()
	ctx["WORKDIR"] = dir
	hooksDir := dir + "/.git/hooks"
	if err := os.MkdirAll(hooksDir, 0o755); err != nil {
		t.Fatal(err)
	}
	names := []string{"*", "**", "pre-*", "pre-commit", "[p]re-commit", "p"}
	for _, n := range names {
		if err := os.WriteFile(hooksDir+"/"+n, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range names {
		x, err := paths.Expand(Portable(hooksDir+"/"+n, ctx), ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := paths.Glob(x, 100, paths.Lister{}); !slices.Equal(got, []string{hooksDir + "/" + n}) {
			t.Errorf("the rule %q for %q finds %q", x, n, got)
		}
	}
	if p := Portable("/dev/shm/*", ctx); p != `/dev/shm/\*` {
		t.Errorf("Portable(/dev/shm/*) = %q, want /dev/shm/\\*", p)
	}
}
