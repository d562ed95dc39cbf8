package profiles

import (
	"slices"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/policy"
)

// want is the set the README documents; a new profile needs a README section and a fixture run
// in shipped/shipped_test.go.
var want = []string{"cargo-build", "cargo-test", "eslint", "git", "go-build", "go-test", "go-vet", "gofmt", "gopls", "make-gcc", "npm-install", "npm-test", "prettier", "python3", "python3-unittest", "rustfmt"}

func TestNames(t *testing.T) {
	if got := Names(); !slices.Equal(got, want) {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
	for _, bad := range []string{"", "../policy/x", "go-build.yaml", ".hidden", "nope"} {
		if _, err := Load(bad); err == nil {
			t.Errorf("Load(%q): want an error", bad)
		}
	}
}

// TestReviewed checks what the hand review promises for every shipped profile: it parses, is
// complete, has no network, hides the credential stores, grants nothing in them, and holds
// no path of the machine it was learned on.
func TestReviewed(t *testing.T) {
	secrets := []string{"$HOME/.ssh", "$HOME/.aws", "$HOME/.gnupg", "$HOME/.netrc", "$HOME/.git-credentials", "$HOME/.docker/config.json", "$HOME/.kube", "$HOME/.npmrc", "$HOME/.pypirc", "$HOME/.config/gh"}
	machine := []string{"/tmp/", "/root", "/home/", "sysprof-shipped", "/alice", "/bob", "process_api", "/sys/fs/cgroup/", "/usr/share/zoneinfo/", "_sandboxing"}
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			p, err := Load(name)
			if err != nil {
				t.Fatal(err)
			}
			if p.Metadata.Incomplete {
				t.Errorf("incomplete: %v", p.Metadata.IncompleteReasons)
			}
			if p.Metadata.Runs < 3 {
				t.Errorf("learned %d times; shipped profiles are merged from at least 3 learns", p.Metadata.Runs)
			}
			if n := p.Network; len(n.Connect)+len(n.Send)+len(n.Bind) > 0 {
				t.Errorf("network: %+v; no shipped tool needs the network on its fixture", n)
			}
			hidden := map[string]bool{}
			for _, h := range p.Filesystem.Hidden {
				hidden[h.Path] = true
			}
			for _, s := range secrets {
				if !hidden[s] {
					t.Errorf("credential store %s is not hidden", s)
				}
			}
			fs := p.Filesystem
			for section, rules := range map[string][]policy.PathRule{"read": fs.Read, "write": fs.Write, "exec": fs.Exec, "list": fs.List} {
				for _, r := range rules {
					for _, s := range secrets {
						if r.Path == s || strings.HasPrefix(r.Path, s+"/") || r.Path == "$HOME" || r.Path == "/" {
							t.Errorf("%s %s reaches the credential store %s", section, r.Path, s)
						}
					}
					for _, m := range machine {
						if strings.Contains(r.Path, m) {
							t.Errorf("%s %s is specific to the machine it was learned on (%q)", section, r.Path, m)
						}
					}
				}
			}
			for _, b := range p.Binaries {
				for _, m := range machine {
					if strings.Contains(b.Path, m) {
						t.Errorf("binary %s is specific to the machine it was learned on (%q)", b.Path, m)
					}
				}
			}
		})
	}
}
