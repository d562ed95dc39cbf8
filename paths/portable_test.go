package paths

import (
	"math/rand/v2"
	"os"
	"path"
	"slices"
	"strings"
	"testing"
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
		{"tmplatesdir", "tmp*"}, // tmp + 8 of [a-z0-9_]: Python's, also when all letters
		{"rustcXk3Lm9", "rustc*"},
		{"rustdoctestWrEynv", "rustdoctest*"},
		{"rustdoctestmuP9LF", "rustdoctest*"},
		{"ccA1b2C3.o", "cc*.o"},
		{"ziRxVrtN", "zi*"}, // zip's temp archive, no digit
		{"zip", "zip"},
		{"zipfile", "zipfile"},
		{"sedqWkPxz", "sed*"}, // sed -i's temp sibling, no digit
		{"sedentary", "sedentary"},
		{"sed.1", "sed.1"},
		{"stloVngG", "st*"}, // ar's, ranlib's, strip's and objcopy's temp name, no digit
		{"stYrRDTQ", "st*"},
		{"stdio.h", "stdio.h"},
		{"stylesheet", "stylesheet"},
		{"stable", "stable"},
		{"XXjBJtVz", "XX*"}, // perl -i's temp sibling (mkstemp of XXXXXXXX), no digit
		{"XX8ALB2Z", "XX*"},
		{"XXX", "XXX"},
		{"XXL-shirts", "XXL-shirts"},
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

// TestRandomNames: the names each common generator made here (collected by running it: Python's
// tempfile, multiprocessing and gettempdir() probe, glibc's sem_open, mktemp(1), Go's
// os.CreateTemp/MkdirTemp, node's fs.mkdtemp, pytest's tmp_path, vite's config bundle) become
// one glob per generator, whatever their random part holds; names that are not random stay.
func TestRandomNames(t *testing.T) {
	vars := NewRoots(map[string]string{"WORKDIR": "/home/u/proj", "HOME": "/home/u", "TMPDIR": "/tmp", "GOCACHE": "/home/u/.cache/go-build"})
	for _, c := range []struct{ gen, in, want string }{
		{"python mkstemp", "/tmp/tmpw2er498j", "$TMPDIR/tmp*"},
		{"python mkstemp, all letters", "/tmp/tmpcesfittv", "$TMPDIR/tmp*"},
		{"python mkdtemp", "/tmp/tmp4m6it7vh/x", "$TMPDIR/tmp*/x"},
		{"python mkdtemp(dir=)", "/home/u/.cache/pip/tmpyeofdoyl", "$HOME/.cache/pip/tmp*"},
		{"python gettempdir probe", "/tmp/9stpnoua", "$TMPDIR/????????"},
		{"python gettempdir probe", "/tmp/8tbj1z60", "$TMPDIR/????????"},
		{"python gettempdir probe, all letters", "/tmp/pqhkrebu", "$TMPDIR/????????"},
		{"python mkdtemp(prefix=)", "/tmp/pip-build-env-ot20dro6", "$TMPDIR/pip-build-env-*"},
		{"python multiprocessing dir", "/tmp/pymp-e_k3y3zh", "$TMPDIR/pymp-*"},
		{"python multiprocessing semaphore", "/dev/shm/sem.mp-6p80vk1t", "/dev/shm/sem.mp-*"},
		{"glibc sem_open", "/dev/shm/sem.M0Zuzj", "/dev/shm/sem.*"},
		{"glibc sem_open, no digit", "/dev/shm/sem.ppUjRB", "/dev/shm/sem.*"},
		{"mktemp(1)", "/tmp/tmp.wdJnIIBFCB", "$TMPDIR/tmp.*"},
		{"mktemp(1) -d", "/tmp/tmp.TbTtVMafYS/out", "$TMPDIR/tmp.*/out"},
		{"go os.CreateTemp", "/tmp/app-461457640.txt", "$TMPDIR/app-*.txt"},
		{"go os.MkdirTemp", "/tmp/build894086069", "$TMPDIR/build*"},
		{"go os.CreateTemp default", "/tmp/450302555", "$TMPDIR/*"},
		{"go build", "/tmp/go-build3456484206/b001/exe/a.out", "$TMPDIR/go-build*/b001/exe/a.out"},
		{"rust tempfile", "/home/u/proj/target/debug/.tmpabcdef", "$WORKDIR/target/debug/.tmp*"},
		{"node fs.mkdtemp", "/tmp/foo-Y6vMYz", "$TMPDIR/foo-*"},
		{"node fs.mkdtemp, no digit", "/tmp/foo-RVUtDz", "$TMPDIR/foo-*"},
		{"node fs.mkdtemp, no digit", "/tmp/foo-PhobUA/a.js", "$TMPDIR/foo-*/a.js"},
		{"pytest tmp_path", "/tmp/pytest-of-root/pytest-1/test_tmp0/f.txt", "$TMPDIR/pytest-of-*/pytest-*/test_tmp0/f.txt"},
		{"pytest tmp_path, another user", "/tmp/pytest-of-nobody/pytest-12/test_tmpcurrent", "$TMPDIR/pytest-of-*/pytest-*/test_tmpcurrent"},
		{"pytest current", "/tmp/pytest-of-root/pytest-current", "$TMPDIR/pytest-of-*/pytest-current"},
		{"pytest cleanup", "/tmp/pytest-of-root/garbage-d53713f2-eef2-41d1-9991-ab957b398f58", "$TMPDIR/pytest-of-*/garbage-*"},
		{"vite config bundle", "/home/u/proj/vite.config.ts.timestamp-1796291205708-5e33eea7cd417.mjs", "$WORKDIR/vite.config.ts.timestamp-*-*.mjs"},
		{"go run, cache hit", "/home/u/.cache/go-build/f8/f8f65b76d39e50da20d2101d3842bf84f3709b6d53585e9a7a2f3a91c7a0dc2c-d/app", "$GOCACHE/*/*-d/app"},
		{"cargo doctest", "/tmp/rustdoctestQm3xZa/rust_out", "$TMPDIR/rustdoctest*/rust_out"},
		{"cargo doctest, no digit", "/home/u/proj/target/rustdoctestabcDEF/rust_out", "$WORKDIR/target/rustdoctest*/rust_out"},
		{"pnpm hard-link probe", "/_tmp_812_5f8e2a1b9c3d4e5f", "/_tmp_*"},
		{"pnpm hard-link probe, other pid", "/home/_tmp_31337_0a1b2c3d4e5f6a7b", "/home/_tmp_*"},
		{"uuid", "/tmp/bash_tool_d53713f2-eef2-41d1-9991-ab957b398f58", "$TMPDIR/bash_tool_*"},
		// not random
		{"dist-info", "/usr/lib/python3/dist-packages/pytest-7.2.1.dist-info/METADATA", "/usr/lib/python3/dist-packages/pytest-7.2.1.dist-info/METADATA"},
		{"word in temp", "/tmp/hsperfdata_root", "$TMPDIR/hsperfdata_root"},
		{"word in temp", "/tmp/.X11-unix", "$TMPDIR/.X11-unix"},
		{"word below temp", "/tmp/tmp.TbTtVMafYS/sessions", "$TMPDIR/tmp.*/sessions"},
		{"word outside temp", "/home/u/proj/abcdefgh", "$WORKDIR/abcdefgh"},
		{"semaphore-like word", "/home/u/proj/Makefile", "$WORKDIR/Makefile"},
	} {
		if got := vars.Generalize(c.in, nil); got != c.want {
			t.Errorf("%s: Generalize(%q) = %q, want %q", c.gen, c.in, got, c.want)
		}
		memo := NewPortableMemo(vars)
		if got := memo.Path(c.in, func() map[string]bool { return nil }); got != c.want {
			t.Errorf("%s: PortableMemo.Path(%q) = %q, want %q", c.gen, c.in, got, c.want)
		}
		if !coversHost(c.want, vars, c.in) {
			t.Errorf("%s: %q does not cover %q", c.gen, c.want, c.in)
		}
	}
	// Under another TMPDIR, /tmp and /var/tmp are still temp roots.
	other := NewRoots(map[string]string{"HOME": "/home/u", "TMPDIR": "/home/u/tmp"})
	for in, want := range map[string]string{"/tmp/pqhkrebu": "/tmp/????????", "/var/tmp/foo-RVUtDz": "/var/tmp/foo-*", "/home/u/tmp/pqhkrebu": "$TMPDIR/????????"} {
		if got := other.Generalize(in, nil); got != want {
			t.Errorf("TMPDIR=/home/u/tmp: Generalize(%q) = %q, want %q", in, got, want)
		}
	}
}

// coversHost reports whether the portable rule pat covers host path p.
func coversHost(pat string, rs Roots, p string) bool {
	return Covers(pat, rs.Portable(p))
}

func TestPortablePath(t *testing.T) {
	vars := NewRoots(map[string]string{
		"WORKDIR": "/home/alice/src/proj", "HOME": "/home/alice", "TMPDIR": "/tmp",
		"GOCACHE": "/home/alice/.cache/go-build", "GOROOT": "/usr/local/go", "USER": "alice",
		"CARGO_HOME": "relative/ignored",
	})
	pids := map[string]bool{"4100": true}
	for _, c := range []struct{ in, want string }{
		{"/home/alice/src/proj/main.go", "$WORKDIR/main.go"},
		{"/home/alice/src/proj", "$WORKDIR"},
		{"/home/alice/src/projother/x", "$HOME/src/projother/x"},
		{"/home/alice/.cache/go-build/ab/abc", "$GOCACHE/*/abc"}, // the cache's hash fan-out
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

// TestPortablePathShortcuts checks the shortcuts portablePath takes against what they stand
// for: cleanAbs against path.Clean, mayGlob (false: GlobComponent leaves the name alone), and
// PortableMemo against portablePath itself.
func TestPortablePathShortcuts(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	pieces := []string{"/", "/", ".", "..", "a", "tmp.", "cc", "ssh-", "rustc", ".tmp", "B", "7", "2026", "-", "x9Z", "deadbeef", "_",
		"/proc/", "/dev/", "/sys", "12345", "/a/b", "/tmp", "home", "/home/u"}
	vars := NewRoots(map[string]string{"HOME": "/home/u", "WORKDIR": "/a/b", "TMPDIR": "/tmp", "GOROOT": "/a/b/7", "GOCACHE": "/proc/x"})
	memo := NewPortableMemo(vars)
	pids := map[string]bool{"12345": true}
	for i := 0; i < 100000; i++ {
		var b strings.Builder
		b.WriteString("/")
		for n := r.IntN(8); n >= 0; n-- {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		p := b.String()
		if got, want := CleanAbs(p), path.Clean(p) == p; got != want {
			t.Fatalf("CleanAbs(%q) = %v, want %v", p, got, want)
		}
		if got, want := memo.Path(p, func() map[string]bool { return pids }), portablePath(p, vars, pids); got != want {
			t.Fatalf("PortableMemo.Path(%q) = %q, portablePath gives %q", p, got, want)
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

func TestExecTwins(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"$TMPDIR/go-build*/b001/exe/app", []string{"$GOCACHE/*/*-d/app"}},
		{"$GOCACHE/*/*-d/gen", []string{"$TMPDIR/go-build*/b001/exe/gen"}},
		{"$GOCACHE/*/*-d/sub/x", nil},
		{"$TMPDIR/go-build*/b001/app.test", nil},
		{"/usr/bin/go", nil},
	} {
		if got := ExecTwins(c.in); !slices.Equal(got, c.want) {
			t.Errorf("ExecTwins(%q) = %q, want %q", c.in, got, c.want)
		}
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
			if Covers(rule, "$WORKDIR/.git/hooks/"+other) {
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
		x, err := Expand(Portable(hooksDir+"/"+n, ctx), ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := Glob(x, 100, Lister{}); !slices.Equal(got, []string{hooksDir + "/" + n}) {
			t.Errorf("the rule %q for %q finds %q", x, n, got)
		}
	}
	if p := Portable("/dev/shm/*", ctx); p != `/dev/shm/\*` {
		t.Errorf("Portable(/dev/shm/*) = %q, want /dev/shm/\\*", p)
	}
}
