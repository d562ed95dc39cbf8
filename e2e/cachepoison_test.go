package e2e

import (
	"archive/tar"
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

// registryLibs returns the content of every extracted dep-1.0.0/src/lib.rs under home's cargo
// registry.
func registryLibs(t *testing.T, b *testutil.Box) []string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(b.Home, ".cargo", "registry", "src", "*", "dep-1.0.0", "src", "lib.rs"))
	var out []string
	for _, p := range m {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(data))
	}
	return out
}

func TestCachePoisonCargoRegistry(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireTools(t, hostPath, "cargo")
	b := cargoPoisonBox(t, t.TempDir())
	p := filepath.Join(b.Home, "profile.yaml")
	argv := []string{"cargo", "build", "--offline"}
	testutil.MustCode(t, "learn", b.Sysprof(t, append([]string{"learn", "-p", p, "--"}, argv...)...), 0)
	if libs := registryLibs(t, b); len(libs) != 1 || !strings.Contains(libs[0], "42") {
		t.Fatalf("the learned build extracted no dep-1.0.0: %q", libs)
	}
	t.Logf("profile writes: %v", pathsOf(loadProfile(t, p).Filesystem.Write))

	// Warm: the same build enforced is clean.
	rep := filepath.Join(b.Tmp, "warm.json")
	r := b.Sysprof(t, append([]string{"enforce", "-p", p, "--report", rep, "--"}, argv...)...)
	testutil.MustCode(t, "enforce warm", r, 0)
	testutil.RequireNoDenials(t, "enforce warm", rep, r)

	// Poisoned: build.rs rewrites dep's extracted source.
	b.Extra = []string{"POISON=1"}
	rep = filepath.Join(b.Tmp, "poison.json")
	r = b.Sysprof(t, append([]string{"enforce", "-p", p, "--report", rep, "--"}, argv...)...)
	t.Logf("poisoned run: exit %d\n%s", r.Code, r.Stderr)
	if libs := registryLibs(t, b); len(libs) != 1 || !strings.Contains(libs[0], "42") {
		t.Fatalf("the poisoned build rewrote dep's extracted source on the host: %q", libs)
	}
}
