package synth

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/trace"
)

// terminalProbes are the ioctl requests a tool makes at a terminal (policy.TerminalRequests):
// allowed in every profile, because a profile learned with output to a file or a pipe runs at
// a terminal too; the full ioctl is allowed only when a request beyond them was learned.
var terminalProbes = policy.TerminalRequests

// terminalCalls are allowed in every profile for the same reason (policy.TerminalCalls).
var terminalCalls = policy.TerminalCalls

// terminalFamily marks what is allowed for a terminal that the learn run may not have had.
const terminalFamily = policy.TerminalFamily

// controllingTerminal is allowed in every profile (but --exact): a tool opens it only when it
// runs at a terminal (git's credential prompt, less's keyboard), so a profile learned in CI
// never saw it. Opening it grants nothing the command's own stdio does not: it is the terminal
// of the command's session, and the enforcer starts the command in a session of its own, with
// none (the open fails with ENXIO, as in a learn run without a terminal, instead of a Landlock
// EACCES reported as a denial). Terminal injection (TIOCSTI, TIOCLINUX) stays denied by
// seccomp on every fd, and without a learned ioctl only the terminal probes are allowed.
const controllingTerminal = "/dev/tty"

const controllingTerminalNote = "controlling terminal (terminal family: opened only at a terminal)"

// passTerminal allows the controlling terminal (unless Options.Exact). It runs before the
// coverage pass, which folds the learned reads below it into the rule as it does for a
// profile read back.
func (s *state) passTerminal() []string {
	var msgs []string
	// openpty opens the terminal's other end with ioctl(TIOCGPTPEER), which learn does not
	// see as an open; under enforcement that open (and libc's fallback by name) is checked
	// against /dev/pts, whose entries come and go: the rule is the directory (paths'
	// vocabulary has no /dev/pts/N), as for every terminal number learn saw.
	if ptmx := s.write.get(ptyMaster); ptmx != nil && s.write.get(ptyDir) == nil {
		s.write.set(ptyDir, &pathRule{prov: ptmx.prov, note: ptyNote})
		msgs = append(msgs, "+ write "+ptyDir+", the terminals "+ptyMaster+" opens (opened through ioctl TIOCGPTPEER, which learn cannot see)")
	}
	if s.opts.Exact || s.write.get(controllingTerminal) != nil {
		return msgs
	}
	s.write.set(controllingTerminal, &pathRule{note: controllingTerminalNote})
	return append(msgs, "+ write "+controllingTerminal+", the controlling terminal (terminal family: a tool opens it only when it runs at a terminal)")
}

// The pseudo-terminal multiplexer and the directory of the terminals it makes.
const (
	ptyMaster = "/dev/ptmx"
	ptyDir    = "/dev/pts"
	ptyNote   = "pseudo-terminals /dev/ptmx makes"
)

// passFamilies allows every member of each family of which the command used one (unless
// Options.Exact), and the terminal probes.
func (s *state) passFamilies() []string {
	if s.opts.Exact {
		return []string{"exact: behaviour-equivalence families off (learn --exact): only the syscalls seen are allowed"}
	}
	var msgs []string
	for _, f := range policy.Families {
		added, withheld := s.addFamily(f)
		if len(added) > 0 {
			msgs = append(msgs, fmt.Sprintf("%s: + %s (%s)", f.Name, strings.Join(added, ", "), f.Why))
		}
		if len(withheld) > 0 {
			msgs = append(msgs, fmt.Sprintf("%s: not %s: they can pass fds (SCM_RIGHTS) and the command reaches a unix socket by path, whose listener could take them; learned only", f.Name, strings.Join(withheld, ", ")))
		}
	}
	var term []string
	if s.syscalls["ioctl"] == nil {
		s.syscalls["ioctl"] = &sysRule{family: terminalFamily}
		term = append(term, "ioctl for "+strings.Join(terminalProbes, ", ")+" only (isatty, window size, a terminal's modes)")
	}
	for _, n := range terminalCalls {
		if s.syscalls[n] == nil {
			s.syscalls[n] = &sysRule{family: terminalFamily}
			term = append(term, n)
		}
	}
	if len(term) > 0 {
		msgs = append(msgs, terminalFamily+": + "+strings.Join(term, ", ")+" (what a tool does only when it runs at a terminal)")
	}
	return msgs
}

// addFamily allows the members of f that the profile's architectures know, when the command
// used one, with the provenance of the used member whose binary sorts first, and returns what
// it added and what it held back (Family.PassFDs).
func (s *state) addFamily(f policy.Family) (added, withheld []string) {
	var pr prov
	used := false
	for _, n := range f.TriggerNames() {
		// As policy.Syscall.Triggers: learned, not a base syscall nobody was seen making.
		if r := s.syscalls[n]; r != nil && (policy.Syscall{Family: r.family, Base: r.base, Provenance: policy.Provenance{By: r.by}}).Triggers() {
			// By name, not by process start: a profile read back (Resynthesize) has no start
			// order, and the family must come back with the same provenance.
			if !used || r.by < pr.by {
				pr.by = r.by
			}
			pr.seen = max(pr.seen, r.seen)
			used = true
		}
	}
	if !used && !slices.Contains(policy.EveryProfileFamilies, f.Name) {
		return nil, nil
	}
	unixPath := len(f.PassFDs) > 0 && s.reachesUnixPath()
	for _, n := range f.Members {
		if s.syscalls[n] != nil || !s.knownName(n) {
			continue
		}
		if unixPath && slices.Contains(f.PassFDs, n) {
			withheld = append(withheld, n)
			continue
		}
		s.syscalls[n] = &sysRule{prov: pr, family: f.Name}
		added = append(added, n)
	}
	return added, withheld
}

// reachesUnixPath reports whether the command connects or sends to a pathname unix socket
// (seen in the trace, or a rule of the profile read back): a process listening there may take
// fds from it (Family.PassFDs). Abstract sockets are the sandbox's own (its network namespace).
func (s *state) reachesUnixPath() bool {
	for _, n := range s.net {
		if n.ok && n.op != trace.OpBind && n.family == "unix" && n.path != "" && !strings.HasPrefix(n.path, "@") {
			return true
		}
	}
	for k := range s.endpoints {
		if k.op != trace.OpBind && policy.UnixPathEndpoint(k.endpoint) {
			return true
		}
	}
	return false
}

// unixPathEndpoint reports whether a rule's endpoint is a pathname unix socket.

// archEquivalents are, for each syscall that exists on one 64-bit architecture but not the
// other, the syscalls libc calls there instead (policy.ArchEquivalents, the one table; the
// seccomp compiler also moves argument rules and maps back). A profile gets them for every
// architecture it lists that lacks an allowed syscall, with or without families (learn
// --exact): the same program does the same thing there.
var archEquivalents = func() map[string][]string {
	m := map[string][]string{}
	for _, e := range policy.ArchEquivalents {
		m[e.Legacy] = append(m[e.Legacy], e.Generic)
	}
	return m
}()

// DefaultArchitectures are what a learned profile lists when Options.Architectures is empty:
// the architecture it was learned on and the other common 64-bit one, so that a profile
// learned on an x86_64 laptop runs on an arm64 CI runner.
var DefaultArchitectures = []string{trace.ArchX86_64, trace.ArchAArch64}

// passArchitectures lists the profile's architectures and maps the syscalls of the learned
// architecture that the others lack to their equivalents there.
func (s *state) passArchitectures() []string {
	if len(s.sys) == 0 && len(s.syscalls) == 0 {
		return nil
	}
	want := s.opts.Architectures
	if len(want) == 0 && !s.fromProfile {
		want = DefaultArchitectures
	}
	var msgs []string
	var listed []string
	for _, a := range want {
		if !s.arches[a] {
			s.arches[a] = true
			listed = append(listed, a)
		}
	}
	if len(listed) > 0 {
		msgs = append(msgs, "+ "+strings.Join(listed, ", ")+" (the same names compile to each architecture's numbers)")
	}
	return msgs
}

// passArchEquivalents maps the allowed syscalls that one of the profile's architectures lacks
// to that architecture's equivalents (open → openat on arm64, fstatat → newfstatat on x86_64).
func (s *state) passArchEquivalents() []string {
	var msgs []string
	for _, a := range sortedKeys(s.arches) {
		info := archInfo(a)
		if info == nil || a == trace.ArchI386 || a == trace.ArchX32 || a == trace.ArchARM {
			continue // compat ABIs are allowed only as learned
		}
		var added []string
		for _, name := range sortedKeys(s.syscalls) {
			if _, ok := info.SyscallNames[name]; ok {
				continue
			}
			for _, eq := range archEquivalents[name] {
				if _, ok := info.SyscallNames[eq]; ok && s.syscalls[eq] == nil {
					r := s.syscalls[name]
					s.syscalls[eq] = &sysRule{prov: r.prov, family: cmpOr(r.family, "arch")}
					added = append(added, eq+" (for "+name+")")
				}
			}
		}
		if len(added) > 0 {
			slices.Sort(added)
			msgs = append(msgs, a+": + "+strings.Join(added, ", "))
		}
	}
	return msgs
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// localeData are read in every profile: which of them a program reads depends on LANG and
// LC_* (a profile learned in the C locale runs in C.UTF-8 or de_DE.UTF-8), and all of them are
// the distribution's public, read-only data. The gconv modules are listed for both
// architectures the profile may list; a path a host does not have is skipped there.
var localeData = []string{
	"/usr/lib/locale",
	"/usr/share/locale",
	"/etc/locale.alias",
	"/usr/lib/x86_64-linux-gnu/gconv",
	"/usr/lib/aarch64-linux-gnu/gconv",
	"/etc/localtime",
	"/usr/share/zoneinfo",
}

// localeNote marks the read rules passLocale adds.
const localeNote = "locale data (LANG and TZ may differ from the learn run's)"

// passLocale allows reading the locale data (unless Options.Exact) of a profile that reads
// anything at all.
func (s *state) passLocale() []string {
	if s.opts.Exact || s.read.len() == 0 && s.exec.len() == 0 {
		return nil
	}
	var added []string
	for _, p := range localeData {
		if s.read.get(p) == nil {
			s.read.set(p, &pathRule{note: localeNote, files: 1})
			added = append(added, p)
		}
	}
	if len(added) == 0 {
		return nil
	}
	return []string{"+ read " + strings.Join(added, ", ") + " (" + localeNote + ")"}
}
