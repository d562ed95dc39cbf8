package policy

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/elastic/go-seccomp-bpf/arch"

	"github.com/sysprof/sysprof/paths"
)

// ChangeKind says how an item changed between two profiles.
type ChangeKind string

const (
	Added    ChangeKind = "added"    // the item is new (a widening, except for hidden paths)
	Removed  ChangeKind = "removed"  // the item is gone (a narrowing, except for hidden paths)
	Widened  ChangeKind = "widened"  // an existing item allows more (new argument value, changed binary)
	Narrowed ChangeKind = "narrowed" // an existing item allows less
)

// Sections of a profile, as Change.Section names them. They are the YAML field paths.
const (
	SectionSyscalls      = "syscalls.allow"
	SectionArgs          = "syscalls.args"
	SectionArchitectures = "syscalls.architectures"
	SectionRead          = "filesystem.read"
	SectionWrite         = "filesystem.write"
	SectionExec          = "filesystem.exec"
	SectionList          = "filesystem.list"
	SectionHidden        = "filesystem.hidden"
	SectionPrivateTmp    = "filesystem.privateTmp"
	SectionConnect       = "network.connect"
	SectionSend          = "network.send"
	SectionBind          = "network.bind"
	SectionResolve       = "network.resolve"
	SectionBinaries      = "binaries"
	SectionEnvPass       = "env.pass"
	SectionIncomplete    = "metadata.incomplete"
	SectionHostRoot      = "hostRoot"
)

// Sections lists every section in file order.
var Sections = []string{SectionSyscalls, SectionArgs, SectionArchitectures, SectionRead, SectionWrite, SectionExec, SectionList, SectionHidden, SectionPrivateTmp, SectionConnect, SectionSend, SectionBind, SectionResolve, SectionEnvPass, SectionCredentials, SectionBinaries, SectionLimitPids, SectionLimitMemory, SectionLimitTmp, SectionLimitWrite, SectionLimitFiles, SectionIncomplete, SectionHostRoot}

// Change is one semantic difference between two profiles.
type Change struct {
	Kind    ChangeKind `json:"kind"`
	Section string     `json:"section"`
	// Item is what changed, written as it appears in the profile: a syscall name, a path,
	// "tcp host:443", "socket arg 0 (domain): AF_NETLINK".
	Item string `json:"item"`
	// Risk of a widening change; RiskNone for narrowing and bookkeeping changes.
	Risk   Risk   `json:"risk"`
	Reason string `json:"reason"`
	// Widens is true when the new profile allows something the old one did not.
	Widens bool `json:"widens"`
	// By is the binary that first needed the new allowance, when the profile says.
	By string `json:"by,omitempty"`
}

func (c Change) String() string {
	sign := "-"
	if c.Widens {
		sign = "+"
	}
	return fmt.Sprintf("%s %s %s %s: %s (%s)", sign, c.Risk, c.Section, c.Kind, c.Item, c.Reason)
}

// Widens reports whether any change widens the policy at or above atLeast. Widens(c, RiskLow)
// is "anything new is allowed"; narrowing never counts.
func Widens(changes []Change, atLeast Risk) bool {
	for _, c := range changes {
		if c.Widens && c.Risk >= atLeast && c.Risk > RiskNone {
			return true
		}
	}
	return false
}

// Diff compares two profiles semantically: what new allows that old did not (each rated with
// a risk and a reason) and what it no longer allows. A path rule already covered by a broader
// rule of the same section on the other side is not a change. Provenance and metadata other
// than incomplete are ignored. The result is sorted: widening first, by risk (critical
// first), then by section and item. Neither profile is modified.
func Diff(old, new *Profile) []Change {
	o, n := Clone(old), Clone(new)
	if o == nil {
		o = &Profile{}
	}
	if n == nil {
		n = &Profile{}
	}
	Normalize(o)
	Normalize(n)
	d := &differ{old: o, new: n}
	d.syscalls()
	d.args()
	d.architectures()
	d.paths()
	d.network()
	d.env()
	d.credentials()
	d.binaries()
	d.limits()
	d.incomplete()
	if !o.HostRoot && n.HostRoot {
		d.add(Change{Kind: Widened, Section: SectionHostRoot, Item: "hostRoot: true", Widens: true, Risk: RiskCritical,
			Reason: "the command runs as real host root (no user namespace) when sysprof is root"})
	}
	if o.HostRoot && !n.HostRoot {
		d.narrow(Narrowed, SectionHostRoot, "hostRoot: false", "real host root turned off")
	}
	SortChanges(d.out)
	return d.out
}

// SortChanges puts changes in report order: widening first, by risk (critical first), then by
// section in file order, item and kind. Diff returns its changes in this order already.
func SortChanges(cs []Change) {
	section := func(s string) int { return slices.Index(Sections, s) }
	slices.SortStableFunc(cs, func(a, b Change) int {
		if a.Widens != b.Widens {
			if a.Widens {
				return -1
			}
			return 1
		}
		return cmp.Or(
			cmp.Compare(b.Risk, a.Risk),
			cmp.Compare(section(a.Section), section(b.Section)),
			strings.Compare(a.Item, b.Item),
			strings.Compare(string(a.Kind), string(b.Kind)),
		)
	})
}

type differ struct {
	old, new *Profile
	out      []Change
}

func (d *differ) add(c Change) { d.out = append(d.out, c) }

func (d *differ) narrow(kind ChangeKind, section, item, reason string) {
	d.add(Change{Kind: kind, Section: section, Item: item, Risk: RiskNone, Reason: reason})
}

func (d *differ) syscalls() {
	oldSet, newSet := allowSet(d.old), allowSet(d.new)
	// What old allows on either 64-bit architecture is no widening: the same tool learned on
	// the other one calls openat for open, clone for fork (AcrossArchs, as enforce compiles it).
	for _, target := range nativeArchs {
		for n := range acrossArchNames(d.old, target) {
			oldSet[n] = true
		}
		for n := range acrossArchNames(d.new, target) {
			newSet[n] = true
		}
	}
	for _, s := range d.new.Syscalls.Allow {
		if oldSet[s.Name] {
			continue
		}
		c := Change{Kind: Added, Section: SectionSyscalls, Item: s.Name, Widens: true, By: s.By}
		c.Risk, c.Reason = GrantRisk(d.old, Grant{Section: SectionSyscalls, Item: s.Name})
		d.add(c)
	}
	for _, s := range d.old.Syscalls.Allow {
		if !newSet[s.Name] {
			d.narrow(Removed, SectionSyscalls, s.Name, "syscall no longer allowed")
		}
	}
}

// acrossArchNames are the names p's syscalls bring on target (AcrossArchs).
func acrossArchNames(p *Profile, target *arch.Info) map[string][]string {
	added, _ := AcrossArchs(p, target, allowSet(p), p.Syscalls.Args)
	return added
}

// argDomain is what one argument may be: anything, or values (after mask) and flag bits.
type argDomain struct {
	none   bool // the syscall is not allowed at all
	any    bool // no restriction
	mask   uint64
	values map[uint64]string // nil: values not restricted
	flags  map[uint64]string // single bits, nil: bits not restricted
	deny   map[uint64]string // values refused whatever else passes
}

// admits reports whether v passes the domain's values and flags (its deny list aside): a deny
// list dropped for a list of values that leaves v out still refuses v.
func (dom argDomain) admits(v uint64) bool {
	if dom.none {
		return false
	}
	if dom.any {
		return true
	}
	if dom.values != nil {
		if _, ok := dom.values[v&dom.mask]; !ok {
			return false
		}
	}
	for bit := uint64(1); dom.flags != nil && bit != 0; bit <<= 1 {
		if _, ok := dom.flags[bit]; v&bit != 0 && !ok {
			return false
		}
	}
	return true
}

func domainOf(p *Profile, allowed map[string]bool, rules map[argKey]*ArgRule, k argKey) argDomain {
	if !allowed[k.syscall] {
		return argDomain{none: true}
	}
	r := rules[k]
	if bit, lets, ok := execBit(k.syscall, k.arg); ok && r == nil {
		// Hardened: without a rule, PROT_EXEC (MFD_EXEC) is refused (execBit).
		return argDomain{mask: bit, values: map[uint64]string{0: lets.Values[0]}}
	}
	if r == nil && selfOnly(k.syscall, k.arg) {
		return argDomain{mask: ^uint64(0), values: map[uint64]string{0: "0"}} // pid 0 only (SelfOnlyArgs)
	}
	if r == nil || len(r.Values) == 0 && len(r.Flags) == 0 && len(r.Deny) == 0 {
		return argDomain{any: true}
	}
	dom := argDomain{mask: maskValue(r.Mask)}
	if len(r.Deny) > 0 {
		dom.deny = argValueSet(r.Deny)
	}
	if len(r.Values) > 0 {
		dom.values = argValueSet(r.Values)
	}
	if len(r.Flags) > 0 {
		dom.flags = map[uint64]string{}
		for v, s := range argValueSet(r.Flags) {
			for bit := uint64(1); bit != 0; bit <<= 1 {
				if v&bit != 0 {
					if _, ok := dom.flags[bit]; !ok {
						dom.flags[bit] = s
						if v != bit {
							dom.flags[bit] = hexValue(bit)
						}
					}
				}
			}
		}
	}
	return dom
}

func (d *differ) args() {
	oRules, nRules := foldArgs(d.old), foldArgs(d.new)
	oAllow, nAllow := allowSet(d.old), allowSet(d.new)
	keys := map[argKey]bool{}
	for k := range oRules {
		keys[k] = true
	}
	for k := range nRules {
		keys[k] = true
	}
	for k := range keys {
		od := domainOf(d.old, oAllow, oRules, k)
		nd := domainOf(d.new, nAllow, nRules, k)
		if nd.none {
			continue // the syscall itself was removed (or never allowed): reported there
		}
		var by string
		if r := nRules[k]; r != nil {
			by = r.By
		}
		item := argItem(k, nRules[k], oRules[k])
		kind := ArgKind(k.syscall, k.arg)
		name := func(v uint64, spelled string) string {
			if kind != "" {
				if s := Symbol(kind, v); !strings.HasPrefix(s, "0x") || spelled == "" {
					return s
				}
			}
			if spelled != "" {
				return spelled
			}
			return hexValue(v)
		}
		switch {
		case nd.any && od.any:
			continue
		case nd.any:
			r, why := ArgAnyRisk(k.syscall, k.arg)
			kd := Widened
			if od.none {
				kd = Added
			}
			d.add(Change{Kind: kd, Section: SectionArgs, Item: item + ": any value", Widens: true, Risk: r, Reason: why, By: by})
			continue
		case od.any && !od.none:
			d.narrow(Narrowed, SectionArgs, item+": "+domainString(nd, name), "argument now restricted")
			continue
		}
		if od.mask != nd.mask && !od.none && od.values != nil && nd.values != nil {
			if od.mask&^nd.mask != 0 {
				d.add(Change{Kind: Widened, Section: SectionArgs, Item: fmt.Sprintf("%s: mask %s → %s", item, hexValue(od.mask), hexValue(nd.mask)),
					Widens: true, Risk: RiskHigh, Reason: "fewer bits are compared: more values match", By: by})
			} else {
				d.narrow(Narrowed, SectionArgs, fmt.Sprintf("%s: mask %s → %s", item, hexValue(od.mask), hexValue(nd.mask)), "more bits are compared")
			}
		}
		kd := Widened
		if od.none {
			kd = Added
		}
		// Values.
		switch {
		case nd.values == nil && od.values != nil:
			r, why := ArgAnyButRisk(k.syscall, k.arg, sortedKeys(nd.deny))
			what := "any value"
			if len(nd.deny) > 0 {
				var but []string
				for _, v := range sortedKeys(nd.deny) {
					but = append(but, name(v, nd.deny[v]))
				}
				what += " but " + strings.Join(but, ", ")
			}
			d.add(Change{Kind: kd, Section: SectionArgs, Item: item + ": " + what, Widens: true, Risk: r, Reason: why, By: by})
		case nd.values != nil:
			for _, v := range sortedKeys(nd.values) {
				if _, ok := od.values[v]; ok && !od.none || od.values == nil && !od.none {
					continue
				}
				r, why := ArgValueRisk(k.syscall, k.arg, v)
				d.add(Change{Kind: kd, Section: SectionArgs, Item: item + ": " + name(v, nd.values[v]), Widens: true, Risk: r, Reason: why, By: by})
			}
			for _, v := range sortedKeys(od.values) {
				if _, ok := nd.values[v]; !ok {
					d.narrow(Narrowed, SectionArgs, item+": "+name(v, od.values[v]), "value no longer allowed")
				}
			}
		}
		// Flags.
		switch {
		case nd.flags == nil && od.flags != nil:
			r, why := ArgAnyRisk(k.syscall, k.arg)
			d.add(Change{Kind: kd, Section: SectionArgs, Item: item + ": any flags", Widens: true, Risk: r, Reason: why, By: by})
		case nd.flags != nil:
			for _, b := range sortedKeys(nd.flags) {
				if _, ok := od.flags[b]; ok && !od.none || od.flags == nil && !od.none {
					continue
				}
				r, why := ArgValueRisk(k.syscall, k.arg, b)
				d.add(Change{Kind: kd, Section: SectionArgs, Item: item + ": +" + name(b, nd.flags[b]), Widens: true, Risk: r, Reason: why, By: by})
			}
			for _, b := range sortedKeys(od.flags) {
				if _, ok := nd.flags[b]; !ok {
					d.narrow(Narrowed, SectionArgs, item+": -"+name(b, od.flags[b]), "flag no longer allowed")
				}
			}
		}
		// Deny: a value that was refused and now passes widens; a newly refused one narrows.
		if !od.none {
			for _, v := range sortedKeys(od.deny) {
				if _, ok := nd.deny[v]; !ok && nd.admits(v) {
					r, why := ArgValueRisk(k.syscall, k.arg, v)
					d.add(Change{Kind: Widened, Section: SectionArgs, Item: item + ": " + name(v, od.deny[v]) + " no longer denied", Widens: true, Risk: r, Reason: why, By: by})
				}
			}
		}
		for _, v := range sortedKeys(nd.deny) {
			if _, ok := od.deny[v]; !ok && !od.none {
				d.narrow(Narrowed, SectionArgs, item+": "+name(v, nd.deny[v])+" denied", "value now refused")
			}
		}
	}
}

func argItem(k argKey, rules ...*ArgRule) string {
	for _, r := range rules {
		if r != nil && r.Name != "" {
			return fmt.Sprintf("%s arg %d (%s)", k.syscall, k.arg, r.Name)
		}
	}
	return fmt.Sprintf("%s arg %d", k.syscall, k.arg)
}

func domainString(dom argDomain, name func(uint64, string) string) string {
	var parts []string
	for _, v := range sortedKeys(dom.values) {
		parts = append(parts, name(v, dom.values[v]))
	}
	for _, b := range sortedKeys(dom.flags) {
		parts = append(parts, "+"+name(b, dom.flags[b]))
	}
	return strings.Join(parts, ", ")
}

func sortedKeys(m map[uint64]string) []uint64 {
	ks := make([]uint64, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func (d *differ) architectures() {
	for _, a := range d.new.Syscalls.Architectures {
		if slices.Contains(d.old.Syscalls.Architectures, a) {
			continue
		}
		r, why := GrantRisk(d.old, Grant{Section: SectionArchitectures, Item: a})
		d.add(Change{Kind: Added, Section: SectionArchitectures, Item: a, Widens: true, Risk: r, Reason: why})
	}
	for _, a := range d.old.Syscalls.Architectures {
		if !slices.Contains(d.new.Syscalls.Architectures, a) {
			d.narrow(Removed, SectionArchitectures, a, "architecture no longer allowed")
		}
	}
}

func coveredBy(p string, rules []PathRule) bool {
	for _, r := range rules {
		if paths.Covers(r.Path, p) {
			return true
		}
	}
	return false
}

// inPrivateTmp reports a rule below $TMPDIR when both profiles give the command a private /tmp
// and let it write there: that tmpfs starts empty and is the command's own, so which of its temp
// files a run happened to touch changes nothing the enforcer does (any write rule in it grants
// the private tmp as a whole). Without a write rule there on one side the private tmp is not
// writable at all under that profile (Landlock has no rule for it), so the first temp file is a
// real change: refine proposes it, drift reports it.
func inPrivateTmp(p string, old, new Filesystem) bool {
	return strings.HasPrefix(p, "$TMPDIR/") && writesPrivateTmp(old) && writesPrivateTmp(new)
}

// writesPrivateTmp reports a private /tmp the profile lets the command write to.
func writesPrivateTmp(fs Filesystem) bool {
	return fs.PrivateTmp && slices.ContainsFunc(fs.Write, func(r PathRule) bool {
		return r.Path == "$TMPDIR" || strings.HasPrefix(r.Path, "$TMPDIR/")
	})
}

// impliedBy reports whether an old rule of a stronger kind already granted access to p: a
// writable path can be read and listed, a readable one listed, an executable one read (as the
// enforcer compiles them).
func impliedBy(access, p string, old Filesystem) bool {
	switch access {
	case "read":
		// enforce grants an exec rule's files read as well (the loader maps them; a runtime
		// opens its own executable, node does only in some runs): a read there is no widening.
		return coveredBy(p, old.Write) || coveredBy(p, old.Exec)
	case "list":
		return coveredBy(p, old.Write) || coveredBy(p, old.Read)
	}
	return false
}

func (d *differ) paths() {
	o, n := d.old.Filesystem, d.new.Filesystem
	for _, s := range []struct {
		section, access string
		old, new        []PathRule
	}{
		{SectionRead, "read", o.Read, n.Read},
		{SectionWrite, "write", o.Write, n.Write},
		{SectionExec, "exec", o.Exec, n.Exec},
		{SectionList, "list", o.List, n.List},
	} {
		oldAccepted := slices.DeleteFunc(slices.Clone(s.old), func(r PathRule) bool { return r.Pending })
		for _, r := range s.new {
			old := s.old
			if !r.Pending { // a pending rule does not cover one accepted since
				old = oldAccepted
			}
			if coveredBy(r.Path, old) || impliedBy(s.access, r.Path, o) || inPrivateTmp(r.Path, o, n) {
				continue
			}
			risk, why := pathRisk(s.access, r.Path, d.new)
			if s.access == "read" && coveredBy(r.Path, n.Hidden) {
				risk, why = RiskLow, "readable by rule but hidden: nothing is exposed"
			}
			switch {
			case r.Pending:
				why = "PENDING (enforce denies it until `sysprof refine` accepts it): " + why
			case coveredBy(r.Path, s.old):
				why = "accepted (was pending): " + why
			}
			d.add(Change{Kind: Added, Section: s.section, Item: r.Path, Widens: true, Risk: risk, Reason: why, By: r.By})
		}
		for _, r := range s.old {
			if !coveredBy(r.Path, s.new) && !inPrivateTmp(r.Path, o, n) {
				d.narrow(Removed, s.section, r.Path, "path no longer "+accessWord(s.access))
			}
		}
	}
	// Hidden paths subtract: removing one widens.
	for _, h := range o.Hidden {
		if coveredBy(h.Path, n.Hidden) {
			continue
		}
		c := Change{Kind: Removed, Section: SectionHidden, Item: h.Path, Widens: true}
		c.Risk, c.Reason = hiddenRemovalRisk(h.Path, n)
		d.add(c)
	}
	for _, h := range n.Hidden {
		if !coveredBy(h.Path, o.Hidden) {
			d.narrow(Added, SectionHidden, h.Path, "newly hidden")
		}
	}
	if o.PrivateTmp && !n.PrivateTmp {
		d.add(Change{Kind: Widened, Section: SectionPrivateTmp, Item: "privateTmp: false", Widens: true, Risk: RiskHigh,
			Reason: "private /tmp turned off: the host's /tmp, and other users' files in it, become visible"})
	}
	if !o.PrivateTmp && n.PrivateTmp {
		d.narrow(Narrowed, SectionPrivateTmp, "privateTmp: true", "private /tmp turned on")
	}
}

// credentialIn returns the credential store p is, lies in or contains, or "".
func credentialIn(p string) string {
	forms := []string{p}
	if h, ok := homeEquivalent(p); ok {
		forms = append(forms, h)
	}
	for _, c := range paths.CredentialStores() {
		for _, f := range forms {
			if paths.Covers(c, f) || paths.Covers(f, c) {
				return c
			}
		}
	}
	return ""
}

// EndpointItem is how a change to an endpoint names it (Change.Item): "tcp host:443".
func EndpointItem(e Endpoint) string {
	if e.Proto == "" {
		return e.Endpoint
	}
	return e.Proto + " " + e.Endpoint
}

// Ports that package registries and git remotes are reached on: https, http, ssh, git.
var registryPorts = []int{443, 80, 22, 9418}

// dangerousUnixSockets reach a daemon that hands out root or credentials.
var dangerousUnixSockets = []string{"/run/docker.sock", "/var/run/docker.sock", "/run/containerd/containerd.sock", "/run/podman/podman.sock", "/run/dbus/system_bus_socket", "/var/run/dbus/system_bus_socket", "/run/systemd/private", "/run/user/*/docker.sock", "/run/user/*/podman/podman.sock", "/run/user/*/gnupg", "/run/user/*/keyring", "$HOME/.gnupg", "$TMPDIR/ssh-*", "/tmp/ssh-*", "/run/user/*/ssh-agent*", "/run/user/*/gcr/ssh", "/run/user/*/openssh_agent"}

// quietUnixSockets are routine local services.
var quietUnixSockets = []string{"/run/nscd/socket", "/var/run/nscd/socket", "/dev/log", "/run/systemd/journal", "/run/systemd/resolve/io.systemd.Resolve", "/run/systemd/userdb"}

// EndpointRisk rates a new network endpoint in section (SectionConnect, SectionSend or
// SectionBind). networked says whether the old profile already reached the network. The rule:
//
//	connect/send
//	  unix socket of a container engine, D-Bus system bus, ssh or gpg agent  critical
//	  other unix socket                                                  low for routine services (nscd, journal), else high
//	  port 53 (DNS), any address                                         high
//	  named host, tcp/mptcp port 443, 80, 22 or 9418                     high (registry or git remote class)
//	  named host, any other port or udp                                  critical
//	  IP address or CIDR (loopback included)                             critical
//	bind
//	  unix socket under $WORKDIR or $TMPDIR                              low, elsewhere high
//	  loopback, port 0 (ephemeral)                                       low
//	  loopback, fixed port                                               high
//	  any other address                                                  critical
func EndpointRisk(section string, e Endpoint, networked bool) (Risk, string) {
	a, err := ParseEndpoint(e.Endpoint)
	if err != nil {
		return RiskCritical, "endpoint does not parse: " + err.Error()
	}
	if section == SectionBind {
		switch {
		case a.IsUnix() && (paths.Covers("$WORKDIR", a.Unix) || paths.Covers("$TMPDIR", a.Unix)):
			return RiskLow, "listens on a unix socket in the work tree or temp"
		case a.IsUnix():
			return RiskHigh, "listens on a unix socket outside the work tree"
		case a.IsLoopback() && a.Port == 0:
			return RiskLow, "listens on an ephemeral loopback port"
		case a.IsLoopback():
			return RiskHigh, fmt.Sprintf("listens on loopback port %d", a.Port)
		}
		return RiskCritical, "listens on a non-loopback address: reachable from the network"
	}
	if a.IsUnix() {
		for _, s := range dangerousUnixSockets {
			if paths.Covers(s, a.Unix) {
				return RiskCritical, "unix socket of a privileged daemon or credential agent"
			}
		}
		for _, s := range quietUnixSockets {
			if paths.Covers(s, a.Unix) {
				return RiskLow, "routine local service"
			}
		}
		return RiskHigh, "new local service over a unix socket"
	}
	if a.Port == 53 {
		return RiskHigh, "DNS: names resolve, and DNS can carry data out"
	}
	if a.Host != "" && a.Host != "localhost" {
		if (e.Proto == "tcp" || e.Proto == "mptcp") && slices.Contains(registryPorts, a.Port) {
			if networked {
				return RiskHigh, "new host on a registry or git port, for a tool that already used the network"
			}
			return RiskHigh, "first network destination: a named host on a registry or git port"
		}
		return RiskCritical, fmt.Sprintf("%s port %d is not a registry or git remote class (tcp 443, 80, 22, 9418)", e.Proto, a.Port)
	}
	if a.IsLoopback() {
		return RiskCritical, "raw loopback address: a local service, not a registry or git remote"
	}
	return RiskCritical, "raw IP address: not a registry or git remote by name"
}

// Networked reports whether n already reaches the network (an inet connect or send
// endpoint), as EndpointRisk's networked wants it.
func Networked(n Network) bool {
	for _, e := range append(slices.Clone(n.Connect), n.Send...) {
		if !strings.HasPrefix(e.Endpoint, "unix:") {
			return true
		}
	}
	return false
}

func (d *differ) network() {
	o, n := d.old.Network, d.new.Network
	key := func(e Endpoint) string { return e.Proto + " " + e.Endpoint }
	for _, s := range []struct {
		section  string
		old, new []Endpoint
	}{{SectionConnect, o.Connect, n.Connect}, {SectionSend, o.Send, n.Send}, {SectionBind, o.Bind, n.Bind}, {SectionResolve, o.Resolve, n.Resolve}} {
		oldKeys := map[string]bool{}
		for _, e := range s.old {
			oldKeys[key(e)] = true
		}
		newKeys := map[string]bool{}
		for _, e := range s.new {
			newKeys[key(e)] = true
			if oldKeys[key(e)] || s.section == SectionResolve && answered(o, e.Endpoint) {
				continue
			}
			r, why := GrantRisk(d.old, Grant{Section: s.section, Item: e.Endpoint, Proto: e.Proto})
			d.add(Change{Kind: Added, Section: s.section, Item: EndpointItem(e), Widens: true, Risk: r, Reason: why, By: e.By})
		}
		for _, e := range s.old {
			if !newKeys[key(e)] {
				d.narrow(Removed, s.section, EndpointItem(e), "endpoint no longer allowed")
			}
		}
	}
}

// answered reports whether the stub already answers name under n: a connect or send rule
// names it.
func answered(n Network, name string) bool {
	for _, e := range append(slices.Clone(n.Connect), n.Send...) {
		if a, err := ParseEndpoint(e.Endpoint); err == nil && strings.EqualFold(a.Host, name) {
			return true
		}
	}
	return false
}

// env rates passing a secret-looking variable high: the command then holds the credential.
func (d *differ) env() {
	for _, n := range d.new.Env.Pass {
		if !slices.Contains(d.old.Env.Pass, n) {
			d.add(Change{Kind: Added, Section: SectionEnvPass, Item: n, Widens: true, Risk: RiskHigh,
				Reason: "a secret-looking environment variable reaches the command"})
		}
	}
	for _, n := range d.old.Env.Pass {
		if !slices.Contains(d.new.Env.Pass, n) {
			d.narrow(Removed, SectionEnvPass, n, "no longer passed")
		}
	}
}

func (d *differ) binaries() {
	oldBy := map[string][]string{}
	for _, b := range d.old.Binaries {
		oldBy[b.Path] = append(oldBy[b.Path], b.SHA256)
	}
	newBy := map[string][]string{}
	for _, b := range d.new.Binaries {
		newBy[b.Path] = append(newBy[b.Path], b.SHA256)
	}
	for _, b := range d.new.Binaries {
		shas, ok := oldBy[b.Path]
		switch {
		case !ok:
			d.add(Change{Kind: Added, Section: SectionBinaries, Item: b.Path, Widens: true, Risk: RiskHigh, Reason: "new executed binary", By: b.By})
		case b.SHA256 == "" || slices.Contains(shas, ""):
			// Not pinned on one side (a binary the run builds itself): nothing to compare.
		case !slices.Contains(shas, b.SHA256):
			d.add(Change{Kind: Widened, Section: SectionBinaries, Item: b.Path + " sha256:" + shortSHA(b.SHA256), Widens: true, Risk: RiskHigh,
				Reason: "binary changed: sha256 was " + joinShort(shas), By: b.By})
		}
	}
	for _, b := range d.old.Binaries {
		if _, ok := newBy[b.Path]; !ok {
			d.narrow(Removed, SectionBinaries, b.Path, "binary no longer run")
		}
	}
}

func shortSHA(s string) string {
	if s == "" {
		return "none"
	}
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

func joinShort(shas []string) string {
	out := make([]string, len(shas))
	for i, s := range shas {
		out[i] = shortSHA(s)
	}
	return strings.Join(out, ", ")
}

func (d *differ) incomplete() {
	o, n := d.old.Metadata, d.new.Metadata
	switch {
	case !o.Incomplete && n.Incomplete:
		reason := "the new profile may miss behaviour"
		if len(n.IncompleteReasons) > 0 {
			reason += ": " + strings.Join(n.IncompleteReasons, "; ")
		}
		d.narrow(Added, SectionIncomplete, "incomplete: true", reason)
	case o.Incomplete && !n.Incomplete:
		d.narrow(Removed, SectionIncomplete, "incomplete: false", "the new profile is complete")
	}
}

// Locator reads a profile file and returns a function giving the line of a change's item in
// it, for reports that point into the file (SARIF). Items not in the file (removed ones) give
// 0. data must parse (see Parse).
func Locator(name string, data []byte) (func(Change) int, error) {
	p, err := Parse(name, data)
	if err != nil {
		return nil, err
	}
	root, _ := decodeYAML(name, data)
	t := &tree{file: name, lines: map[string]int{}, keyLines: map[string]int{}}
	if _, lerr := t.value(root, ""); lerr != nil {
		return nil, lerr
	}
	find := func(section string, n int, match func(i int) bool) int {
		for i := range n {
			if match(i) {
				return t.line(fmt.Sprintf("%s[%d]", section, i))
			}
		}
		return 0
	}
	return func(c Change) int {
		switch c.Section {
		case SectionSyscalls:
			return find(c.Section, len(p.Syscalls.Allow), func(i int) bool { return p.Syscalls.Allow[i].Name == c.Item })
		case SectionArgs:
			return find(c.Section, len(p.Syscalls.Args), func(i int) bool {
				r := p.Syscalls.Args[i]
				return strings.HasPrefix(c.Item, fmt.Sprintf("%s arg %d:", r.Syscall, r.Arg)) ||
					strings.HasPrefix(c.Item, fmt.Sprintf("%s arg %d (", r.Syscall, r.Arg))
			})
		case SectionArchitectures:
			return find(c.Section, len(p.Syscalls.Architectures), func(i int) bool { return p.Syscalls.Architectures[i] == c.Item })
		case SectionRead, SectionWrite, SectionExec, SectionList, SectionHidden:
			rules := map[string][]PathRule{SectionRead: p.Filesystem.Read, SectionWrite: p.Filesystem.Write,
				SectionExec: p.Filesystem.Exec, SectionList: p.Filesystem.List, SectionHidden: p.Filesystem.Hidden}[c.Section]
			return find(c.Section, len(rules), func(i int) bool { return rules[i].Path == c.Item })
		case SectionConnect, SectionSend, SectionBind, SectionResolve:
			eps := map[string][]Endpoint{SectionConnect: p.Network.Connect, SectionSend: p.Network.Send, SectionBind: p.Network.Bind, SectionResolve: p.Network.Resolve}[c.Section]
			return find(c.Section, len(eps), func(i int) bool { return EndpointItem(eps[i]) == c.Item })
		case SectionBinaries:
			path, sha, hasSHA := strings.Cut(c.Item, " sha256:")
			return find(c.Section, len(p.Binaries), func(i int) bool {
				b := p.Binaries[i]
				return b.Path == path && (!hasSHA || strings.HasPrefix(b.SHA256, sha) || sha == "none" && b.SHA256 == "")
			})
		case SectionEnvPass:
			return find(c.Section, len(p.Env.Pass), func(i int) bool { return p.Env.Pass[i] == c.Item })
		case SectionCredentials:
			return find(c.Section, len(p.Credentials), func(i int) bool {
				return strings.HasPrefix(c.Item, p.Credentials[i].Source()+" -> ")
			})
		case SectionPrivateTmp, SectionIncomplete, SectionHostRoot:
			return t.line(c.Section)
		}
		return 0
	}, nil
}
