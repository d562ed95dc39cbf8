package policy

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// Env is the environment part of the policy. The command gets the caller's environment minus
// every variable SecretEnv classifies as a credential, unless Pass names it.
type Env struct {
	// Pass names secret-looking variables the command still gets (exact names).
	Pass []string `yaml:"pass,omitempty" json:"pass,omitempty"`
}

// secretNameParts are name components (split at "_", upper case) that make a variable a
// credential whatever its value. A component that ends in one counts too (PGPASSWORD,
// NPM_CONFIG__AUTHTOKEN), so TOKENIZERS_PARALLELISM does not.
var secretNameParts = []string{"TOKEN", "SECRET", "SECRETS", "PASSWORD", "PASSWD", "PASSPHRASE", "APIKEY", "CREDENTIALS"}

// secretNamePairs are two-component suffixes that always name a credential.
var secretNamePairs = []string{"API_KEY", "ACCESS_KEY", "PRIVATE_KEY", "SECRET_KEY", "SIGNING_KEY", "AUTH_KEY", "MASTER_KEY", "ENCRYPTION_KEY"}

// secretNamePrefixes: every variable of these clouds' SDKs is dropped (AWS_PROFILE and
// AWS_REGION too: they are harmless alone, and an allowlist of the harmless ones would drift).
var secretNamePrefixes = []string{"AWS_"}

// secretValueNames are last components that hold a credential when the value looks like one
// (SecretValue): STRIPE_KEY=sk_live_..., but not GPG_KEY=0x1234 or SSH_KEY=/home/u/.ssh/id.
var secretValueNames = []string{"KEY", "KEYS", "AUTH", "CREDS", "DSN"}

// passwordNames are last components that name a password (MYSQL_PWD, SMTP_PASS) unless the
// value is a path (a directory variable that happens to end in PWD).
var passwordNames = []string{"PWD", "PASS"}

// tokenPrefixes are value prefixes of well-known token formats, with the shortest length a
// real token has: a secret under an innocent name (MY_VAR=ghp_...) is dropped too.
var tokenPrefixes = []struct {
	prefix string
	minLen int
}{
	{"ghp_", 36}, {"gho_", 36}, {"ghu_", 36}, {"ghs_", 36}, {"ghr_", 36}, {"github_pat_", 40},
	{"glpat-", 20}, {"npm_", 36}, {"xoxb-", 20}, {"xoxp-", 20}, {"xoxa-", 20}, {"sk_live_", 20},
	{"rk_live_", 20}, {"AKIA", 20}, {"ASIA", 20}, {"pypi-", 40}, {"hf_", 30}, {"-----BEGIN ", 20},
}

// urlPassword matches a URL with a password in it (scheme://user:pass@host).
var urlPassword = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*:[^/\s@]+@`)
})

// SecretEnv says why the environment variable name=value looks like a credential, or "" when
// it does not. It is the one classification enforce, show and learn use; it looks at the name
// (case-insensitive) and, for names that are only sometimes secret, at the value.
func SecretEnv(name, value string) string {
	up := strings.ToUpper(name)
	for _, p := range secretNamePrefixes {
		if strings.HasPrefix(up, p) {
			return p + "* (cloud credentials)"
		}
	}
	parts := strings.Split(up, "_")
	for _, part := range parts {
		for _, s := range secretNameParts {
			if strings.HasSuffix(part, s) {
				return "name contains " + s
			}
		}
	}
	for _, pair := range secretNamePairs {
		if up == pair || strings.HasSuffix(up, "_"+pair) {
			return "name ends in " + pair
		}
	}
	last := parts[len(parts)-1]
	if len(parts) > 1 && slices.Contains(secretValueNames, last) && SecretValue(value) {
		return "name ends in " + last + " and the value looks like a key"
	}
	if len(parts) > 1 && slices.Contains(passwordNames, last) && value != "" && !strings.HasPrefix(value, "/") {
		return "name ends in " + last
	}
	for _, t := range tokenPrefixes {
		if strings.HasPrefix(value, t.prefix) && len(value) >= t.minLen {
			return "value looks like a " + strings.TrimSpace(strings.TrimRight(t.prefix, "_-")) + " token"
		}
	}
	if urlPassword().MatchString(value) {
		return "value is a URL with a password"
	}
	return ""
}

// SecretValue reports whether v looks like a key or token: at least 16 characters without
// spaces, letters and digits mixed, and not a path.
func SecretValue(v string) bool {
	if len(v) < 16 || strings.ContainsAny(v, " \t\n") || strings.ContainsAny(v[:1], "/~.") {
		return false
	}
	letter, digit := false, false
	for _, c := range v {
		letter = letter || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		digit = digit || c >= '0' && c <= '9'
	}
	return letter && digit
}

// ScrubEnv returns env (NAME=value entries) without the variables SecretEnv classifies as
// credentials, except those pass names, and the names it removed, sorted. The order of what
// it keeps is env's; env is not modified.
func ScrubEnv(env, pass []string) (kept, removed []string) {
	kept = make([]string, 0, len(env))
	for _, kv := range env {
		name, value, _ := strings.Cut(kv, "=")
		if SecretEnv(name, value) != "" && !slices.Contains(pass, name) {
			removed = append(removed, name)
			continue
		}
		kept = append(kept, kv)
	}
	slices.Sort(removed)
	return kept, slices.Compact(removed)
}

// envNameProblem says what is wrong with a variable name in env.pass, or "".
func envNameProblem(name string) string {
	if name == "" {
		return "empty name"
	}
	for i, c := range name {
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return fmt.Sprintf("%q is not an environment variable name (letters, digits, _; not starting with a digit)", name)
		}
	}
	return ""
}
