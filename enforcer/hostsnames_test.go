package enforcer

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/policy"
)

func init() {
	nobodyHelpers["hostsnames"] = func(_, work string) error { return hostsNamesCheck(work) }
}

// hostsName is the name the test's own /etc/hosts gives (bind-mounted in a mount namespace
// of the test's): an internal registry or a CI service container.
const hostsName = "registry.hosts.test"

// hostsAddr is its address there: not loopback (a loopback line stays in the sandbox's view,
// as learn records a loopback connect by its address) and nothing listens on it.
const hostsAddr = "10.255.77.7"

// A name the host resolves from /etc/hosts goes through the DNS stub and the proxy like a DNS
// name: the sandbox's hosts file has only the loopback lines, so the tool asks the stub and
// dials the synthetic address (with the host's file in view it dials the raw address, which
// no rule allows). Root and ordinary user, each in a mount namespace with its own /etc/hosts.
func TestHostsFileNamesGoThroughTheStub(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireTool(t, "curl")
	testutil.RequireTool(t, "unshare")
	testutil.RequireTool(t, "setpriv")
	for _, user := range []string{"root", "nobody"} {
		t.Run(user, func(t *testing.T) {
			dir, err := os.MkdirTemp("", "sysprof-hosts-")
			if err != nil {
				t.Fatal(err)
			}
			defer os.RemoveAll(dir)
			os.Chmod(dir, 0o755)
			hosts := filepath.Join(dir, "hosts")
			if err := os.WriteFile(hosts, []byte("127.0.0.1 localhost\n::1 localhost\n"+hostsAddr+" "+hostsName+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			self, _ := os.Executable()
			bin := filepath.Join(dir, "enforcer.test")
			if err := copyFile(self, bin, 0o755); err != nil {
				t.Fatal(err)
			}
			drop := ""
			if user == "nobody" {
				drop = "setpriv --reuid 65534 --regid 65534 --clear-groups "
			}
			cmd := exec.Command("unshare", "-m", "--propagation", "private", "sh", "-c",
				`mount --bind "$1" /etc/hosts && exec `+drop+`"$2"`, "sh", hosts, bin)
			cmd.Env = append(os.Environ(), nobodyEnv+"=hostsnames", "SYSPROF_TEST_WORK="+dir, "HOME="+dir)
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("as %s: %v\n%s", user, err, out)
			}
		})
	}
}

// hostsNamesCheck runs in the mount namespace whose /etc/hosts names hostsName: curl reaches
// a loopback upstream by that name under a profile that allows only the name (--resolve
// points the proxy's upstream at the loopback server instead of hostsAddr). A raw connect to
// hostsAddr is refused: no rule names the address.
func hostsNamesCheck(work string) error {
	if b, err := os.ReadFile("/etc/hosts"); err != nil || !strings.Contains(string(b), hostsName) {
		return fmt.Errorf("the test's /etc/hosts is not in view (%v): %q", err, b)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintf(w, "upstream %s", r.Host) }))
	defer srv.Close()
	port := netip.MustParseAddrPort(srv.Listener.Addr().String()).Port()
	// /etc/hosts read by an exact rule, as learn writes it: the rule reaches the file mounted
	// over it.
	p := toolProfile("hosts-names", "/usr", "/etc/hosts", "/etc/resolv.conf", "/etc/nsswitch.conf", "/etc/host.conf", "/etc/ld.so.cache", "/etc/gai.conf", "/proc", "/dev/urandom", "$WORKDIR")
	p.Network.Connect = []policy.Endpoint{{Endpoint: fmt.Sprintf("%s:%d", hostsName, port), Proto: "tcp"}}
	var out strings.Builder
	rep, code, err := Run(context.Background(), Options{Profile: p, Audit: true, Dir: work,
		Command: []string{"curl", "-sS", "-m", "10", fmt.Sprintf("http://%s:%d/", hostsName, port)},
		Resolve: map[string][]netip.Addr{hostsName: {netip.MustParseAddr("127.0.0.1")}},
		Stdout:  &out, Stderr: io.Discard})
	if err != nil || code != 0 {
		var denials []string
		if rep != nil {
			for _, d := range rep.Denials {
				denials = append(denials, d.What)
			}
		}
		return fmt.Errorf("curl %s under enforce: exit %d, %v: %q; denials %q", hostsName, code, err, out.String(), denials)
	}
	if want := fmt.Sprintf("upstream %s:%d", hostsName, port); out.String() != want {
		return fmt.Errorf("curl %s: %q, want %q", hostsName, out.String(), want)
	}
	return nil
}

// The names the host's hosts file gives (not its loopback lines) resolve through the stub when
// the profile reads the file, resolve-only unless a rule connects: the learn resolved them
// from the file, without a lookup to keep. A profile that does not read the file gets none.
func TestHostsFileNamesResolveOnly(t *testing.T) {
	dir := t.TempDir()
	old := hostsFilePath
	hostsFilePath = filepath.Join(dir, "hosts")
	defer func() { hostsFilePath = old }()
	testutil.WriteFile(t, hostsFilePath, "127.0.0.1 localhost\n127.0.0.1 lo.hosts.test\n10.0.0.5 Reg.Hosts.Test alias\n10.0.0.9 probe.hosts.test\n0.0.0.0 ads.blocked.test\n", 0o644)
	compile := func(read ...string) *Compiled {
		p := toolProfile("hosts-resolve", read...)
		p.Network.Connect = []policy.Endpoint{{Endpoint: "reg.hosts.test:443", Proto: "tcp"}}
		c, err := Compile(p, Env{Vars: map[string]string{"WORKDIR": dir, "HOME": dir, "TMPDIR": "/tmp"}, Arch: "x86_64"})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	c := compile("/usr", "/etc/hosts")
	for _, n := range []string{"reg.hosts.test", "alias", "probe.hosts.test"} {
		if _, ok := c.Egress.Synthetic(n); !ok {
			t.Errorf("%s: not answered by the stub; names %v", n, c.Egress.Names)
		}
	}
	if _, ok := c.Egress.Synthetic("ads.blocked.test"); ok {
		t.Error("a name the file blocks (0.0.0.0) went to the stub")
	}
	if _, ok := c.Egress.Synthetic("lo.hosts.test"); ok {
		t.Error("a loopback line's name went to the stub (the sandbox's hosts file answers it)")
	}
	c = compile("/usr")
	for _, n := range []string{"alias", "probe.hosts.test"} {
		if _, ok := c.Egress.Synthetic(n); ok {
			t.Errorf("%s answered for a profile that does not read the hosts file", n)
		}
	}
}
