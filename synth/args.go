package synth

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/trace"
)

// Clone flag bits. The namespace flags are the dangerous ones: they are denied unless seen.
var (
	cloneNamespaceFlags = []struct {
		name string
		bit  uint64
	}{
		{"CLONE_NEWTIME", 0x80}, {"CLONE_NEWNS", 0x20000}, {"CLONE_NEWCGROUP", 0x02000000},
		{"CLONE_NEWUTS", 0x04000000}, {"CLONE_NEWIPC", 0x08000000}, {"CLONE_NEWUSER", 0x10000000},
		{"CLONE_NEWPID", 0x20000000}, {"CLONE_NEWNET", 0x40000000},
	}
	cloneOtherFlags = []struct {
		name string
		bit  uint64
	}{
		// clone(2)'s low byte is the exit signal (SIGCHLD), not flags: it is written 0xff.
		// CLONE_NEWTIME (0x80) lives there too, but clone(2) cannot request it (only clone3
		// and unshare can).
		{"0xff", 0xff},
		{"CLONE_VM", 0x100}, {"CLONE_FS", 0x200}, {"CLONE_FILES", 0x400}, {"CLONE_SIGHAND", 0x800},
		{"CLONE_PIDFD", 0x1000}, {"CLONE_PTRACE", 0x2000}, {"CLONE_VFORK", 0x4000},
		{"CLONE_PARENT", 0x8000}, {"CLONE_THREAD", 0x10000}, {"CLONE_SYSVSEM", 0x40000},
		{"CLONE_SETTLS", 0x80000}, {"CLONE_PARENT_SETTID", 0x100000},
		{"CLONE_CHILD_CLEARTID", 0x200000}, {"CLONE_DETACHED", 0x400000},
		{"CLONE_UNTRACED", 0x800000}, {"CLONE_CHILD_SETTID", 0x1000000}, {"CLONE_IO", 0x80000000},
	}
)

const nsMask = 0x80 | 0x20000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000

// symbolValue parses a value as argument rules write it (policy.ParseValue).
func symbolValue(s string) (uint64, bool) {
	v, err := policy.ParseValue(s)
	return v, err == nil
}

func numeric(v uint64) string {
	if v < 0x100 {
		return strconv.FormatUint(v, 10)
	}
	return "0x" + strconv.FormatUint(v, 16)
}

// exactSymbol is the name of v in kind when one constant is exactly v, else v as a number.
func exactSymbol(kind string, v uint64) string {
	if kind == policy.KindPersonality && v&0xff > 0x10 {
		// policy.Symbol recurses forever on a personality whose low byte has no name
		// (0xffffffff, the query): only PER_LINUX (0) .. PER_HPUX (0x10) are safe to ask.
		return numeric(v)
	}
	if n := policy.Symbol(kind, v); !strings.ContainsAny(n, "|") && !strings.HasPrefix(n, "0x") {
		return n
	}
	return numeric(v)
}

// cloneFlagNames names every bit of v (0xff for the low byte, clone's exit signal, when clone
// is true).
func cloneFlagNames(v uint64, clone bool) []string {
	var out []string
	if clone && v&0xff != 0 {
		out = append(out, "0xff")
		v &^= 0xff
	}
	for _, f := range append(slices.Clone(cloneNamespaceFlags), cloneOtherFlags...) {
		if f.bit == 0xff {
			continue
		}
		if v&f.bit != 0 {
			out = append(out, f.name)
			v &^= f.bit
		}
	}
	for b := uint64(1); v != 0 && b != 0; b <<= 1 {
		if v&b != 0 {
			out = append(out, numeric(b))
			v &^= b
		}
	}
	return out
}

// argSet collects the values of one argument of one syscall with their provenance.
type argSet struct {
	vals map[uint64]prov
}

func (a *argSet) add(v uint64, pr prov) {
	if a.vals == nil {
		a.vals = map[uint64]prov{}
	}
	a.vals[v] = earliest(a.vals[v], pr)
}

func (a *argSet) prov() prov {
	var pr prov
	for _, p := range a.vals {
		pr = earliest(pr, p)
	}
	return pr
}

func (a *argSet) sorted() []uint64 {
	out := make([]uint64, 0, len(a.vals))
	for v := range a.vals {
		out = append(out, v)
	}
	slices.Sort(out)
	return out
}

func (a *argSet) union() uint64 {
	var u uint64
	for v := range a.vals {
		u |= v
	}
	return u
}

// passArgs turns the learned argument domains into argument rules for the allowed syscalls.
// The rule forms, as the enforcer compiles them:
//   - Values: the (masked) argument must equal one of them;
//   - Flags: the argument may set only these bits;
//   - Deny: the (masked) argument must not equal any of them;
//   - Errno with nothing else: the syscall is answered with that errno and never runs (clone3
//     answered ENOSYS: seccomp cannot read struct clone_args, and libc falls back to clone).
func (s *state) passArgs() []string {
	sets := s.argSets()
	var out argRulesOut
	s.socketArgRules(sets, &out)
	clone3NS := sets["clone3/clone3_flags"] != nil && sets["clone3/clone3_flags"].union()&nsMask != 0
	s.cloneArgRules(sets, clone3NS, &out)
	s.unshareArgRule(sets, &out)
	s.valueArgRules(sets, &out)
	s.ioctlArgRule(sets, &out)
	s.execMemoryRules(sets, &out)
	s.memfdExecRule(sets, &out)
	s.argRules = out.rules
	return out.msgs
}

// argRulesOut is what passArgs makes, in order: the rules and the lines that explain them.
type argRulesOut struct {
	rules []policy.ArgRule
	msgs  []string
}

// argSets are the learned argument values by "syscall/kind" ("syscall/socket/field" for
// socket's domain, type & 0xf and protocol), with who used them; "mmap/exec_memory" and
// "mprotect/exec_memory" hold who made memory no file backs executable (learn.c records mmap's
// prot only for anonymous mappings; any mprotect adding PROT_EXEC counts).
func (s *state) argSets() (sets map[string]*argSet) {
	sets = map[string]*argSet{}
	get := func(k string) *argSet {
		if sets[k] == nil {
			sets[k] = &argSet{}
		}
		return sets[k]
	}
	for _, a := range s.args {
		pr := s.provOf(a.exe)
		if a.seen > 0 {
			pr.seen = a.seen
		}
		switch a.kind {
		case "socket":
			f := a.fields
			if f == nil {
				f = map[string]uint64{"domain": a.value >> 32, "type": (a.value >> 16) & 0xffff, "protocol": a.value & 0xffff}
			}
			for _, field := range []string{"domain", "type", "protocol"} {
				if v, ok := f[field]; ok {
					if field == "type" {
						v &= 0xf
					}
					get(a.syscall+"/socket/"+field).add(v, pr)
				}
			}
		case "mmap_prot", "mprotect_prot":
			if a.value&protExec != 0 {
				get(a.syscall+"/exec_memory").add(protExec, pr)
			}
		default:
			get(a.syscall+"/"+a.kind).add(a.value, pr)
		}
	}
	return sets
}

// socketArgRules: socket and socketpair get their domain, type (& 0xf: SOCK_NONBLOCK and
// SOCK_CLOEXEC dropped) and protocol as seen.
func (s *state) socketArgRules(sets map[string]*argSet, out *argRulesOut) {
	for _, sc := range []string{"socket", "socketpair"} {
		if s.syscalls[sc] == nil {
			continue
		}
		dom := sets[sc+"/socket/domain"]
		if dom == nil {
			out.msgs = append(out.msgs, sc+": allowed without argument rules (no argument values were recorded)")
			continue
		}
		inet := true
		var doms []string
		for _, v := range dom.sorted() {
			doms = append(doms, exactSymbol(policy.KindFamily, v))
			inet = inet && (v == 2 || v == 10)
		}
		out.rules = append(out.rules, policy.ArgRule{Syscall: sc, Arg: 0, Name: "domain", Values: doms, Provenance: dom.prov().policy()})
		if t := sets[sc+"/socket/type"]; t != nil {
			var ts []string
			for _, v := range t.sorted() {
				ts = append(ts, exactSymbol(policy.KindSockType, v))
			}
			out.rules = append(out.rules, policy.ArgRule{Syscall: sc, Arg: 1, Name: "type", Mask: "0xf", Values: ts, Provenance: t.prov().policy()})
		}
		if p := sets[sc+"/socket/protocol"]; p != nil {
			var ps []string
			for _, v := range p.sorted() {
				if inet && v != 0 { // protocol 0 is "the default", not IPPROTO_IP; netlink reuses numbers
					ps = append(ps, exactSymbol(policy.KindProtocol, v))
				} else {
					ps = append(ps, numeric(v))
				}
			}
			out.rules = append(out.rules, policy.ArgRule{Syscall: sc, Arg: 2, Name: "protocol", Values: ps, Provenance: p.prov().policy()})
		}
		out.msgs = append(out.msgs, fmt.Sprintf("%s: domains %s only (AF_ALG, AF_VSOCK, AF_PACKET, raw and MPTCP sockets denied unless listed)", sc, strings.Join(doms, ", ")))
	}
}

// cloneArgRules: clone may use any non-namespace flag and namespace flags only as seen; clone3,
// whose flags live in a struct seccomp cannot read, answers ENOSYS unless it was seen creating
// namespaces (clone3NS) or without flags we could read. A tool seen only with clone3 gets clone
// too: libc falls back to it on ENOSYS.
func (s *state) cloneArgRules(sets map[string]*argSet, clone3NS bool, out *argRulesOut) {
	if r := s.syscalls["clone3"]; r != nil && !clone3NS && !s.clone3Plain && s.syscalls["clone"] == nil {
		s.syscalls["clone"] = &sysRule{prov: r.prov}
		out.msgs = append(out.msgs, "clone allowed: libc falls back to it when clone3 gets ENOSYS")
	}
	if r := s.syscalls["clone"]; r != nil {
		set := sets["clone/clone_flags"]
		if set == nil {
			set = &argSet{}
		}
		bits := set.union() &^ 0xff
		for _, f := range cloneOtherFlags {
			bits |= f.bit
		}
		pr := set.prov()
		if pr.by == "" {
			pr = r.prov
		}
		out.rules = append(out.rules, policy.ArgRule{Syscall: "clone", Arg: 0, Name: "flags", Flags: cloneFlagNames(bits, true), Provenance: pr.policy()})
		if ns := set.union() & nsMask &^ 0xff; ns != 0 {
			out.msgs = append(out.msgs, "clone: namespace flags seen and allowed: "+strings.Join(cloneFlagNames(ns, false), ", "))
		} else {
			out.msgs = append(out.msgs, "clone: namespace flags (CLONE_NEWUSER, NEWNS, NEWNET, NEWPID, NEWIPC, NEWUTS, NEWCGROUP) denied: none seen")
		}
	}
	if r := s.syscalls["clone3"]; r != nil {
		set := sets["clone3/clone3_flags"]
		if clone3NS || s.clone3Plain {
			w := "clone3 allowed without argument checks: it was seen creating namespaces"
			if clone3NS {
				w += " (" + strings.Join(cloneFlagNames(set.union()&nsMask, false), ", ") + ")"
			}
			w += ", and seccomp cannot inspect its flags"
			out.msgs = append(out.msgs, w)
			s.warnings = append(s.warnings, w)
		} else {
			out.rules = append(out.rules, policy.ArgRule{Syscall: "clone3", Arg: 0, Name: "clone_args", Errno: "ENOSYS", Provenance: r.prov.policy()})
			out.msgs = append(out.msgs, "clone3: answered ENOSYS (seccomp cannot inspect struct clone_args; libc falls back to clone, whose flags are checked)")
		}
	}
}

// unshareArgRule: unshare may use only the flags seen.
func (s *state) unshareArgRule(sets map[string]*argSet, out *argRulesOut) {
	r := s.syscalls["unshare"]
	if r == nil {
		return
	}
	set := sets["unshare/unshare_flags"]
	var bits uint64
	pr := r.prov
	if set != nil {
		bits, pr = set.union(), set.prov()
	} else {
		bits = 0x200 | 0x400 | 0x40000 // CLONE_FS|CLONE_FILES|CLONE_SYSVSEM: no namespace
	}
	names := cloneFlagNames(bits, false)
	if bits == 0 {
		names = []string{"0"}
	}
	out.rules = append(out.rules, policy.ArgRule{Syscall: "unshare", Arg: 0, Name: "flags", Flags: names, Provenance: pr.policy()})
	out.msgs = append(out.msgs, "unshare: only flags "+strings.Join(names, ", "))
}

// prctlQueries are the prctl options that only read the caller's own state: PR_GET_DUMPABLE,
// PR_GET_KEEPCAPS, PR_GET_NAME, PR_GET_SECCOMP, PR_CAPBSET_READ, PR_GET_TIMERSLACK,
// PR_GET_CHILD_SUBREAPER, PR_GET_NO_NEW_PRIVS. A profile that allows prctl allows them all
// (unless Options.Exact or Unportable): which one a runtime asks depends on the user and
// environment.
var prctlQueries = []uint64{3, 7, 16, 21, 23, 30, 37, 39}

// valueArgRules: setns, personality and prctl may use only the values seen.
func (s *state) valueArgRules(sets map[string]*argSet, out *argRulesOut) {
	for _, v := range []struct {
		sc, kind, name string
		arg            int
		symKind        string
	}{
		{"setns", "setns_nstype", "nstype", 1, ""},
		{"personality", "personality", "persona", 0, policy.KindPersonality},
		{"prctl", "prctl_option", "option", 0, policy.KindPrctl},
	} {
		if s.syscalls[v.sc] == nil {
			continue
		}
		set := sets[v.sc+"/"+v.kind]
		if set == nil {
			out.msgs = append(out.msgs, v.sc+": allowed without argument rules (no argument values were recorded)")
			continue
		}
		if v.sc == "prctl" && !s.opts.Exact && !s.opts.Unportable {
			// Queries that change nothing, which runtimes make by who runs them (pytest as an
			// ordinary user reads its capability bounding set): the prctl family.
			for _, q := range prctlQueries {
				if _, ok := set.vals[q]; !ok {
					set.add(q, prov{})
				}
			}
		}
		var vals []string
		for _, x := range set.sorted() {
			switch {
			case v.symKind != "":
				vals = append(vals, exactSymbol(v.symKind, x))
			case x == 0:
				vals = append(vals, "0")
			default:
				vals = append(vals, strings.Join(cloneFlagNames(x, false), "|"))
			}
		}
		out.rules = append(out.rules, policy.ArgRule{Syscall: v.sc, Arg: v.arg, Name: v.name, Values: vals, Provenance: set.prov().policy()})
		out.msgs = append(out.msgs, fmt.Sprintf("%s: only %s", v.sc, strings.Join(vals, ", ")))
	}
}

// ioctlArgRule: terminal injection is denied whatever else the tool does with ttys; a tool of
// the terminal family gets the terminal probes only, and so does one whose every learned request
// was a probe: stdio asks whether /dev/null or a terminal is one (TCGETS) and a pipe or a file
// not, so which condition the learn ran in must not decide between the probes and every
// request. The request is an unsigned int: masked to 32 bits so that high garbage cannot slip
// past the deny list.
func (s *state) ioctlArgRule(sets map[string]*argSet, out *argRulesOut) {
	r := s.syscalls["ioctl"]
	switch {
	case r == nil:
	case r.family == terminalFamily:
		out.rules = append(out.rules, policy.ArgRule{Syscall: "ioctl", Arg: 1, Name: "request", Mask: "0xffffffff",
			Values: slices.Clone(terminalProbes)})
		out.msgs = append(out.msgs, "ioctl: only "+strings.Join(terminalProbes, ", ")+" (not learned: the terminal probes alone)")
	case onlyTerminalProbes(sets["ioctl/ioctl_request"]):
		out.rules = append(out.rules, policy.ArgRule{Syscall: "ioctl", Arg: 1, Name: "request", Mask: "0xffffffff",
			Values: slices.Clone(terminalProbes), Provenance: r.prov.policy()})
		out.msgs = append(out.msgs, "ioctl: only "+strings.Join(terminalProbes, ", ")+" (every request learned was a terminal one)")
	default:
		out.rules = append(out.rules, policy.ArgRule{Syscall: "ioctl", Arg: 1, Name: "request", Mask: "0xffffffff",
			Deny: []string{"TIOCLINUX", "TIOCSTI"}, Provenance: r.prov.policy()})
		msg := "ioctl: TIOCSTI and TIOCLINUX (terminal input injection) always denied"
		if set := sets["ioctl/ioctl_request"]; set != nil {
			for _, v := range set.sorted() {
				if v&0xffffffff == 0x5412 || v&0xffffffff == 0x541C {
					w := fmt.Sprintf("%s used ioctl %s during learning; it stays denied", set.vals[v].by, policy.Symbol(policy.KindIoctl, v&0xffffffff))
					s.warnings = append(s.warnings, w)
					msg += "; " + w
				}
			}
		}
		out.msgs = append(out.msgs, msg)
	}
}

// onlyTerminalProbes reports a learned set of ioctl requests that holds terminal probes only.
func onlyTerminalProbes(set *argSet) bool {
	if set == nil || len(set.vals) == 0 {
		return false // not recorded: every request but injection, as before
	}
	for v := range set.vals {
		if !slices.ContainsFunc(terminalProbes, func(n string) bool { p, ok := symbolValue(n); return ok && p == v&0xffffffff }) {
			return false
		}
	}
	return true
}

const protExec = 0x4

// execMemoryRules: executable memory no file backs (a JIT's code: node/V8, Java, LuaJIT, PCRE)
// is refused unless learned (seccomp's hardening, seccomp.WhyExecMemory); a learned one is
// allowed by a rule on prot that lets PROT_EXEC through, on the syscalls that made it
// (pkey_mprotect follows mprotect). Plain data, listed in learn's review.
func (s *state) execMemoryRules(sets map[string]*argSet, out *argRulesOut) {
	for _, sc := range []string{"mmap", "mprotect", "pkey_mprotect"} {
		from := sc
		if sc == "pkey_mprotect" {
			from = "mprotect"
		}
		a := sets[from+"/exec_memory"]
		if a == nil || s.syscalls[sc] == nil {
			continue
		}
		out.rules = append(out.rules, policy.ArgRule{Syscall: sc, Arg: 2, Name: "prot", Mask: "PROT_EXEC",
			Values: []string{"PROT_NONE", "PROT_EXEC"}, Provenance: a.prov().policy()})
		out.msgs = append(out.msgs, fmt.Sprintf("%s may make memory executable (PROT_EXEC without a file: a JIT), as %s did", sc, a.prov().by))
	}
}

// memfdExecRule: a memfd is made non-executable by enforce's supervisor (seccomp.WhyMemfd)
// unless learn saw one executed or mapped executable (trace.ArgMemfdExec); then memfd_create
// gets a rule on its flags that lets MFD_EXEC through. Plain data, listed in learn's review.
func (s *state) memfdExecRule(sets map[string]*argSet, out *argRulesOut) {
	a := sets["memfd_create/"+trace.ArgMemfdExec]
	if a == nil || s.syscalls["memfd_create"] == nil {
		return
	}
	out.rules = append(out.rules, policy.ArgRule{Syscall: "memfd_create", Arg: 1, Name: "flags", Mask: "0x10",
		Values: []string{"0", "0x10"}, Provenance: a.prov().policy()})
	out.msgs = append(out.msgs, fmt.Sprintf("memfd_create may make executable memfds (code run from memory), as %s did", a.prov().by))
}

// mfdExec is MFD_EXEC.
const mfdExec = 0x10

// argObsFromRules reads argument rules back as the values they allow (Resynthesize). It also
// reports whether clone3 is allowed without its ENOSYS rule.
func argObsFromRules(p *policy.Profile) ([]argObs, bool, error) {
	var out []argObs
	enosys := false
	for _, r := range p.Syscalls.Args {
		pr := r.Provenance
		parse := func(vs []string) ([]uint64, error) {
			var out []uint64
			for _, v := range vs {
				x, ok := symbolValue(v)
				if !ok {
					return nil, fmt.Errorf("%s arg %d: unknown value %q", r.Syscall, r.Arg, v)
				}
				out = append(out, x)
			}
			return out, nil
		}
		vals, err := parse(r.Values)
		if err != nil {
			return nil, false, err
		}
		flags, err := parse(r.Flags)
		if err != nil {
			return nil, false, err
		}
		var union uint64
		for _, f := range flags {
			union |= f
		}
		add := func(kind string, v uint64, fields map[string]uint64) {
			out = append(out, argObs{exe: pr.By, syscall: r.Syscall, kind: kind, value: v, fields: fields, seen: pr.Seen})
		}
		switch {
		case r.Syscall == "socket" || r.Syscall == "socketpair":
			field := map[int]string{0: "domain", 1: "type", 2: "protocol"}[r.Arg]
			for _, v := range vals {
				add("socket", 0, map[string]uint64{field: v})
			}
		case r.Syscall == "clone3" && r.Errno == "ENOSYS":
			enosys = true
		case r.Syscall == "clone" && r.Arg == 0:
			add("clone_flags", union&nsMask&^0xff, nil) // the rest is always allowed
		case r.Syscall == "unshare" && r.Arg == 0:
			add("unshare_flags", union, nil)
		case r.Syscall == "setns" && r.Arg == 1:
			for _, v := range vals {
				add("setns_nstype", v, nil)
			}
		case r.Syscall == "personality":
			for _, v := range vals {
				add("personality", v, nil)
			}
		case (r.Syscall == "mmap" || r.Syscall == "mprotect") && r.Arg == 2 && slices.Contains(vals, protExec):
			add(r.Syscall+"_prot", protExec, nil)
		case r.Syscall == "memfd_create" && r.Arg == 1 && slices.Contains(vals, mfdExec):
			add(trace.ArgMemfdExec, mfdExec, nil)
		case r.Syscall == "prctl":
			for _, v := range vals {
				add("prctl_option", v, nil)
			}
		case r.Syscall == "ioctl" && r.Arg == 1:
			// Learned requests that were all terminal probes (a deny list: any, not read back).
			for _, v := range vals {
				add("ioctl_request", v, nil)
			}
		}
	}
	clone3 := slices.ContainsFunc(p.Syscalls.Allow, func(s policy.Syscall) bool { return s.Name == "clone3" })
	return out, clone3 && !enosys, nil
}
