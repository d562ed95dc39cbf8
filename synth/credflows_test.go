package synth

import (
	"strings"
	"testing"

	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/trace"
)

// node reads ~/.npmrc, whose token is scoped to registry.test, and connects there: the
// profile brokers that token to registry.test only; the other registry's token in the same
// store, never connected to, gets no rule; a store nobody read gets none either.
func TestCredentialFlowNpmrc(t *testing.T) {
	tr := &trace.Trace{
		Version:   trace.Version,
		Command:   []string{"npm", "install"},
		Context:   map[string]string{"WORKDIR": "/w", "HOME": "/home/a", "TMPDIR": "/tmp"},
		Host:      trace.Host{Kernel: "6.18", Arch: trace.ArchX86_64},
		Processes: []trace.Process{{ID: 1, PID: 10, Exe: "/usr/bin/node"}},
		Files: []trace.FileAccess{
			{Exe: "/usr/bin/node", Path: "/home/a/.npmrc", Access: trace.AccessRead, OK: true, Count: 1},
		},
		Network: []trace.NetworkAccess{
			{Exe: "/usr/bin/node", Op: trace.OpConnect, Family: "inet", Proto: "tcp", Addr: "198.51.100.7", Port: 443, Host: "registry.test", OK: true, Count: 1},
		},
	}
	stores := map[string][]policy.SecretEntry{
		"$HOME/.npmrc": {
			{Key: "//registry.test/:_authToken", Host: "registry.test", How: policy.HowBearer},
			{Key: "//other.test/:_authToken", Host: "other.test", How: policy.HowBearer},
		},
		"$WORKDIR/.npmrc": {{Key: "//registry.test/:_authToken", Host: "registry.test", How: policy.HowBearer, Env: "NPM_TOKEN"}},
	}
	res, err := Synthesize(tr, Options{Stores: stores})
	if err != nil {
		t.Fatal(err)
	}
	cs := res.Profile.Credentials
	if len(cs) != 1 || cs[0].File != "$HOME/.npmrc" || cs[0].Key != "//registry.test/:_authToken" || strings.Join(cs[0].Hosts, ",") != "registry.test" ||
		cs[0].How != "bearer" || cs[0].By != "/usr/bin/node" {
		t.Fatalf("credentials: %+v", cs)
	}
	if len(res.SecretTouches) != 0 || len(res.Warnings) != 0 {
		t.Fatalf("a brokered store's read is still a secret touch: %+v %q", res.SecretTouches, res.Warnings)
	}
	if len(res.CredentialFlows) != 1 || !strings.Contains(res.CredentialFlows[0], "/usr/bin/node reads $HOME/.npmrc //registry.test/:_authToken") {
		t.Fatalf("flows: %q", res.CredentialFlows)
	}
	// The profile is valid (it parses back) and diff rates the flow low: no approval needed.
	out, err := policy.Marshal(res.Profile)
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.Parse("learned.yaml", out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if d := policy.Diff(nil, p); !hasCredChange(d, policy.RiskLow) {
		t.Fatalf("diff: %v", d)
	}
	// Resynthesizing keeps the rule.
	again, err := Resynthesize(p, Options{})
	if err != nil || len(again.Profile.Credentials) != 1 {
		t.Fatalf("resynthesize: %v %+v", err, again.Profile.Credentials)
	}
	// Without the connect there is no flow.
	tr.Network = nil
	res, _ = Synthesize(tr, Options{Stores: stores})
	if len(res.Profile.Credentials) != 0 {
		t.Fatalf("a store read without a connect to its host brokered: %+v", res.Profile.Credentials)
	}
}

func hasCredChange(d []policy.Change, r policy.Risk) bool {
	for _, c := range d {
		if c.Section == policy.SectionCredentials && c.Risk == r {
			return true
		}
	}
	return false
}

// A well-known token variable set for the run, and a connect to its service's host: the
// variable is brokered to that host (and no other the run reached); a variable whose service
// the run never reached gets no rule.
func TestCredentialFlowEnvToken(t *testing.T) {
	tr := &trace.Trace{
		Version:   trace.Version,
		Command:   []string{"gh", "release", "list"},
		Context:   map[string]string{"WORKDIR": "/w", "HOME": "/home/a", "TMPDIR": "/tmp"},
		Host:      trace.Host{Kernel: "6.18", Arch: trace.ArchX86_64},
		Processes: []trace.Process{{ID: 1, PID: 10, Exe: "/usr/bin/gh"}},
		Network: []trace.NetworkAccess{
			{Exe: "/usr/bin/gh", Op: trace.OpConnect, Family: "inet", Proto: "tcp", Addr: "198.51.100.7", Port: 443, Host: "api.github.com", OK: true, Count: 1},
			{Exe: "/usr/bin/gh", Op: trace.OpConnect, Family: "inet", Proto: "tcp", Addr: "198.51.100.8", Port: 443, Host: "objects.example", OK: true, Count: 1},
		},
	}
	res, err := Synthesize(tr, Options{EnvTokens: []string{"NPM_TOKEN", "GITHUB_TOKEN", "NOT_A_TOKEN"}})
	if err != nil {
		t.Fatal(err)
	}
	cs := res.Profile.Credentials
	if len(cs) != 1 || cs[0].Env != "GITHUB_TOKEN" || strings.Join(cs[0].Hosts, ",") != "api.github.com" || cs[0].How != policy.HowBearer || cs[0].By != "/usr/bin/gh" {
		t.Fatalf("credentials: %+v", cs)
	}
	if len(res.CredentialFlows) != 1 || !strings.Contains(res.CredentialFlows[0], "$GITHUB_TOKEN is set and /usr/bin/gh connects to api.github.com") {
		t.Fatalf("flows: %q", res.CredentialFlows)
	}
	out, err := policy.Marshal(res.Profile)
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.Parse("learned.yaml", out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if d := policy.Diff(nil, p); !hasCredChange(d, policy.RiskLow) {
		t.Fatalf("diff: %v", d)
	}
}
