package synth

import (
	"strings"

	"github.com/sysprof/sysprof/paths"
)

// A role is read-only system data whose exact files depend on the machine, not on what the
// tool does: which cgroup files a runtime reads (v1 or v2, the host's cgroup path, a per-run
// directory), which CA bundle a TLS library opens (Debian's ca-certificates.crt, Fedora's
// tls-ca-bundle.pem, a site CA's own file). A profile that reads one file of a role reads the
// role, so that it runs on the next machine.
type role struct {
	name  string
	note  string
	under []string // a read below one of these is a use of the role
	rules []string // what the role allows reading
}

var roles = []role{
	{
		name:  "cgroup limits",
		note:  "Go/Rust/node runtimes read their cgroup's CPU and memory limits; which files depends on cgroup v1 or v2 and the host's cgroup path",
		under: []string{"/sys/fs/cgroup"},
		rules: []string{"/sys/fs/cgroup"},
	},
	{
		name: "CA certificates",
		note: "CA certificates: which store a TLS library opens depends on the distribution and the site's CAs",
		under: []string{"/etc/ssl/certs", "/etc/ssl/cert.pem", "/etc/pki/tls", "/etc/pki/ca-trust", "/usr/share/ca-certificates",
			"/etc/ca-certificates", "/usr/lib/ssl/certs", "/usr/lib/ssl/cert.pem"},
		// Not /etc/ssl or /etc/pki whole: /etc/ssl/private holds keys. Not /usr/lib/ssl: its
		// certs and openssl.cnf are links to /etc/ssl where a distribution has it, and rules
		// there would count towards rolling /usr/lib up.
		rules: []string{"/etc/ssl/certs", "/etc/ssl/cert.pem", "/etc/ssl/openssl.cnf", "/etc/pki/tls/certs", "/etc/pki/tls/cert.pem",
			"/etc/pki/tls/openssl.cnf", "/etc/pki/ca-trust/extracted", "/usr/share/ca-certificates", "/etc/ca-certificates"},
	},
}

// passRoles adds a role's rules (without provenance: they stand for the machine, not for a
// binary) when the command read any of its data; coverage then drops the files they cover.
func (s *state) passRoles() []string {
	var msgs []string
	for _, r := range roles {
		used := false
		for p := range s.read.byPath() {
			for _, u := range r.under {
				used = used || paths.Within(p, u)
			}
		}
		if !used {
			continue
		}
		var added []string
		for _, p := range r.rules {
			if s.read.get(p) == nil {
				s.read.set(p, &pathRule{note: r.note, files: 1})
				added = append(added, p)
			}
		}
		if len(added) > 0 {
			msgs = append(msgs, r.name+": + read "+strings.Join(added, ", ")+" ("+r.note+")")
		}
	}
	return msgs
}
