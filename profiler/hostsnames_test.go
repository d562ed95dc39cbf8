package profiler

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/sysprof/sysprof/trace"
)

// A connection to an address no DNS answer named, by a binary that read the hosts file, is
// named by the file's names for the address (every alias: the tool looked up one of them);
// a binary that did not read the file, or a loopback address, keeps the address.
func TestHostsFileNamesConnections(t *testing.T) {
	c := newCollector(0, time.Now())
	c.hostsPath = filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(c.hostsPath, []byte("127.0.0.1 localhost\n10.0.0.5 registry.internal registry\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c.addFile(c.hostsPath, accessIDs[trace.AccessRead], 0, false, "/usr/bin/curl")
	for _, k := range []netKey{
		{exe: "/usr/bin/curl", op: trace.OpConnect, family: "inet", proto: "tcp", addr: "10.0.0.5", port: 5000, ok: true},
		{exe: "/usr/bin/curl", op: trace.OpConnect, family: "inet", proto: "tcp", addr: "127.0.0.1", port: 8080, ok: true},
		{exe: "/usr/bin/wget", op: trace.OpConnect, family: "inet", proto: "tcp", addr: "10.0.0.5", port: 5000, ok: true},
	} {
		c.nets[k] = &trace.NetworkAccess{Exe: k.exe, Op: k.op, Family: k.family, Proto: k.proto, Addr: k.addr, Port: k.port, OK: k.ok}
	}
	var tr trace.Trace
	c.fill(&tr)
	var got []string
	for _, n := range tr.Network {
		got = append(got, n.Exe+" "+n.Addr+" "+n.Host)
	}
	want := []string{"/usr/bin/curl 10.0.0.5 registry", "/usr/bin/curl 10.0.0.5 registry.internal", "/usr/bin/curl 127.0.0.1 ", "/usr/bin/wget 10.0.0.5 "}
	if !slices.Equal(got, want) {
		t.Errorf("network:\n%q\nwant\n%q", got, want)
	}
}
