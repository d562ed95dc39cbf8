package enforcer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/policy"
)

// credProfile allows reg.test:443 and brokers ~/.npmrc's token to it.
func credProfile(creds ...policy.Credential) *policy.Profile {
	p := &policy.Profile{APIVersion: policy.APIVersion, Kind: policy.Kind}
	p.Syscalls.Architectures = []string{"x86_64"}
	p.Syscalls.Allow = []policy.Syscall{{Name: "read"}, {Name: "write"}}
	p.Filesystem.Read = []policy.PathRule{{Path: "/usr"}, {Path: "$WORKDIR"}}
	p.Network.Connect = []policy.Endpoint{{Endpoint: "reg.test:443", Proto: "tcp"}}
	p.Credentials = creds
	return p
}

// Compile reads the real value on the host, and nothing of it reaches the plan: the store is
// masked with a stand-in, the CA bundle extended, the variables set; errors name the store's
// file, line and key.
func TestCompileCredentials(t *testing.T) {
	work, home := t.TempDir(), t.TempDir()
	const real = "npm_REALREALREALREALREALREALREALREAL00"
	npmrc := filepath.Join(home, ".npmrc")
	os.WriteFile(npmrc, []byte("registry=https://reg.test/\n//reg.test/:_authToken="+real+"\n//other.test/:_authToken=other-secret\n"), 0o600)
	env := HostEnvFor(work, []string{"HOME=" + home, "PATH=/usr/bin"})
	rule := policy.Credential{File: "$HOME/.npmrc", Key: "//reg.test/:_authToken", Hosts: []string{"reg.test"}, How: "bearer"}
	c, err := Compile(credProfile(rule), env)
	if err != nil {
		t.Fatal(err)
	}
	var store, bundle string
	for _, m := range c.Plan.Masked {
		switch {
		case m.Path == npmrc:
			store = string(m.Content)
		case strings.Contains(string(m.Content), "BEGIN CERTIFICATE"):
			bundle = m.Path
		}
	}
	standIn := c.creds.broker.Creds[0].StandIn
	if !strings.Contains(store, "//reg.test/:_authToken="+standIn+"\n") || strings.Contains(store, real) || strings.Contains(store, "other-secret") ||
		!strings.Contains(store, "registry=https://reg.test/") {
		t.Errorf("the store inside:\n%s", store)
	}
	if bundle == "" || !slices.Contains(c.creds.env, "NODE_EXTRA_CA_CERTS="+bundle) || !slices.Contains(c.creds.env, "SSL_CERT_FILE="+bundle) {
		t.Errorf("CA bundle %q, env %q", bundle, c.creds.env)
	}
	if !slices.ContainsFunc(c.Plan.Landlock.Read, func(r string) bool { return r == npmrc }) {
		t.Errorf("the store is not readable inside: %v", c.Plan.Landlock.Read)
	}
	if slices.Contains(c.Plan.Hidden, npmrc) {
		t.Errorf("the store is hidden under its mask")
	}
	j, _ := json.Marshal(c)
	if strings.Contains(string(j), real) {
		t.Errorf("the compiled plan holds the real token")
	}

	// ${VAR}: the variable holds the secret and gets the stand-in; the store line stays.
	os.WriteFile(npmrc, []byte("//reg.test/:_authToken=${NPM_TOKEN}\n"), 0o600)
	c, err = Compile(credProfile(rule), HostEnvFor(work, []string{"HOME=" + home, "NPM_TOKEN=" + real}))
	if err != nil {
		t.Fatal(err)
	}
	if c.creds.broker.Creds[0].Real != real || !slices.Contains(c.creds.env, "NPM_TOKEN="+c.creds.broker.Creds[0].StandIn) || !slices.Contains(c.creds.unset, "NPM_TOKEN") {
		t.Errorf("${NPM_TOKEN}: env %q unset %q", c.creds.env, c.creds.unset)
	}

	for _, tc := range []struct {
		name, npmrc string
		environ     []string
		rule        policy.Credential
		want        string
	}{
		{"malformed store", "registry=x\n//reg.test/:_authToken\n", nil, rule, npmrc + ":2: //reg.test/:_authToken: not a key = value line"},
		{"missing entry", "registry=x\n", nil, rule, npmrc + ": //reg.test/:_authToken: no such entry"},
		{"unset variable", "//reg.test/:_authToken=${NPM_TOKEN}\n", nil, rule, "refers to the variable NPM_TOKEN, which is not set"},
		{"host without a connect rule", "//reg.test/:_authToken=x\n", nil,
			policy.Credential{File: "$HOME/.npmrc", Key: "//reg.test/:_authToken", Hosts: []string{"evil.test"}, How: "bearer"}, "host evil.test: no network.connect rule allows it"},
	} {
		os.WriteFile(npmrc, []byte(tc.npmrc), 0o600)
		_, err := Compile(credProfile(tc.rule), HostEnvFor(work, append([]string{"HOME=" + home}, tc.environ...)))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// A brokered variable that is not set brokers nothing, and the run goes on without it.
func TestCompileCredentialsUnsetVariable(t *testing.T) {
	work, home := t.TempDir(), t.TempDir()
	c, err := Compile(credProfile(policy.Credential{Env: "NPM_TOKEN", Hosts: []string{"reg.test"}, How: "bearer"}), HostEnvFor(work, []string{"HOME=" + home}))
	if err != nil {
		t.Fatal(err)
	}
	if c.creds == nil || len(c.creds.broker.Creds) != 0 || !slices.ContainsFunc(c.Notes, func(n string) bool {
		return strings.Contains(n, "$NPM_TOKEN is not set: nothing brokered for reg.test")
	}) {
		t.Fatalf("notes %q", c.Notes)
	}
}

// cargo's store lies in a store pattern ($CARGO_HOME/credentials*): the brokered file is shown
// (masked), the rest of the pattern stays hidden.
func TestCompileCredentialsCargo(t *testing.T) {
	work, home := t.TempDir(), t.TempDir()
	cargo := filepath.Join(home, ".cargo")
	os.MkdirAll(cargo, 0o755)
	file := filepath.Join(cargo, "credentials.toml")
	os.WriteFile(file, []byte("[registries.my-reg]\ntoken = \"REALCARGOTOKEN1234567890\"\n"), 0o600)
	os.WriteFile(filepath.Join(cargo, "credentials"), []byte("[registry]\ntoken = \"legacy\"\n"), 0o600)
	rule := policy.Credential{File: "$CARGO_HOME/credentials.toml", Key: "registries.my-reg.token", Hosts: []string{"reg.test"}, How: "header:Authorization"}
	c, err := Compile(credProfile(rule), HostEnvFor(work, []string{"HOME=" + home, "CARGO_HOME=" + cargo}))
	if err != nil {
		t.Fatal(err)
	}
	masked := ""
	for _, m := range c.Plan.Masked {
		if m.Path == file {
			masked = string(m.Content)
		}
	}
	if !strings.Contains(masked, "token = \""+c.creds.broker.Creds[0].StandIn+"\"") || strings.Contains(masked, "REALCARGO") {
		t.Errorf("masked store:\n%s", masked)
	}
	if !slices.Contains(c.Plan.Hidden, filepath.Join(cargo, "credentials")) || slices.Contains(c.Plan.Hidden, file) {
		t.Errorf("hidden: %v", c.Plan.Hidden)
	}
}

// pip: only the password of an index URL is the secret, in pip.conf and in PIP_INDEX_URL:
// inside, the same URL holds the stand-in as its password.
func TestCompileCredentialsPip(t *testing.T) {
	work, home := t.TempDir(), t.TempDir()
	const real = "pipREALPASSWORDpipREALPASSWORD42"
	conf := filepath.Join(home, ".config/pip/pip.conf")
	os.MkdirAll(filepath.Dir(conf), 0o755)
	os.WriteFile(conf, []byte("[global]\nindex-url = https://me:"+real+"@reg.test/simple\nextra-index-url = https://x:other-secret@other.test/simple\n"), 0o600)
	rule := policy.Credential{File: "$HOME/.config/pip/pip.conf", Key: "https://me@reg.test/simple", Hosts: []string{"reg.test"}, How: "basic"}
	c, err := Compile(credProfile(rule), HostEnvFor(work, []string{"HOME=" + home}))
	if err != nil {
		t.Fatal(err)
	}
	standIn := c.creds.broker.Creds[0].StandIn
	var store string
	for _, m := range c.Plan.Masked {
		if m.Path == conf {
			store = string(m.Content)
		}
	}
	if store != "[global]\nindex-url = https://me:"+standIn+"@reg.test/simple\nextra-index-url = https://x@other.test/simple\n" || c.creds.broker.Creds[0].Real != real || !c.creds.broker.Creds[0].Basic {
		t.Errorf("pip.conf inside:\n%s", store)
	}

	env := rule
	env.File, env.Key = "", ""
	env.Env = "PIP_INDEX_URL"
	c, err = Compile(credProfile(env), HostEnvFor(work, []string{"HOME=" + home, "PIP_INDEX_URL=https://me:" + real + "@reg.test/simple"}))
	if err != nil {
		t.Fatal(err)
	}
	standIn = c.creds.broker.Creds[0].StandIn
	if c.creds.broker.Creds[0].Real != real || !slices.Contains(c.creds.env, "PIP_INDEX_URL=https://me:"+standIn+"@reg.test/simple") || strings.Contains(strings.Join(c.creds.env, " "), real) {
		t.Errorf("PIP_INDEX_URL: env %q", c.creds.env)
	}
	env.How = "bearer"
	if _, err := Compile(credProfile(env), HostEnvFor(work, []string{"HOME=" + home, "PIP_INDEX_URL=https://me:" + real + "@reg.test/simple"})); err == nil ||
		!strings.Contains(err.Error(), "PIP_INDEX_URL holds a URL with a password, which a client presents as how: basic") {
		t.Errorf("a URL variable as bearer: %v", err)
	}
}

// A host that expects a client certificate (the store, or docker's certs.d, gives one) is
// refused at compile: the proxy terminates TLS and can present none.
func TestCompileCredentialsClientCert(t *testing.T) {
	work, home := t.TempDir(), t.TempDir()
	env := HostEnvFor(work, []string{"HOME=" + home})
	npmrc := filepath.Join(home, ".npmrc")
	npm := policy.Credential{File: "$HOME/.npmrc", Key: "//reg.test/:_authToken", Hosts: []string{"reg.test"}, How: "bearer"}
	for _, tc := range []struct{ data, want string }{
		{"//reg.test/:_authToken=tok\n//reg.test/:certfile=/h/c.pem\n", npmrc + " //reg.test/:certfile (line 2) gives the client a certificate for reg.test"},
		{"//reg.test/:_authToken=tok\ncert=\"-----BEGIN CERTIFICATE-----\"\n", npmrc + " cert (line 2)"},
	} {
		os.WriteFile(npmrc, []byte(tc.data), 0o600)
		if _, err := Compile(credProfile(npm), env); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "can present no client certificate") {
			t.Errorf("%q: %v", tc.data, err)
		}
	}
	os.WriteFile(npmrc, []byte("//reg.test/:_authToken=tok\n//other.test/:certfile=/h/c.pem\n"), 0o600)
	if _, err := Compile(credProfile(npm), env); err != nil {
		t.Errorf("another host's certificate: %v", err)
	}
	conf := filepath.Join(home, ".config/pip/pip.conf")
	os.MkdirAll(filepath.Dir(conf), 0o755)
	os.WriteFile(conf, []byte("[global]\nindex-url = https://me:pw@reg.test/simple\nclient-cert = /h/c.pem\n"), 0o600)
	pip := policy.Credential{File: "$HOME/.config/pip/pip.conf", Key: "https://me@reg.test/simple", Hosts: []string{"reg.test"}, How: "basic"}
	if _, err := Compile(credProfile(pip), env); err == nil || !strings.Contains(err.Error(), conf+" global.client-cert (line 3)") {
		t.Errorf("pip client-cert: %v", err)
	}
	dockerCfg := filepath.Join(home, ".docker/config.json")
	os.MkdirAll(filepath.Join(home, ".docker/certs.d/reg.test"), 0o755)
	os.WriteFile(dockerCfg, []byte(`{"auths": {"reg.test": {"auth": "bWU6cHc="}}}`), 0o600)
	docker := policy.Credential{File: "$HOME/.docker/config.json", Key: "auths.reg.test.auth", Hosts: []string{"reg.test"}, How: "basic"}
	if _, err := Compile(credProfile(docker), env); err != nil {
		t.Errorf("docker without a client certificate: %v", err)
	}
	os.WriteFile(filepath.Join(home, ".docker/certs.d/reg.test/client.cert"), []byte("x"), 0o600)
	if _, err := Compile(credProfile(docker), env); err == nil || !strings.Contains(err.Error(), "certs.d/reg.test/client.cert gives the client a certificate") {
		t.Errorf("docker certs.d: %v", err)
	}
}
