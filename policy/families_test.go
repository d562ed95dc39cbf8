package policy

import (
	"slices"
	"strings"
	"testing"
)

// A profile that learned one send call has the others in effect (enforce and drift of a
// profile learned before the send family existed).
func TestFamilyMates(t *testing.T) {
	m := FamilyMates(&Profile{Syscalls: Syscalls{Allow: []Syscall{{Name: "sendto", Provenance: Provenance{By: "/usr/bin/node"}}, {Name: "openat"}}}})
	if m["sendmmsg"] != "send" || m["sendmsg"] != "send" {
		t.Errorf("sendto's family mates = %v, want sendmsg and sendmmsg of family send", m)
	}
	if _, ok := m["ptrace"]; ok {
		t.Errorf("mates name a syscall no family holds: %v", m)
	}
	if _, ok := m["connect"]; ok {
		t.Errorf("mates name a syscall no family holds: %v", m)
	}
	// copy_file_range is no trigger of copy-fallback: it does not bring renames in.
	if m := FamilyMates(&Profile{Syscalls: Syscalls{Allow: []Syscall{{Name: "copy_file_range"}}}}); m["renameat2"] != "" {
		t.Errorf("copy_file_range brings renameat2: %v", m)
	}
	// A member a family added is no trigger of its own families (as in learn), and neither is
	// a base syscall nobody was seen making: only the terminal calls and the families every
	// profile has remain.
	m = FamilyMates(&Profile{Syscalls: Syscalls{Allow: []Syscall{{Name: "renameat2", Family: "copy-fallback"}, {Name: "sendto", Base: true}}}})
	every := len(TerminalCalls)
	for _, f := range Families {
		if slices.Contains(EveryProfileFamilies, f.Name) {
			every += len(f.Members)
			for _, n := range f.Members {
				if m[n] != f.Name {
					t.Errorf("every profile closes family %s: %s is %q", f.Name, n, m[n])
				}
			}
		}
	}
	for n, f := range m {
		if f != TerminalFamily && !slices.Contains(EveryProfileFamilies, f) {
			t.Errorf("family members and unseen base syscalls bring families in: %s (%s)", n, f)
		}
	}
	if len(m) != every {
		t.Errorf("every profile closes the terminal calls %v and %v: got %v", TerminalCalls, EveryProfileFamilies, m)
	}
}

// A tool that made a directory may empty it on its next run, and a server ends the
// connections its listener accepted as their clients do (issue 24: vite build, npm run build,
// vite's dev server behind a published port).
func TestFamilyMatesOutputDirAndServe(t *testing.T) {
	m := FamilyMates(&Profile{Syscalls: Syscalls{Allow: []Syscall{{Name: "mkdir"}, {Name: "accept4"}}}})
	for _, n := range []string{"getdents64", "rmdir"} {
		if m[n] != "clear-output" {
			t.Errorf("mkdir's mate %s = %q, want clear-output", n, m[n])
		}
	}
	if m["unlinkat"] == "" { // remove's, through the rotate family's rename
		t.Errorf("mkdir has no mate unlinkat: %v", m)
	}
	if m["shutdown"] != "serve" || m["getpeername"] != "serve" {
		t.Errorf("accept4's mates = %v, want shutdown and getpeername of family serve", m)
	}
	// A client (connect) does not get a server's calls, nor a tool that makes no directory
	// the removals.
	m = FamilyMates(&Profile{Syscalls: Syscalls{Allow: []Syscall{{Name: "connect"}, {Name: "openat"}}}})
	for _, n := range []string{"shutdown", "rmdir", "unlink"} {
		if m[n] != "" {
			t.Errorf("connect and openat bring %s (%s)", n, m[n])
		}
	}
}

// A profile that reaches a unix socket by path has no fd-passing mates (sendmsg could hand the
// command's fds to the daemon listening there).
func TestFamilyMatesPassNoFDsToUnixSockets(t *testing.T) {
	p := &Profile{Syscalls: Syscalls{Allow: []Syscall{{Name: "sendto"}}}}
	if m := FamilyMates(p); m["sendmsg"] != "send" {
		t.Fatalf("sendto's mates without a unix socket = %v, want sendmsg", m)
	}
	p.Network.Connect = []Endpoint{{Endpoint: "unix:/run/dbus/system_bus_socket"}}
	if m := FamilyMates(p); m["sendmsg"] != "" || m["sendmmsg"] != "" || m["sendto"] != "send" {
		t.Errorf("sendto's mates with a unix socket rule = %v, want sendto only", m)
	}
	p.Network.Connect = []Endpoint{{Endpoint: "unix:@abstract"}}
	if m := FamilyMates(p); m["sendmsg"] != "send" {
		t.Errorf("an abstract socket withholds sendmsg: %v", m)
	}
}

// Metadata.Exact is written only when set, read back, and kept by Merge only when both sides
// were learned --exact.
func TestExactRoundTripAndMerge(t *testing.T) {
	p := &Profile{APIVersion: APIVersion, Kind: Kind, Metadata: Metadata{Name: "x", Command: []string{"x"}, Runs: 1, Exact: true}}
	b, err := Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	q, err := Parse("p.yaml", b)
	if err != nil {
		t.Fatal(err)
	}
	if !q.Metadata.Exact || q.ClosesFamilies() {
		t.Errorf("exact profile read back: exact %v, closes families %v\n%s", q.Metadata.Exact, q.ClosesFamilies(), b)
	}
	old := Clone(p)
	old.Metadata.Exact = false
	if b, _ := Marshal(old); containsLine(string(b), "exact") {
		t.Errorf("a profile not learned --exact writes an exact line:\n%s", b)
	}
	if Merge(p, p).Metadata.Exact != true || Merge(old, p).Metadata.Exact || Merge(p, old).Metadata.Exact {
		t.Errorf("Merge keeps exact only when both sides are: %v %v %v", Merge(p, p).Metadata.Exact, Merge(old, p).Metadata.Exact, Merge(p, old).Metadata.Exact)
	}
}

func containsLine(s, key string) bool {
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), key+":") {
			return true
		}
	}
	return false
}

// A tool that makes a directory per run and keeps the newest few (pytest's pytest-N) renames the
// oldest aside only on a warm run: mkdir brings rename (rotate), and that rename brings what a
// learned one does, so a profile learned cold closes to what one learned warm has. A profile
// read back with the rename rotate brought closes the same way.
func TestFamilyMatesRotateChains(t *testing.T) {
	cold := FamilyMates(&Profile{Syscalls: Syscalls{Allow: []Syscall{{Name: "mkdir"}}}})
	warm := FamilyMates(&Profile{Syscalls: Syscalls{Allow: []Syscall{{Name: "mkdir"}, {Name: "rename"}}}})
	if cold["rename"] != "rotate" {
		t.Errorf("mkdir's mate rename = %q, want rotate", cold["rename"])
	}
	for n := range warm {
		if n != "rename" && cold[n] == "" {
			t.Errorf("learned warm (mkdir, rename) %s is a mate (%s); learned cold (mkdir) it is not", n, warm[n])
		}
	}
	back := FamilyMates(&Profile{Syscalls: Syscalls{Allow: []Syscall{{Name: "rename", Family: "rotate"}}}})
	if back["utimensat"] != "touch" || back["fchown"] == "" {
		t.Errorf("a rename rotate brought closes no rename mates: %v", back)
	}
}

// A lookup learned where the network was down (the query's send failed) never reached the
// resolver's poll for the answer; where the DNS stub answers, glibc polls (next dev's version
// check under enforce): a send brings the fd waits.
func TestFamilyMatesSendWaits(t *testing.T) {
	m := FamilyMates(&Profile{Syscalls: Syscalls{Allow: []Syscall{{Name: "sendto"}}}})
	if m["poll"] != "wait-for-fds" || m["ppoll"] != "wait-for-fds" {
		t.Errorf("sendto's mates = %v, want poll and ppoll (wait-for-fds)", m)
	}
}
