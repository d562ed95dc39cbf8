package policy

import (
	"fmt"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
)

// Credential store formats sysprof reads and rewrites with stand-ins (StoreFormat).
const (
	StoreNpmrc          = "npmrc"
	StoreGitCredentials = "git-credentials"
	StoreNetrc          = "netrc"
	StoreCargo          = "cargo"
	StorePip            = "pip"
	StoreDocker         = "docker"
)

var storeNames = []string{".npmrc", ".git-credentials", ".netrc", "cargo's credentials.toml", "pip.conf", ".docker/config.json"}

// StoreFormat returns the format of the credential store at p (by its name), "" when sysprof
// cannot read and rewrite it.
func StoreFormat(p string) string {
	switch path.Base(p) {
	case ".npmrc", "npmrc":
		return StoreNpmrc
	case ".git-credentials":
		return StoreGitCredentials
	case ".netrc":
		return StoreNetrc
	case "pip.conf", "pip.ini":
		return StorePip
	}
	if path.Base(p) == "config.json" && path.Base(path.Dir(p)) == ".docker" {
		return StoreDocker
	}
	if strings.HasSuffix(p, "/git/credentials") {
		return StoreGitCredentials
	}
	if dir := path.Base(path.Dir(p)); (path.Base(p) == "credentials.toml" || path.Base(p) == "credentials") && (dir == ".cargo" || dir == "$CARGO_HOME") {
		return StoreCargo
	}
	return ""
}

// ParseStore reads a credential store of format (StoreFormat) from data; name is for errors.
// Each entry is a secret's key (as a credentials rule names it) and value, with its line:
//
//   - .npmrc: every key = value line;
//   - .git-credentials: one URL a line, scheme://user:password@host[:port][/path]; the key is
//     the URL without the password (https://user@host), the value the password;
//   - .netrc: machine HOST login USER password SECRET; the key is HOST (default: "default");
//   - cargo's credentials.toml: [registry] token = "…" and [registries.NAME] token = "…"; the
//     key is the table and the field (registry.token, registries.NAME.token). The file names
//     no host (config.toml's index does): a rule's hosts are the person's to name;
//   - pip.conf: every URL with a password in an option's value (index-url, extra-index-url,
//     find-links; any section, continuation lines too); the key is the URL without the
//     password (https://user@host/simple), as in .git-credentials, the value the password;
//   - .docker/config.json: auths.REGISTRY.auth (base64 user:password: the value is the
//     password, presented how: basic) and auths.REGISTRY.identitytoken (how: bearer).
func ParseStore(format, name string, data []byte) ([]StoreEntry, error) {
	if f, ok := storeFormats[format]; ok {
		return f.parse(name, data)
	}
	return nil, &StoreError{File: name, Msg: "not a credential store format sysprof reads"}
}

// storeFormats are the credential store formats sysprof reads: how each parses and how it is
// rewritten for the command (RewriteStore).
var storeFormats = map[string]struct {
	parse   func(name string, data []byte) ([]StoreEntry, error)
	rewrite func(data []byte, standIns map[string]string) []byte
}{
	StoreNpmrc:          {parseNpmrc, rewriteNpmrc},
	StoreGitCredentials: {parseGitCredentials, rewriteGitCredentials},
	StoreNetrc:          {parseNetrc, rewriteNetrc},
	StoreCargo:          {parseCargo, rewriteCargo},
	StorePip:            {parsePip, rewritePip},
	StoreDocker:         {parseDocker, rewriteDocker},
}

// RewriteStore returns the store the command sees: the brokered keys (standIns: key ->
// stand-in) holding their stand-in, every other secret dropped, what is not a secret kept.
func RewriteStore(format string, data []byte, standIns map[string]string) []byte {
	if f, ok := storeFormats[format]; ok {
		return f.rewrite(data, standIns)
	}
	return nil
}

// SecretEntries lists the brokerable secrets of a parsed store with the host each is for.
func SecretEntries(format string, entries []StoreEntry) []SecretEntry {
	switch format {
	case StoreNpmrc:
		return npmrcSecrets(entries)
	case StoreGitCredentials, StoreNetrc, StorePip:
		var out []SecretEntry
		for _, e := range entries {
			h := Credential{File: "/." + format, Key: e.Key}.StoreHost()
			if h != "" && h != "default" {
				out = append(out, SecretEntry{Key: e.Key, Host: h, How: HowBasic})
			}
		}
		return out
	case StoreDocker:
		var out []SecretEntry
		for _, e := range entries {
			h := Credential{File: "/.docker/config.json", Key: e.Key}.StoreHost()
			how := HowBasic
			if strings.HasSuffix(e.Key, "."+dockerToken) {
				how = HowBearer
			}
			if h != "" {
				out = append(out, SecretEntry{Key: e.Key, Host: h, How: how})
			}
		}
		return out
	}
	return nil
}

func parseGitCredentials(name string, data []byte) ([]StoreEntry, error) {
	var out []StoreEntry
	for i, l := range strings.Split(string(data), "\n") {
		l = strings.TrimSpace(strings.TrimSuffix(l, "\r"))
		if l == "" || l[0] == '#' {
			continue
		}
		u, err := url.Parse(l)
		if err != nil || u.Host == "" || u.User == nil {
			return nil, &StoreError{File: name, Line: i + 1, Msg: "not a scheme://user:password@host URL"}
		}
		pw, ok := u.User.Password()
		key := gitCredentialKey(u)
		if !ok {
			return nil, &StoreError{File: name, Line: i + 1, Key: key, Msg: "no password"}
		}
		out = append(out, StoreEntry{Key: key, Value: pw, Line: i + 1})
	}
	return out, nil
}

// gitCredentialKey is a .git-credentials line's key: its URL without the password.
func gitCredentialKey(u *url.URL) string {
	k := u.Scheme + "://" + u.User.Username() + "@" + u.Host
	if p := strings.TrimSuffix(u.Path, "/"); p != "" {
		k += p
	}
	return k
}

func rewriteGitCredentials(data []byte, standIns map[string]string) []byte {
	var b strings.Builder
	for l := range strings.SplitSeq(string(data), "\n") {
		u, err := url.Parse(strings.TrimSpace(strings.TrimSuffix(l, "\r")))
		if err != nil || u.User == nil {
			continue
		}
		if s, ok := standIns[gitCredentialKey(u)]; ok {
			u.User = url.UserPassword(u.User.Username(), s)
			b.WriteString(u.String() + "\n")
		}
	}
	return []byte(b.String())
}

// netrcToken is one whitespace-separated token of a .netrc with its line.
type netrcToken struct {
	s    string
	line int
}

func netrcTokens(data []byte) []netrcToken {
	var out []netrcToken
	for i, l := range strings.Split(string(data), "\n") {
		for f := range strings.FieldsSeq(l) {
			out = append(out, netrcToken{f, i + 1})
		}
	}
	return out
}

// netrcEntry is one machine (or default) of a .netrc.
type netrcEntry struct {
	machine, login, password, account string
	line                              int
}

func netrcEntries(name string, data []byte) ([]netrcEntry, error) {
	toks := netrcTokens(data)
	var out []netrcEntry
	var cur *netrcEntry
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		next := func() (string, error) {
			if i+1 >= len(toks) {
				return "", &StoreError{File: name, Line: t.line, Key: t.s, Msg: "a value is missing"}
			}
			i++
			return toks[i].s, nil
		}
		switch t.s {
		case "machine", "default":
			out = append(out, netrcEntry{machine: "default", line: t.line})
			cur = &out[len(out)-1]
			if t.s == "machine" {
				v, err := next()
				if err != nil {
					return nil, err
				}
				cur.machine = v
			}
		case "login", "password", "account":
			v, err := next()
			if err != nil {
				return nil, err
			}
			if cur == nil {
				return nil, &StoreError{File: name, Line: t.line, Key: t.s, Msg: "outside a machine entry"}
			}
			switch t.s {
			case "login":
				cur.login = v
			case "password":
				cur.password = v
			default:
				cur.account = v
			}
		case "macdef": // a macro runs to the next empty line: not a secret, skipped
			for i+1 < len(toks) && toks[i+1].line == t.line {
				i++
			}
			end := t.line
			for i+1 < len(toks) && toks[i+1].line == end+1 {
				i++
				end++
			}
		default:
			return nil, &StoreError{File: name, Line: t.line, Key: t.s, Msg: fmt.Sprintf("unknown .netrc token %q", t.s)}
		}
	}
	return out, nil
}

func parseNetrc(name string, data []byte) ([]StoreEntry, error) {
	es, err := netrcEntries(name, data)
	if err != nil {
		return nil, err
	}
	var out []StoreEntry
	for _, e := range es {
		if e.password != "" {
			out = append(out, StoreEntry{Key: e.machine, Value: e.password, Line: e.line})
		}
	}
	return out, nil
}

func rewriteNetrc(data []byte, standIns map[string]string) []byte {
	es, err := netrcEntries("", data)
	if err != nil {
		return nil
	}
	var b strings.Builder
	for _, e := range es {
		s, ok := standIns[e.machine]
		if !ok {
			continue
		}
		if e.machine == "default" {
			b.WriteString("default")
		} else {
			b.WriteString("machine " + e.machine)
		}
		if e.login != "" {
			b.WriteString(" login " + e.login)
		}
		b.WriteString(" password " + s + "\n")
	}
	return []byte(b.String())
}

// cargoSecretFields are credentials.toml fields that hold a secret.
var cargoSecretFields = []string{"token", "secret-key"}

// cargoLine splits a credentials.toml line: the table of a header ("" when none), or a
// field's name and its string value.
func cargoLine(l string) (table, key, value string, isHeader, ok bool) {
	t := strings.TrimSpace(strings.TrimSuffix(l, "\r"))
	if t == "" || t[0] == '#' {
		return "", "", "", false, true
	}
	if strings.HasPrefix(t, "[") {
		end := strings.IndexByte(t, ']')
		if end < 0 {
			return "", "", "", false, false
		}
		return strings.ReplaceAll(strings.TrimSpace(t[1:end]), `"`, ""), "", "", true, true
	}
	k, v, found := strings.Cut(t, "=")
	if !found {
		return "", "", "", false, false
	}
	k, v = strings.TrimSpace(k), strings.TrimSpace(v)
	if i := strings.Index(v, " #"); i >= 0 && (v[0] != '"' && v[0] != '\'') {
		v = strings.TrimSpace(v[:i])
	}
	switch {
	case len(v) >= 2 && v[0] == '\'' && strings.LastIndexByte(v, '\'') > 0:
		v = v[1:strings.LastIndexByte(v, '\'')]
	case len(v) >= 2 && v[0] == '"':
		end := strings.LastIndexByte(v, '"')
		u, err := strconv.Unquote(v[:end+1])
		if err != nil {
			return "", k, "", false, false
		}
		v = u
	}
	return "", k, v, false, true
}

func parseCargo(name string, data []byte) ([]StoreEntry, error) {
	var out []StoreEntry
	table := ""
	for i, l := range strings.Split(string(data), "\n") {
		tb, k, v, header, ok := cargoLine(l)
		if !ok {
			return nil, &StoreError{File: name, Line: i + 1, Key: k, Msg: "not a TOML [table] or key = \"value\" line"}
		}
		switch {
		case header:
			table = tb
		case k != "":
			out = append(out, StoreEntry{Key: table + "." + k, Value: v, Line: i + 1})
		}
	}
	return out, nil
}

func rewriteCargo(data []byte, standIns map[string]string) []byte {
	var b strings.Builder
	table := ""
	for _, l := range strings.SplitAfter(string(data), "\n") {
		tb, k, _, header, ok := cargoLine(l)
		switch {
		case !ok:
			continue
		case header:
			table = tb
		case k != "":
			if s, brokered := standIns[table+"."+k]; brokered {
				b.WriteString(k + " = " + strconv.Quote(s) + "\n")
				continue
			}
			if slices.Contains(cargoSecretFields, k) {
				continue
			}
		}
		b.WriteString(l)
	}
	return []byte(b.String())
}

// pipLine splits a pip.conf (configparser INI) line: a [section], an option's key and value
// (= or :), or a continuation of the previous option's value (indented).
func pipLine(l string) (section, key, value string, kind byte) {
	t := strings.TrimSpace(strings.TrimSuffix(l, "\r"))
	switch {
	case t == "" || t[0] == '#' || t[0] == ';':
		return "", "", "", ' '
	case t[0] == '[' && strings.HasSuffix(t, "]"):
		return strings.TrimSpace(t[1 : len(t)-1]), "", "", '['
	case l[0] == ' ' || l[0] == '\t':
		return "", "", t, '+'
	}
	i := strings.IndexAny(t, "=:")
	if i <= 0 || strings.ContainsAny(strings.TrimSpace(t[:i]), " \t") {
		return "", t, "", '!' // a name with a blank in it: a URL's colon may have cut it
	}
	return "", strings.TrimSpace(t[:i]), strings.TrimSpace(t[i+1:]), '='
}

// pipURL returns a value's word as a URL with a password, nil when it is not one.
func pipURL(w string) *url.URL {
	if !strings.Contains(w, "://") || !strings.Contains(w, "@") {
		return nil
	}
	u, err := url.Parse(w)
	if err != nil || u.User == nil || u.Host == "" {
		return nil
	}
	if _, ok := u.User.Password(); !ok {
		return nil
	}
	return u
}

func parsePip(name string, data []byte) ([]StoreEntry, error) {
	var out []StoreEntry
	section, key := "", ""
	for i, l := range strings.Split(string(data), "\n") {
		sec, k, v, kind := pipLine(l)
		switch kind {
		case '[':
			section, key = sec, ""
			continue
		case '!':
			return nil, &StoreError{File: name, Line: i + 1, Key: k, Msg: "not a [section], key = value or indented continuation line"}
		case '+':
			if key == "" {
				return nil, &StoreError{File: name, Line: i + 1, Msg: "an indented line continues no option"}
			}
		case '=':
			if section == "" {
				return nil, &StoreError{File: name, Line: i + 1, Key: k, Msg: "an option outside a [section] (pip reads [global], [install], [download]…)"}
			}
			key = section + "." + k
		default:
			continue
		}
		for w := range strings.FieldsSeq(v) {
			if strings.Contains(w, "://") && strings.Contains(w, "@") {
				if _, err := url.Parse(w); err != nil {
					return nil, &StoreError{File: name, Line: i + 1, Key: key, Msg: "a URL that does not parse: " + err.Error()}
				}
			}
			if u := pipURL(w); u != nil {
				pw, _ := u.User.Password()
				out = append(out, StoreEntry{Key: gitCredentialKey(u), Value: pw, Line: i + 1})
			}
		}
	}
	return out, nil
}

// rewritePip keeps every line; in option values a brokered URL holds its stand-in as the
// password, every other URL loses its password (user@host stays).
func rewritePip(data []byte, standIns map[string]string) []byte {
	var b strings.Builder
	for _, l := range strings.SplitAfter(string(data), "\n") {
		_, _, _, kind := pipLine(l)
		switch kind {
		case '=':
			i := strings.IndexAny(l, "=:")
			b.WriteString(l[:i+1] + replaceURLPasswords(l[i+1:], standIns))
		case '+':
			b.WriteString(replaceURLPasswords(l, standIns))
		default:
			b.WriteString(l)
		}
	}
	return []byte(b.String())
}

// replaceURLPasswords rewrites the URLs with a password among s's whitespace-separated words:
// a brokered one (standIns by its key, the URL without the password) gets its stand-in, any
// other loses the password. The rest of s is kept byte for byte.
func replaceURLPasswords(s string, standIns map[string]string) string {
	var b strings.Builder
	for len(s) > 0 {
		start := strings.IndexFunc(s, func(r rune) bool { return r != ' ' && r != '\t' && r != '\n' && r != '\r' })
		if start < 0 {
			b.WriteString(s)
			break
		}
		end := strings.IndexAny(s[start:], " \t\r\n")
		if end < 0 {
			end = len(s) - start
		}
		w := s[start : start+end]
		b.WriteString(s[:start])
		if u := pipURL(w); u != nil {
			if si, ok := standIns[gitCredentialKey(u)]; ok {
				u.User = url.UserPassword(u.User.Username(), si)
			} else {
				u.User = url.User(u.User.Username())
			}
			w = u.String()
		}
		b.WriteString(w)
		s = s[start+end:]
	}
	return b.String()
}

// URLPassword returns the password of v when v is a URL with one (a variable such as
// PIP_INDEX_URL whose secret is only the password).
func URLPassword(v string) (string, bool) {
	u := pipURL(strings.TrimSpace(v))
	if u == nil {
		return "", false
	}
	return u.User.Password()
}

// WithURLPassword returns the URL v with its password replaced by pw.
func WithURLPassword(v, pw string) string {
	u := pipURL(strings.TrimSpace(v))
	if u == nil {
		return v
	}
	u.User = url.UserPassword(u.User.Username(), pw)
	return u.String()
}

// ClientCert returns the entry of a store (format, its data) that gives the client a
// certificate for the host of key: then the upstream expects one, which the broker cannot
// present; "" when the store names none. (.npmrc's //HOST/:certfile or keyfile, or unscoped
// cert, key, certfile, keyfile; pip.conf's client-cert.)
func ClientCert(format string, data []byte, key string) string {
	switch format {
	case StoreNpmrc:
		entries, err := parseNpmrc("", data)
		if err != nil {
			return ""
		}
		scope := ""
		if strings.HasPrefix(key, "//") {
			scope = key[:strings.LastIndexByte(key, ':')+1] // //host/path/:
		}
		for _, e := range entries {
			switch e.Key {
			case "cert", "key", "certfile", "keyfile", scope + "certfile", scope + "keyfile":
				if e.Value != "" {
					return fmt.Sprintf("%s (line %d)", e.Key, e.Line)
				}
			}
		}
	case StorePip:
		section := ""
		for i, l := range strings.Split(string(data), "\n") {
			sec, k, v, kind := pipLine(l)
			if kind == '[' {
				section = sec
			}
			if kind == '=' && k == "client-cert" && v != "" {
				return fmt.Sprintf("%s.client-cert (line %d)", section, i+1)
			}
		}
	}
	return ""
}

// httpScheme reports whether a URL-keyed store's key (.git-credentials, pip.conf) is for
// HTTP, the only protocol the broker rewrites: its scheme ("" when it names none).
func httpScheme(key string) (string, bool) {
	s, _, ok := strings.Cut(key, "://")
	if !ok {
		return "", true
	}
	s = strings.ToLower(s)
	return s, s == "http" || s == "https"
}

// TokenVar is a well-known variable that holds a service's token: the hosts the service reads
// it at, and how its clients present it.
type TokenVar struct {
	Name  string
	Hosts []string
	How   string
}

// tokenVars are the variables learn brokers when the run connects to their service's hosts.
// (git over HTTPS presents a GitHub token as a Basic password: not this rule's way.)
var tokenVars = []TokenVar{
	{"GITHUB_TOKEN", []string{"api.github.com", "github.com", "uploads.github.com"}, HowBearer},
	{"GH_TOKEN", []string{"api.github.com", "github.com", "uploads.github.com"}, HowBearer},
	{"NPM_TOKEN", []string{"registry.npmjs.org"}, HowBearer},
	{"CARGO_REGISTRY_TOKEN", []string{"crates.io"}, HowHeaderPfx + "Authorization"},
}

// WellKnownToken returns the token variable name, ok false when it is not one.
func WellKnownToken(name string) (TokenVar, bool) {
	for _, v := range tokenVars {
		if v.Name == name {
			return v, true
		}
	}
	return TokenVar{}, false
}
