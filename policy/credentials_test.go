package policy

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
)

const credHead = `apiVersion: sysprof.dev/v1
kind: Profile
metadata: {name: npm-install, command: [npm, install], runs: 1, incomplete: false}
`

func TestCredentialsRoundTrip(t *testing.T) {
	src := credHead + `credentials:
  - {file: $HOME/.npmrc, key: "//registry.example.com/:_authToken", hosts: [registry.example.com], how: bearer, by: /usr/bin/node}
  - {env: GITHUB_TOKEN, hosts: [api.github.example:443], how: "header:X-Api-Key"}
`
	p, err := Parse("p.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	out, err := Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	q, err := Parse("out.yaml", out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(q.Credentials) != 2 || q.Credentials[1].Source() != "env GITHUB_TOKEN" || q.Credentials[0].How != "header:X-Api-Key" && q.Credentials[1].How != "header:X-Api-Key" {
		t.Fatalf("round trip: %+v\n%s", q.Credentials, out)
	}
	if d := Diff(p, q); len(d) != 0 {
		t.Fatalf("diff after round trip: %v", d)
	}
	m := Merge(p, &Profile{Credentials: []Credential{{Env: "GITHUB_TOKEN", Hosts: []string{"uploads.github.example"}, How: "header:X-Api-Key"}}})
	for _, c := range m.Credentials {
		if c.Env == "GITHUB_TOKEN" && len(c.Hosts) != 2 {
			t.Fatalf("merge did not union the hosts: %+v", c)
		}
	}
}

func TestCredentialsParseErrors(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{`credentials:
  - {file: $HOME/.npmrc, key: "//a.example/:_authToken", hosts: [a.example], how: bearer}
  - {env: NPM_TOKEN, hosts: [a.example], how: bearer}
`, `p.yaml:6: credentials[1].hosts[0]: a.example is claimed by credentials[0] too`},
		{`credentials:
  - {file: $HOME/.npmrc, key: "//a.example/:_authToken", hosts: [a.example], how: digest}
`, `p.yaml:5: credentials[0].how`},
		{`credentials:
  - {file: $HOME/.npmrc, hosts: [a.example], how: bearer}
`, `credentials[0].key: missing`},
		{`credentials:
  - {file: $HOME/.npmrc, key: k, env: X, hosts: [a.example], how: bearer}
`, `not both`},
		{`credentials:
  - {file: $HOME/.aws/credentials, key: k, hosts: [a.example], how: bearer}
`, `not a credential store sysprof can rewrite`},
	} {
		_, err := Parse("p.yaml", []byte(credHead+tc.body))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.body, err, tc.want)
		}
	}
}

func TestCredentialRisk(t *testing.T) {
	npm := Credential{File: "$HOME/.npmrc", Key: "//registry.example.com/:_authToken", How: HowBearer}
	old := &Profile{}
	for _, tc := range []struct {
		c    Credential
		host string
		want Risk
	}{
		{npm, "registry.example.com", RiskLow},
		{npm, "registry.example.com:443", RiskLow},
		{npm, "evil.example", RiskCritical},
		{Credential{File: "$HOME/.npmrc", Key: "//localhost:4873/:_authToken", How: HowBearer}, "localhost:4873", RiskLow},
		{Credential{File: "$HOME/.npmrc", Key: "//localhost:4873/:_authToken", How: HowBearer}, "localhost:9999", RiskCritical},
		{Credential{Env: "NPM_TOKEN", How: HowBearer}, "registry.example.com", RiskHigh},
		{Credential{Env: "NPM_TOKEN", How: HowBearer}, "registry.npmjs.org", RiskLow},
		{Credential{Env: "GITHUB_TOKEN", How: HowBearer}, "api.github.com:443", RiskLow},
		{Credential{Env: "GITHUB_TOKEN", How: HowBearer}, "evil.example", RiskHigh},
	} {
		c := tc.c
		c.Hosts = []string{tc.host}
		d := Diff(old, &Profile{Credentials: []Credential{c}})
		if len(d) != 1 || d[0].Risk != tc.want || !d[0].Widens || d[0].Section != SectionCredentials {
			t.Errorf("%s -> %s: %v, want one %s widening", c.Source(), tc.host, d, tc.want)
		}
	}
	// A host added to an existing rule is a widening too.
	a := &Profile{Credentials: []Credential{{File: "$HOME/.npmrc", Key: npm.Key, How: HowBearer, Hosts: []string{"registry.example.com"}}}}
	b := Clone(a)
	b.Credentials[0].Hosts = append(b.Credentials[0].Hosts, "evil.example")
	d := Diff(a, b)
	if len(d) != 1 || d[0].Risk != RiskCritical || d[0].Kind != Widened {
		t.Fatalf("added host: %v", d)
	}
	if d := Diff(b, a); len(d) != 1 || d[0].Widens {
		t.Fatalf("removed host: %v", d)
	}
}

func TestParseStoreNpmrc(t *testing.T) {
	data := []byte("registry=https://registry.example.com/\n; comment\n//registry.example.com/:_authToken=npm_realtoken\n//other.example/:_authToken = \"other\"\nemail=me@example.com\n")
	es, err := ParseStore(StoreNpmrc, "/h/.npmrc", data)
	if err != nil {
		t.Fatal(err)
	}
	e, err := StoreValue(es, "/h/.npmrc", "//registry.example.com/:_authToken")
	if err != nil || e.Value != "npm_realtoken" || e.Line != 3 {
		t.Fatalf("value: %+v %v", e, err)
	}
	_, err = StoreValue(es, "/h/.npmrc", "//nope/:_authToken")
	var se *StoreError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "/h/.npmrc: //nope/:_authToken: no such entry") {
		t.Fatalf("missing key: %v", err)
	}
	_, err = ParseStore(StoreNpmrc, "/h/.npmrc", []byte("registry=x\n//a/:_authToken\n"))
	if err == nil || err.Error() != "/h/.npmrc:2: //a/:_authToken: not a key = value line" {
		t.Fatalf("malformed: %v", err)
	}
	out := string(RewriteStore(StoreNpmrc, data, map[string]string{"//registry.example.com/:_authToken": "STANDIN"}))
	if strings.Contains(out, "npm_realtoken") || strings.Contains(out, "other") || strings.Contains(out, "me@example.com") ||
		!strings.Contains(out, "//registry.example.com/:_authToken=STANDIN\n") || !strings.Contains(out, "registry=https://registry.example.com/\n") {
		t.Fatalf("rewritten:\n%s", out)
	}
}

func TestStoreGitCredentialsAndNetrc(t *testing.T) {
	gc := []byte("https://me:s3cretPASSWORD123@git.example.com\nhttps://x:other@other.example:8443/org\n")
	es, err := ParseStore(StoreGitCredentials, "/h/.git-credentials", gc)
	if err != nil || len(es) != 2 || es[0].Key != "https://me@git.example.com" || es[0].Value != "s3cretPASSWORD123" || es[1].Key != "https://x@other.example:8443/org" {
		t.Fatalf("git-credentials: %+v %v", es, err)
	}
	se := SecretEntries(StoreGitCredentials, es)
	if len(se) != 2 || se[0].Host != "git.example.com" || se[1].Host != "other.example:8443" || se[0].How != HowBasic {
		t.Fatalf("git-credentials secrets: %+v", se)
	}
	out := string(RewriteStore(StoreGitCredentials, gc, map[string]string{"https://me@git.example.com": "STANDIN"}))
	if out != "https://me:STANDIN@git.example.com\n" {
		t.Fatalf("git-credentials rewritten: %q", out)
	}
	if _, err := ParseStore(StoreGitCredentials, "/h/.git-credentials", []byte("https://me@host\n")); err == nil || err.Error() != "/h/.git-credentials:1: https://me@host: no password" {
		t.Fatalf("no password: %v", err)
	}

	nr := []byte("machine pypi.example.com\n  login me\n  password hunter2hunter2\nmachine other.example login x password y\ndefault login anon password z\n")
	es, err = ParseStore(StoreNetrc, "/h/.netrc", nr)
	if err != nil || len(es) != 3 || es[0].Key != "pypi.example.com" || es[0].Value != "hunter2hunter2" || es[0].Line != 1 {
		t.Fatalf("netrc: %+v %v", es, err)
	}
	if se := SecretEntries(StoreNetrc, es); len(se) != 2 || se[0].Host != "pypi.example.com" {
		t.Fatalf("netrc secrets: %+v", se)
	}
	out = string(RewriteStore(StoreNetrc, nr, map[string]string{"pypi.example.com": "STANDIN"}))
	if out != "machine pypi.example.com login me password STANDIN\n" {
		t.Fatalf("netrc rewritten: %q", out)
	}
	if _, err := ParseStore(StoreNetrc, "/h/.netrc", []byte("machine a\n login x\n passwd y\n")); err == nil || err.Error() != `/h/.netrc:3: passwd: unknown .netrc token "passwd"` {
		t.Fatalf("bad netrc: %v", err)
	}
	// A netrc rule's key is its machine: the store names that host.
	c := Credential{File: "$HOME/.netrc", Key: "pypi.example.com", How: HowBasic}
	if r, _ := CredentialRisk(c, "pypi.example.com"); r != RiskLow {
		t.Fatalf("netrc risk %v", r)
	}
}

func TestCredentialsPasswordStoresAreBasic(t *testing.T) {
	_, err := Parse("p.yaml", []byte(credHead+`credentials:
  - {file: $HOME/.git-credentials, key: "https://me@git.example", hosts: [git.example], how: bearer}
`))
	if err == nil || !strings.Contains(err.Error(), "p.yaml:5: credentials[0].how") {
		t.Fatalf("got %v", err)
	}
}

func TestStoreCargo(t *testing.T) {
	if StoreFormat("$CARGO_HOME/credentials.toml") != StoreCargo || StoreFormat("$HOME/.cargo/credentials") != StoreCargo || StoreFormat("$WORKDIR/credentials.toml") != "" {
		t.Fatal("cargo store names")
	}
	data := []byte("[registry]\ntoken = \"cio_REALTOKEN123456789\"\n\n[registries.my-reg]\ntoken = 'other-token' # comment\ncredential-provider = \"cargo:token\"\n")
	es, err := ParseStore(StoreCargo, "/h/.cargo/credentials.toml", data)
	if err != nil || len(es) != 3 || es[0].Key != "registry.token" || es[0].Value != "cio_REALTOKEN123456789" || es[1].Key != "registries.my-reg.token" || es[1].Value != "other-token" {
		t.Fatalf("cargo: %+v %v", es, err)
	}
	out := string(RewriteStore(StoreCargo, data, map[string]string{"registries.my-reg.token": "STANDIN"}))
	if strings.Contains(out, "REALTOKEN") || strings.Contains(out, "other-token") || !strings.Contains(out, "[registries.my-reg]\ntoken = \"STANDIN\"\n") || !strings.Contains(out, "credential-provider") {
		t.Fatalf("cargo rewritten:\n%s", out)
	}
	if _, err := ParseStore(StoreCargo, "/h/c.toml", []byte("[registry]\ntoken \"x\"\n")); err == nil || !strings.Contains(err.Error(), "/h/c.toml:2") {
		t.Fatalf("bad toml: %v", err)
	}
	_, err = Parse("p.yaml", []byte(credHead+`credentials:
  - {file: $CARGO_HOME/credentials.toml, key: registries.my-reg.token, hosts: [my-reg.example], how: "header:Authorization"}
`))
	if err != nil {
		t.Fatal(err)
	}
}

// pip.conf: only the password of an index URL is the secret; the copy keeps the file as it
// was, the brokered URL with its stand-in and any other URL without its password.
func TestStorePip(t *testing.T) {
	if StoreFormat("$HOME/.config/pip/pip.conf") != StorePip || StoreFormat("$HOME/.pip/pip.conf") != StorePip {
		t.Fatal("pip store names")
	}
	data := []byte("[global]\nindex-url = https://me:hunter2REALPASS@pypi.example.com/simple\nextra-index-url =\n    https://x:otherPASS@extra.example:8443/simple\n    https://plain.example/simple\ntimeout: 30\n[install]\nfind-links=https://y:thirdPASS@links.example/\n")
	es, err := ParseStore(StorePip, "/h/pip.conf", data)
	if err != nil || len(es) != 3 || es[0].Key != "https://me@pypi.example.com/simple" || es[0].Value != "hunter2REALPASS" || es[0].Line != 2 ||
		es[1].Key != "https://x@extra.example:8443/simple" || es[1].Line != 4 || es[2].Key != "https://y@links.example" || es[2].Value != "thirdPASS" {
		t.Fatalf("pip: %+v %v", es, err)
	}
	se := SecretEntries(StorePip, es)
	if len(se) != 3 || se[0].Host != "pypi.example.com" || se[1].Host != "extra.example:8443" || se[0].How != HowBasic {
		t.Fatalf("pip secrets: %+v", se)
	}
	out := string(RewriteStore(StorePip, data, map[string]string{"https://me@pypi.example.com/simple": "STANDIN"}))
	want := "[global]\nindex-url = https://me:STANDIN@pypi.example.com/simple\nextra-index-url =\n    https://x@extra.example:8443/simple\n    https://plain.example/simple\ntimeout: 30\n[install]\nfind-links=https://y@links.example/\n"
	if out != want {
		t.Fatalf("pip rewritten:\n%s\nwant:\n%s", out, want)
	}
	for _, tc := range []struct{ data, want string }{
		{"index-url = https://a:b@h/\n", "/h/pip.conf:1: index-url: an option outside a [section]"},
		{"[global]\nindex-url https://a:b@h/\n", "/h/pip.conf:2: index-url https://a:b@h/: not a [section]"},
		{"[global]\n  https://a:b@h/\n", "/h/pip.conf:2: an indented line continues no option"},
		{"[global]\nindex-url = https://a:b@h%zz/\n", "/h/pip.conf:2: global.index-url: a URL that does not parse"},
	} {
		if _, err := ParseStore(StorePip, "/h/pip.conf", []byte(tc.data)); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.data, err, tc.want)
		}
	}
	c := Credential{File: "$HOME/.config/pip/pip.conf", Key: "https://me@pypi.example.com/simple", How: HowBasic}
	if r, _ := CredentialRisk(c, "pypi.example.com"); r != RiskLow {
		t.Fatalf("pip risk %v", r)
	}
	if r, _ := CredentialRisk(c, "evil.example"); r != RiskCritical {
		t.Fatalf("pip to another host: %v", r)
	}
}

// docker's config.json: auths.REGISTRY.auth is base64(user:password), the password the
// secret (basic); identitytoken a bearer token. The copy keeps the settings, the brokered
// entries with their stand-ins, and nothing else of the auths or the helpers.
func TestStoreDocker(t *testing.T) {
	if StoreFormat("$HOME/.docker/config.json") != StoreDocker || StoreFormat("$WORKDIR/config.json") != "" {
		t.Fatal("docker store names")
	}
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	data := []byte(`{
	"auths": {
		"registry.example:5000": {"auth": "` + b64("me:dockerREALPASS") + `", "email": "me@example.com"},
		"https://index.docker.io/v1/": {"auth": "` + b64("hub:hubPASS") + `"},
		"ghcr.example": {"identitytoken": "tokREALTOKEN"}
	},
	"credHelpers": {"gcr.io": "gcloud"},
	"psFormat": "table {{.ID}}"
}
`)
	es, err := ParseStore(StoreDocker, "/h/.docker/config.json", data)
	if err != nil || len(es) != 3 || es[0].Key != "auths.registry.example:5000.auth" || es[0].Value != "dockerREALPASS" || es[0].Line != 3 ||
		es[1].Key != "auths.https://index.docker.io/v1/.auth" || es[2].Key != "auths.ghcr.example.identitytoken" || es[2].Value != "tokREALTOKEN" {
		t.Fatalf("docker: %+v %v", es, err)
	}
	se := SecretEntries(StoreDocker, es)
	if len(se) != 3 || se[0].Host != "registry.example:5000" || se[0].How != HowBasic || se[1].Host != "index.docker.io" || se[2].Host != "ghcr.example" || se[2].How != HowBearer {
		t.Fatalf("docker secrets: %+v", se)
	}
	out := string(RewriteStore(StoreDocker, data, map[string]string{"auths.registry.example:5000.auth": "STANDIN", "auths.ghcr.example.identitytoken": "TOKSTANDIN"}))
	for _, bad := range []string{"dockerREALPASS", b64("me:dockerREALPASS"), "hubPASS", b64("hub:hubPASS"), "tokREALTOKEN", "credHelpers", "email"} {
		if strings.Contains(out, bad) {
			t.Errorf("rewritten holds %q:\n%s", bad, out)
		}
	}
	if !strings.Contains(out, `"auth": "`+b64("me:STANDIN")+`"`) || !strings.Contains(out, `"identitytoken": "TOKSTANDIN"`) || !strings.Contains(out, `"psFormat"`) {
		t.Errorf("rewritten:\n%s", out)
	}
	for _, tc := range []struct{ data, want string }{
		{"{\n\"auths\": {\n\"r\": {\"auth\": \"bm9jb2xvbg==\"}}}", "/h/c.json:3: auths.r.auth: not base64 of user:password"},
		{"{\n\"auths\": {,}}", "/h/c.json:2: not JSON"},
		{"{\"auths\": [1]}", "/h/c.json:1: auths: not an object"},
	} {
		if _, err := ParseStore(StoreDocker, "/h/c.json", []byte(tc.data)); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.data, err, tc.want)
		}
	}
	c := Credential{File: "$HOME/.docker/config.json", Key: "auths.registry.example:5000.auth", How: HowBasic}
	if r, _ := CredentialRisk(c, "registry.example:5000"); r != RiskLow {
		t.Fatalf("docker risk %v", r)
	}
	if r, _ := CredentialRisk(c, "registry.example:443"); r != RiskCritical {
		t.Fatalf("docker to another port: %v", r)
	}
	for _, tc := range []struct{ rule, want string }{
		{`{file: $HOME/.docker/config.json, key: "auths.r.example.auth", hosts: [r.example], how: bearer}`, "credentials[0].how"},
		{`{file: $HOME/.docker/config.json, key: "auths.r.example.identitytoken", hosts: [r.example], how: basic}`, "credentials[0].how"},
		{`{file: $HOME/.docker/config.json, key: "r.example", hosts: [r.example], how: basic}`, "credentials[0].key"},
	} {
		if _, err := Parse("p.yaml", []byte(credHead+"credentials:\n  - "+tc.rule+"\n")); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v", tc.rule, err)
		}
	}
}

// The broker rewrites HTTP only: a URL-keyed store entry for another protocol is refused.
func TestCredentialsHTTPOnly(t *testing.T) {
	_, err := Parse("p.yaml", []byte(credHead+`credentials:
  - {file: $HOME/.git-credentials, key: "ssh://me@git.example", hosts: [git.example], how: basic}
`))
	if err == nil || !strings.Contains(err.Error(), "credentials[0].key: ssh://me@git.example: the proxy rewrites HTTP only (http, https), not ssh") {
		t.Fatalf("got %v", err)
	}
}
