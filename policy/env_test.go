package policy

import (
	"slices"
	"strings"
	"testing"
)

func TestSecretEnv(t *testing.T) {
	tests := []struct {
		name, value string
		secret      bool
	}{
		// Named in the issue and the README.
		{"AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", true},
		{"AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE", true},
		{"AWS_PROFILE", "default", true},
		{"GITHUB_TOKEN", "x", true},
		{"GH_TOKEN", "x", true},
		{"NPM_TOKEN", "x", true},
		{"CARGO_REGISTRY_TOKEN", "x", true},
		{"CARGO_REGISTRIES_MY_TOKEN", "x", true},
		{"CI_JOB_TOKEN", "x", true},
		{"ACTIONS_RUNTIME_TOKEN", "x", true},
		{"npm_config__authToken", "x", true},
		{"NODE_AUTH_TOKEN", "x", true},
		{"PGPASSWORD", "hunter2", true},
		{"TWINE_PASSWORD", "x", true},
		{"DB_PASSWD", "x", true},
		{"GPG_PASSPHRASE", "x", true},
		{"CLIENT_SECRET", "x", true},
		{"DJANGO_SECRET_KEY", "short", true},
		{"OPENAI_API_KEY", "x", true},
		{"STRIPE_APIKEY", "x", true},
		{"MYSQL_PWD", "hunter2", true},
		{"SMTP_PASS", "hunter2", true},
		{"GOOGLE_APPLICATION_CREDENTIALS", "/home/u/key.json", true},
		{"STRIPE_KEY", "sk_test_4eC39HqLyjWDarjtT1zdp7dc", true},
		{"SENTRY_DSN", "https://abc123def456@o1.ingest.example/42", true},
		{"NPM_CONFIG__AUTH", "dXNlcjpwYXNzd29yZDEyMzQ1Ng==", true},
		// A secret under an innocent name.
		{"MY_VAR", "ghp_" + strings.Repeat("a1", 18), true},
		{"DEPLOY", "glpat-" + strings.Repeat("x9", 10), true},
		{"SIGNING", "-----BEGIN OPENSSH PRIVATE KEY-----", true},
		{"DATABASE_URL", "postgres://app:s3cret@db.internal:5432/app", true},
		{"HTTPS_PROXY", "http://user:pw@proxy.internal:3128", true},
		// Ordinary variables a tool needs: never removed.
		{"HOME", "/root", false},
		{"PATH", "/usr/bin:/bin", false},
		{"PWD", "/work", false},
		{"OLDPWD", "/work", false},
		{"TERM", "xterm-256color", false},
		{"LANG", "C.UTF-8", false},
		{"SSH_AUTH_SOCK", "/tmp/ssh-x/agent.1", false},
		{"GIT_ASKPASS", "/usr/bin/ksshaskpass", false},
		{"TOKENIZERS_PARALLELISM", "false", false},
		{"KEYTIMEOUT", "1", false},
		{"LESSKEY", "/home/u/.less", false},
		{"GPG_KEY", "0x1234ABCD", false},
		{"SSH_KEY", "/home/u/.ssh/id_ed25519", false},
		{"XKB_KEY", "us", false},
		{"INITIAL_PWD", "/home/u", false},
		{"HTTP_PROXY", "http://proxy.internal:3128", false},
		{"GOFLAGS", "-mod=mod", false},
		{"npm_lifecycle_event", "test", false},
		{"CC", "gcc", false},
		{"GIT_COMMIT", "0123456789abcdef0123456789abcdef01234567", false},
	}
	for _, tt := range tests {
		why := SecretEnv(tt.name, tt.value)
		if (why != "") != tt.secret {
			t.Errorf("SecretEnv(%q, %q) = %q, want secret %v", tt.name, tt.value, why, tt.secret)
		}
	}
}

func TestScrubEnv(t *testing.T) {
	env := []string{"PATH=/usr/bin", "GITHUB_TOKEN=t", "HOME=/root", "AWS_SECRET_ACCESS_KEY=k", "NPM_TOKEN=n", "NOEQUALS", "GITHUB_TOKEN=again"}
	orig := slices.Clone(env)
	kept, removed := ScrubEnv(env, []string{"NPM_TOKEN"})
	if want := []string{"PATH=/usr/bin", "HOME=/root", "NPM_TOKEN=n", "NOEQUALS"}; !slices.Equal(kept, want) {
		t.Errorf("kept %q, want %q", kept, want)
	}
	if want := []string{"AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN"}; !slices.Equal(removed, want) {
		t.Errorf("removed %q, want %q", removed, want)
	}
	if !slices.Equal(env, orig) {
		t.Errorf("ScrubEnv modified its input")
	}
}

func TestEnvPassMergeDiffFormat(t *testing.T) {
	a := &Profile{APIVersion: APIVersion, Kind: Kind}
	b := Clone(a)
	b.Env.Pass = []string{"NPM_TOKEN", "GITHUB_TOKEN", "NPM_TOKEN"}
	m := Merge(a, b)
	if want := []string{"GITHUB_TOKEN", "NPM_TOKEN"}; !slices.Equal(m.Env.Pass, want) {
		t.Errorf("merge: %q, want %q", m.Env.Pass, want)
	}
	changes := Diff(a, b)
	if len(changes) != 2 || changes[0].Section != SectionEnvPass || changes[0].Risk != RiskHigh || !changes[0].Widens {
		t.Errorf("diff a→b: %v, want two high widening env.pass changes", changes)
	}
	if back := Diff(b, a); len(back) != 2 || back[0].Widens {
		t.Errorf("diff b→a: %v, want two narrowing changes", back)
	}
	data, err := Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "env:\n  pass: [GITHUB_TOKEN, NPM_TOKEN]\n") {
		t.Errorf("marshal:\n%s", data)
	}
	q, err := Parse("x.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(q.Env.Pass, []string{"GITHUB_TOKEN", "NPM_TOKEN"}) {
		t.Errorf("round trip: %q", q.Env.Pass)
	}
	if data, _ := Marshal(a); strings.Contains(string(data), "env:") {
		t.Errorf("an empty env section was written:\n%s", data)
	}
}
