package enforcer

import (
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"slices"
	"strings"

	"github.com/sysprof/sysprof/internal/hostsfile"
	"github.com/sysprof/sysprof/netproxy"
	"github.com/sysprof/sysprof/paths"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/sandbox"
)

// compileEgress turns a network allowlist into the run's egress (package netproxy): the
// command gets its own network namespace with only loopback, the same for root and ordinary
// users, and its TCP connects leave through sysprof's DNS stub and name-checking proxy.
//
//   - connect tcp/mptcp, host:port or CIDR:port: a proxy rule (MPTCP goes as TCP: the proxy
//     speaks TCP upstream). A rule's "by" binary (its provenance) limits it to that very file
//     and the transport helpers it runs (netproxy helpers.go); "by: any" opts out.
//   - udp to port 53 (a learned resolver): the stub answers instead, nothing leaves.
//   - any other UDP (connect or send) to an exact address:port: relayed to exactly that
//     destination (netproxy udp.go; for every binary: datagrams are not checked per binary);
//     to a name:port (a statsd named in /etc/hosts): relayed from the name's synthetic
//     address to the name resolved on the host; to a range: the rule is dropped (stays
//     refused) and said (Compiled.Refused), and the rest runs.
//   - resolve (names looked up, never connected to): the stub answers them; a connection to
//     one is refused (it takes a connect rule).
//   - bind: works inside the sandbox's namespace (Landlock holds the ports); a loopback TCP
//     listener with a fixed port is published to the host (publish.go).
func compileEgress(c *Compiled, plan *sandbox.Plan, n policy.Network, env Env) error {
	var rules []netproxy.Rule
	var udp []netip.AddrPort
	var udpNames []netproxy.UDPName
	for _, set := range []struct {
		name string
		eps  []policy.Endpoint
	}{{"connect", n.Connect}, {"send", n.Send}} {
		for _, e := range set.eps {
			if strings.HasPrefix(e.Endpoint, "unix:") {
				continue
			}
			a, err := policy.ParseEndpoint(e.Endpoint)
			if err != nil {
				return fmt.Errorf("network.%s: %w", set.name, err)
			}
			proto := strings.ToLower(e.Proto)
			switch {
			case proto == "udp" && a.Port == 53:
				c.Notes = append(c.Notes, fmt.Sprintf("network.%s: %s udp: names resolve through sysprof's DNS stub instead (only names the profile allows)", set.name, e.Endpoint))
				continue
			case proto == "udp":
				if dst, ok := udpRelay(a); ok {
					udp = append(udp, dst)
					continue
				}
				if a.Host != "" && a.Host != "localhost" && a.Port != 0 {
					udpNames = append(udpNames, netproxy.UDPName{Name: a.Host, Port: uint16(a.Port)})
					continue
				}
				// The rest of the profile still runs: the tool gets no answer (ICMP port
				// unreachable), as when the destination is down, and most fall back.
				c.Refused = append(c.Refused, fmt.Sprintf("network.%s: %s udp: refused (UDP is relayed only to an exact address:port or name:port, not a range)", set.name, e.Endpoint))
				continue
			case set.name == "send":
				continue // tcp send rules mean nothing beyond connect
			}
			// by names a binary when it is a path; other provenance ("from sysprof.yaml")
			// restricts nothing.
			by := e.By
			if !strings.HasPrefix(by, "/") && !strings.HasPrefix(by, "$") {
				by = ""
			}
			if by != "" {
				if by, err = expand(by, env); err != nil {
					return fmt.Errorf("network.connect: %s: by %s: %w", e.Endpoint, e.By, err)
				}
			}
			if a.Host == "localhost" { // resolved by the command itself (/etc/hosts): the loopback addresses
				for _, lo := range []string{"127.0.0.1/32", "::1/128"} {
					rules = append(rules, netproxy.Rule{Prefix: netip.MustParsePrefix(lo), Port: uint16(a.Port), By: by, Endpoint: e.Endpoint})
				}
				continue
			}
			rules = append(rules, netproxy.Rule{Host: a.Host, Prefix: a.Prefix, Port: uint16(a.Port), By: by, Endpoint: e.Endpoint})
		}
	}
	if len(n.Bind) > 0 {
		c.Notes = append(c.Notes, "network.bind: listening works inside the sandbox's own network namespace; its loopback TCP listeners with a fixed port are published to the host at the same address and port")
	}
	c.Publish = publishedListeners(n)
	c.holdRuleBinaries(plan, rules, env)
	p, err := netproxy.NewPlan(rules)
	if err != nil {
		return err
	}
	slices.SortFunc(udp, func(a, b netip.AddrPort) int { return a.Compare(b) })
	p.Inside.UDP = slices.Compact(udp)
	// Names only looked up when learned: the stub answers them; no rule connects to them.
	var names []string
	for _, e := range n.Resolve {
		names = append(names, e.Endpoint)
	}
	if c.profile != nil && readsHostsFile(c.profile.Filesystem.Read) {
		hosts, has6, no4, err := hostsFileNames(hostsFilePath)
		if err != nil {
			return err
		}
		p.HostsFamilies(has6, no4)
		p.HostsNames(hosts)
		switch {
		case len(hosts) > maxHostsFileNames:
			c.Notes = append(c.Notes, fmt.Sprintf("network: %s has %d names: too many to answer through the DNS stub; only the profile's names resolve", hostsFilePath, len(hosts)))
		case len(hosts) > 0:
			names = append(names, hosts...)
			c.Notes = append(c.Notes, fmt.Sprintf("network: %d name(s) of %s resolve through the DNS stub (the profile reads the file; the sandbox's copy keeps only its loopback lines): a connection to one still takes a connect rule", len(hosts), hostsFilePath))
		}
	}
	for _, u := range udpNames {
		names = append(names, u.Name)
	}
	if err := p.AddResolveOnly(names); err != nil {
		return err
	}
	p.RelayUDPNames(udpNames)
	p.HostHas6 = netproxy.HostResolves6
	c.Egress = p
	plan.NetNS = true
	c.Layers = append(c.Layers, LayerNetNS)
	return nil
}

// udpRelay is the destination relayed for a UDP rule: an exact address (not a name, a range,
// multicast or the unspecified address) and a port.
func udpRelay(a policy.EndpointAddr) (netip.AddrPort, bool) {
	if a.Host != "" || !a.Prefix.IsValid() || !a.Prefix.IsSingleIP() || a.Port == 0 {
		return netip.AddrPort{}, false
	}
	ip := a.Prefix.Addr().Unmap()
	if ip.IsMulticast() || ip.IsUnspecified() {
		return netip.AddrPort{}, false
	}
	return netip.AddrPortFrom(ip, uint16(a.Port)), true
}

// maxHostsFileNames bounds the hosts file's names the stub answers (each takes a synthetic
// address of the 65000).
const maxHostsFileNames = 10000

// hostsFilePath is the host's hosts file (a variable for tests).
var hostsFilePath = hostsfile.Path

// readsHostsFile reports whether a read rule covers the hosts file.
func readsHostsFile(read []policy.PathRule) bool {
	return slices.ContainsFunc(read, func(r policy.PathRule) bool { return paths.Covers(r.Path, hostsfile.Path) })
}

// hostsFileNames are the names path gives to addresses other than loopback. A tool resolved
// them from the file on the host, without DNS, so the learn saw no lookup to keep (a
// resolve-only name of the file is in no profile); in the sandbox they resolve as the host's
// would, through the stub: a name with no connect rule gets a synthetic address no rule lets
// through, and the connection is refused and on the record. has6 and no4 say which families the
// file gives each name (hostsfile.Families: the stub answers in those). A missing file gives none.
func hostsFileNames(path string) (names, has6, no4 []string, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil, nil
	}
	if err != nil {
		return nil, nil, nil, fmt.Errorf("egress: read %s (its names resolve through the DNS stub): %w", path, err)
	}
	var out []string
	for addr, names := range hostsfile.Names(string(b)) {
		if !addr.IsUnspecified() { // 0.0.0.0 and :: block a name (ad-block lists): nothing to reach
			out = append(out, names...)
		}
	}
	slices.Sort(out)
	has6, no4 = hostsfile.Families(string(b))
	return slices.Compact(out), has6, no4, nil
}

// connectsByBinary reports whether p has a network rule or credential learned by a binary: its
// connects then go to the supervisor (seccomp.WhyConnect), which tells the proxy which program
// made each (netproxy Options.ConnectsSeen).
func connectsByBinary(p *policy.Profile) bool {
	byBinary := func(by string) bool { return by != "" && by != "any" }
	for _, e := range p.Network.Connect {
		if !strings.HasPrefix(e.Endpoint, "unix:") && byBinary(e.By) {
			return true
		}
	}
	return slices.ContainsFunc(p.Credentials, func(c policy.Credential) bool { return byBinary(c.By) })
}

// holdRuleBinaries keeps the run from rewriting a per-binary rule's binary in place: the rule
// passes for that file by identity (device and inode), which a write through the same inode
// keeps, so a command that may write there could make its own code the rule's. A binary in a
// writable path or a stage that no write rule of the profile names is bound read-only over
// itself (a write fails EROFS, a rename over it or its removal EBUSY: on the record). One the
// profile writes itself (a learned rebuild: a write rule names it) cannot be held without
// breaking that run: the run is told so, and so is `show` (binaryNotHeld).
func (c *Compiled) holdRuleBinaries(plan *sandbox.Plan, rules []netproxy.Rule, env Env) {
	writable := slices.Concat(plan.Writable, stageDirsOf(c.Stages))
	var held []string
	for _, r := range rules {
		by := r.By
		if by == "" || by == "any" || slices.Contains(held, by) || slices.Contains(plan.ReadOnly, by) || !paths.CoveredBy(by, writable) {
			continue
		}
		if st, err := os.Stat(by); err != nil || !st.Mode().IsRegular() {
			continue // made by the run: the proxy takes the first file there (netproxy fileOf)
		}
		if w := c.writeRuleNaming(by, env); w != "" {
			c.Notes = append(c.Notes, fmt.Sprintf("%s: by %s: the profile writes that file (%s), so it stays writable: a program the run writes there passes as %s", ruleWhere(r), by, w, by))
			continue
		}
		held = append(held, by)
		plan.ReadOnly = append(plan.ReadOnly, by)
		c.Notes = append(c.Notes, fmt.Sprintf("%s: by %s: bound read-only (it lies in a writable path; rewritten in place it would keep the identity the rule passes for)", ruleWhere(r), by))
	}
}

// ruleWhere names a rule in a note: a network rule by its endpoint, a credential by its name.
func ruleWhere(r netproxy.Rule) string {
	if strings.HasPrefix(r.Endpoint, "credentials ") {
		return r.Endpoint
	}
	return "network.connect: " + r.Endpoint
}

// writeRuleNaming is the profile's write rule that names path itself (exactly or by a glob,
// not a directory it lies in), or "".
func (c *Compiled) writeRuleNaming(path string, env Env) string {
	if c.profile == nil {
		return ""
	}
	for _, w := range c.profile.Filesystem.Write {
		x, err := expand(w.Path, env)
		if err != nil {
			continue
		}
		if paths.Covers(x, path) && !(paths.Within(path, x) && path != x) {
			return w.Path
		}
	}
	return ""
}

// RuleBinaryWrites says, for `sysprof show`, what enforce does about a per-binary rule's
// binary by that the profile's writes reach (holdRuleBinaries): "" when none does.
func RuleBinaryWrites(p *policy.Profile, by string) string {
	reached := false
	for _, w := range policy.WithoutPending(p).Filesystem.Write {
		if !paths.Covers(w.Path, by) {
			continue
		}
		if !(paths.Within(by, w.Path) && by != w.Path) {
			return "the profile writes that file: a program the run writes there passes as it"
		}
		reached = true
	}
	if reached {
		return "in a writable path: bound read-only under enforce"
	}
	return ""
}
