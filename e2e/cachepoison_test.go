package e2e

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
)

// Issue 23, cache poisoning: a build's package code under a learned profile rewrites a file a
// tool cache already holds (another crate's extracted source, which every later build of every
// project compiles without checking it again) instead of adding an entry. New entries must land
// (a warm and a cold build stay clean); a rewrite of an existing one must not reach the host:
// it is held dangerous in the run's changeset (`sysprof changes`).

// localCrate writes a local registry (cargo's local-registry source) holding crate name 1.0.0
// with src/lib.rs lib into dir.
func localCrate(t *testing.T, dir, name, lib string) {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, f := range []struct{ name, body string }{
		{"Cargo.toml", "[package]\nname = \"" + name + "\"\nversion = \"1.0.0\"\nedition = \"2021\"\n"},
		{"src/lib.rs", lib},
	} {
		p := name + "-1.0.0/" + f.name
		if err := tw.WriteHeader(&tar.Header{Name: p, Mode: 0o644, Size: int64(len(f.body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(f.body))
	}
	tw.Close()
	zw.Close()
	sum := sha256.Sum256(buf.Bytes())
	testutil.WriteFile(t, filepath.Join(dir, name+"-1.0.0.crate"), buf.String(), 0o644)
	// The index path of a three-letter name: 3/<first letter>/<name>.
	testutil.WriteFile(t, filepath.Join(dir, "index", "3", name[:1], name),
		`{"name":"`+name+`","vers":"1.0.0","deps":[],"cksum":"`+hex.EncodeToString(sum[:])+`","features":{},"yanked":false}`+"\n", 0o644)
}

// cargoPoisonBox is a project depending on crate dep of a local registry, whose build.rs, when
// POISON is set, rewrites dep's extracted source in $CARGO_HOME/registry/src.
func cargoPoisonBox(t *testing.T, root string) *testutil.Box {
	b := newBox(t, root, "side", "user", "work", "")
	reg := filepath.Join(b.Work, "registry")
	localCrate(t, reg, "dep", "pub fn answer() -> u32 { 42 }\n")
	testutil.WriteFile(t, filepath.Join(b.Work, ".cargo", "config.toml"),
		"[source.crates-io]\nreplace-with = \"local\"\n[source.local]\nlocal-registry = \""+reg+"\"\n", 0o644)
	testutil.WriteFile(t, filepath.Join(b.Work, "Cargo.toml"),
		"[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\ndep = \"1.0.0\"\n", 0o644)
	testutil.WriteFile(t, filepath.Join(b.Work, "src", "main.rs"), "fn main() { println!(\"{}\", dep::answer()); }\n", 0o644)
	testutil.WriteFile(t, filepath.Join(b.Work, "build.rs"), `use std::{env, fs, path::PathBuf};
fn main() {
    println!("cargo:rerun-if-env-changed=POISON");
    if env::var("POISON").is_err() { return; }
    let src = PathBuf::from(env::var("CARGO_HOME").unwrap()).join("registry/src");
    for idx in fs::read_dir(&src).unwrap() {
        let lib = idx.unwrap().path().join("dep-1.0.0/src/lib.rs");
        match fs::write(&lib, "pub fn answer() -> u32 { 666 }\n") {
            Ok(()) => eprintln!("POISON {}: ok", lib.display()),
            Err(e) => eprintln!("POISON {}: {}", lib.display(), e),
        }
    }
}
`, 0o644)
	return b
}

// goPoisonBox is a module requiring example.com/dep v1.0.0 from a proxy in a directory
// (GOPROXY=file://, offline), whose TestMain, when POISON is set, rewrites dep's extracted
// source in $GOMODCACHE.
func goPoisonBox(t *testing.T, root string) *testutil.Box {
	b := newBox(t, root, "side", "user", "work", "")
	proxy := filepath.Join(b.Work, "proxy")
	v := filepath.Join(proxy, "example.com", "dep", "@v")
	testutil.WriteFile(t, filepath.Join(v, "list"), "v1.0.0\n", 0o644)
	testutil.WriteFile(t, filepath.Join(v, "v1.0.0.info"), `{"Version":"v1.0.0","Time":"2026-01-01T00:00:00Z"}`, 0o644)
	testutil.WriteFile(t, filepath.Join(v, "v1.0.0.mod"), "module example.com/dep\n", 0o644)
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, body := range map[string]string{"go.mod": "module example.com/dep\n", "dep.go": "package dep\n\nfunc Answer() int { return 42 }\n"} {
		w, err := zw.Create("example.com/dep@v1.0.0/" + name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(body))
	}
	zw.Close()
	testutil.WriteFile(t, filepath.Join(v, "v1.0.0.zip"), buf.String(), 0o644)
	b.Env = []string{"GOPROXY=file://" + proxy}
	testutil.WriteFile(t, filepath.Join(b.Work, "go.mod"), "module example.com/app\n\ngo 1.21\n\nrequire example.com/dep v1.0.0\n", 0o644)
	testutil.WriteFile(t, filepath.Join(b.Work, "app_test.go"), `package app

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"example.com/dep"
)

func TestMain(m *testing.M) {
	if os.Getenv("POISON") != "" {
		d := filepath.Join(os.Getenv("GOMODCACHE"), "example.com", "dep@v1.0.0")
		f := filepath.Join(d, "dep.go")
		os.Chmod(d, 0o755)
		os.Chmod(f, 0o644)
		err := os.WriteFile(f, []byte("package dep\n\nfunc Answer() int { return 666 }\n"), 0o644)
		fmt.Fprintf(os.Stderr, "POISON %s: %v\n", f, err)
	}
	os.Exit(m.Run())
}

func TestAnswer(t *testing.T) {
	if dep.Answer() != 42 {
		t.Fatal(dep.Answer())
	}
}
`, 0o644)
	return b
}

// npxPoisonBox is a local package tarball with a bin that npx installs into $NPM_CACHE/_npx
// (offline) and runs; when POISON is set, the bin rewrites its own file there, which the next
// npx runs.
func npxPoisonBox(t *testing.T, root string) *testutil.Box {
	b := newBox(t, root, "side", "user", "work", "")
	cli := `#!/usr/bin/env node
const fs = require("fs");
if (process.env.POISON) {
  let r = "ok";
  try { fs.writeFileSync(__filename, "#!/usr/bin/env node\nconsole.log('xtool 666')\n"); } catch (e) { r = e.code; }
  console.log("POISON " + __filename + ": " + r);
}
console.log("xtool 42");
`
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, f := range []struct {
		name, body string
		mode       int64
	}{
		{"package.json", `{"name":"xtool","version":"1.0.0","bin":{"xtool":"cli.js"}}`, 0o644},
		{"cli.js", cli, 0o755},
	} {
		if err := tw.WriteHeader(&tar.Header{Name: "package/" + f.name, Mode: f.mode, Size: int64(len(f.body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(f.body))
	}
	tw.Close()
	zw.Close()
	testutil.WriteFile(t, filepath.Join(b.Work, "xtool-1.0.0.tgz"), buf.String(), 0o644)
	b.Env = []string{"npm_config_offline=true", "npm_config_update_notifier=false", "npm_config_audit=false", "npm_config_fund=false"}
	return b
}

// cachePoisonCases are the tools whose cache a payload rewrites: the box, the learned command,
// the pattern (under HOME) of the cache file the payload rewrites, and what it holds before.
var cachePoisonCases = []struct {
	name     string
	tool     string
	box      func(t *testing.T, root string) *testutil.Box
	argv     []string
	entry    string // the entry's directory, a glob under HOME
	file     string // the file the payload rewrites, below entry
	want     string
	rootOnly string
}{
	{name: "cargo-registry", tool: "cargo", box: cargoPoisonBox, argv: []string{"cargo", "build", "--offline", "-vv"},
		entry: ".cargo/registry/src/*/dep-1.0.0", file: "src/lib.rs", want: "42",
		rootOnly: "rustup's toolchains live in root's home, which nobody cannot reach"},
	{name: "go-modcache", tool: "go", box: goPoisonBox, argv: []string{"go", "test", "-v", "-count=1", "."},
		entry: "go/pkg/mod/example.com/dep@v1.0.0", file: "dep.go", want: "42"},
	{name: "npx", tool: "npx", box: npxPoisonBox, argv: []string{"npx", "--yes", "--package=./xtool-1.0.0.tgz", "xtool"},
		entry: ".npm/_npx/*", file: "node_modules/xtool/cli.js", want: "42"},
}

// cacheFile returns the content of the one file matching HOME/entry/file ("" when none).
func cacheFile(t *testing.T, b *testutil.Box, entry, file string) string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(b.Home, entry, file))
	if len(m) != 1 {
		return ""
	}
	data, err := os.ReadFile(m[0])
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestCachePoison: for each tool, the learned build enforced warm is clean, enforced cold (the
// entry removed) adds the entry to the host's cache with nothing held, and enforced with the
// payload armed leaves the host's entry as it was, the rewrite held dangerous; as root and as
// an ordinary user.
func TestCachePoison(t *testing.T) {
	testutil.RequireRoot(t)
	for _, c := range cachePoisonCases {
		t.Run(c.name, func(t *testing.T) {
			testutil.RequireTools(t, hostPath, c.tool)
			for _, as := range asUsers {
				if as.wrap != nil && c.rootOnly != "" {
					t.Logf("not run as an ordinary user: %s", c.rootOnly)
					continue
				}
				t.Run(as.name, func(t *testing.T) {
					root := t.TempDir()
					b := c.box(t, root)
					p := filepath.Join(root, "profile.yaml")
					testutil.MustCode(t, "learn", b.Sysprof(t, append([]string{"learn", "-p", p, "--"}, c.argv...)...), 0)
					if got := cacheFile(t, b, c.entry, c.file); !strings.Contains(got, c.want) {
						t.Fatalf("the learned build left no %s/%s: %q", c.entry, c.file, got)
					}
					t.Logf("profile writes: %v", pathsOf(loadProfile(t, p).Filesystem.Write))
					if as.wrap != nil {
						openForNobody(t, root)
						chownTree(t, root, 65534)
					}
					clean := func(what string) {
						t.Helper()
						rep := filepath.Join(root, what+".json")
						r := enforceAs(t, b, as.wrap, p, rep, c.argv...)
						testutil.MustCode(t, "enforce "+what, r, 0)
						testutil.RequireNoDenials(t, "enforce "+what, rep, r)
						if strings.Contains(r.Stderr, "held for review") {
							t.Fatalf("enforce %s held a change:\n%s", what, r.Stderr)
						}
					}
					clean("warm")
					m, _ := filepath.Glob(filepath.Join(b.Home, c.entry))
					for _, d := range m {
						b.Run(t, "chmod", "-R", "u+w", d)
						os.RemoveAll(d)
					}
					clean("cold")
					if got := cacheFile(t, b, c.entry, c.file); !strings.Contains(got, c.want) {
						t.Fatalf("the cold build did not add %s/%s to the host's cache: %q", c.entry, c.file, got)
					}

					b.Extra = []string{"POISON=1"}
					r := enforceAs(t, b, as.wrap, p, filepath.Join(root, "poison.json"), c.argv...)
					t.Logf("poisoned run: exit %d\n%s", r.Code, r.Stderr)
					if !strings.Contains(r.Stdout+r.Stderr, "POISON ") {
						t.Fatalf("the payload did not run:\n%s", r.Stderr)
					}
					if got := cacheFile(t, b, c.entry, c.file); !strings.Contains(got, c.want) {
						t.Fatalf("the payload rewrote %s/%s on the host: %q", c.entry, c.file, got)
					}
					if !strings.Contains(r.Stderr, "dangerous") || !strings.Contains(r.Stderr, c.file) {
						t.Fatalf("the rewrite is not held dangerous:\n%s", r.Stderr)
					}
				})
			}
		})
	}
}
