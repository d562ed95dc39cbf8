package enforcer

import (
	"bytes"
	"cmp"
	"reflect"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/refine"
	"github.com/sysprof/sysprof/report"
)

// TestRiskAgrees checks that one change gets one risk: the enforcer's denial (what the report
// says), refine's proposal for that denial, and `sysprof diff` of the profile before and after
// the change. Writes to protected paths are critical in all three.
func TestRiskAgrees(t *testing.T) {
	env := map[string]string{"HOME": "/home/alice", "WORKDIR": "/home/alice/src/app", "TMPDIR": "/tmp"}
	base := func() *policy.Profile {
		p := testProfile()
		p.APIVersion, p.Kind = policy.APIVersion, policy.Kind
		p.Syscalls.Architectures = []string{"x86_64"}
		p.Syscalls.Args = append(p.Syscalls.Args,
			policy.ArgRule{Syscall: "ioctl", Arg: 1, Deny: []string{"TIOCSTI", "TIOCLINUX"}},
			policy.ArgRule{Syscall: "clone", Arg: 0, Flags: []string{"CLONE_VM", "CLONE_FS", "CLONE_FILES", "CLONE_SIGHAND", "CLONE_THREAD"}})
		p.Filesystem.Read = []policy.PathRule{{Path: "$WORKDIR"}, {Path: "/usr/lib"}}
		p.Filesystem.Write = []policy.PathRule{{Path: "$WORKDIR/target"}}
		p.Filesystem.Hidden = []policy.PathRule{{Path: "$HOME/.ssh"}}
		return p
	}
	c, err := Compile(base(), Env{Arch: "x86_64", Vars: env})
	if err != nil {
		t.Fatal(err)
	}
	a := func(xs ...uint64) (r [6]uint64) { copy(r[:], xs); return }
	type call struct {
		name string
		args [6]uint64
	}
	for _, tc := range []struct {
		name string
		// One of: a syscall the enforcer's supervisor refused, a file or a network denial.
		call     *call
		access   string // file: read, exec, write, create
		path     string // file: portable
		section  string // network
		endpoint string // network: host:port
		proto    string
		// add is the change to the profile, as diff sees it.
		add  func(p *policy.Profile)
		want policy.Risk
	}{
		{name: "git hook write", access: "create", path: "$WORKDIR/.git/hooks/pre-commit",
			add: func(p *policy.Profile) { addPath(&p.Filesystem.Write, "$WORKDIR/.git/hooks/pre-commit") }, want: policy.RiskCritical},
		{name: "workflow write", access: "write", path: "$WORKDIR/.github/workflows/ci.yml",
			add: func(p *policy.Profile) { addPath(&p.Filesystem.Write, "$WORKDIR/.github/workflows/ci.yml") }, want: policy.RiskCritical},
		{name: "profile write", access: "write", path: "$WORKDIR/.sysprof/app.yaml",
			add: func(p *policy.Profile) { addPath(&p.Filesystem.Write, "$WORKDIR/.sysprof/app.yaml") }, want: policy.RiskCritical},
		{name: "bashrc append", access: "write", path: "$HOME/.bashrc",
			add: func(p *policy.Profile) { addPath(&p.Filesystem.Write, "$HOME/.bashrc") }, want: policy.RiskCritical},
		{name: "proc write", access: "write", path: "/proc/self/oom_score_adj",
			add: func(p *policy.Profile) { addPath(&p.Filesystem.Write, "/proc/self/oom_score_adj") }, want: policy.RiskCritical},
		{name: "build output", access: "create", path: "$WORKDIR/build/out.o",
			add: func(p *policy.Profile) { addPath(&p.Filesystem.Write, "$WORKDIR/build/out.o") }, want: policy.RiskLow},
		{name: "hidden key read", access: "read", path: "$HOME/.ssh/id_ed25519",
			add: func(p *policy.Profile) {
				addPath(&p.Filesystem.Read, "$HOME/.ssh/id_ed25519")
				p.Filesystem.Hidden = nil
			}, want: policy.RiskCritical},
		{name: "npmrc read", access: "read", path: "$HOME/.npmrc",
			add: func(p *policy.Profile) { addPath(&p.Filesystem.Read, "$HOME/.npmrc") }, want: policy.RiskCritical},
		{name: "system read", access: "read", path: "/usr/share/zoneinfo/UTC",
			add: func(p *policy.Profile) { addPath(&p.Filesystem.Read, "/usr/share/zoneinfo/UTC") }, want: policy.RiskLow},
		{name: "home read", access: "read", path: "$HOME/.config/app/x.toml",
			add: func(p *policy.Profile) { addPath(&p.Filesystem.Read, "$HOME/.config/app/x.toml") }, want: policy.RiskHigh},
		{name: "new exec", access: "exec", path: "/usr/bin/curl",
			add: func(p *policy.Profile) { addPath(&p.Filesystem.Exec, "/usr/bin/curl") }, want: policy.RiskHigh},
		{name: "named host", section: policy.SectionConnect, endpoint: "api.example.test:443", proto: "tcp",
			add: func(p *policy.Profile) { addEndpoint(&p.Network.Connect, "api.example.test:443", "tcp") }, want: policy.RiskHigh},
		{name: "unknown port", section: policy.SectionConnect, endpoint: "api.example.test:4444", proto: "tcp",
			add: func(p *policy.Profile) { addEndpoint(&p.Network.Connect, "api.example.test:4444", "tcp") }, want: policy.RiskCritical},
		{name: "loopback address", section: policy.SectionConnect, endpoint: "127.0.0.1:8080", proto: "tcp",
			add: func(p *policy.Profile) { addEndpoint(&p.Network.Connect, "127.0.0.1:8080", "tcp") }, want: policy.RiskCritical},
		{name: "ephemeral bind", section: policy.SectionBind, endpoint: "127.0.0.1:0", proto: "tcp",
			add: func(p *policy.Profile) { addEndpoint(&p.Network.Bind, "127.0.0.1:0", "tcp") }, want: policy.RiskLow},
		{name: "ptrace", call: &call{"ptrace", a()},
			add: func(p *policy.Profile) { p.Syscalls.Allow = append(p.Syscalls.Allow, policy.Syscall{Name: "ptrace"}) }, want: policy.RiskCritical},
		{name: "ordinary syscall", call: &call{"utimensat", a()},
			add: func(p *policy.Profile) {
				p.Syscalls.Allow = append(p.Syscalls.Allow, policy.Syscall{Name: "utimensat"})
			}, want: policy.RiskLow},
		{name: "TIOCSTI", call: &call{"ioctl", a(1, unix.TIOCSTI)},
			add: func(p *policy.Profile) { p.Syscalls.Args[4].Deny = []string{"TIOCLINUX"} }, want: policy.RiskCritical},
		{name: "AF_NETLINK", call: &call{"socket", a(unix.AF_NETLINK, unix.SOCK_DGRAM)},
			add: func(p *policy.Profile) { p.Syscalls.Args[0].Values = append(p.Syscalls.Args[0].Values, "AF_NETLINK") }, want: policy.RiskHigh},
		{name: "CLONE_NEWNS", call: &call{"clone", a(unix.CLONE_VM | unix.CLONE_NEWNS)},
			add: func(p *policy.Profile) { p.Syscalls.Args[5].Flags = append(p.Syscalls.Args[5].Flags, "CLONE_NEWNS") }, want: policy.RiskCritical},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The enforcer's denial.
			var d report.Denial
			switch {
			case tc.call != nil:
				d = report.Denial{Kind: report.KindSyscall, Syscall: tc.call.name, Arch: "x86_64", Exe: "/usr/bin/x"}
				c.suggestDenial(&d, "x86_64", tc.call.name, x86, nr64(tc.call.name), tc.call.args)
			case tc.path != "":
				d = report.Denial{Kind: report.KindFile, Path: tc.path, Access: tc.access, Exe: "/usr/bin/x"}
				d.Risk = fileRisk(c.profile, tc.access, tc.path)
			default:
				d = report.Denial{Kind: report.KindNetwork, Syscall: map[string]string{policy.SectionConnect: "connect", policy.SectionBind: "bind"}[tc.section],
					Endpoint: tc.endpoint, Proto: tc.proto, Exe: "/usr/bin/x"}
				// The change the denial suggests, rated against the compiled profile.
				d.Risk = risk(policy.GrantRisk(c.profile, policy.Grant{Section: tc.section, Item: tc.endpoint, Proto: tc.proto}))
			}
			// Refine's proposal for it, rated on its own (not copied from the report).
			rd := d
			rd.Risk = policy.RiskNone
			r := report.New([]string{"x"}, "", false)
			r.Denials = []report.Denial{rd}
			props, err := refine.Propose(base(), r, env)
			if err != nil || len(props) != 1 {
				t.Fatalf("propose: %v, %d proposals", err, len(props))
			}
			// Diff of the change.
			next := base()
			tc.add(next)
			worst := policy.RiskNone
			for _, ch := range policy.Diff(base(), next) {
				if ch.Widens && ch.Risk > worst {
					worst = ch.Risk
				}
			}
			if d.Risk != tc.want || props[0].Risk != tc.want || worst != tc.want {
				t.Errorf("report %s, refine %s (%s), diff %s; want %s everywhere", d.Risk, props[0].Risk, props[0].Exact, worst, tc.want)
			}
		})
	}
}

func addPath(l *[]policy.PathRule, p string) { *l = append(*l, policy.PathRule{Path: p}) }

func addEndpoint(l *[]policy.Endpoint, e, proto string) {
	*l = append(*l, policy.Endpoint{Endpoint: e, Proto: proto})
}

// TestSuggestionRoundTrip checks that the change a syscall denial suggests reaches refine as
// data: the enforcer's Change, through the JSON report, is the change refine proposes, and a
// report without it (as older versions wrote, Suggest text only) gives the same proposal.
func TestSuggestionRoundTrip(t *testing.T) {
	p := testProfile()
	p.APIVersion, p.Kind = policy.APIVersion, policy.Kind
	p.Syscalls.Architectures = []string{"x86_64"}
	p.Syscalls.Args = append(p.Syscalls.Args,
		policy.ArgRule{Syscall: "ioctl", Arg: 1, Deny: []string{"TIOCSTI", "TIOCLINUX"}},
		policy.ArgRule{Syscall: "clone", Arg: 0, Flags: []string{"CLONE_VM", "CLONE_FS", "CLONE_FILES", "CLONE_SIGHAND", "CLONE_THREAD", "SIGCHLD"}},
		policy.ArgRule{Syscall: "socket", Arg: 2, Name: "protocol", Values: []string{"0"}})
	p.Syscalls.Args[0].Values = []string{"AF_INET", "AF_INET6"} // socket arg 0: no AF_UNIX
	c, err := Compile(p, Env{Arch: "x86_64"})
	if err != nil {
		t.Fatal(err)
	}
	a := func(xs ...uint64) (r [6]uint64) { copy(r[:], xs); return }
	for _, tc := range []struct {
		name      string
		abi       string
		call      string
		arch, nr  uint32
		args      [6]uint64
		want      policy.Grant
		wantShown string // Suggest, when it is not the change as printed
	}{
		{name: "syscall", abi: "x86_64", call: "ptrace", arch: x86, nr: nr64("ptrace"),
			want: policy.Grant{Section: policy.SectionSyscalls, Item: "ptrace"}},
		{name: "architecture", abi: "i386", call: "getpid", arch: i386, nr: nr32("getpid"),
			want: policy.Grant{Section: policy.SectionArchitectures, Item: "i386"}},
		{name: "family", abi: "x86_64", call: "socket", arch: x86, nr: nr64("socket"), args: a(unix.AF_NETLINK, unix.SOCK_DGRAM),
			want: policy.Grant{Section: policy.SectionArgs, Syscall: "socket", Arg: 0, Item: "AF_NETLINK"}},
		{name: "unix family", abi: "x86_64", call: "socket", arch: x86, nr: nr64("socket"), args: a(unix.AF_UNIX, unix.SOCK_STREAM),
			want: policy.Grant{Section: policy.SectionArgs, Syscall: "socket", Arg: 0, Item: "AF_UNIX"}}, // not its alias AF_LOCAL
		{name: "namespace flags", abi: "x86_64", call: "clone", arch: x86, nr: nr64("clone"), args: a(unix.CLONE_VM | unix.CLONE_NEWUSER | unix.CLONE_NEWNS | 17),
			want: policy.Grant{Section: policy.SectionArgs, Syscall: "clone", Arg: 0, Item: "CLONE_NEWNS|CLONE_NEWUSER"}},
		{name: "terminal injection", abi: "x86_64", call: "ioctl", arch: x86, nr: nr64("ioctl"), args: a(1, unix.TIOCSTI),
			want: policy.Grant{Section: policy.SectionArgs, Syscall: "ioctl", Arg: 1, Item: "TIOCSTI"}},
		{name: "mptcp", abi: "x86_64", call: "socket", arch: x86, nr: nr64("socket"), args: a(unix.AF_INET, unix.SOCK_STREAM, ipprotoMPTCP),
			want:      policy.Grant{Section: policy.SectionArgs, Syscall: "socket", Arg: 2, Item: "IPPROTO_MPTCP"},
			wantShown: "network.connect: + ENDPOINT proto: mptcp (or syscalls.args: socket arg 2: + IPPROTO_MPTCP)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := report.Denial{Kind: report.KindSyscall, Syscall: tc.call, Arch: tc.abi, What: tc.call + "()", Exe: "/usr/bin/x"}
			c.suggestDenial(&d, tc.abi, tc.call, tc.arch, tc.nr, tc.args)
			shown := cmp.Or(tc.wantShown, tc.want.String())
			if d.Change == nil || !reflect.DeepEqual(*d.Change, tc.want) || d.Suggest != shown {
				t.Fatalf("denial suggests %+v as %q, want %+v as %q", d.Change, d.Suggest, tc.want, shown)
			}
			if want, _ := policy.GrantRisk(c.profile, tc.want); d.Risk != want {
				t.Errorf("risk %s, want %s", d.Risk, want)
			}
			propose := func(d report.Denial) refine.Patch {
				t.Helper()
				r := report.New([]string{"x"}, "", false)
				r.Add(d)
				var buf bytes.Buffer
				if err := r.WriteJSON(&buf); err != nil {
					t.Fatal(err)
				}
				back, err := report.Parse(buf.Bytes())
				if err != nil {
					t.Fatal(err)
				}
				props, err := refine.Propose(p, back, nil)
				if err != nil || len(props) != 1 {
					t.Fatalf("propose: %v, %d proposals", err, len(props))
				}
				return props[0].Exact
			}
			if got := propose(d); !reflect.DeepEqual(got.Grant, tc.want) {
				t.Errorf("refine proposes %+v, want the denial's change %+v", got.Grant, tc.want)
			}
			old := d
			old.Change = nil
			if got := propose(old); !reflect.DeepEqual(got.Grant, tc.want) {
				t.Errorf("from the text only, refine proposes %+v, want %+v", got.Grant, tc.want)
			}
		})
	}
}
