package enforcer

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/report"
)

func init() {
	nobodyHelpers["resolveonly"] = func(_, work string) error { return resolveOnlyCheck(work) }
}

// A name only looked up in the learn run (network.resolve) resolves under enforce (the stub
// answers it) but no connection to it passes; a name in no rule stays NXDOMAIN. Root and
// ordinary user.
func TestResolveOnlyNames(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireTool(t, "curl")
	testutil.RequireTool(t, "getent")
	asRootAndNobody(t, "resolveonly", resolveOnlyCheck)
}

func resolveOnlyCheck(work string) error {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintf(w, "upstream %s", r.Host) }))
	defer srv.Close()
	port := netip.MustParseAddrPort(srv.Listener.Addr().String()).Port()
	p := toolProfile("resolve-only")
	p.Network.Connect = []policy.Endpoint{{Endpoint: fmt.Sprintf("allowed.test:%d", port), Proto: "tcp"}}
	p.Network.Resolve = []policy.Endpoint{{Endpoint: "probe.test"}}
	script := fmt.Sprintf(`printf 'probe:'; getent hosts probe.test >/dev/null; echo " rc=$?"
printf 'other:'; getent hosts other.test >/dev/null; echo " rc=$?"
printf 'connect-probe:'; curl -sS -m 10 http://probe.test:%d/ 2>/dev/null; echo " rc=$?"
printf 'allowed:'; curl -sS -m 10 http://allowed.test:%d/ 2>/dev/null; echo " rc=$?"
`, port, port)
	lo := []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	var out strings.Builder
	rep, _, err := Run(context.Background(), Options{Profile: p, Audit: true, Dir: work,
		Command: []string{"sh", "-c", script},
		Resolve: map[string][]netip.Addr{"allowed.test": lo, "probe.test": lo, "other.test": lo},
		Stdout:  &out, Stderr: io.Discard})
	if err != nil {
		return fmt.Errorf("run: %v\n%s", err, out.String())
	}
	lines := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		k, v, _ := strings.Cut(l, ":")
		lines[k] = strings.TrimSpace(v)
	}
	var errs []string
	for k, want := range map[string]string{"probe": "rc=0", "other": "rc=2", "allowed": fmt.Sprintf("upstream allowed.test:%d rc=0", port)} {
		if lines[k] != want {
			errs = append(errs, fmt.Sprintf("%s: %q, want %q", k, lines[k], want))
		}
	}
	if v := lines["connect-probe"]; strings.Contains(v, "upstream") || strings.HasSuffix(v, "rc=0") {
		errs = append(errs, fmt.Sprintf("a connection to the resolve-only name passed: %q", v))
	}
	denied := false
	for _, d := range rep.Denials {
		denied = denied || d.Kind == report.KindNetwork && strings.Contains(d.What, fmt.Sprintf("connect probe.test:%d", port))
	}
	if !denied {
		errs = append(errs, "no denial for the connection to probe.test")
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s\noutput:\n%s", strings.Join(errs, "\n"), out.String())
	}
	return nil
}
