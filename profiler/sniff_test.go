package profiler_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/profiler"
	"github.com/sysprof/sysprof/trace"
)

// Learn takes the name a connection's first bytes name (TLS SNI, HTTP Host) for each binary,
// also when the address did not come from a DNS answer seen in the run (curl --resolve sends
// no query).
func TestLearnNamesConnectionsBySNIAndHost(t *testing.T) {
	testutil.RequireRoot(t)
	curl := testutil.RequireTool(t, "curl")
	curl, _ = filepath.EvalSymlinks(curl)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") })
	plain, tls := httptest.NewServer(h), httptest.NewTLSServer(h)
	defer plain.Close()
	defer tls.Close()
	port := func(s *httptest.Server) string { return s.URL[strings.LastIndexByte(s.URL, ':')+1:] }
	P, T := port(plain), port(tls)
	script := fmt.Sprintf(`curl -sS --resolve plain.test:%[1]s:127.0.0.1 http://plain.test:%[1]s/ && `+
		`curl -sSk --resolve tls.test:%[2]s:127.0.0.1 https://tls.test:%[2]s/ && `+
		`curl -sSk --resolve other.test:%[2]s:127.0.0.1 https://other.test:%[2]s/ && curl -sS http://127.0.0.1:%[1]s/`, P, T)
	tr := learn(t, withTimeout(t, 2*time.Minute), profiler.Options{Command: []string{"sh", "-c", script}})
	got := map[string][]string{}
	for _, n := range tr.Network {
		if n.Exe == curl && n.Op == trace.OpConnect && n.Addr == "127.0.0.1" {
			k := n.Addr + ":" + itoa(n.Port)
			got[k] = append(got[k], n.Host)
		}
	}
	// One record per name on the TLS port (two names, one address); the plain port was
	// reached by name once and by address once (no name: the record keeps the name seen).
	if w := []string{"plain.test"}; fmt.Sprint(got["127.0.0.1:"+P]) != fmt.Sprint(w) {
		t.Errorf("127.0.0.1:%s: names %q, want %q (all: %v)", P, got["127.0.0.1:"+P], w, tr.Network)
	}
	if w := []string{"other.test", "tls.test"}; fmt.Sprint(got["127.0.0.1:"+T]) != fmt.Sprint(w) {
		t.Errorf("127.0.0.1:%s: names %q, want %q (all: %v)", T, got["127.0.0.1:"+T], w, tr.Network)
	}
}
