package main

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/policy"
)

// learn reads the brokerable entries of every store format it knows (keys and hosts, never
// values), says which store does not parse, and names the token variables set for the run.
func TestLearnStores(t *testing.T) {
	home, work := t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	for p, data := range map[string]string{
		".config/pip/pip.conf": "[global]\nindex-url = https://me:pipREAL@pypi.example/simple\n",
		".docker/config.json":  `{"auths": {"reg.example:5000": {"auth": "` + base64.StdEncoding.EncodeToString([]byte("me:dockerREAL")) + `"}}}`,
		".netrc":               "machine netrc.example login me password netrcREAL\n",
		".npmrc":               "//npm.example/:_authToken=npmREAL\n//broken\n",
	} {
		os.MkdirAll(filepath.Dir(filepath.Join(home, p)), 0o755)
		os.WriteFile(filepath.Join(home, p), []byte(data), 0o600)
	}
	var w bytes.Buffer
	got := learnStores(&w, work)
	want := map[string]policy.SecretEntry{
		"$HOME/.config/pip/pip.conf": {Key: "https://me@pypi.example/simple", Host: "pypi.example", How: policy.HowBasic},
		"$HOME/.docker/config.json":  {Key: "auths.reg.example:5000.auth", Host: "reg.example:5000", How: policy.HowBasic},
		"$HOME/.netrc":               {Key: "netrc.example", Host: "netrc.example", How: policy.HowBasic},
	}
	for store, e := range want {
		if len(got[store]) != 1 || got[store][0] != e {
			t.Errorf("%s: %+v, want %+v", store, got[store], e)
		}
	}
	if _, ok := got["$HOME/.npmrc"]; ok || !strings.Contains(w.String(), filepath.Join(home, ".npmrc")+":2: //broken: not a key = value line") {
		t.Errorf("a store that does not parse: %+v %q", got["$HOME/.npmrc"], w.String())
	}
	if strings.Contains(w.String(), "REAL") {
		t.Errorf("a value in learn's output: %q", w.String())
	}
	t.Setenv("GITHUB_TOKEN", "ghp_x")
	for _, v := range []string{"GH_TOKEN", "NPM_TOKEN", "CARGO_REGISTRY_TOKEN"} {
		t.Setenv(v, "")
	}
	if v := learnEnvTokens(); len(v) != 1 || v[0] != "GITHUB_TOKEN" {
		t.Errorf("token variables: %q", v)
	}
}
