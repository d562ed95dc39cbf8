package paths_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/enforcer"
	"github.com/sysprof/sysprof/paths"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/profiler"
)

// TestEveryLearnedVariableExpandsInEnforce is the property the package exists for: on one host
// and environment, every variable learn can write into a profile (profiler.Context, then
// paths.Portable) expands under enforce (enforcer.HostEnvFor, then Compile) to the very path
// learn saw. Learned with GOPATH set, enforce once exited 125 ("$GOPATH is not set"); learned
// with npm_config_cache, enforce expanded $NPM_CACHE to ~/.npm.
func TestEveryLearnedVariableExpandsInEnforce(t *testing.T) {
	root := t.TempDir()
	home, work := filepath.Join(root, "home"), filepath.Join(root, "work")
	goenv := filepath.Join(root, "goenv")
	for _, d := range []string{home, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(goenv, []byte("GOPATH="+root+"/envgopath\nGOCACHE="+root+"/envgocache\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	base := []string{"HOME=" + home, "PATH=" + os.Getenv("PATH")}
	for _, c := range []struct {
		name  string
		extra []string
		// emits: variables learn must use for paths under their values in this environment.
		emits []string
	}{
		{"unset: defaults", nil, []string{"WORKDIR", "HOME", "TMPDIR", "GOPATH", "GOCACHE", "GOMODCACHE", "NPM_CACHE", "CARGO_HOME", "RUSTUP_HOME"}},
		{"GOPATH", []string{"GOPATH=" + root + "/gopath"}, []string{"GOPATH", "GOMODCACHE"}},
		{"GOPATH list", []string{"GOPATH=" + root + "/gp1:" + root + "/gp2"}, []string{"GOPATH"}},
		{"npm_config_cache", []string{"npm_config_cache=" + root + "/npmcache"}, []string{"NPM_CACHE"}},
		{"NPM_CONFIG_CACHE", []string{"NPM_CONFIG_CACHE=" + root + "/npmcache2"}, []string{"NPM_CACHE"}},
		{"XDG_CACHE_HOME", []string{"XDG_CACHE_HOME=" + root + "/xdg"}, []string{"GOCACHE"}},
		{"go env file", []string{"GOENV=" + goenv}, []string{"GOPATH", "GOCACHE", "GOMODCACHE"}},
		{"everything set", []string{"GOPATH=" + root + "/g", "GOCACHE=" + root + "/gc", "GOMODCACHE=" + root + "/gm",
			"GOROOT=" + root + "/goroot", "CARGO_HOME=" + root + "/cargo", "RUSTUP_HOME=" + root + "/rustup",
			"npm_config_cache=" + root + "/npm", "TMPDIR=" + root + "/tmp"}, paths.Names()},
		{"HOME unset", []string{"HOME="}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := append(append([]string{}, base...), c.extra...)
			learned := profiler.Context(work, env)
			enforced := enforcer.HostEnvFor(work, env)
			for _, v := range c.emits {
				if learned[v] == "" {
					t.Errorf("learn has no $%s: %v", v, learned)
				}
			}
			var rules []policy.PathRule
			for _, name := range paths.Names() {
				val := learned[name]
				if val == "" {
					continue
				}
				host := val + "/sysprof-probe/file.txt"
				port := paths.Portable(host, learned)
				if !strings.HasPrefix(port, "$") {
					t.Errorf("$%s=%s: learn writes %s as %s, without a variable", name, val, host, port)
					continue
				}
				if got, err := paths.Expand(port, enforced.Vars); err != nil || got != host {
					t.Errorf("$%s: learn writes %s as %s; enforce expands it to %q, %v", name, host, port, got, err)
				}
				if enforced.Vars[name] != val {
					t.Errorf("$%s: learn %q, enforce %q", name, val, enforced.Vars[name])
				}
				rules = append(rules, policy.PathRule{Path: port}, policy.PathRule{Path: "$" + name})
			}
			// The whole way: a profile holding every learned variable compiles for enforce.
			p := &policy.Profile{APIVersion: policy.SupportedAPIVersions[0], Kind: policy.Kind,
				Syscalls:   policy.Syscalls{Architectures: []string{"x86_64"}, Allow: []policy.Syscall{{Name: "read"}, {Name: "exit_group"}}},
				Filesystem: policy.Filesystem{Read: rules}}
			if _, err := enforcer.Compile(p, enforced); err != nil {
				t.Errorf("compile a profile of every learned variable: %v", err)
			}
			// Learn may only write variables enforce knows.
			for k := range learned {
				if paths.Known("$"+k) && enforced.Vars[k] == "" {
					t.Errorf("learn has $%s=%s, enforce has none", k, learned[k])
				}
			}
		})
	}
}
