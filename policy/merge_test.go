package policy

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func pick[T any](r *rand.Rand, s []T) T { return s[r.IntN(len(s))] }

var (
	randSyscalls = []string{"read", "write", "openat", "socket", "clone", "ioctl", "prctl", "mmap", "personality", "close"}
	randArgVals  = []string{"AF_INET", "AF_INET6", "AF_UNIX", "SOCK_STREAM", "0x1", "0x2", "0x3", "0x10", "0x11", "0x800", "0x80000", "CLONE_VM", "CLONE_NEWUSER", "TIOCSTI", "7"}
	randMasks    = []string{"", "", "0xf", "0xff", "0x7"}
	randPaths    = []string{"/usr", "/etc/passwd", "$WORKDIR", "$WORKDIR/target", "$HOME/.ssh", "$TMPDIR/go-build*", "/opt/x"}
	randEps      = []string{"a.example:443", "127.0.0.1:8080", "[::1]:80", "unix:/run/x.sock", "10.0.0.0/8:22"}
	randBy       = []string{"", "/usr/bin/cc", "/usr/bin/ld"}
)

// randProfile builds a small random profile over a small universe so that two of them overlap.
func randProfile(r *rand.Rand) *Profile {
	p := &Profile{APIVersion: APIVersion, Kind: Kind, Metadata: Metadata{Name: "t", Runs: r.IntN(4)}}
	p.Metadata.Incomplete = r.IntN(4) == 0
	if p.Metadata.Incomplete {
		p.Metadata.IncompleteReasons = []string{pick(r, []string{"lost events", "interrupted"})}
	}
	p.Syscalls.Architectures = []string{pick(r, Architectures)}
	for range r.IntN(6) {
		p.Syscalls.Allow = append(p.Syscalls.Allow, Syscall{Name: pick(r, randSyscalls), Provenance: Provenance{By: pick(r, randBy), Seen: r.IntN(3)}})
	}
	for range r.IntN(4) {
		a := ArgRule{Syscall: pick(r, randSyscalls), Arg: r.IntN(3), Mask: pick(r, randMasks), Provenance: Provenance{Seen: r.IntN(3)}}
		for range r.IntN(3) {
			a.Values = append(a.Values, pick(r, randArgVals))
		}
		for range r.IntN(3) {
			a.Flags = append(a.Flags, pick(r, randArgVals))
		}
		p.Syscalls.Args = append(p.Syscalls.Args, a)
	}
	for _, l := range []*[]PathRule{&p.Filesystem.Read, &p.Filesystem.Write, &p.Filesystem.Exec, &p.Filesystem.Hidden} {
		for range r.IntN(3) {
			*l = append(*l, PathRule{Path: pick(r, randPaths), Provenance: Provenance{By: pick(r, randBy), Seen: r.IntN(3)}})
		}
	}
	p.Filesystem.PrivateTmp = r.IntN(2) == 0
	for _, l := range []*[]Endpoint{&p.Network.Connect, &p.Network.Send, &p.Network.Bind} {
		for range r.IntN(3) {
			ep := pick(r, randEps)
			proto := pick(r, []string{"tcp", "udp"})
			if ep[:5] == "unix:" {
				proto = ""
			}
			*l = append(*l, Endpoint{Endpoint: ep, Proto: proto, Provenance: Provenance{Seen: r.IntN(3)}})
		}
	}
	for range r.IntN(3) {
		p.Binaries = append(p.Binaries, Binary{Path: pick(r, []string{"/usr/bin/cc", "/usr/bin/ld"}), SHA256: pick(r, []string{"", fmt.Sprintf("%064x", 1), fmt.Sprintf("%064x", 2)})})
	}
	return p
}

// allowsCall is the plain model of argument rules: the syscall is allowed and every rule for
// it matches.
func allowsCall(p *Profile, syscall string, args [6]uint64) bool {
	if !slices.ContainsFunc(p.Syscalls.Allow, func(s Syscall) bool { return s.Name == syscall }) {
		return false
	}
	// Enforce's exec-memory hardening: without a rule on prot, PROT_EXEC is refused.
	if i, ok := ExecMemoryArgs[syscall]; ok && args[i]&protExec != 0 &&
		!slices.ContainsFunc(p.Syscalls.Args, func(r ArgRule) bool { return r.Syscall == syscall && r.Arg == i }) {
		return false
	}
	for _, r := range p.Syscalls.Args {
		if r.Syscall != syscall {
			continue
		}
		v := args[r.Arg]
		if len(r.Values) > 0 {
			m := maskValue(r.Mask)
			ok := false
			for _, s := range r.Values {
				x, _ := ParseValue(s)
				if v&m == x {
					ok = true
				}
			}
			if !ok {
				return false
			}
		}
		if len(r.Flags) > 0 {
			var bits uint64
			for _, s := range r.Flags {
				x, _ := ParseValue(s)
				bits |= x
			}
			if v&^bits != 0 {
				return false
			}
		}
	}
	return true
}

func TestMergeNeverDrops(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	candidates := []uint64{0, 1, 2, 3, 7, 0x10, 0x11, 0x12, 0x13, 0x800, 0x801, 0x80001, 0x80002, 0x100, 0x10000000, 0x5412, 0xff}
	for iter := range 3000 {
		a, b := randProfile(r), randProfile(r)
		aCopy, bCopy := Clone(a), Clone(b)
		m := Merge(a, b)
		if d := cmp.Diff(aCopy, a); d != "" {
			t.Fatalf("Merge modified dst:\n%s", d)
		}
		if d := cmp.Diff(bCopy, b); d != "" {
			t.Fatalf("Merge modified src:\n%s", d)
		}
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("iteration %d: "+format+"\na=%+v\nb=%+v\nmerged=%+v", append([]any{iter}, append(args, a, b, m)...)...)
		}
		if m.Metadata.Runs != a.Metadata.Runs+b.Metadata.Runs {
			fail("runs %d, want %d", m.Metadata.Runs, a.Metadata.Runs+b.Metadata.Runs)
		}
		if m.Metadata.Incomplete != (a.Metadata.Incomplete || b.Metadata.Incomplete) {
			fail("incomplete not sticky")
		}
		for _, reason := range append(slices.Clone(a.Metadata.IncompleteReasons), b.Metadata.IncompleteReasons...) {
			if !slices.Contains(m.Metadata.IncompleteReasons, reason) {
				fail("incomplete reason %q lost", reason)
			}
		}
		if m.Filesystem.PrivateTmp && !(a.Filesystem.PrivateTmp && b.Filesystem.PrivateTmp) {
			fail("privateTmp on although one side had a shared /tmp")
		}
		for _, in := range []*Profile{a, b} {
			for _, arch := range in.Syscalls.Architectures {
				if !slices.Contains(m.Syscalls.Architectures, arch) {
					fail("architecture %s lost", arch)
				}
			}
			for _, s := range in.Syscalls.Allow {
				if !slices.ContainsFunc(m.Syscalls.Allow, func(x Syscall) bool { return x.Name == s.Name }) {
					fail("syscall %s lost", s.Name)
				}
			}
			for name, pair := range map[string][2][]PathRule{
				"read": {in.Filesystem.Read, m.Filesystem.Read}, "write": {in.Filesystem.Write, m.Filesystem.Write},
				"exec": {in.Filesystem.Exec, m.Filesystem.Exec}, "hidden": {in.Filesystem.Hidden, m.Filesystem.Hidden},
			} {
				for _, pr := range pair[0] {
					if !slices.ContainsFunc(pair[1], func(x PathRule) bool { return x.Path == pr.Path }) {
						fail("%s %s lost", name, pr.Path)
					}
				}
			}
			for _, pair := range [][2][]Endpoint{{in.Network.Connect, m.Network.Connect}, {in.Network.Send, m.Network.Send}, {in.Network.Bind, m.Network.Bind}} {
				for _, e := range pair[0] {
					if !slices.ContainsFunc(pair[1], func(x Endpoint) bool { return x.Endpoint == e.Endpoint && x.Proto == e.Proto }) {
						fail("endpoint %s %s lost", e.Proto, e.Endpoint)
					}
				}
			}
			for _, bin := range in.Binaries {
				if !slices.ContainsFunc(m.Binaries, func(x Binary) bool { return x.Path == bin.Path && x.SHA256 == bin.SHA256 }) {
					fail("binary %s %s lost", bin.Path, bin.SHA256)
				}
			}
			// Argument rules: every call a side allowed, the merge allows.
			for _, sc := range randSyscalls {
				for range 40 {
					var args [6]uint64
					for i := range args {
						args[i] = pick(r, candidates)
					}
					if allowsCall(in, sc, args) && !allowsCall(m, sc, args) {
						fail("call %s%v allowed by an input, denied by the merge", sc, args)
					}
				}
			}
		}
		// Seen counts add up.
		seen := map[string]int{}
		for _, in := range []*Profile{a, b} {
			for _, s := range in.Syscalls.Allow {
				seen[s.Name] += s.Seen
			}
		}
		for _, s := range m.Syscalls.Allow {
			if s.Seen != seen[s.Name] {
				fail("syscall %s seen %d, want %d", s.Name, s.Seen, seen[s.Name])
			}
		}
		// Merge output is normalized and valid as a file.
		if _, err := Marshal(m); err != nil {
			fail("marshal: %v", err)
		}
	}
}

func TestMergeProvenance(t *testing.T) {
	a := &Profile{Metadata: Metadata{Name: "cargo-build", Command: []string{"cargo", "build"}, Runs: 2, Created: "2026-01-02T00:00:00Z", Updated: "2026-01-03T00:00:00Z", Kernel: "6.1"},
		Syscalls: Syscalls{Allow: []Syscall{{Name: "read", Provenance: Provenance{By: "/usr/bin/cargo", Seen: 2}}}},
		Filesystem: Filesystem{
			Read:       []PathRule{{Path: "$HOME", Provenance: Provenance{Seen: 2}}},
			Hidden:     []PathRule{{Path: "$HOME/.ssh"}},
			PrivateTmp: true,
		},
		Binaries: []Binary{{Path: "/usr/bin/cc", SHA256: fmt.Sprintf("%064x", 1), Provenance: Provenance{Seen: 2}}},
	}
	b := &Profile{Metadata: Metadata{Name: "cargo-build", Command: []string{"cargo", "build"}, Runs: 1, Created: "2026-01-01T00:00:00Z", Updated: "2026-01-04T00:00:00Z", Kernel: "6.18", Incomplete: true, IncompleteReasons: []string{"lost 3 events"}},
		Syscalls: Syscalls{Allow: []Syscall{{Name: "read", Provenance: Provenance{By: "/usr/bin/rustc", Seen: 1}}, {Name: "write", Provenance: Provenance{By: "/usr/bin/rustc", Seen: 1}}}},
		Filesystem: Filesystem{
			Read:   []PathRule{{Path: "$HOME/.ssh", Provenance: Provenance{Seen: 1}}},
			Hidden: []PathRule{{Path: "$HOME/.aws"}},
		},
		Binaries: []Binary{{Path: "/usr/bin/cc", SHA256: fmt.Sprintf("%064x", 2), Provenance: Provenance{Seen: 1}}},
	}
	if !SameCommand(a, b) {
		t.Error("SameCommand = false")
	}
	m := Merge(a, b)
	want := &Profile{Metadata: Metadata{Name: "cargo-build", Command: []string{"cargo", "build"}, Runs: 3, Created: "2026-01-01T00:00:00Z", Updated: "2026-01-04T00:00:00Z", Kernel: "6.18", Incomplete: true, IncompleteReasons: []string{"lost 3 events"}},
		Syscalls: Syscalls{Allow: []Syscall{{Name: "read", Provenance: Provenance{By: "/usr/bin/cargo", Seen: 3}}, {Name: "write", Provenance: Provenance{By: "/usr/bin/rustc", Seen: 1}}}},
		Filesystem: Filesystem{
			Read:   []PathRule{{Path: "$HOME", Provenance: Provenance{Seen: 2}}, {Path: "$HOME/.ssh", Provenance: Provenance{Seen: 1}}},
			Hidden: []PathRule{{Path: "$HOME/.aws"}, {Path: "$HOME/.ssh"}},
		},
		Binaries: []Binary{
			{Path: "/usr/bin/cc", SHA256: fmt.Sprintf("%064x", 1), Provenance: Provenance{Seen: 2}},
			{Path: "/usr/bin/cc", SHA256: fmt.Sprintf("%064x", 2), Provenance: Provenance{Seen: 1}},
		},
	}
	if d := cmp.Diff(want, m, cmpNilEmpty); d != "" {
		t.Errorf("Merge (-want +got):\n%s", d)
	}
	c := Clone(b)
	c.Metadata.Command = []string{"cargo", "test"}
	if SameCommand(a, c) {
		t.Error("SameCommand(cargo build, cargo test) = true")
	}
}

func TestMergeArgRules(t *testing.T) {
	sock := func(rules ...ArgRule) *Profile {
		return &Profile{Syscalls: Syscalls{Allow: []Syscall{{Name: "socket"}}, Args: rules}}
	}
	tests := []struct {
		name string
		a, b *Profile
		want []ArgRule
	}{
		{"values union",
			sock(ArgRule{Syscall: "socket", Arg: 0, Values: []string{"AF_INET"}, Provenance: Provenance{Seen: 1}}),
			sock(ArgRule{Syscall: "socket", Arg: 0, Values: []string{"AF_UNIX"}, Provenance: Provenance{Seen: 2}}),
			[]ArgRule{{Syscall: "socket", Arg: 0, Values: []string{"AF_INET", "AF_UNIX"}, Provenance: Provenance{Seen: 3}}}},
		{"flags union",
			sock(ArgRule{Syscall: "socket", Arg: 1, Flags: []string{"SOCK_CLOEXEC"}}),
			sock(ArgRule{Syscall: "socket", Arg: 1, Flags: []string{"SOCK_NONBLOCK"}}),
			[]ArgRule{{Syscall: "socket", Arg: 1, Flags: []string{"SOCK_CLOEXEC", "SOCK_NONBLOCK"}}}},
		{"other side unrestricted",
			sock(ArgRule{Syscall: "socket", Arg: 0, Values: []string{"AF_INET"}}),
			sock(),
			nil},
		{"other side does not call it",
			sock(ArgRule{Syscall: "socket", Arg: 0, Values: []string{"AF_INET"}}),
			&Profile{},
			[]ArgRule{{Syscall: "socket", Arg: 0, Values: []string{"AF_INET"}}}},
		{"values vs flags only",
			sock(ArgRule{Syscall: "socket", Arg: 1, Values: []string{"SOCK_STREAM"}}),
			sock(ArgRule{Syscall: "socket", Arg: 1, Flags: []string{"SOCK_CLOEXEC"}}),
			[]ArgRule{{Syscall: "socket", Arg: 1}}},
		{"masks intersect",
			sock(ArgRule{Syscall: "socket", Arg: 1, Mask: "0xf", Values: []string{"0x11"}}),
			sock(ArgRule{Syscall: "socket", Arg: 1, Mask: "0x3", Values: []string{"0x2"}}),
			[]ArgRule{{Syscall: "socket", Arg: 1, Mask: "0x3", Values: []string{"0x1", "0x2"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := Merge(tt.a, tt.b)
			if d := cmp.Diff(tt.want, m.Syscalls.Args, cmpNilEmpty); d != "" {
				t.Errorf("args (-want +got):\n%s", d)
			}
		})
	}
}

func TestMergeNil(t *testing.T) {
	p := sampleProfile()
	if d := cmp.Diff(Merge(nil, p), Merge(p, nil)); d != "" {
		t.Error(d)
	}
	if Merge(nil, p).Metadata.Runs != p.Metadata.Runs {
		t.Error("Merge(nil, p) changed runs")
	}
}

// Merging runs (learn --runs, learning into a profile, sysprof merge) widens who may reach an
// endpoint the way one run does (ReachedBy): two binaries make it any binary's, an empty by
// stays every binary's, one binary keeps its name.
func TestMergeEndpointBy(t *testing.T) {
	ep := func(e, by string) Endpoint {
		return Endpoint{Endpoint: e, Proto: "tcp", Provenance: Provenance{By: by, Seen: 1}}
	}
	a := &Profile{Network: Network{Connect: []Endpoint{ep("a.test:443", "/usr/bin/git"), ep("b.test:443", "/usr/bin/curl"), ep("c.test:443", ""), ep("d.test:443", "/usr/bin/node")}}}
	b := &Profile{Network: Network{Connect: []Endpoint{ep("a.test:443", "/usr/bin/curl"), ep("b.test:443", AnyBinary), ep("c.test:443", "/usr/bin/node"), ep("d.test:443", "/usr/bin/node")}}}
	got := map[string]string{}
	for _, e := range Merge(a, b).Network.Connect {
		got[e.Endpoint] = e.By
	}
	want := map[string]string{"a.test:443": AnyBinary, "b.test:443": AnyBinary, "c.test:443": "", "d.test:443": "/usr/bin/node"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("by per endpoint (-want +got):\n%s", d)
	}
}
