package policy

import (
	"cmp"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
)

// Credential is a secret the command uses without holding it. Inside the sandbox its store
// (File and Key, or the variable Env) holds a per-run stand-in; the egress proxy swaps the
// stand-in for the real value in the request's credential header (How), on connections to
// Hosts only, and refuses the stand-in anywhere else.
type Credential struct {
	// File is the credential store ($HOME/.npmrc), Key the entry in it that holds the secret
	// (//registry.example.com/:_authToken). Either File and Key, or Env.
	File string `yaml:"file,omitempty" json:"file,omitempty"`
	Key  string `yaml:"key,omitempty" json:"key,omitempty"`
	// Env is an environment variable that holds the secret (NPM_TOKEN).
	Env string `yaml:"env,omitempty" json:"env,omitempty"`
	// Hosts the real value is presented to: a name, or name:port for that port only.
	Hosts []string `yaml:"hosts" json:"hosts"`
	// How the client presents it: bearer (Authorization: Bearer), basic (Authorization:
	// Basic, the secret being the password), or header:NAME (the value of header NAME).
	How        string `yaml:"how" json:"how"`
	Provenance `yaml:",inline" json:",inline"`
}

// Ways a credential is presented (Credential.How).
const (
	HowBearer          = "bearer"
	HowBasic           = "basic"
	HowHeaderPfx       = "header:"
	SectionCredentials = "credentials"
)

// Source names where the real value comes from, as show and diff print it: "$HOME/.npmrc
// //host/:_authToken" or "env NPM_TOKEN". It never holds the value.
func (c Credential) Source() string {
	if c.Env != "" {
		return "env " + c.Env
	}
	return c.File + " " + c.Key
}

// Item is the credential as a diff item: its source and where it goes.
func (c Credential) Item() string {
	return c.Source() + " -> " + strings.Join(c.Hosts, ", ") + " (" + c.How + ")"
}

// Header returns the HTTP header field the credential travels in.
func (c Credential) Header() string {
	if h, ok := strings.CutPrefix(c.How, HowHeaderPfx); ok {
		return h
	}
	return "Authorization"
}

// StoreHost returns the host (name or name:port) the credential's own store names for it:
// the //HOST[:port]/ an .npmrc key is scoped to, the host of a .git-credentials URL or a
// .docker/config.json auths key. "" when the store names none (a variable, an unscoped key).
func (c Credential) StoreHost() string {
	if c.Env != "" || c.Key == "" {
		return ""
	}
	k := c.Key
	switch StoreFormat(c.File) {
	case StoreNetrc: // the machine name
		return strings.ToLower(k)
	case StoreDocker: // auths.REGISTRY.auth
		if reg, _, ok := dockerKey(k); ok {
			return dockerRegistryHost(reg)
		}
		return ""
	}
	switch {
	case strings.HasPrefix(k, "//"): // .npmrc: //host[:port]/path/:_authToken
		h, _, _ := strings.Cut(k[2:], "/")
		return strings.ToLower(h)
	case strings.Contains(k, "://"): // a URL (.git-credentials, docker auths)
		_, rest, _ := strings.Cut(k, "://")
		h, _, _ := strings.Cut(rest, "/")
		if i := strings.LastIndexByte(h, '@'); i >= 0 {
			h = h[i+1:]
		}
		return strings.ToLower(h)
	}
	return ""
}

// hostMatches reports whether the rule host h (name or name:port) is the store's host s: a
// store host without a port is its scheme's default, any port of h then.
func hostMatches(h, s string) bool {
	hn, hp := splitHostPort(h)
	sn, sp := splitHostPort(s)
	return hn == sn && (sp == "" || hp == sp)
}

func splitHostPort(h string) (string, string) {
	if n, p, err := net.SplitHostPort(h); err == nil {
		return strings.ToLower(n), p
	}
	return strings.ToLower(h), ""
}

// CredentialRisk rates presenting c's real value to host. To the host its own store names it
// needs no approval (the command holds a stand-in, and the value goes where it would anyway);
// to any other host it is critical: the credential would leave for a destination its owner
// never configured.
func CredentialRisk(c Credential, host string) (Risk, string) {
	s := c.StoreHost()
	if tv, ok := WellKnownToken(c.Env); ok && slices.ContainsFunc(tv.Hosts, func(h string) bool { return hostMatches(host, h) }) {
		return RiskLow, fmt.Sprintf("brokered to %s, where the service of $%s reads it (the command holds a stand-in)", host, c.Env)
	}
	switch {
	case s != "" && hostMatches(host, s):
		return RiskLow, "brokered to the host its own store names (the command holds a stand-in)"
	case s != "":
		return RiskCritical, fmt.Sprintf("presents the credential of %s to %s, a host its store does not name", s, host)
	default:
		return RiskHigh, fmt.Sprintf("%s names no host: the proxy presents it to %s (the command holds a stand-in)", c.Source(), host)
	}
}

// checkCredentials adds the problems of the credentials section: its sources, hosts and
// ways, and two rules claiming one host (the proxy would not know which to present).
func checkCredentials(cs []Credential, add func(field, format string, args ...any)) {
	type claim struct {
		host string
		i    int
	}
	var claims []claim
	for i, c := range cs {
		f := fmt.Sprintf("credentials[%d]", i)
		switch {
		case c.Env != "" && (c.File != "" || c.Key != ""):
			add(f, "a credential comes from a file (file, key) or a variable (env), not both")
		case c.Env != "":
			if msg := envNameProblem(c.Env); msg != "" {
				add(f+".env", "%s", msg)
			}
		case c.File == "":
			add(f, "name where the secret is: file and key, or env")
		default:
			if msg := pathProblem(c.File); msg != "" {
				add(f+".file", "%s", msg)
			} else if StoreFormat(c.File) == "" {
				add(f+".file", "%q is not a credential store sysprof can rewrite (%s)", c.File, strings.Join(storeNames, ", "))
			}
			if c.Key == "" {
				add(f+".key", "missing: name the entry of %s that holds the secret", c.File)
			}
			if fm := StoreFormat(c.File); fm == StoreGitCredentials || fm == StorePip {
				if s, ok := httpScheme(c.Key); !ok {
					add(f+".key", "%s: the proxy rewrites HTTP only (http, https), not %s: a %s credential cannot be brokered", c.Key, s, s)
				}
			}
			if fm := StoreFormat(c.File); (fm == StoreGitCredentials || fm == StoreNetrc || fm == StorePip) && c.How != HowBasic {
				add(f+".how", "%q: a password of %s travels as how: basic", c.How, c.File)
			} else if fm == StoreDocker && c.Key != "" {
				switch _, field, ok := dockerKey(c.Key); {
				case !ok:
					add(f+".key", "%q: a key of %s is auths.REGISTRY.auth or auths.REGISTRY.identitytoken", c.Key, c.File)
				case field == dockerAuth && c.How != HowBasic:
					add(f+".how", "%q: %s's auth is a user:password, which travels as how: basic", c.How, c.File)
				case field == dockerToken && c.How != HowBearer:
					add(f+".how", "%q: %s's identitytoken travels as how: bearer", c.How, c.File)
				}
			}
		}
		switch {
		case c.How == HowBearer || c.How == HowBasic:
		case strings.HasPrefix(c.How, HowHeaderPfx) && isToken([]byte(c.How[len(HowHeaderPfx):])):
			if h := strings.ToLower(c.How[len(HowHeaderPfx):]); h == "host" || h == "content-length" || h == "transfer-encoding" {
				add(f+".how", "header %s frames the request: not a credential header", c.How[len(HowHeaderPfx):])
			}
		default:
			add(f+".how", "%q: want bearer, basic or header:NAME", c.How)
		}
		if len(c.Hosts) == 0 {
			add(f+".hosts", "empty: name the host(s) the credential is presented to")
		}
		for j, h := range c.Hosts {
			hf := fmt.Sprintf("%s.hosts[%d]", f, j)
			n, p := splitHostPort(h)
			if n == "" || strings.Trim(n, "abcdefghijklmnopqrstuvwxyz0123456789.-") != "" {
				add(hf, "%q is not a host name (name or name:port)", h)
				continue
			}
			if p != "" {
				if v, err := strconv.Atoi(p); err != nil || v < 1 || v > 65535 {
					add(hf, "%q: port must be 1..65535", h)
					continue
				}
			}
			for _, o := range claims {
				on, op := splitHostPort(o.host)
				if on == n && (op == "" || p == "" || op == p) && o.i != i {
					add(hf, "%s is claimed by credentials[%d] too (%s): one credential per host, or the proxy could not tell which to present", h, o.i, o.host)
				}
			}
			claims = append(claims, claim{h, i})
		}
	}
}

// isToken reports whether b is an HTTP token (a header field name).
func isToken(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// credentialKey identifies a credential rule across profiles: its source.
func credentialKey(c Credential) string { return c.Source() }

func normalizeCredentials(cs []Credential) {
	for i := range cs {
		for j, h := range cs[i].Hosts {
			cs[i].Hosts[j] = strings.ToLower(strings.TrimSuffix(h, "."))
		}
		cs[i].Hosts = sortedUnique(cs[i].Hosts)
	}
	slices.SortStableFunc(cs, func(a, b Credential) int {
		return cmp.Or(strings.Compare(credentialKey(a), credentialKey(b)), strings.Compare(a.How, b.How))
	})
}

func cloneCredentials(cs []Credential) []Credential {
	out := slices.Clone(cs)
	for i := range out {
		out[i].Hosts = slices.Clone(out[i].Hosts)
	}
	return out
}

// mergeCredentials unions two credentials sections: one rule per source, its hosts unioned.
func mergeCredentials(a, b []Credential) []Credential {
	return mergeKeyed(cloneCredentials(a), cloneCredentials(b), credentialKey, func(x *Credential, y Credential) {
		x.Hosts = sortedUnique(append(x.Hosts, y.Hosts...))
		x.How = cmp.Or(x.How, y.How)
		x.Provenance = addProvenance(x.Provenance, y.Provenance)
	})
}

// credentials rates each credential flow new presents that old did not (CredentialRisk per
// host), a changed way of presenting it, and what is no longer brokered.
func (d *differ) credentials() {
	old := map[string]Credential{}
	for _, c := range d.old.Credentials {
		old[credentialKey(c)] = c
	}
	seen := map[string]bool{}
	for _, c := range d.new.Credentials {
		k := credentialKey(c)
		seen[k] = true
		o, had := old[k]
		for _, h := range c.Hosts {
			if had && slices.Contains(o.Hosts, h) {
				continue
			}
			r, why := CredentialRisk(c, h)
			kind := Added
			if had {
				kind = Widened
			}
			one := c
			one.Hosts = []string{h}
			d.add(Change{Kind: kind, Section: SectionCredentials, Item: one.Item(), Widens: true, Risk: r, Reason: why, By: c.By})
		}
		if had && o.How != c.How {
			d.add(Change{Kind: Widened, Section: SectionCredentials, Item: c.Item(), Widens: true, Risk: RiskHigh,
				Reason: "presented another way: was " + o.How, By: c.By})
		}
		if had {
			for _, h := range o.Hosts {
				if !slices.Contains(c.Hosts, h) {
					one := o
					one.Hosts = []string{h}
					d.narrow(Removed, SectionCredentials, one.Item(), "no longer presented to "+h)
				}
			}
		}
	}
	for _, c := range d.old.Credentials {
		if !seen[credentialKey(c)] {
			d.narrow(Removed, SectionCredentials, c.Item(), "no longer brokered")
		}
	}
}

func (e *emitter) credentials(cs []Credential) {
	if len(cs) == 0 {
		return
	}
	e.section(0, "credentials")
	for _, c := range cs {
		var f []field
		if c.Env != "" {
			f = append(f, field{"env", c.Env, false})
		} else {
			f = append(f, field{"file", c.File, false}, field{"key", c.Key, false})
		}
		hosts := make([]string, len(c.Hosts))
		for i, h := range c.Hosts {
			e.check(h)
			hosts[i] = scalar(h)
		}
		f = append(f, field{"hosts", "[" + strings.Join(hosts, ", ") + "]", true}, field{"how", c.How, false})
		e.flowItem(1, append(f, provFields(c.Provenance)...))
	}
}

// StoreEntry is one key = value of a credential store, with its line.
type StoreEntry struct {
	Key, Value string
	Line       int
}

// StoreError is a credential store that does not parse, or lacks the entry a rule names: its
// file, line (0: the whole file) and key.
type StoreError struct {
	File string
	Line int
	Key  string
	Msg  string
}

func (e *StoreError) Error() string {
	s := e.File
	if e.Line > 0 {
		s += ":" + strconv.Itoa(e.Line)
	}
	if e.Key != "" {
		s += ": " + e.Key
	}
	return s + ": " + e.Msg
}

// parseNpmrc reads npm's ini: key = value lines, ; and # comments, [sections], quoted values.
func parseNpmrc(name string, data []byte) ([]StoreEntry, error) {
	var out []StoreEntry
	for i, l := range strings.Split(string(data), "\n") {
		t := strings.TrimSpace(strings.TrimSuffix(l, "\r"))
		if t == "" || t[0] == ';' || t[0] == '#' || t[0] == '[' && strings.HasSuffix(t, "]") {
			continue
		}
		k, v, ok := strings.Cut(t, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" {
			return nil, &StoreError{File: name, Line: i + 1, Key: k, Msg: "not a key = value line"}
		}
		if len(v) >= 2 && (v[0] == '"' && v[len(v)-1] == '"' || v[0] == '\'' && v[len(v)-1] == '\'') {
			if v[0] == '"' {
				u, err := strconv.Unquote(v)
				if err != nil {
					return nil, &StoreError{File: name, Line: i + 1, Key: k, Msg: "malformed quoted value"}
				}
				v = u
			} else {
				v = v[1 : len(v)-1]
			}
		}
		out = append(out, StoreEntry{Key: k, Value: v, Line: i + 1})
	}
	return out, nil
}

// StoreValue returns the value of key in a parsed store, or a StoreError naming file and key.
func StoreValue(entries []StoreEntry, name, key string) (StoreEntry, error) {
	for _, e := range entries {
		if e.Key == key {
			if e.Value == "" {
				return e, &StoreError{File: name, Line: e.Line, Key: key, Msg: "empty value"}
			}
			return e, nil
		}
	}
	return StoreEntry{}, &StoreError{File: name, Key: key, Msg: "no such entry in the store"}
}

// npmSecretKey reports an .npmrc key that holds a secret or identity (dropped from the copy
// the command sees unless a rule brokers it).
func npmSecretKey(k string) bool {
	last := k
	if i := strings.LastIndexByte(k, ':'); i >= 0 && strings.HasPrefix(k, "//") {
		last = k[i+1:]
	}
	switch last {
	case "_authToken", "_auth", "_password", "username", "email", "certfile", "keyfile", "cert", "key":
		return true
	}
	return SecretEnv(last, "") != ""
}

// rewriteNpmrc keeps every line but the secrets: the brokered keys hold their stand-in, a
// reference to a variable stays, other secrets are dropped. The lines keep their order.
func rewriteNpmrc(data []byte, standIns map[string]string) []byte {
	var b strings.Builder
	for _, l := range strings.SplitAfter(string(data), "\n") {
		t := strings.TrimSpace(l)
		k, _, ok := strings.Cut(t, "=")
		k = strings.TrimSpace(k)
		if ok && t[0] != ';' && t[0] != '#' {
			_, v, _ := strings.Cut(t, "=")
			if _, ref := VarRef(strings.TrimSpace(v)); ref && standIns[k] == "" {
				b.WriteString(l) // a reference to a variable, not a secret
				continue
			}
			if s, brokered := standIns[k]; brokered {
				b.WriteString(k + "=" + s + "\n")
				continue
			}
			if npmSecretKey(k) {
				continue
			}
		}
		b.WriteString(l)
	}
	return []byte(b.String())
}

// SecretEntry is a secret entry of a credential store as learn reports it to synthesis: never
// its value, only its key, the host its store names for it (StoreHost), how a client presents
// it, and the variable it refers to when its value is ${VAR}.
type SecretEntry struct {
	Key, Host, How, Env string
}

// npmrcSecrets are .npmrc's per-registry //HOST[:port]/…:_authToken entries (bearer).
func npmrcSecrets(entries []StoreEntry) []SecretEntry {
	var out []SecretEntry
	for _, e := range entries {
		if !strings.HasPrefix(e.Key, "//") || !strings.HasSuffix(e.Key, ":_authToken") {
			continue
		}
		c := Credential{File: "x", Key: e.Key}
		se := SecretEntry{Key: e.Key, Host: c.StoreHost(), How: HowBearer}
		se.Env, _ = VarRef(e.Value)
		if se.Host != "" {
			out = append(out, se)
		}
	}
	return out
}

// VarRef returns NAME when a store's value is a reference to a variable, ${NAME} (npm reads
// the variable then).
func VarRef(v string) (string, bool) {
	n, ok := strings.CutPrefix(v, "${")
	if !ok || !strings.HasSuffix(n, "}") || envNameProblem(n[:len(n)-1]) != "" {
		return "", false
	}
	return n[:len(n)-1], true
}
