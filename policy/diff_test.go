package policy

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sysprof/sysprof/paths"
)

// baseProfile is a typical learned build profile: credential stores hidden, some network.
func baseProfile() *Profile {
	p := &Profile{
		APIVersion: APIVersion, Kind: Kind,
		Metadata: Metadata{Name: "make", Command: []string{"make"}, Runs: 1},
		Syscalls: Syscalls{
			Architectures: []string{"x86_64"},
			Allow:         []Syscall{{Name: "read"}, {Name: "write"}, {Name: "openat"}, {Name: "socket"}, {Name: "clone"}, {Name: "ioctl"}, {Name: "personality"}},
			Args: []ArgRule{
				{Syscall: "socket", Arg: 0, Name: "domain", Values: []string{"AF_INET", "AF_UNIX"}},
				{Syscall: "socket", Arg: 1, Name: "type", Mask: "0xf", Values: []string{"SOCK_STREAM"}},
				{Syscall: "clone", Arg: 0, Name: "flags", Flags: []string{"CLONE_VM", "CLONE_FS", "CLONE_FILES", "CLONE_SIGHAND", "CLONE_THREAD", "SIGCHLD"}},
				{Syscall: "ioctl", Arg: 1, Name: "request", Values: []string{"TCGETS", "TIOCGWINSZ"}},
				{Syscall: "personality", Arg: 0, Values: []string{"PER_LINUX"}},
			},
		},
		Filesystem: Filesystem{
			Read:       []PathRule{{Path: "/usr"}, {Path: "/etc"}, {Path: "$WORKDIR"}, {Path: "$HOME/.gitconfig"}},
			Write:      []PathRule{{Path: "$WORKDIR/out"}, {Path: "/dev/null"}},
			Exec:       []PathRule{{Path: "/usr/bin/make"}, {Path: "/usr/bin/cc"}},
			PrivateTmp: true,
		},
		Network: Network{Connect: []Endpoint{{Endpoint: "registry.example:443", Proto: "tcp"}}},
		Binaries: []Binary{
			{Path: "/usr/bin/make", SHA256: strings.Repeat("a", 64)},
			{Path: "/usr/bin/cc", SHA256: strings.Repeat("b", 64)},
		},
	}
	for _, c := range paths.CredentialStores() {
		p.Filesystem.Hidden = append(p.Filesystem.Hidden, PathRule{Path: c, Note: "credential store"})
	}
	return p
}

type want struct {
	kind    ChangeKind
	section string
	item    string
	risk    Risk
	widens  bool
}

func TestDiffRisk(t *testing.T) {
	tests := []struct {
		name   string
		change func(p *Profile)
		want   []want
	}{
		{"unchanged", func(p *Profile) {}, nil},
		{"provenance only", func(p *Profile) { p.Syscalls.Allow[0].Seen = 9; p.Metadata.Runs = 9 }, nil},
		// Syscalls.
		{"ordinary syscall", func(p *Profile) {
			p.Syscalls.Allow = append(p.Syscalls.Allow, Syscall{Name: "getrandom", Provenance: Provenance{By: "/usr/bin/cc"}})
		},
			[]want{{Added, SectionSyscalls, "getrandom", RiskLow, true}}},
		{"privileged mount", func(p *Profile) { p.Syscalls.Allow = append(p.Syscalls.Allow, Syscall{Name: "mount"}) },
			[]want{{Added, SectionSyscalls, "mount", RiskCritical, true}}},
		{"privileged bpf", func(p *Profile) { p.Syscalls.Allow = append(p.Syscalls.Allow, Syscall{Name: "bpf"}) },
			[]want{{Added, SectionSyscalls, "bpf", RiskCritical, true}}},
		{"privileged ptrace", func(p *Profile) { p.Syscalls.Allow = append(p.Syscalls.Allow, Syscall{Name: "ptrace"}) },
			[]want{{Added, SectionSyscalls, "ptrace", RiskCritical, true}}},
		{"privileged kexec and modules", func(p *Profile) {
			p.Syscalls.Allow = append(p.Syscalls.Allow, Syscall{Name: "kexec_load"}, Syscall{Name: "finit_module"})
		}, []want{{Added, SectionSyscalls, "finit_module", RiskCritical, true}, {Added, SectionSyscalls, "kexec_load", RiskCritical, true}}},
		{"privileged namespaces keyring perf io_uring", func(p *Profile) {
			for _, n := range []string{"unshare", "setns", "keyctl", "perf_event_open", "io_uring_setup"} {
				p.Syscalls.Allow = append(p.Syscalls.Allow, Syscall{Name: n})
			}
		}, []want{
			{Added, SectionSyscalls, "io_uring_setup", RiskCritical, true}, {Added, SectionSyscalls, "keyctl", RiskCritical, true},
			{Added, SectionSyscalls, "perf_event_open", RiskCritical, true}, {Added, SectionSyscalls, "setns", RiskCritical, true},
			{Added, SectionSyscalls, "unshare", RiskCritical, true},
		}},
		{"syscall removed", func(p *Profile) { p.Syscalls.Allow = p.Syscalls.Allow[1:] },
			[]want{{Removed, SectionSyscalls, "read", RiskNone, false}}},
		// Argument rules.
		{"new socket family", func(p *Profile) { p.Syscalls.Args[0].Values = append(p.Syscalls.Args[0].Values, "AF_NETLINK") },
			[]want{{Widened, SectionArgs, "socket arg 0 (domain): AF_NETLINK", RiskHigh, true}}},
		{"numeric spelling is the same value", func(p *Profile) { p.Syscalls.Args[0].Values = []string{"2", "0x1"} }, nil},
		{"socket family restriction lifted", func(p *Profile) { p.Syscalls.Args = p.Syscalls.Args[1:] },
			[]want{{Widened, SectionArgs, "socket arg 0 (domain): any value", RiskHigh, true}}},
		{"raw socket type", func(p *Profile) { p.Syscalls.Args[1].Values = append(p.Syscalls.Args[1].Values, "SOCK_RAW") },
			[]want{{Widened, SectionArgs, "socket arg 1 (type): SOCK_RAW", RiskHigh, true}}},
		{"ordinary socket type", func(p *Profile) { p.Syscalls.Args[1].Values = append(p.Syscalls.Args[1].Values, "SOCK_DGRAM") },
			[]want{{Widened, SectionArgs, "socket arg 1 (type): SOCK_DGRAM", RiskLow, true}}},
		{"mask loosened", func(p *Profile) { p.Syscalls.Args[1].Mask = "0x7" },
			[]want{{Widened, SectionArgs, "socket arg 1 (type): mask 0xf → 0x7", RiskHigh, true}}},
		{"namespace clone flag", func(p *Profile) { p.Syscalls.Args[2].Flags = append(p.Syscalls.Args[2].Flags, "CLONE_NEWUSER") },
			[]want{{Widened, SectionArgs, "clone arg 0 (flags): +CLONE_NEWUSER", RiskCritical, true}}},
		{"ordinary clone flag", func(p *Profile) { p.Syscalls.Args[2].Flags = append(p.Syscalls.Args[2].Flags, "CLONE_SETTLS") },
			[]want{{Widened, SectionArgs, "clone arg 0 (flags): +CLONE_SETTLS", RiskLow, true}}},
		{"clone flags unchecked", func(p *Profile) { p.Syscalls.Args[2].Flags = nil },
			[]want{{Widened, SectionArgs, "clone arg 0 (flags): any value", RiskCritical, true}}},
		{"TIOCSTI", func(p *Profile) { p.Syscalls.Args[3].Values = append(p.Syscalls.Args[3].Values, "TIOCSTI") },
			[]want{{Widened, SectionArgs, "ioctl arg 1 (request): TIOCSTI", RiskCritical, true}}},
		{"TIOCLINUX by number", func(p *Profile) { p.Syscalls.Args[3].Values = append(p.Syscalls.Args[3].Values, "0x541c") },
			[]want{{Widened, SectionArgs, "ioctl arg 1 (request): TIOCLINUX", RiskCritical, true}}},
		{"ordinary ioctl", func(p *Profile) { p.Syscalls.Args[3].Values = append(p.Syscalls.Args[3].Values, "FIONREAD") },
			[]want{{Widened, SectionArgs, "ioctl arg 1 (request): FIONREAD", RiskLow, true}}},
		{"personality aslr off", func(p *Profile) {
			p.Syscalls.Args[4].Values = append(p.Syscalls.Args[4].Values, "PER_LINUX|ADDR_NO_RANDOMIZE")
		}, []want{{Widened, SectionArgs, "personality arg 0: ADDR_NO_RANDOMIZE", RiskHigh, true}}},
		{"new syscall with its rule", func(p *Profile) {
			p.Syscalls.Allow = append(p.Syscalls.Allow, Syscall{Name: "socketpair"})
			p.Syscalls.Args = append(p.Syscalls.Args, ArgRule{Syscall: "socketpair", Arg: 0, Values: []string{"AF_UNIX"}})
		}, []want{{Added, SectionArgs, "socketpair arg 0: AF_UNIX", RiskHigh, true}, {Added, SectionSyscalls, "socketpair", RiskLow, true}}},
		{"value removed", func(p *Profile) { p.Syscalls.Args[0].Values = []string{"AF_UNIX"} },
			[]want{{Narrowed, SectionArgs, "socket arg 0 (domain): AF_INET", RiskNone, false}}},
		{"argument newly restricted", func(p *Profile) {
			p.Syscalls.Args = append(p.Syscalls.Args, ArgRule{Syscall: "openat", Arg: 2, Flags: []string{"0x80000"}})
		}, []want{{Narrowed, SectionArgs, "openat arg 2: +0x80000", RiskNone, false}}},
		// Architectures.
		{"new architecture", func(p *Profile) { p.Syscalls.Architectures = append(p.Syscalls.Architectures, "i386") },
			[]want{{Added, SectionArchitectures, "i386", RiskHigh, true}}},
		// Filesystem.
		{"credential store readable", func(p *Profile) {
			p.Filesystem.Hidden = hiddenWithout(p, "$HOME/.ssh")
			p.Filesystem.Read = append(p.Filesystem.Read, PathRule{Path: "$HOME/.ssh"})
		},
			[]want{{Added, SectionRead, "$HOME/.ssh", RiskCritical, true}, {Removed, SectionHidden, "$HOME/.ssh", RiskCritical, true}}},
		{"credential file by absolute home path", func(p *Profile) {
			p.Filesystem.Hidden = nil
			p.Filesystem.Read = append(p.Filesystem.Read, PathRule{Path: "/home/alice/.aws/credentials"})
		}, nil /* checked below: the read is critical */},
		{"broad home read exposes stores that are not hidden", func(p *Profile) {
			p.Filesystem.Hidden = hiddenWithout(p, "$HOME/.kube")
			p.Filesystem.Read = append(p.Filesystem.Read, PathRule{Path: "$HOME"})
		}, []want{{Added, SectionRead, "$HOME", RiskCritical, true}, {Removed, SectionHidden, "$HOME/.kube", RiskCritical, true}}},
		{"broad home read with every store hidden", func(p *Profile) { p.Filesystem.Read = append(p.Filesystem.Read, PathRule{Path: "$HOME"}) },
			[]want{{Added, SectionRead, "$HOME", RiskHigh, true}}},
		{"read inside hidden store", func(p *Profile) {
			p.Filesystem.Read = append(p.Filesystem.Read, PathRule{Path: "$HOME/.ssh/known_hosts"})
		},
			[]want{{Added, SectionRead, "$HOME/.ssh/known_hosts", RiskLow, true}}},
		{"dotenv exposed by unhiding", func(p *Profile) {
			p.Filesystem.Hidden = hiddenWithout(&Profile{Filesystem: Filesystem{Hidden: hiddenWithout(p, "$WORKDIR/.env")}}, "$WORKDIR/**/.env")
		}, []want{{Removed, SectionHidden, "$WORKDIR/**/.env", RiskCritical, true}, {Removed, SectionHidden, "$WORKDIR/.env", RiskCritical, true}}},
		{"a store in the one list (once synth's only) is critical", func(p *Profile) {
			p.Filesystem.Hidden = hiddenWithout(p, "$HOME/.pgpass")
			p.Filesystem.Read = append(p.Filesystem.Read, PathRule{Path: "$HOME/.pgpass"})
		}, []want{{Added, SectionRead, "$HOME/.pgpass", RiskCritical, true}, {Removed, SectionHidden, "$HOME/.pgpass", RiskCritical, true}}},
		{"dotenv still hidden by **", func(p *Profile) { p.Filesystem.Hidden = hiddenWithout(p, "$WORKDIR/.env") }, nil},
		{"system read", func(p *Profile) { p.Filesystem.Read = append(p.Filesystem.Read, PathRule{Path: "/lib64"}) },
			[]want{{Added, SectionRead, "/lib64", RiskLow, true}}},
		{"covered read is no change", func(p *Profile) {
			p.Filesystem.Read = append(p.Filesystem.Read, PathRule{Path: "/usr/lib/x86_64-linux-gnu"})
		}, nil},
		{"system secret read", func(p *Profile) { p.Filesystem.Read = append(p.Filesystem.Read, PathRule{Path: "/etc/shadow"}) }, nil /* covered by /etc: no change */},
		{"read outside everything", func(p *Profile) { p.Filesystem.Read = append(p.Filesystem.Read, PathRule{Path: "/srv/data"}) },
			[]want{{Added, SectionRead, "/srv/data", RiskHigh, true}}},
		{"write in work tree", func(p *Profile) { p.Filesystem.Write = append(p.Filesystem.Write, PathRule{Path: "$WORKDIR/target"}) },
			[]want{{Added, SectionWrite, "$WORKDIR/target", RiskLow, true}}},
		{"write in tool cache", func(p *Profile) { p.Filesystem.Write = append(p.Filesystem.Write, PathRule{Path: "$GOCACHE"}) },
			[]want{{Added, SectionWrite, "$GOCACHE", RiskLow, true}}},
		// The base writes nothing in its private /tmp, so the enforcer gives it no write there:
		// the first temp file is a change (once one is there the rest are not:
		// TestDiffIgnoresTempFilesInAPrivateTmp).
		{"first write temp glob in a private tmp", func(p *Profile) { p.Filesystem.Write = append(p.Filesystem.Write, PathRule{Path: "$TMPDIR/go-build*"}) },
			[]want{{Added, SectionWrite, "$TMPDIR/go-build*", RiskLow, true}}},
		{"write whole work tree", func(p *Profile) { p.Filesystem.Write = append(p.Filesystem.Write, PathRule{Path: "$WORKDIR"}) },
			[]want{{Added, SectionWrite, "$WORKDIR", RiskHigh, true}}},
		{"write outside", func(p *Profile) { p.Filesystem.Write = append(p.Filesystem.Write, PathRule{Path: "$HOME/.bashrc"}) },
			[]want{{Added, SectionWrite, "$HOME/.bashrc", RiskCritical, true}}},
		{"write system", func(p *Profile) { p.Filesystem.Write = append(p.Filesystem.Write, PathRule{Path: "/usr/local/bin"}) },
			[]want{{Added, SectionWrite, "/usr/local/bin", RiskCritical, true}}},
		{"write harmless device", func(p *Profile) { p.Filesystem.Write = append(p.Filesystem.Write, PathRule{Path: "/dev/tty"}) },
			[]want{{Added, SectionWrite, "/dev/tty", RiskLow, true}}},
		{"exec new path", func(p *Profile) { p.Filesystem.Exec = append(p.Filesystem.Exec, PathRule{Path: "/usr/bin/curl"}) },
			[]want{{Added, SectionExec, "/usr/bin/curl", RiskHigh, true}}},
		{"privateTmp off", func(p *Profile) { p.Filesystem.PrivateTmp = false },
			[]want{{Widened, SectionPrivateTmp, "privateTmp: false", RiskHigh, true}}},
		{"hidden added", func(p *Profile) {
			p.Filesystem.Hidden = append(p.Filesystem.Hidden, PathRule{Path: "$HOME/.config/secret-tool"})
		},
			[]want{{Added, SectionHidden, "$HOME/.config/secret-tool", RiskNone, false}}},
		{"path removed", func(p *Profile) { p.Filesystem.Write = p.Filesystem.Write[1:] },
			[]want{{Removed, SectionWrite, "$WORKDIR/out", RiskNone, false}}},
		// Network.
		{"new registry-class host", func(p *Profile) {
			p.Network.Connect = append(p.Network.Connect, Endpoint{Endpoint: "mirror.example:443", Proto: "tcp"})
		}, []want{{Added, SectionConnect, "tcp mirror.example:443", RiskHigh, true}}},
		{"git ssh remote", func(p *Profile) {
			p.Network.Connect = append(p.Network.Connect, Endpoint{Endpoint: "git.example:22", Proto: "tcp"})
		},
			[]want{{Added, SectionConnect, "tcp git.example:22", RiskHigh, true}}},
		{"git protocol", func(p *Profile) {
			p.Network.Connect = append(p.Network.Connect, Endpoint{Endpoint: "git.example:9418", Proto: "tcp"})
		},
			[]want{{Added, SectionConnect, "tcp git.example:9418", RiskHigh, true}}},
		{"named host odd port", func(p *Profile) {
			p.Network.Connect = append(p.Network.Connect, Endpoint{Endpoint: "c2.example:4444", Proto: "tcp"})
		},
			[]want{{Added, SectionConnect, "tcp c2.example:4444", RiskCritical, true}}},
		{"named host udp 443", func(p *Profile) {
			p.Network.Send = append(p.Network.Send, Endpoint{Endpoint: "quic.example:443", Proto: "udp"})
		},
			[]want{{Added, SectionSend, "udp quic.example:443", RiskCritical, true}}},
		{"raw ip on 443", func(p *Profile) {
			p.Network.Connect = append(p.Network.Connect, Endpoint{Endpoint: "192.0.2.7:443", Proto: "tcp"})
		},
			[]want{{Added, SectionConnect, "tcp 192.0.2.7:443", RiskCritical, true}}},
		{"new loopback port", func(p *Profile) {
			p.Network.Connect = append(p.Network.Connect, Endpoint{Endpoint: "127.0.0.1:41234", Proto: "tcp"})
		},
			[]want{{Added, SectionConnect, "tcp 127.0.0.1:41234", RiskCritical, true}}},
		{"cidr", func(p *Profile) {
			p.Network.Connect = append(p.Network.Connect, Endpoint{Endpoint: "[2001:db8::/32]:443", Proto: "tcp"})
		},
			[]want{{Added, SectionConnect, "tcp [2001:db8::/32]:443", RiskCritical, true}}},
		{"dns", func(p *Profile) {
			p.Network.Send = append(p.Network.Send, Endpoint{Endpoint: "127.0.0.53:53", Proto: "udp"})
		},
			[]want{{Added, SectionSend, "udp 127.0.0.53:53", RiskHigh, true}}},
		{"docker socket", func(p *Profile) {
			p.Network.Connect = append(p.Network.Connect, Endpoint{Endpoint: "unix:/var/run/docker.sock"})
		},
			[]want{{Added, SectionConnect, "unix:/var/run/docker.sock", RiskCritical, true}}},
		{"ssh agent socket", func(p *Profile) {
			p.Network.Connect = append(p.Network.Connect, Endpoint{Endpoint: "unix:$TMPDIR/ssh-XXXX/agent.123"})
		},
			[]want{{Added, SectionConnect, "unix:$TMPDIR/ssh-XXXX/agent.123", RiskCritical, true}}},
		{"nscd socket", func(p *Profile) {
			p.Network.Connect = append(p.Network.Connect, Endpoint{Endpoint: "unix:/run/nscd/socket"})
		},
			[]want{{Added, SectionConnect, "unix:/run/nscd/socket", RiskLow, true}}},
		{"other unix socket", func(p *Profile) {
			p.Network.Connect = append(p.Network.Connect, Endpoint{Endpoint: "unix:@some-daemon"})
		},
			[]want{{Added, SectionConnect, "unix:@some-daemon", RiskHigh, true}}},
		{"bind ephemeral loopback", func(p *Profile) {
			p.Network.Bind = append(p.Network.Bind, Endpoint{Endpoint: "127.0.0.1:0", Proto: "tcp"})
		},
			[]want{{Added, SectionBind, "tcp 127.0.0.1:0", RiskLow, true}}},
		{"bind fixed loopback", func(p *Profile) {
			p.Network.Bind = append(p.Network.Bind, Endpoint{Endpoint: "[::1]:8080", Proto: "tcp"})
		},
			[]want{{Added, SectionBind, "tcp [::1]:8080", RiskHigh, true}}},
		{"bind any address", func(p *Profile) {
			p.Network.Bind = append(p.Network.Bind, Endpoint{Endpoint: "0.0.0.0/0:8080", Proto: "tcp"})
		},
			[]want{{Added, SectionBind, "tcp 0.0.0.0/0:8080", RiskCritical, true}}},
		{"bind unix in temp", func(p *Profile) { p.Network.Bind = append(p.Network.Bind, Endpoint{Endpoint: "unix:$TMPDIR/x.sock"}) },
			[]want{{Added, SectionBind, "unix:$TMPDIR/x.sock", RiskLow, true}}},
		{"endpoint removed", func(p *Profile) { p.Network.Connect = nil },
			[]want{{Removed, SectionConnect, "tcp registry.example:443", RiskNone, false}}},
		// Binaries.
		{"new binary", func(p *Profile) {
			p.Binaries = append(p.Binaries, Binary{Path: "/usr/bin/curl", SHA256: strings.Repeat("c", 64)})
		},
			[]want{{Added, SectionBinaries, "/usr/bin/curl", RiskHigh, true}}},
		{"changed binary", func(p *Profile) { p.Binaries[1].SHA256 = strings.Repeat("d", 64) },
			[]want{{Widened, SectionBinaries, "/usr/bin/cc sha256:dddddddddddd", RiskHigh, true}}},
		{"binary removed", func(p *Profile) { p.Binaries = p.Binaries[:1] },
			[]want{{Removed, SectionBinaries, "/usr/bin/cc", RiskNone, false}}},
		// Metadata.
		{"incomplete on", func(p *Profile) {
			p.Metadata.Incomplete = true
			p.Metadata.IncompleteReasons = []string{"lost 3 events"}
		},
			[]want{{Added, SectionIncomplete, "incomplete: true", RiskNone, false}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := baseProfile()
			nw := baseProfile()
			tt.change(nw)
			before := Clone(nw)
			got := Diff(old, nw)
			if d := cmp.Diff(before, nw); d != "" {
				t.Fatalf("Diff modified its input:\n%s", d)
			}
			var gotW []want
			for _, c := range got {
				gotW = append(gotW, want{c.Kind, c.Section, c.Item, c.Risk, c.Widens})
				if c.Reason == "" {
					t.Errorf("change without a reason: %v", c)
				}
			}
			if tt.want == nil && tt.name == "credential file by absolute home path" {
				if len(got) == 0 || got[0].Risk != RiskCritical || got[0].Section != SectionRead {
					t.Errorf("got %v", got)
				}
				return
			}
			if d := cmp.Diff(tt.want, gotW, cmp.AllowUnexported(want{})); d != "" {
				t.Errorf("Diff (-want +got):\n%s\nchanges:\n%s", d, changesString(got))
			}
			// Reversed, a pure widening becomes a pure narrowing and the other way round
			// (hidden paths subtract, so they flip the other way; a changed hash is a change
			// both ways).
			if len(got) == 0 || tt.name == "changed binary" {
				return
			}
			fwd, rev := 0, 0
			for _, c := range got {
				if c.Widens {
					fwd++
				}
			}
			back := Diff(nw, old)
			for _, c := range back {
				if c.Widens {
					rev++
				}
			}
			if fwd == len(got) && rev != 0 && !hiddenInvolved(got) {
				t.Errorf("reverse of a widening widens:\n%s", changesString(back))
			}
			if fwd == 0 && rev == 0 && got[0].Section != SectionIncomplete && got[0].Section != SectionHidden {
				t.Errorf("reverse of a narrowing does not widen:\n%s", changesString(back))
			}
		})
	}
}

func hiddenInvolved(cs []Change) bool {
	for _, c := range cs {
		if c.Section == SectionHidden {
			return true
		}
	}
	return false
}

func hiddenWithout(p *Profile, path string) []PathRule {
	var out []PathRule
	for _, h := range p.Filesystem.Hidden {
		if h.Path != path {
			out = append(out, h)
		}
	}
	return out
}

func changesString(cs []Change) string {
	var b strings.Builder
	for _, c := range cs {
		fmt.Fprintln(&b, c)
	}
	return b.String()
}

func TestDiffOrderAndWidens(t *testing.T) {
	old := baseProfile()
	nw := baseProfile()
	nw.Syscalls.Allow = append(nw.Syscalls.Allow, Syscall{Name: "getrandom"}, Syscall{Name: "ptrace"})
	nw.Filesystem.Exec = append(nw.Filesystem.Exec, PathRule{Path: "/usr/bin/curl"})
	nw.Binaries = nw.Binaries[:1]
	got := Diff(old, nw)
	var order []string
	for _, c := range got {
		order = append(order, c.Risk.String()+" "+c.Item)
	}
	wantOrder := []string{"critical ptrace", "high /usr/bin/curl", "low getrandom", "none /usr/bin/cc"}
	if d := cmp.Diff(wantOrder, order); d != "" {
		t.Errorf("order (-want +got):\n%s", d)
	}
	for _, tt := range []struct {
		at   Risk
		want bool
	}{{RiskLow, true}, {RiskHigh, true}, {RiskCritical, true}} {
		if Widens(got, tt.at) != tt.want {
			t.Errorf("Widens(%v) = %v", tt.at, !tt.want)
		}
	}
	onlyLow := Diff(old, func() *Profile {
		p := baseProfile()
		p.Syscalls.Allow = append(p.Syscalls.Allow, Syscall{Name: "getrandom"})
		return p
	}())
	if !Widens(onlyLow, RiskLow) || Widens(onlyLow, RiskHigh) {
		t.Error("Widens threshold wrong for a low change")
	}
	narrowing := Diff(old, func() *Profile { p := baseProfile(); p.Syscalls.Allow = p.Syscalls.Allow[1:]; return p }())
	if Widens(narrowing, RiskLow) || Widens(narrowing, RiskNone) {
		t.Error("narrowing counted as widening")
	}
	if len(Diff(nil, nil)) != 0 {
		t.Error("Diff(nil, nil) not empty")
	}
}

func TestRiskText(t *testing.T) {
	for _, r := range []Risk{RiskNone, RiskLow, RiskHigh, RiskCritical} {
		got, err := ParseRisk(strings.ToUpper(r.String()))
		if err != nil || got != r {
			t.Errorf("ParseRisk(%q) = %v, %v", r, got, err)
		}
	}
	if _, err := ParseRisk("medium"); err == nil {
		t.Error("ParseRisk(medium) accepted")
	}
	b, err := json.Marshal(Change{Kind: Added, Section: SectionSyscalls, Item: "bpf", Risk: RiskCritical, Widens: true})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"kind":"added","section":"syscalls.allow","item":"bpf","risk":"critical","reason":"","widens":true}`; string(b) != want {
		t.Errorf("json %s, want %s", b, want)
	}
	var c Change
	if err := json.Unmarshal(b, &c); err != nil || c.Risk != RiskCritical {
		t.Errorf("unmarshal: %v %v", c, err)
	}
}

func TestEndpointRiskTable(t *testing.T) {
	// The rule in EndpointRisk's doc, row by row.
	for _, tt := range []struct {
		section, ep, proto string
		want               Risk
	}{
		{SectionConnect, "unix:/run/docker.sock", "", RiskCritical},
		{SectionConnect, "unix:/run/dbus/system_bus_socket", "", RiskCritical},
		{SectionConnect, "unix:/run/user/1000/gnupg/S.gpg-agent", "", RiskCritical},
		{SectionConnect, "unix:/run/systemd/journal/socket", "", RiskLow},
		{SectionConnect, "unix:/run/other.sock", "", RiskHigh},
		{SectionConnect, "resolver.example:53", "udp", RiskHigh},
		{SectionConnect, "host.example:443", "tcp", RiskHigh},
		{SectionConnect, "host.example:80", "tcp", RiskHigh},
		{SectionConnect, "host.example:22", "mptcp", RiskHigh},
		{SectionConnect, "host.example:9418", "tcp", RiskHigh},
		{SectionConnect, "host.example:8443", "tcp", RiskCritical},
		{SectionSend, "host.example:443", "udp", RiskCritical},
		{SectionConnect, "localhost:443", "tcp", RiskCritical},
		{SectionConnect, "127.0.0.1:443", "tcp", RiskCritical},
		{SectionConnect, "[::1]:22", "tcp", RiskCritical},
		{SectionConnect, "198.51.100.0/24:443", "tcp", RiskCritical},
		{SectionBind, "unix:$WORKDIR/s.sock", "", RiskLow},
		{SectionBind, "unix:/run/s.sock", "", RiskHigh},
		{SectionBind, "127.0.0.1:0", "tcp", RiskLow},
		{SectionBind, "127.0.0.1:9000", "tcp", RiskHigh},
		{SectionBind, "0.0.0.0/0:0", "tcp", RiskCritical},
		{SectionBind, "[::]:0", "udp", RiskCritical},
	} {
		got, why := EndpointRisk(tt.section, Endpoint{Endpoint: tt.ep, Proto: tt.proto}, true)
		if got != tt.want || why == "" {
			t.Errorf("EndpointRisk(%s, %s %s) = %v (%s), want %v", tt.section, tt.proto, tt.ep, got, why, tt.want)
		}
	}
}

func TestCredentialStoresAreValidHiddenPaths(t *testing.T) {
	for _, c := range paths.CredentialStores() {
		if msg := pathProblem(c); msg != "" {
			t.Errorf("%s: %s", c, msg)
		}
	}
}

// TestExecMemoryRuleIsAWidening: enforce refuses PROT_EXEC on mmap/mprotect unless a rule lets
// it through, so a profile that gains that rule widens (a tool starts to JIT, or to inject
// code) and one that loses it narrows; and a merge keeps the rule (no rule is "never", not
// "any value").
func TestExecMemoryRuleIsAWidening(t *testing.T) {
	base := func() *Profile {
		return &Profile{Syscalls: Syscalls{Allow: []Syscall{{Name: "mmap"}, {Name: "mprotect"}}}}
	}
	jit := base()
	jit.Syscalls.Args = []ArgRule{{Syscall: "mprotect", Arg: 2, Name: "prot", Mask: "PROT_EXEC", Values: []string{"PROT_NONE", "PROT_EXEC"}}}
	widens := func(cs []Change) (n int) {
		for _, c := range cs {
			if c.Widens {
				n++
				if c.Risk < RiskHigh {
					t.Errorf("exec memory widening rated %s: %s", c.Risk, c)
				}
			}
		}
		return n
	}
	if n := widens(Diff(base(), jit)); n != 1 {
		t.Errorf("gaining the exec-memory rule: %d widenings, want 1: %v", n, Diff(base(), jit))
	}
	if n := widens(Diff(jit, base())); n != 0 {
		t.Errorf("losing the exec-memory rule widens: %v", Diff(jit, base()))
	}
	for _, m := range []*Profile{Merge(base(), jit), Merge(jit, base())} {
		if len(m.Syscalls.Args) != 1 || m.Syscalls.Args[0].Syscall != "mprotect" {
			t.Errorf("merge with a profile without the rule dropped it: %+v", m.Syscalls.Args)
		}
	}
}

// The memfd rule is the same kind of allowance: enforce makes memfds non-executable unless a
// rule on memfd_create's flags names MFD_EXEC, so gaining it widens (high) and a merge keeps it.
func TestMemfdExecRuleIsAWidening(t *testing.T) {
	base := func() *Profile { return &Profile{Syscalls: Syscalls{Allow: []Syscall{{Name: "memfd_create"}}}} }
	code := base()
	code.Syscalls.Args = []ArgRule{{Syscall: "memfd_create", Arg: 1, Name: "flags", Mask: "0x10", Values: []string{"0", "0x10"}}}
	widens := func(cs []Change) (n int) {
		for _, c := range cs {
			if c.Widens {
				n++
				if c.Risk < RiskHigh {
					t.Errorf("memfd exec widening rated %s: %s", c.Risk, c)
				}
			}
		}
		return n
	}
	if n := widens(Diff(base(), code)); n != 1 {
		t.Errorf("gaining the memfd rule: %d widenings, want 1: %v", n, Diff(base(), code))
	}
	if n := widens(Diff(code, base())); n != 0 {
		t.Errorf("losing the memfd rule widens: %v", Diff(code, base()))
	}
	for _, m := range []*Profile{Merge(base(), code), Merge(code, base())} {
		if len(m.Syscalls.Args) != 1 || m.Syscalls.Args[0].Syscall != "memfd_create" {
			t.Errorf("merge with a profile without the rule dropped it: %+v", m.Syscalls.Args)
		}
	}
}

// prlimit64 on another pid is refused unless a rule names it (refine adds one from a denial's
// "+ pid" suggestion), so no rule there is "pid 0", not "any value": gaining a pid widens,
// losing it (a drift whose learn has no rule) narrows, and a merge keeps the rule.
func TestPrlimitPidRuleIsAWidening(t *testing.T) {
	base := func() *Profile { return &Profile{Syscalls: Syscalls{Allow: []Syscall{{Name: "prlimit64"}}}} }
	other := base()
	other.Syscalls.Args = []ArgRule{{Syscall: "prlimit64", Arg: 0, Values: []string{"0x0", "0x1"}}}
	widens := func(cs []Change) (n int) {
		for _, c := range cs {
			if c.Widens {
				n++
			}
		}
		return n
	}
	if n := widens(Diff(base(), other)); n != 1 {
		t.Errorf("gaining pid 1: %d widenings, want 1: %v", n, Diff(base(), other))
	}
	if n := widens(Diff(other, base())); n != 0 {
		t.Errorf("losing the pid rule widens: %v", Diff(other, base()))
	}
	for _, m := range []*Profile{Merge(base(), other), Merge(other, base())} {
		if len(m.Syscalls.Args) != 1 || m.Syscalls.Args[0].Syscall != "prlimit64" {
			t.Errorf("merge with a profile without the rule dropped it: %+v", m.Syscalls.Args)
		}
	}
}

// A read of a file the old profile executes is no widening: enforce grants an exec rule's
// files read too (node opens its own executable in some runs only: a CI flake of drift).
func TestReadOfAnExecutableIsNoWidening(t *testing.T) {
	old := &Profile{Filesystem: Filesystem{Exec: []PathRule{{Path: "/opt/node/bin/node"}, {Path: "$WORKDIR/target/**"}}}}
	for _, p := range []string{"/opt/node/bin/node", "$WORKDIR/target/debug/app"} {
		n := Clone(old)
		n.Filesystem.Read = []PathRule{{Path: p}}
		if got := Diff(old, n); len(got) != 0 {
			t.Errorf("read of executable %s: %v, want no change", p, got)
		}
	}
	n := Clone(old)
	n.Filesystem.Read = []PathRule{{Path: "/opt/node/lib/secret"}}
	if got := Diff(old, n); len(got) != 1 || !got[0].Widens {
		t.Errorf("read beside the executable: %v, want one widening", got)
	}
}
