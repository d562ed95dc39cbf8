package main

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/policy"
)

func TestShowEnv(t *testing.T) {
	p := &policy.Profile{Env: policy.Env{Pass: []string{"NPM_TOKEN"}}}
	var b strings.Builder
	writeShowEnv(&b, p, []string{"PATH=/usr/bin", "NPM_TOKEN=x", "GITHUB_TOKEN=y", "AWS_SECRET_ACCESS_KEY=z"})
	out := b.String()
	for _, want := range []string{"passed:  NPM_TOKEN\n", "removed from this shell's: AWS_SECRET_ACCESS_KEY, GITHUB_TOKEN "} {
		if !strings.Contains(out, want) {
			t.Errorf("show lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "PATH") {
		t.Errorf("show lists PATH as removed:\n%s", out)
	}
}

func TestLearnPassEnvFlag(t *testing.T) {
	var got []string
	err := execSeam(t, newLearnCmd(streams{}, func(_ context.Context, o *learnOptions) error {
		got = o.PassEnv
		return nil
	}), "learn", "-p", filepath.Join(t.TempDir(), "p.yaml"), "--pass-env", "NPM_TOKEN", "--pass-env", "GITHUB_TOKEN", "--", "true")
	if err != nil || !slices.Equal(got, []string{"NPM_TOKEN", "GITHUB_TOKEN"}) {
		t.Errorf("--pass-env: %q, %v", got, err)
	}
}

// show lists each credential rule and where its real value comes from, never the value.
func TestShowCredentials(t *testing.T) {
	p := &policy.Profile{Credentials: []policy.Credential{
		{File: "$HOME/.npmrc", Key: "//registry.example.com/:_authToken", Hosts: []string{"registry.example.com"}, How: "bearer", Provenance: policy.Provenance{By: "/usr/bin/node"}},
		{Env: "NPM_TOKEN", Hosts: []string{"evil.example"}, How: "bearer"},
	}}
	var b strings.Builder
	writeShowCredentials(&b, p)
	out := b.String()
	for _, want := range []string{"bearer to registry.example.com (low, only for /usr/bin/node)\n    real value from entry //registry.example.com/:_authToken of $HOME/.npmrc",
		"bearer to evil.example (high)\n    real value from the variable NPM_TOKEN"} {
		if !strings.Contains(out, want) {
			t.Errorf("show lacks %q:\n%s", want, out)
		}
	}
}
