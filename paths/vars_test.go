package paths

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestHost(t *testing.T) {
	h := t.TempDir()
	goenv := filepath.Join(h, "goenv")
	if err := os.WriteFile(goenv, []byte("GOPATH=/gp/env:/gp/two\nGOCACHE=/gc/env\nGOMODCACHE=relative\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		env  []string
		want map[string]string // the values checked (absent key: want it left out)
	}{
		{"defaults", []string{"HOME=" + h, "PATH="}, map[string]string{
			"WORKDIR": "/w", "HOME": h, "TMPDIR": "/tmp", "CARGO_HOME": h + "/.cargo", "RUSTUP_HOME": h + "/.rustup",
			"GOPATH": h + "/go", "GOMODCACHE": h + "/go/pkg/mod", "GOCACHE": h + "/.cache/go-build", "NPM_CACHE": h + "/.npm",
			"PNPM_HOME": h + "/.local/share/pnpm"}},
		{"PNPM_HOME", []string{"HOME=" + h, "PNPM_HOME=/p/"}, map[string]string{"PNPM_HOME": "/p"}},
		{"XDG_DATA_HOME", []string{"HOME=" + h, "XDG_DATA_HOME=/d"}, map[string]string{"PNPM_HOME": "/d/pnpm"}},
		{"GOPATH set", []string{"HOME=" + h, "GOPATH=/gp/a/"}, map[string]string{"GOPATH": "/gp/a", "GOMODCACHE": "/gp/a/pkg/mod"}},
		{"GOPATH list", []string{"HOME=" + h, "GOPATH=rel:/gp/a:/gp/b"}, map[string]string{"GOPATH": "/gp/a", "GOMODCACHE": "/gp/a/pkg/mod"}},
		{"npm_config_cache", []string{"HOME=" + h, "npm_config_cache=/npm/c"}, map[string]string{"NPM_CACHE": "/npm/c"}},
		{"NPM_CONFIG_CACHE", []string{"HOME=" + h, "NPM_CONFIG_CACHE=/npm/C"}, map[string]string{"NPM_CACHE": "/npm/C"}},
		{"npm lower case first", []string{"HOME=" + h, "NPM_CONFIG_CACHE=/npm/C", "npm_config_cache=/npm/c"}, map[string]string{"NPM_CACHE": "/npm/c"}},
		{"XDG_CACHE_HOME", []string{"HOME=" + h, "XDG_CACHE_HOME=/xdg"}, map[string]string{"GOCACHE": "/xdg/go-build"}},
		{"go env file", []string{"HOME=" + h, "GOENV=" + goenv}, map[string]string{"GOPATH": "/gp/env", "GOCACHE": "/gc/env", "GOMODCACHE": "/gp/env/pkg/mod"}},
		{"environment beats go env file", []string{"HOME=" + h, "GOENV=" + goenv, "GOPATH=/gp/x", "GOCACHE=/gc/x"}, map[string]string{"GOPATH": "/gp/x", "GOCACHE": "/gc/x"}},
		{"GOENV=off", []string{"HOME=" + h, "GOENV=off"}, map[string]string{"GOPATH": h + "/go"}},
		{"relative values are unset", []string{"HOME=" + h, "TMPDIR=tmp", "CARGO_HOME=c", "GOCACHE=off"}, map[string]string{
			"TMPDIR": "/tmp", "CARGO_HOME": h + "/.cargo", "GOCACHE": h + "/.cache/go-build"}},
		{"explicit tool homes", []string{"HOME=" + h, "CARGO_HOME=/c/", "RUSTUP_HOME=/r", "GOMODCACHE=/m", "TMPDIR=/t"}, map[string]string{
			"CARGO_HOME": "/c", "RUSTUP_HOME": "/r", "GOMODCACHE": "/m", "TMPDIR": "/t"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Host("/w", EnvList(c.env))
			for k, v := range c.want {
				if got[k] != v {
					t.Errorf("%s = %q, want %q (all: %v)", k, got[k], v, got)
				}
			}
			for k := range got {
				if !slices.Contains(Names(), k) {
					t.Errorf("Host gave %s, which is not a path variable", k)
				}
			}
		})
	}
}

func TestHostGOROOT(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"go/bin", "go/src/runtime", "bin", "plain/bin"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "go/bin/go"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "go/bin/go"), filepath.Join(root, "bin/go")); err != nil {
		t.Fatal(err)
	}
	// A go that is no toolchain's (no src/runtime beside it) must not make its parent $GOROOT.
	if err := os.WriteFile(filepath.Join(root, "plain/bin/go"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := Host("/w", EnvList([]string{"HOME=/h", "PATH=" + root + "/bin"}))["GOROOT"]; got != filepath.Join(root, "go") {
		t.Errorf("GOROOT from a linked go on PATH = %q, want %q", got, filepath.Join(root, "go"))
	}
	if got := Host("/w", EnvList([]string{"HOME=/h", "PATH=" + root + "/plain/bin"}))["GOROOT"]; got == filepath.Join(root, "plain") {
		t.Errorf("GOROOT = %q: a go without Go's sources beside it", got)
	}
	if got := Host("/w", EnvList([]string{"HOME=/h", "GOROOT=/opt/go"}))["GOROOT"]; got != "/opt/go" {
		t.Errorf("GOROOT from the environment = %q", got)
	}
}

func TestGrantAndCacheRoots(t *testing.T) {
	v := map[string]string{"WORKDIR": "/w", "HOME": "/h", "TMPDIR": "/t", "GOCACHE": "/h/.cache/go-build", "GOROOT": "/usr/local/go", "NPM_CACHE": "/h/.npm"}
	got := GrantRoots(v)
	for _, want := range []string{"/w", "/t", "/h/.cache/go-build", "/h/.npm"} {
		if !slices.Contains(got, want) {
			t.Errorf("GrantRoots lacks %s: %v", want, got)
		}
	}
	for _, not := range []string{"/h", "/usr/local/go"} {
		if slices.Contains(got, not) {
			t.Errorf("GrantRoots holds %s: %v (never $HOME or a toolchain root)", not, got)
		}
	}
	if !CacheRoot(v, "/h/.npm") || !CacheRoot(v, "/h/.cache/go-build") || CacheRoot(v, "/h") || CacheRoot(v, "/w") || CacheRoot(v, "/h/.npm/x") {
		t.Error("CacheRoot: want exactly the tool cache roots")
	}
}

// git gets GIT_PAGER=cat only when the profile runs no pager: the one $PAGER names, or less.
func TestNoPager(t *testing.T) {
	env := EnvList([]string{"PAGER=/usr/local/bin/moar -style x"})
	for _, c := range []struct {
		exec []string
		want string
	}{
		{nil, "GIT_PAGER=cat"},
		{[]string{"/usr/bin/git"}, "GIT_PAGER=cat"},
		{[]string{"/usr/bin/git", "/usr/bin/less"}, ""},
		{[]string{"$HOME/bin/moar"}, ""},
	} {
		if got := NoPager(c.exec, env); got != c.want {
			t.Errorf("NoPager(%v) = %q, want %q", c.exec, got, c.want)
		}
	}
}

// Every run gets what learn gets (no pager history, no optional git locks); one held to a
// profile without a pager also gets GIT_PAGER=cat.
func TestRunEnv(t *testing.T) {
	env := EnvList(nil)
	learn := LearnEnv()
	if !slices.Contains(learn, "LESSHISTFILE=-") || !slices.Contains(learn, "GIT_OPTIONAL_LOCKS=0") {
		t.Errorf("LearnEnv() = %v", learn)
	}
	if got := RunEnv(nil, env); !slices.Equal(got, append(LearnEnv(), "GIT_PAGER=cat")) {
		t.Errorf("RunEnv(no pager) = %v", got)
	}
	if got := RunEnv([]string{"/usr/bin/less"}, env); !slices.Equal(got, LearnEnv()) {
		t.Errorf("RunEnv(less) = %v", got)
	}
}

// TestHostResolvesLinks: a HOME and a work tree reached through a symlink have their real
// values, also below them where nothing exists yet ($GOCACHE before go's first run): the
// kernel reports and checks real paths, so learn and enforce must name those.
func TestHostResolvesLinks(t *testing.T) {
	root := t.TempDir()
	real := filepath.Join(root, "real")
	for _, d := range []string{filepath.Join(real, "home"), filepath.Join(real, "work")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(root, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	got := Host(filepath.Join(link, "work"), EnvList([]string{"HOME=" + filepath.Join(link, "home"), "TMPDIR=" + filepath.Join(link, "tmp")}))
	for k, want := range map[string]string{
		"WORKDIR": filepath.Join(real, "work"),
		"HOME":    filepath.Join(real, "home"),
		"GOCACHE": filepath.Join(real, "home", ".cache", "go-build"),
		"TMPDIR":  filepath.Join(real, "tmp"),
	} {
		if got[k] != want {
			t.Errorf("$%s = %q, want %q", k, got[k], want)
		}
	}
}

// Movable is the temporary directory and the caches: never the work tree, the home or a
// toolchain (a drift comparison moves only these into another variable's rule).
func TestMovable(t *testing.T) {
	for name, want := range map[string]bool{"TMPDIR": true, "GOCACHE": true, "CARGO_HOME": true, "NPM_CACHE": true,
		"WORKDIR": false, "HOME": false, "GOROOT": false, "RUSTUP_HOME": false, "PNPM_HOME": false, "NOPE": false} {
		if got := Movable(name); got != want {
			t.Errorf("Movable(%s) = %v, want %v", name, got, want)
		}
	}
}
