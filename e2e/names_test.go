package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/report"
)

// namesHosts is the /etc/hosts of TestNamesMatrix's network namespace: names for addresses of
// that namespace's loopback device (10.77.0.x and fd77::1 are not loopback addresses: a tool
// that read them connects to a raw address outside the sandbox), one line per kind of entry.
const namesHosts = `127.0.0.1 localhost
::1 localhost ip6-localhost
127.0.1.1 boxhost
10.77.0.1 reg4.hosts.test reg4alias
fd77::1 reg6.hosts.test
10.77.0.2 dual.hosts.test
fd77::2 dual.hosts.test
10.77.0.3 multi.hosts.test
10.77.0.4 multi.hosts.test
127.0.0.1 lo.hosts.test
10.77.0.5 proxy.hosts.test
10.77.0.6 ssh.hosts.test
10.77.0.8 statsd.hosts.test
10.77.0.9 probe.hosts.test
`

// namesHostsChanged is namesHosts edited between a learn and its enforce runs: reg4.hosts.test
// moved to another address, and a name the learn never saw added.
var namesHostsChanged = strings.Replace(namesHosts, "10.77.0.1 reg4.hosts.test reg4alias\n", "10.77.0.2 reg4.hosts.test reg4alias\n10.77.0.7 new.hosts.test\n", 1)

// namesCell is one way a tool resolves and reaches a name: learned once as root, then
// enforced unchanged as root and as an ordinary user. enforce runs enforceArgv when set (a
// command that asks for what the learn never did).
type namesCell struct {
	name        string
	argv        []string
	enforceArgv []string
	resolvConf  string   // the namespace's resolv.conf options for this cell ("" the default)
	hostsEdited bool     // enforce runs with namesHostsChanged
	want        string   // in enforce's stdout
	denials     []string // as many denials, each with one of these in its What; none when nil
}

// TestNamesMatrix learns and enforces every common way a name reaches a tool — the hosts file
// (IPv4, IPv6, both, several addresses, an alias, a loopback name, the host's own name),
// `*.localhost` — through every common resolver: glibc's getaddrinfo (curl, python, git,
// getent, node's dns.lookup) and Go's pure resolver, which reads /etc/hosts and resolv.conf
// itself. Under enforce the sandbox's hosts file keeps only the loopback lines, so each name
// goes through sysprof's DNS stub whatever source the host used: the cell must pass with no
// denial, as root and as an ordinary user. A name in no rule is NXDOMAIN and on the record.
// Everything runs in a network namespace the test makes, with a server on 10.77.0.0/24 and
// fd77::/64 of its loopback device.
func TestNamesMatrix(t *testing.T) {
	testutil.RequireRoot(t)
	path := os.Getenv("PATH")
	testutil.RequireTools(t, path, "unshare", "ip", "setpriv", "curl", "getent", "git", "node", "go")
	python := "/usr/bin/python3" // the system one: nobody reaches no per-user install
	if _, err := os.Stat(python); err != nil {
		t.Fatal(testutil.NotAvailable("%s: %v", python, err))
	}
	dir, err := os.MkdirTemp("", "sysprof-names-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	for _, d := range []string{"srv", "work", "home", "out"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	testutil.WriteFile(t, filepath.Join(dir, "hosts"), namesHosts, 0o644)
	testutil.WriteFile(t, filepath.Join(dir, "hosts.changed"), namesHostsChanged, 0o644)
	testutil.WriteFile(t, filepath.Join(dir, "srv", "index.html"), "hello names\n", 0o644)
	for _, f := range []string{"fetch.py", "lookup.js", "resolve4.js", "udp.py", "aio.py", "fwdproxy.py", "banner.py"} {
		b, err := os.ReadFile(testutil.Testdata("names", f))
		if err != nil {
			t.Fatal(err)
		}
		testutil.WriteFile(t, filepath.Join(dir, "work", f), string(b), 0o644)
	}
	// In the work tree: the sandbox's /tmp is its own.
	gofetch := filepath.Join(dir, "work", "gofetch")
	build := exec.Command("go", "build", "-tags", "netgo", "-o", gofetch, testutil.Testdata("names", "gofetch.go"))
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build gofetch: %v\n%s", err, out)
	}
	// Go's cgo resolver (glibc's getaddrinfo) under GODEBUG=netdns=cgo.
	gofetchCgo := filepath.Join(dir, "work", "gofetch-cgo")
	build = exec.Command("go", "build", "-o", gofetchCgo, testutil.Testdata("names", "gofetch.go"))
	build.Env = append(os.Environ(), "CGO_ENABLED=1")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build gofetch with cgo: %v\n%s", err, out)
	}
	// The namespace's DNS server (for names under dns.test), outside the work tree.
	if out, err := exec.Command("go", "build", "-o", filepath.Join(dir, "dnsd"), testutil.Testdata("names", "dnsd.go")).CombinedOutput(); err != nil {
		t.Fatalf("build dnsd: %v\n%s", err, out)
	}
	for name, opts := range map[string]string{"": "", "single-request": "options single-request\n", "use-vc": "options use-vc\n"} {
		testutil.WriteFile(t, filepath.Join(dir, "resolv.conf"+name), "nameserver 10.77.0.53\n"+opts, 0o644)
	}
	// A repository git reaches over plain (dumb) HTTP.
	git := fmt.Sprintf(`set -e; export HOME=%[1]s/home; git init -q %[1]s/src; git -C %[1]s/src -c user.email=t@t -c user.name=t commit -q --allow-empty -m one
git clone -q --bare %[1]s/src %[1]s/srv/repo.git; git -C %[1]s/srv/repo.git update-server-info`, dir)
	if out, err := exec.Command("sh", "-c", git).CombinedOutput(); err != nil {
		t.Fatalf("make the repository: %v\n%s", err, out)
	}
	exec.Command("chown", "-R", "65534:65534", filepath.Join(dir, "work"), filepath.Join(dir, "home"), filepath.Join(dir, "out")).Run()

	url := func(host string) string { return "http://" + host + ":8080/" }
	curl := func(host string) []string { return []string{"curl", "-sS", "-m", "10", url(host)} }
	cells := []namesCell{
		{name: "curl-ipv4", argv: curl("reg4.hosts.test"), want: "hello names"},
		{name: "curl-alias", argv: curl("reg4alias"), want: "hello names"},
		{name: "curl-ipv6", argv: curl("reg6.hosts.test"), want: "hello names"},
		{name: "curl-dual", argv: curl("dual.hosts.test"), want: "hello names"},
		{name: "curl-several", argv: curl("multi.hosts.test"), want: "hello names"},
		{name: "curl-loopback-name", argv: curl("lo.hosts.test"), want: "hello names"},
		{name: "curl-hostname", argv: curl("boxhost"), want: "hello names"},
		{name: "curl-dot-localhost", argv: curl("app.localhost"), want: "hello names"},
		{name: "python", argv: []string{python, "fetch.py", url("reg4.hosts.test")}, want: "hello names"},
		{name: "python-ipv6", argv: []string{python, "fetch.py", url("reg6.hosts.test")}, want: "hello names"},
		{name: "git", argv: []string{"git", "ls-remote", url("reg4.hosts.test") + "repo.git"}, want: "refs/heads/"},
		{name: "go-pure-resolver", argv: []string{gofetch, url("reg4.hosts.test")}, want: "hello names"},
		{name: "go-pure-resolver-ipv6", argv: []string{gofetch, url("reg6.hosts.test")}, want: "hello names"},
		{name: "go-pure-resolver-dual", argv: []string{gofetch, url("dual.hosts.test")}, want: "hello names"},
		{name: "node-lookup", argv: []string{"node", "lookup.js", "reg4.hosts.test"}, want: "lookup v4"},
		{name: "getent", argv: []string{"getent", "ahosts", "reg4.hosts.test"}, want: "STREAM"},
		{name: "getent-hosts-ipv6", argv: []string{"getent", "hosts", "reg6.hosts.test"}, want: "reg6.hosts.test"},
		{name: "curl-mixed-case", argv: curl("REG4.Hosts.Test"), want: "hello names"},
		// One address family asked for (curl -6, glibc's AI_ADDRCONFIG of getent ahostsv4/v6 and
		// Python's flag): the stub answers a hosts-file name in the families the file gives it,
		// and the sandbox's lo has an address of each family for AI_ADDRCONFIG to count.
		{name: "curl-ipv6-only-asked", argv: []string{"curl", "-6", "-sS", "-m", "10", url("reg6.hosts.test")}, want: "hello names"},
		{name: "curl-dual-ipv6-asked", argv: []string{"curl", "-6", "-sS", "-m", "10", url("dual.hosts.test")}, want: "hello names"},
		{name: "getent-ahostsv6", argv: []string{"getent", "ahostsv6", "reg6.hosts.test"}, want: "STREAM reg6.hosts.test"},
		{name: "getent-ahostsv4", argv: []string{"getent", "ahostsv4", "reg4.hosts.test"}, want: "STREAM reg4.hosts.test"},
		{name: "python-addrconfig", argv: []string{python, "-c", "import socket; print(socket.getaddrinfo('reg4.hosts.test', 8080, socket.AF_INET, socket.SOCK_STREAM, 0, socket.AI_ADDRCONFIG)[0][0] == socket.AF_INET)"}, want: "True"},
		// Looked up only (no network in the profile): glibc sorts a name's several addresses
		// by connecting a UDP socket to each, port 0, sending nothing: no denial.
		{name: "lookup-only-several", argv: []string{"getent", "ahosts", "multi.hosts.test"}, want: "STREAM multi.hosts.test"},
		{name: "lookup-only-dual", argv: []string{python, "-c", "import socket; print(len(socket.getaddrinfo('dual.hosts.test', 8080, 0, socket.SOCK_STREAM)))"}, want: "2"},
		{name: "python-asyncio", argv: []string{python, "aio.py", "dual.hosts.test", "8080"}, want: "hello names"},
		{name: "go-cgo-resolver", argv: []string{"env", "GODEBUG=netdns=cgo", gofetchCgo, url("reg4.hosts.test")}, want: "hello names"},
		// An SSH client (server speaks first; ssh reads /etc/ssh/ssh_config, no secret): the
		// test's server is no sshd, so ssh fails after the banners (its log is checked below).
		{name: "ssh", argv: []string{"sh", "-c", "ssh -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -p 2222 ssh.hosts.test true; echo ssh-ended"}, want: "ssh-ended"},
		// A forward proxy named in /etc/hosts (http_proxy): the proxy's connection and each
		// target asked through it are learned; a target not learned is refused and recorded.
		{name: "proxy-env", argv: []string{"env", "http_proxy=http://proxy.hosts.test:3128", "curl", "-sS", "-m", "10", url("www.dns.test")}, want: "hello names"},
		{name: "proxy-env-hosts-target", argv: []string{"env", "http_proxy=http://proxy.hosts.test:3128", python, "fetch.py", url("reg4.hosts.test")}, want: "hello names"},
		{name: "proxy-connect", argv: []string{"env", "http_proxy=http://proxy.hosts.test:3128", "curl", "-sS", "-m", "10", "-p", url("reg4.hosts.test")}, want: "hello names"},
		{name: "proxy-target-not-learned", argv: []string{"sh", "-c", "export http_proxy=http://proxy.hosts.test:3128; curl -sS -m 10 " + url("reg4.hosts.test")},
			enforceArgv: []string{"sh", "-c", "export http_proxy=http://proxy.hosts.test:3128; curl -sS -m 10 " + url("www.dns.test") + "; curl -sS -m 10 " + url("reg4.hosts.test")},
			want:        "hello names", denials: []string{"connect www.dns.test:8080 tcp (through the proxy proxy.hosts.test:3128"}},
		// /etc/hosts edited between learn and enforce: the learned name at its new address
		// works; a name added since, never learned, is refused and recorded.
		{name: "hosts-edited", argv: curl("reg4.hosts.test"), hostsEdited: true, want: "hello names"},
		{name: "hosts-edited-new-name", argv: []string{"sh", "-c", strings.Join(curl("reg4.hosts.test"), " ")}, hostsEdited: true,
			enforceArgv: []string{"sh", "-c", strings.Join(curl("new.hosts.test"), " ") + "; " + strings.Join(curl("reg4.hosts.test"), " ")},
			want:        "hello names", denials: []string{"connect new.hosts.test:8080"}},
		// Resolve-only: a hosts-file name looked up, never connected to (the learn saw no DNS
		// query): it resolves under enforce; a connection to it is refused and on the record.
		{name: "resolve-only", argv: []string{"sh", "-c", "getent hosts probe.hosts.test >/dev/null && " + strings.Join(curl("reg4.hosts.test"), " ")}, want: "hello names"},
		{name: "resolve-only-connected", argv: []string{"sh", "-c", "getent hosts probe.hosts.test >/dev/null && " + strings.Join(curl("reg4.hosts.test"), " ")},
			enforceArgv: []string{"sh", "-c", "getent hosts probe.hosts.test >/dev/null && " + strings.Join(curl("probe.hosts.test"), " ") + "; " + strings.Join(curl("reg4.hosts.test"), " ")},
			want:        "hello names", denials: []string{"connect probe.hosts.test:8080"}},
		// Issue 24 item 12: a UDP destination other than DNS (a statsd on loopback, one on an
		// address of the namespace) is relayed to exactly the learned address:port; the
		// sink's log is checked below.
		{name: "udp-statsd-loopback", argv: []string{"sh", "-c", python + ` udp.py send 127.0.0.1 8125 "loopback-$(id -u)"`}},
		{name: "udp-statsd-address", argv: []string{"sh", "-c", python + ` udp.py send 10.77.0.1 8126 "address-$(id -u)"`}},
		// A statsd named in /etc/hosts: relayed from the name's synthetic address to the name.
		{name: "udp-statsd-name", argv: []string{"sh", "-c", python + ` udp.py send statsd.hosts.test 8127 "name-$(id -u)"`}},
		// Names from DNS (the namespace's server): glibc asks A and AAAA at once with sendmmsg,
		// one at a time with send under single-request, over TCP under use-vc or after a
		// truncated answer; c-ares (node's dns.resolve4) and Go's resolver ask themselves.
		{name: "dns-curl", argv: curl("www.dns.test"), want: "hello names"},
		{name: "dns-curl-single-request", argv: curl("www.dns.test"), resolvConf: "single-request", want: "hello names"},
		{name: "dns-curl-use-vc", argv: curl("www.dns.test"), resolvConf: "use-vc", want: "hello names"},
		{name: "dns-curl-truncated", argv: curl("tcp.dns.test"), want: "hello names"},
		{name: "dns-python", argv: []string{python, "fetch.py", url("www.dns.test")}, want: "hello names"},
		{name: "dns-go-pure-resolver", argv: []string{gofetch, url("www.dns.test")}, want: "hello names"},
		{name: "dns-node-resolve4", argv: []string{"node", "resolve4.js", "www.dns.test"}, want: "resolve4 1"},
		{name: "dns-python-dot-localhost", argv: []string{python, "fetch.py", url("app.localhost")}, want: "hello names"},
		{name: "dns-getent", argv: []string{"getent", "ahosts", "www.dns.test"}, want: "STREAM"},
		// The DNS gives the name an IPv6 address too, and this host has one: AAAA inside too.
		{name: "dns-curl-ipv6-asked", argv: []string{"curl", "-6", "-sS", "-m", "10", url("www.dns.test")}, want: "hello names"},
		{name: "dns-resolve-only", argv: []string{"sh", "-c", "getent hosts probe.dns.test >/dev/null && " + strings.Join(curl("www.dns.test"), " ")}, want: "hello names"},
		// A name in no rule and in no source: NXDOMAIN, and the lookup on the record.
		{name: "not-in-profile", argv: []string{"sh", "-c", "getent hosts reg4.hosts.test; " + strings.Join(curl("reg4.hosts.test"), " ")},
			enforceArgv: []string{"sh", "-c", "getent hosts nowhere.test; " + strings.Join(curl("reg4.hosts.test"), " ")},
			want:        "hello names", denials: []string{"resolve nowhere.test (not in the profile: NXDOMAIN)"}},
	}

	var script strings.Builder
	// The servers are killed when the script ends: they would outlive the namespace's last
	// process otherwise.
	fmt.Fprintf(&script, `set -e
pids=
trap 'kill $pids 2>/dev/null' EXIT
ip link set lo up
for a in 10.77.0.1 10.77.0.2 10.77.0.3 10.77.0.4 10.77.0.5 10.77.0.6 10.77.0.7 10.77.0.8 10.77.0.9 10.77.0.53; do ip addr add $a/24 dev lo; done
ip addr add fd77::1/64 dev lo; ip addr add fd77::2/64 dev lo
mount --bind %[1]s/hosts /etc/hosts
mount --bind %[1]s/resolv.conf /etc/resolv.conf
%[1]s/dnsd 10.77.0.53:53 >>%[1]s/srv.log 2>&1 & pids="$pids $!"
hostname boxhost
(cd %[1]s/srv && exec %[2]s -m http.server --bind :: 8080 >>%[1]s/srv.log 2>&1) & pids="$pids $!"
%[2]s %[1]s/work/fwdproxy.py 10.77.0.5:3128 %[1]s/proxy.log >>%[1]s/srv.log 2>&1 & pids="$pids $!"
%[2]s %[1]s/work/banner.py 10.77.0.6:2222 %[1]s/banner.log >>%[1]s/srv.log 2>&1 & pids="$pids $!"
%[2]s %[1]s/work/udp.py sink %[1]s/udp.log 127.0.0.1:8125 10.77.0.1:8126 10.77.0.8:8127 >>%[1]s/srv.log 2>&1 & pids="$pids $!"
i=0; until curl -s -o /dev/null http://10.77.0.1:8080/ || [ $i -gt 100 ]; do sleep 0.1; i=$((i+1)); done
set +e
cd %[1]s/work
export HOME=%[1]s/home
S=%[3]s
`, dir, python, testutil.SysprofBin)
	q := func(argv []string) string {
		var s []string
		for _, a := range argv {
			s = append(s, "'"+strings.ReplaceAll(a, "'", `'\''`)+"'")
		}
		return strings.Join(s, " ")
	}
	for _, c := range cells {
		o := filepath.Join(dir, "out", c.name)
		enf := c.argv
		if c.enforceArgv != nil {
			enf = c.enforceArgv
		}
		if c.resolvConf != "" {
			fmt.Fprintf(&script, "mount --bind %s/resolv.conf%s /etc/resolv.conf\n", dir, c.resolvConf)
		}
		fmt.Fprintf(&script, "$S learn --fresh -p %[1]s.yaml -- %[2]s >%[1]s.learn.out 2>%[1]s.learn.err; echo $? >%[1]s.learn.rc\n", o, q(c.argv))
		if c.hostsEdited {
			fmt.Fprintf(&script, "umount /etc/hosts; mount --bind %s/hosts.changed /etc/hosts\n", dir)
		}
		fmt.Fprintf(&script, "$S enforce -p %[1]s.yaml --report %[1]s.root.json -- %[2]s >%[1]s.root.out 2>%[1]s.root.err; echo $? >%[1]s.root.rc\n", o, q(enf))
		fmt.Fprintf(&script, "chmod 644 %[1]s.yaml; setpriv --reuid=65534 --regid=65534 --clear-groups $S enforce -p %[1]s.yaml --report %[1]s.nobody.json -- %[2]s >%[1]s.nobody.out 2>%[1]s.nobody.err; echo $? >%[1]s.nobody.rc\n", o, q(enf))
		if c.resolvConf != "" {
			script.WriteString("umount /etc/resolv.conf\n")
		}
		if c.hostsEdited {
			fmt.Fprintf(&script, "umount /etc/hosts; mount --bind %s/hosts /etc/hosts\n", dir)
		}
	}
	r := testutil.Run(t, dir, os.Environ(), "unshare", "-n", "-m", "-u", "--propagation", "private", "sh", "-c", script.String())
	if r.Code != 0 {
		t.Fatalf("the namespace's script: %v", r)
	}
	udpLog, _ := os.ReadFile(filepath.Join(dir, "udp.log"))
	for _, want := range []string{"loopback-0", "loopback-65534", "address-0", "address-65534", "name-0", "name-65534"} {
		// learn's datagram and enforce's as root share a line text: count them.
		n := strings.Count(string(udpLog), want+"\n")
		if strings.HasSuffix(want, "-0") && n < 2 || n < 1 {
			t.Errorf("UDP relay: %q received %d time(s); the sink's log:\n%s", want, n, udpLog)
		}
	}
	// ssh reached the server in the learn and both enforce runs (its banner in the log).
	if b, _ := os.ReadFile(filepath.Join(dir, "banner.log")); strings.Count(string(b), "SSH-2.0-OpenSSH") < 3 {
		t.Errorf("ssh did not reach its server in every run; the server's log:\n%s", b)
	}
	read := func(name string) string {
		b, _ := os.ReadFile(filepath.Join(dir, "out", name))
		return strings.TrimSpace(string(b))
	}
	for _, c := range cells {
		t.Run(c.name, func(t *testing.T) {
			if rc := read(c.name + ".learn.rc"); rc != "0" {
				t.Fatalf("learn %q: exit %s\n%s\n%s", c.argv, rc, read(c.name+".learn.out"), read(c.name+".learn.err"))
			}
			for _, user := range []string{"root", "nobody"} {
				p := c.name + "." + user
				out, stderr := read(p+".out"), read(p+".err")
				var what []string
				if b, err := os.ReadFile(filepath.Join(dir, "out", p+".json")); err == nil && len(b) > 0 {
					for _, d := range testutil.ReadReport(t, filepath.Join(dir, "out", p+".json")).Denials {
						what = append(what, report.Printable(d.What))
					}
				} else {
					t.Errorf("as %s: no report: %v", user, err)
				}
				if rc := read(p + ".rc"); rc != "0" || !strings.Contains(out, c.want) {
					t.Errorf("as %s: exit %s, stdout %q (want %q)\nstderr:\n%s", user, rc, out, c.want, stderr)
				}
				if len(what) != len(c.denials) || slices.ContainsFunc(c.denials, func(d string) bool {
					return !slices.ContainsFunc(what, func(w string) bool { return strings.Contains(w, d) })
				}) {
					t.Errorf("as %s: denials %q, want %q\nstderr:\n%s", user, what, c.denials, stderr)
				}
				if strings.Contains(stderr, ": refused (") {
					t.Errorf("as %s: a rule of the learned profile was refused:\n%s", user, stderr)
				}
			}
		})
	}
}
