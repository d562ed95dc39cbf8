package netproxy

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
)

// A keep-alive connection under per-binary rules is checked for each request, not once: a
// connection the rule's binary opened and then handed to another process (SCM_RIGHTS, a fork,
// pidfd_getfd) carries no request of that process, whether the request goes straight to the
// connection's name or through a forward proxy (issue 23: the forward proxy checked once).
func TestKeepAliveCheckedEachRequest(t *testing.T) {
	fp := newForwardProxy(t)
	web := newUpstream(t, false)
	PP, WP := fp.port(), web.port()
	tool := who{Pid: 7, Exe: "/usr/bin/tool", id: fileID{1, 1}}
	other := who{Pid: 8, Exe: "/tmp/payload", id: fileID{9, 9}}
	files := map[string]fileID{"/usr/bin/tool": {1, 1}}
	rules := []Rule{
		{Host: "proxy.test", Port: PP, By: "/usr/bin/tool", Endpoint: fmt.Sprintf("proxy.test:%d", PP)},
		{Host: "web.test", Port: WP, By: "/usr/bin/tool", Endpoint: fmt.Sprintf("web.test:%d", WP)},
	}
	get := func(url, host string) string { return fmt.Sprintf("GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", url, host) }
	last := func(url, host string) string { // the upstream closes after it
		return fmt.Sprintf("GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", url, host)
	}
	web1 := fmt.Sprintf("web.test:%d", WP)
	for _, c := range []struct {
		name, to, raw string
		// handed: the lookups of the holders that still find the tool (at accept, after the
		// first bytes, one per request checked); the socket is another process's after them.
		handed  int64
		want    string // the last request's answer, read back
		refused string // in the denial
	}{
		{"straight, one holder throughout", "web.test", get("/a", "web.test") + last("/b", "web.test"), 99, "upstream web.test", ""},
		{"straight, handed on after the first request", "web.test", get("/a", "web.test") + last("/b", "web.test"), 2, "", "connect web.test:" + fmt.Sprint(WP) + " tcp (by /tmp/payload: the rule names /usr/bin/tool"},
		{"through the forward proxy, one holder throughout", "proxy.test", get("http://"+web1+"/a", web1) + last("http://"+web1+"/b", web1), 99, "proxied http://" + web1 + "/b", ""},
		{"through the forward proxy, handed on after the first request", "proxy.test", get("http://"+web1+"/a", web1) + last("http://"+web1+"/b", web1), 3, "", "connect " + web1 + " tcp (through the proxy proxy.test:" + fmt.Sprint(PP) + ": by /tmp/payload"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var lookups atomic.Int64
			p, _ := startProxy(t, rules, Options{Resolve: map[string][]netip.Addr{"proxy.test": lo, "web.test": lo}}, func(p *Proxy) {
				p.fileAt = func(path string) (fileID, bool) { f, ok := files[path]; return f, ok }
				p.ownerOf = func(string, netip.AddrPort, netip.AddrPort) []who {
					if lookups.Add(1) <= c.handed {
						return []who{tool}
					}
					return []who{other}
				}
			})
			a, _ := p.plan.Synthetic(c.to)
			port := WP
			if c.to == "proxy.test" {
				port = PP
			}
			before := len(web.saw()) + len(fp.saw())
			out := exchange(t, netip.AddrPortFrom(a, port).String(), c.raw)
			ds := denials(p)
			asked := len(web.saw()) + len(fp.saw()) - before
			if c.want != "" && !strings.Contains(out, c.want) || c.refused == "" && asked != 2 || c.refused != "" && asked != 1 {
				t.Errorf("read back %q (%d request(s) went up), want %q", out, asked, c.want)
			}
			if c.refused == "" && len(ds) > 0 || c.refused != "" && !hasDenial(ds, c.refused) {
				t.Errorf("denials %q, want one with %q", ds, c.refused)
			}
		})
	}
}

// With the supervisor seeing connects, a per-binary rule also needs the process that made the
// connect, as it was then, to pass: one that connected, wrote and exec'd the rule's binary
// before either lookup of the holders is refused, and so is a connect the supervisor never saw
// (io_uring, TCP Fast Open).
func TestPerBinaryConnector(t *testing.T) {
	files := map[string]fileID{"/usr/bin/tool": {1, 1}}
	payload := who{Pid: 7, Exe: "/usr/bin/bash", id: fileID{9, 9}}
	tool := who{Pid: 7, Exe: "/usr/bin/tool", id: fileID{1, 1}}
	rules := []Rule{{Host: "allowed.test", Port: 80, By: "/usr/bin/tool", Endpoint: "allowed.test:80"}}
	plan, err := NewPlan(rules)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		connector *who
		ok        bool
		denial    string
	}{
		{"the tool connected", &tool, true, ""},
		{"bash connected, wrote and exec'd the tool", &payload, false, "connect allowed.test:80 tcp (by /usr/bin/bash: the rule names /usr/bin/tool;"},
		{"a connect the supervisor did not see", nil, false, "connect allowed.test:80 tcp (its connect was not seen by sysprof's supervisor"},
	} {
		p := New(plan, Options{ConnectsSeen: true})
		p.fileAt = func(path string) (fileID, bool) { f, ok := files[path]; return f, ok }
		p.ownerOf = func(string, netip.AddrPort, netip.AddrPort) []who { return []who{tool} } // the tool by then
		p.connectorOf = func(netip.AddrPort, netip.AddrPort) (who, bool) {
			if c.connector == nil {
				return who{}, false
			}
			return *c.connector, true
		}
		pc := &proxyConn{p: p, isName: true, name: "allowed.test", port: 80, target: "allowed.test:80", targetHost: "allowed.test",
			holders: func() []who { return []who{tool} }}
		_, ok := pc.checkBinaries(rules)
		ds := denials(p)
		if ok != c.ok || !ok && !hasDenial(ds, c.denial) || ok && len(ds) > 0 {
			t.Errorf("%s: passed %v, denials %q", c.name, ok, ds)
		}
	}
}

// The process that made a connect (the connector) passes as a transport helper of the rule's
// binary only when the kernel said its parents' files ran it (who.order): a helper forked
// before its parent exec'd the binary has the binary's ancestry but not its order, and where
// the order is not known (an ordinary user's run) no helper passes as the connector.
func TestMayUseConnectorOrder(t *testing.T) {
	files := map[string]fileID{"/usr/bin/git": {1, 10}, "/usr/lib/git-core/git": {1, 16}, "/usr/lib/git-core/git-remote-https": {1, 11}}
	at := func(p string) (fileID, bool) { f, ok := files[p]; return f, ok }
	helper := func(order []bool, parents ...string) who {
		w := who{Pid: 11, Exe: "/usr/lib/git-core/git-remote-https", id: files["/usr/lib/git-core/git-remote-https"], connector: true, order: order}
		for i, p := range parents {
			w.Parents, w.ppids, w.pids = append(w.Parents, p), append(w.ppids, 20+i), append(w.pids, files[p])
		}
		return w
	}
	for _, c := range []struct {
		name string
		w    who
		ok   bool
	}{
		{"run by git", helper([]bool{true}, "/usr/bin/git"), true},
		{"run through git's exec path", helper([]bool{true, true}, "/usr/lib/git-core/git", "/usr/bin/git"), true},
		{"forked before its parent exec'd git", helper([]bool{false}, "/usr/bin/git"), false},
		{"its exec path's git forked before its parent exec'd git", helper([]bool{true, false}, "/usr/lib/git-core/git", "/usr/bin/git"), false},
		{"order not known (an ordinary user's run)", helper(nil, "/usr/bin/git"), false},
		{"git itself, order not known", who{Pid: 10, Exe: "/usr/bin/git", id: files["/usr/bin/git"], connector: true}, true},
	} {
		if _, ok := mayUse([]who{c.w}, "/usr/bin/git", at); ok != c.ok {
			t.Errorf("%s: passed %v, want %v", c.name, ok, c.ok)
		}
		// A holder (not the connector) is checked by its ancestry alone, as before.
		h := c.w
		h.connector = false
		if _, ok := mayUse([]who{h}, "/usr/bin/git", at); !ok {
			t.Errorf("%s: refused as a holder", c.name)
		}
	}
	if why := byRefusal(helper(nil, "/usr/bin/git"), []Rule{{By: "/usr/bin/git"}}); !strings.Contains(why, "only where the order of execs is seen") {
		t.Errorf("the refusal of a helper without order does not say why: %s", why)
	}
}

// orderOf takes the kernel's word for a level only when its processes are the ones the
// supervisor described at the connect (a parent gone and its pid reused is not).
func TestOrderOf(t *testing.T) {
	w := who{Pid: 12, tgid: 11, ppids: []int{20, 21}}
	for _, c := range []struct {
		name  string
		tgids []uint32
		ran   []bool
		want  []bool
	}{
		{"both ran", []uint32{11, 20, 21}, []bool{true, true, false}, []bool{true, true}},
		{"the parent exec'd since the fork", []uint32{11, 20, 21}, []bool{false, true, false}, []bool{false, true}},
		{"another process at the connect", []uint32{13, 20, 21}, []bool{true, true, false}, []bool{false, true}},
		{"another parent at the connect", []uint32{11, 30, 21}, []bool{true, true, false}, []bool{false, false}},
		{"fewer levels recorded", []uint32{11, 20}, []bool{true}, []bool{true, false}},
	} {
		if got := orderOf(w, c.tgids, c.ran); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
