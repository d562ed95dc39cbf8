package enforcer

import (
	"cmp"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/sysprof/sysprof/netproxy"
	"github.com/sysprof/sysprof/paths"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/report"
	"github.com/sysprof/sysprof/sandbox"
)

// brokered is a run's credentials as compile found them on this host: the broker the egress
// proxy presents the real values with, and what the command gets instead.
type brokered struct {
	broker *netproxy.Broker
	// env are the NAME=value entries the command gets on top of its scrubbed environment: the
	// variables' stand-ins and the CA bundle variables; unset are names it must not get as
	// they were (a brokered variable, whatever SecretEnv says of it).
	env   []string
	unset []string
}

// caBundleVars point the usual clients at the sandbox's CA bundle (the system bundle plus the
// run CA): OpenSSL and Go, node (extra certs), Python requests, pip, git, cargo.
var caBundleVars = []string{"SSL_CERT_FILE", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE", "PIP_CERT", "GIT_SSL_CAINFO", "CARGO_HTTP_CAINFO"}

// systemBundles are where distributions keep the system CA bundle (Go's list, first found).
var systemBundles = []string{
	"/etc/ssl/certs/ca-certificates.crt",
	"/etc/pki/tls/certs/ca-bundle.crt",
	"/etc/ssl/ca-bundle.pem",
	"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
	"/etc/ssl/cert.pem",
}

// credentialFiles returns fs with a read rule for every credential store a credentials rule
// names (shown inside, with stand-ins) and without hidden rules that name one exactly, so that
// withBase leaves them reachable. fs is not modified.
func credentialFiles(p *policy.Profile) policy.Filesystem {
	fs := p.Filesystem
	if len(p.Credentials) == 0 {
		return fs
	}
	fs.Read = slices.Clone(fs.Read)
	var files []string
	for _, c := range p.Credentials {
		if c.File != "" {
			files = append(files, c.File)
			fs.Read = append(fs.Read, policy.PathRule{Path: c.File, Note: "credential store shown with stand-ins"})
		}
	}
	fs.Hidden = slices.DeleteFunc(slices.Clone(fs.Hidden), func(h policy.PathRule) bool { return slices.Contains(files, h.Path) })
	if b := systemBundle(); b != "" {
		fs.Read = append(fs.Read, policy.PathRule{Path: b, Note: "CA bundle with the run's CA"})
	}
	return fs
}

// compileCredentials reads the real values of the profile's credentials on this host, makes a
// stand-in for each, and plans what the command sees: every store file a rule names shown
// with its stand-ins and without its other secrets (a masked copy, same path and format), each
// variable holding its stand-in, and the system CA bundle extended with the run CA (masked
// over the bundle, and the usual variables pointing at it). The real values stay in this
// process (the broker); nothing of them enters the plan. Each host must be a name the network
// section allows.
func (c *Compiled) compileCredentials(p *policy.Profile, env Env) error {
	if len(p.Credentials) == 0 {
		return nil
	}
	if c.Egress == nil {
		return fmt.Errorf("credentials: the profile has no network section: the credentials' hosts are unreachable (add network.connect rules for them)")
	}
	environ := env.Environ
	if environ == nil {
		environ = os.Environ()
	}
	lookup := paths.EnvList(environ)
	b := &brokered{}
	var creds []netproxy.Credential
	stores := map[string]map[string]string{} // expanded file -> key -> stand-in
	varRef := map[int]string{}               // rule -> the variable its store entry refers to
	urlVar := map[int]string{}               // rule -> its variable's URL, when the password is the secret
	var storeOrder []string
	for i, cr := range p.Credentials {
		f := fmt.Sprintf("credentials[%d] (%s)", i, cr.Source())
		for _, h := range cr.Hosts {
			if err := c.credentialHostAllowed(h); err != nil {
				return fmt.Errorf("%s: %w", f, err)
			}
		}
		var real string
		switch {
		case cr.Env != "":
			v, ok := lookup(cr.Env)
			if !ok || v == "" {
				// Nothing to hide and nothing to present: the command runs without it, as it
				// would outside (a learned GITHUB_TOKEN rule on a machine without one).
				c.Notes = append(c.Notes, fmt.Sprintf("credentials: $%s is not set: nothing brokered for %s", cr.Env, strings.Join(cr.Hosts, ", ")))
				continue
			}
			real = v
			if pw, ok := policy.URLPassword(v); ok {
				// PIP_INDEX_URL=https://user:pass@host/…: the password is the secret; the
				// variable keeps its URL with the stand-in as the password.
				if cr.How != policy.HowBasic {
					return fmt.Errorf("%s: %s holds a URL with a password, which a client presents as how: basic (not %s)", f, cr.Env, cr.How)
				}
				real, urlVar[i] = pw, v
			}
		default:
			file, err := expand(cr.File, env)
			if err != nil {
				return fmt.Errorf("%s: %w", f, err)
			}
			data, err := os.ReadFile(file)
			if err != nil {
				return fmt.Errorf("%s: read the store: %w", f, err)
			}
			entries, err := policy.ParseStore(policy.StoreFormat(file), file, data)
			if err != nil {
				return fmt.Errorf("%s: %w", f, err)
			}
			e, err := policy.StoreValue(entries, file, cr.Key)
			if err != nil {
				return fmt.Errorf("%s: %w", f, err)
			}
			real = e.Value
			if err := clientCertNamed(file, data, cr, env); err != nil {
				return fmt.Errorf("%s: %w", f, err)
			}
			if v, ok := policy.VarRef(e.Value); ok {
				// The store refers to a variable (npm's ${NPM_TOKEN}): the variable holds
				// the secret, the store line stays as it is.
				if real, ok = lookup(v); !ok || real == "" {
					return fmt.Errorf("%s: %s:%d: %s refers to the variable %s, which is not set", f, file, e.Line, cr.Key, v)
				}
				varRef[i] = v
			}
		}
		standIn, err := netproxy.NewStandIn(real)
		if err != nil {
			return err
		}
		by := cr.By
		if !strings.HasPrefix(by, "/") && !strings.HasPrefix(by, "$") {
			by = ""
		} else if by, err = expand(by, env); err != nil {
			return fmt.Errorf("%s: by %s: %w", f, cr.By, err)
		}
		creds = append(creds, netproxy.Credential{Name: credentialName(cr), Hosts: cr.Hosts, Header: cr.Header(),
			Basic: cr.How == policy.HowBasic, By: by, StandIn: standIn, Real: real})
		if v := cmp.Or(cr.Env, varRef[i]); v != "" {
			val := standIn
			if u := urlVar[i]; u != "" {
				val = policy.WithURLPassword(u, standIn)
			}
			b.env = append(b.env, v+"="+val)
			b.unset = append(b.unset, v)
		}
		if cr.Env != "" {
			continue
		}
		file, _ := expand(cr.File, env)
		if stores[file] == nil {
			stores[file] = map[string]string{}
			storeOrder = append(storeOrder, file)
		}
		stores[file][cr.Key] = standIn
		if varRef[i] != "" {
			stores[file][cr.Key] = "${" + varRef[i] + "}"
		}
	}
	for _, file := range storeOrder {
		data, err := os.ReadFile(file)
		if err != nil {
			return fmt.Errorf("credentials: read the store %s: %w", file, err)
		}
		c.Plan.Masked = append(c.Plan.Masked, sandbox.Masked{Path: file, Content: policy.RewriteStore(policy.StoreFormat(file), data, stores[file])})
		c.MaskedSecrets = append(c.MaskedSecrets, file)
		// Masked, not hidden: a store pattern under another variable ($HOME/.cargo/credentials*
		// for $CARGO_HOME/credentials.toml) matched it too.
		c.Plan.Hidden = slices.DeleteFunc(c.Plan.Hidden, func(h string) bool { return h == file })
		c.Notes = append(c.Notes, fmt.Sprintf("credentials: %s is shown with per-run stand-ins for %d brokered entr(ies) and without its other secrets", file, len(stores[file])))
	}
	broker, err := netproxy.NewBroker(creds)
	if err != nil {
		return err
	}
	b.broker = broker
	if err := c.planCABundle(b, lookup); err != nil {
		return err
	}
	c.creds = b
	// A credential's binary is held as a rule's is: rewritten in place it would get the secret.
	var byCred []netproxy.Rule
	for _, cr := range creds {
		byCred = append(byCred, netproxy.Rule{By: cr.By, Endpoint: "credentials " + cr.Name})
	}
	c.holdRuleBinaries(&c.Plan, byCred, env)
	// The masked files' names stay unreadable if the host renames over them (as hidden ones).
	if ll := c.Plan.Landlock; ll != nil {
		ll.Hidden = slices.Concat(ll.Hidden, maskedPaths(c.Plan.Masked))
		slices.Sort(ll.Hidden)
		ll.Hidden = slices.Compact(ll.Hidden)
	}
	return nil
}

// clientCertNamed refuses a credential whose host expects a client certificate, as its store
// (or docker's certs.d) says: the broker terminates TLS and presents none, so the upstream
// would refuse every request.
func clientCertNamed(file string, data []byte, cr policy.Credential, env Env) error {
	format := policy.StoreFormat(file)
	where := policy.ClientCert(format, data, cr.Key)
	if where != "" {
		where = file + " " + where
	}
	if format == policy.StoreDocker {
		home, _ := expand("$HOME", env)
		for _, h := range cr.Hosts {
			for _, dir := range []string{filepath.Join(home, ".docker", "certs.d", h), filepath.Join("/etc/docker/certs.d", h)} {
				if m, _ := filepath.Glob(filepath.Join(dir, "*.cert")); len(m) > 0 && where == "" {
					where = m[0]
				}
			}
		}
	}
	if where == "" {
		return nil
	}
	return fmt.Errorf("%s gives the client a certificate for %s: the proxy terminates TLS and can present no client certificate, so this credential cannot be brokered (drop the rule and pass the store, or use a token without a client certificate)",
		where, strings.Join(cr.Hosts, ", "))
}

// credentialName is what reports call a credential: its source, never its value.
func credentialName(c policy.Credential) string {
	if c.Env != "" {
		return "$" + c.Env
	}
	return c.File + " " + c.Key
}

// credentialHostAllowed refuses a credential host no name rule of the network section
// reaches: the broker works by name (an address rule's connections are never terminated).
func (c *Compiled) credentialHostAllowed(h string) error {
	name, port := h, ""
	if n, p, err := net.SplitHostPort(h); err == nil {
		name, port = n, p
	}
	name = strings.ToLower(name)
	addr, aerr := netip.ParseAddr(name)
	isAddr := aerr == nil
	for _, r := range c.Egress.Rules {
		if port != "" && strconv.Itoa(int(r.Port)) != port {
			continue
		}
		switch {
		case r.Host != "" && r.Host == name:
			return nil
		case r.Prefix.IsValid() && isAddr && r.Prefix.Contains(addr):
			return nil // a registry on an address (loopback)
		case r.Prefix.IsValid() && name == "localhost" && r.Prefix.Addr().IsLoopback():
			return nil
		}
	}
	return fmt.Errorf("host %s: no network.connect rule allows it (add network.connect: + %s:443 tcp, or the port it uses)", h, name)
}

// systemBundle returns the system CA bundle of this host (resolved), "" when none.
func systemBundle() string {
	for _, p := range systemBundles {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			if st, err := os.Stat(r); err == nil && st.Mode().IsRegular() {
				return r
			}
		}
	}
	return ""
}

// planCABundle masks the system CA bundle with itself plus the run CA and points the usual
// variables at it. The host's own bundle is the one Go would use: SSL_CERT_FILE when set.
func (c *Compiled) planCABundle(b *brokered, lookup paths.Lookup) error {
	inside := systemBundle()
	if inside == "" {
		return fmt.Errorf("credentials: no system CA bundle on this host (%s) to add the run's CA to", strings.Join(systemBundles, ", "))
	}
	src := inside
	if f, ok := lookup("SSL_CERT_FILE"); ok && f != "" {
		src = f
	}
	data, err := os.ReadFile(src)
	if err != nil {
		return fmt.Errorf("credentials: read the host's CA bundle: %w", err)
	}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		data = append(data, '\n')
	}
	content := append(slices.Clone(data), b.broker.CAPEM...)
	c.Plan.Masked = append(c.Plan.Masked, sandbox.Masked{Path: inside, Content: content})
	for _, v := range caBundleVars {
		b.env = append(b.env, v+"="+inside)
		b.unset = append(b.unset, v)
	}
	c.Notes = append(c.Notes, fmt.Sprintf("credentials: %s inside is the host's bundle plus this run's CA (in memory only; %s point at it)", inside, strings.Join(caBundleVars, ", ")))
	return nil
}

func (b *brokered) brokerOrNil() *netproxy.Broker {
	if b == nil {
		return nil
	}
	return b.broker
}

// credentialNotes sums up each credential's uses for the report's notes, and says plainly
// what each upstream refusal meant.
func credentialNotes(uses []report.CredentialUse) []string {
	type sum struct {
		n       int
		in, out int64
	}
	sums := map[string]*sum{}
	var order, notes []string
	for _, u := range uses {
		k := u.Credential + " to " + u.Host + " by " + u.Binary
		if sums[k] == nil {
			sums[k] = &sum{}
			order = append(order, k)
		}
		s := sums[k]
		s.n++
		s.in += u.BytesIn
		s.out += u.BytesOut
		if u.Note != "" {
			notes = append(notes, fmt.Sprintf("credentials: %s %s %s%s: %s", u.Credential, u.Method, u.Host, u.Path, u.Note))
		}
	}
	var out []string
	for _, k := range order {
		s := sums[k]
		out = append(out, fmt.Sprintf("credentials: %s: %d request(s), %d B out, %d B in (each in the report's credentialUses)", k, s.n, s.out, s.in))
	}
	return append(out, notes...)
}
