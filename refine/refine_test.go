package refine

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/report"
)

// aliceEnv is the host of the fixtures: the variables enforcer.HostEnv would give there.
var aliceEnv = map[string]string{
	"HOME":        "/home/alice",
	"WORKDIR":     "/home/alice/src/hello-rs",
	"TMPDIR":      "/tmp",
	"CARGO_HOME":  "/home/alice/.cargo",
	"RUSTUP_HOME": "/home/alice/.rustup",
	"GOCACHE":     "/home/alice/.cache/go-build",
}

const (
	cargo       = "/home/alice/.rustup/toolchains/stable-x86_64-unknown-linux-gnu/bin/cargo"
	cargoP      = "$RUSTUP_HOME/toolchains/stable-x86_64-unknown-linux-gnu/bin/cargo"
	buildScript = "/home/alice/src/hello-rs/target/debug/build/hello-rs-1a2b3c4d5e6f7a8b/build-script-build"
	buildP      = "$WORKDIR/target/debug/build/hello-rs-*/build-script-build"
)

// base is a small profile: a few syscalls, an argument rule with a deny list, a read-only
// work tree, ~/.ssh hidden.
func base() *policy.Profile {
	return &policy.Profile{
		APIVersion: policy.APIVersion, Kind: policy.Kind,
		Metadata: policy.Metadata{Name: "cargo-build", Command: []string{"cargo", "build"}, Runs: 2},
		Syscalls: policy.Syscalls{
			Architectures: []string{"x86_64"},
			Allow:         []policy.Syscall{{Name: "ioctl"}, {Name: "openat"}, {Name: "read"}, {Name: "socket"}},
			Args: []policy.ArgRule{
				{Syscall: "ioctl", Arg: 1, Name: "request", Deny: []string{"TIOCSTI", "TIOCLINUX"}},
				{Syscall: "socket", Arg: 0, Name: "domain", Values: []string{"AF_UNIX"}},
			},
		},
		Filesystem: policy.Filesystem{
			Read:   []policy.PathRule{{Path: "$WORKDIR"}, {Path: "/usr/lib"}},
			Write:  []policy.PathRule{{Path: "$WORKDIR/target"}},
			Hidden: []policy.PathRule{{Path: "$HOME/.ssh", Note: "credential store"}, {Path: "$WORKDIR/**/.env"}},
			// No private /tmp: with one, every $TMPDIR path is the command's own and needs no
			// proposal once it writes there (see TestPrivateTmpWriteProposedUntilTheTmpIsWritable).
			PrivateTmp: false,
		},
	}
}

func rep(ds ...report.Denial) *report.Report {
	r := report.New([]string{"cargo", "build"}, "", false)
	r.Denials = ds
	return r
}

func TestProposeKinds(t *testing.T) {
	for _, tc := range []struct {
		name    string
		d       report.Denial
		exact   string // Patch.String of the exact change
		dir     string // "" when no directory choice
		hide    string
		summary string
		risk    policy.Risk
		choices []Choice
		def     Choice
	}{{
		name:    "syscall",
		d:       report.Denial{Kind: report.KindSyscall, Syscall: "utimensat", Arch: "x86_64", Exe: cargo, Suggest: "syscalls.allow: + utimensat"},
		exact:   "syscalls.allow: + utimensat",
		summary: "allow syscall utimensat",
		risk:    policy.RiskLow, choices: []Choice{AllowExact, KeepDenied}, def: AllowExact,
	}, {
		name:    "privileged syscall",
		d:       report.Denial{Kind: report.KindSyscall, Syscall: "ptrace", Arch: "x86_64", Exe: cargo, Suggest: "syscalls.allow: + ptrace"},
		exact:   "syscalls.allow: + ptrace",
		summary: "allow syscall ptrace",
		risk:    policy.RiskCritical, choices: []Choice{AllowExact, KeepDenied}, def: AllowExact,
	}, {
		name:    "architecture",
		d:       report.Denial{Kind: report.KindSyscall, Syscall: "write", Arch: "i386", Exe: cargo, Suggest: "syscalls.architectures: + i386"},
		exact:   "syscalls.architectures: + i386",
		summary: "allow system calls through the i386 ABI",
		risk:    policy.RiskHigh, choices: []Choice{AllowExact, KeepDenied}, def: AllowExact,
	}, {
		name:    "argument value",
		d:       report.Denial{Kind: report.KindSyscall, Syscall: "socket", Arch: "x86_64", Exe: cargo, Suggest: "syscalls.args: socket arg 0: + AF_INET"},
		exact:   "syscalls.args: socket arg 0: + AF_INET",
		summary: "allow socket with argument 0 = AF_INET",
		risk:    policy.RiskHigh, choices: []Choice{AllowExact, KeepDenied}, def: AllowExact,
	}, {
		name:    "argument value on a deny list",
		d:       report.Denial{Kind: report.KindSyscall, Syscall: "ioctl", Arch: "x86_64", Exe: cargo, Suggest: "syscalls.args: ioctl arg 1: + TIOCSTI"},
		exact:   "syscalls.args: ioctl arg 1: + TIOCSTI",
		summary: "allow ioctl with argument 1 = TIOCSTI",
		risk:    policy.RiskCritical, choices: []Choice{AllowExact, KeepDenied}, def: AllowExact,
	}, {
		name:    "unknown syscall",
		d:       report.Denial{Kind: report.KindSyscall, Syscall: "syscall_999", Arch: "x86_64", Exe: cargo, Suggest: "syscalls.allow: + syscall_999", Risk: report.RiskLow},
		exact:   "(no change)",
		summary: "syscall_999 cannot be allowed: not a syscall name sysprof knows",
		risk:    policy.RiskLow, choices: []Choice{KeepDenied}, def: KeepDenied,
	}, {
		name:    "file read under the home directory",
		d:       report.Denial{Kind: report.KindFile, Path: "/home/alice/.config/hello/settings.toml", Access: "read", Exe: buildScript},
		exact:   "filesystem.read: + $HOME/.config/hello/settings.toml",
		dir:     "filesystem.read: + $HOME/.config/hello",
		hide:    "filesystem.hidden: + $HOME/.config/hello/settings.toml",
		summary: "allow reading $HOME/.config/hello/settings.toml",
		risk:    policy.RiskHigh, choices: []Choice{AllowExact, AllowDir, KeepDenied, Hide}, def: AllowExact,
	}, {
		name:    "file write in temp, random name globbed",
		d:       report.Denial{Kind: report.KindFile, Path: "/tmp/tmp.XyZ12abQ9/out.o", Access: "create", Exe: buildScript},
		exact:   "filesystem.write: + $TMPDIR/tmp.*/out.o",
		dir:     "filesystem.write: + $TMPDIR/tmp.*",
		hide:    "filesystem.hidden: + $TMPDIR/tmp.*/out.o",
		summary: "allow writing $TMPDIR/tmp.*/out.o",
		risk:    policy.RiskLow, choices: []Choice{AllowExact, AllowDir, KeepDenied, Hide}, def: AllowExact,
	}, {
		name:    "delete is a write",
		d:       report.Denial{Kind: report.KindFile, Path: "/home/alice/src/hello-rs/Cargo.lock", Access: "delete", Exe: cargo},
		exact:   "filesystem.write: + $WORKDIR/Cargo.lock",
		hide:    "filesystem.hidden: + $WORKDIR/Cargo.lock",
		summary: "allow writing $WORKDIR/Cargo.lock",
		risk:    policy.RiskLow, choices: []Choice{AllowExact, KeepDenied, Hide}, def: AllowExact,
	}, {
		name:    "exec",
		d:       report.Denial{Kind: report.KindFile, Path: "/usr/bin/curl", Access: "exec", Exe: buildScript},
		exact:   "filesystem.exec: + /usr/bin/curl",
		dir:     "filesystem.exec: + /usr/bin",
		hide:    "filesystem.hidden: + /usr/bin/curl",
		summary: "allow /usr/bin/curl to run",
		risk:    policy.RiskHigh, choices: []Choice{AllowExact, AllowDir, KeepDenied, Hide}, def: KeepDenied,
	}, {
		name:    "git hook write: protected, critical, default keep",
		d:       report.Denial{Kind: report.KindFile, Path: "/home/alice/src/hello-rs/.git/hooks/pre-commit", Access: "create", Exe: buildScript, Risk: report.RiskCritical},
		exact:   "filesystem.write: + $WORKDIR/.git/hooks/pre-commit",
		dir:     "filesystem.write: + $WORKDIR/.git/hooks",
		hide:    "filesystem.hidden: + $WORKDIR/.git/hooks/pre-commit",
		summary: "allow writing $WORKDIR/.git/hooks/pre-commit",
		risk:    policy.RiskCritical, choices: []Choice{AllowExact, AllowDir, KeepDenied, Hide}, def: KeepDenied,
	}, {
		name:    "shell rc append: protected, critical, default keep",
		d:       report.Denial{Kind: report.KindFile, Path: "/home/alice/.bashrc", Access: "write", Exe: buildScript},
		exact:   "filesystem.write: + $HOME/.bashrc",
		hide:    "filesystem.hidden: + $HOME/.bashrc",
		summary: "allow writing $HOME/.bashrc",
		risk:    policy.RiskCritical, choices: []Choice{AllowExact, KeepDenied, Hide}, def: KeepDenied,
	}, {
		name:    "credential store, hidden: critical, default keep, allowing un-hides",
		d:       report.Denial{Kind: report.KindFile, Path: "/home/alice/.ssh/id_ed25519", Access: "read", Exe: buildScript},
		exact:   "filesystem.read: + $HOME/.ssh/id_ed25519, filesystem.hidden: - $HOME/.ssh",
		summary: "allow reading $HOME/.ssh/id_ed25519",
		risk:    policy.RiskCritical, choices: []Choice{AllowExact, KeepDenied}, def: KeepDenied,
	}, {
		name:    "credential store, not hidden yet: hide offers the store",
		d:       report.Denial{Kind: report.KindFile, Path: "/home/alice/.aws/credentials", Access: "read", Exe: buildScript},
		exact:   "filesystem.read: + $HOME/.aws/credentials",
		hide:    "filesystem.hidden: + $HOME/.aws",
		summary: "allow reading $HOME/.aws/credentials",
		risk:    policy.RiskCritical, choices: []Choice{AllowExact, KeepDenied, Hide}, def: KeepDenied,
	}, {
		name:    "portable path already",
		d:       report.Denial{Kind: report.KindFile, Path: "$HOME/.cache/hello/x", Access: "read", Exe: cargo},
		exact:   "filesystem.read: + $HOME/.cache/hello/x",
		dir:     "filesystem.read: + $HOME/.cache/hello",
		hide:    "filesystem.hidden: + $HOME/.cache/hello/x",
		summary: "allow reading $HOME/.cache/hello/x",
		risk:    policy.RiskLow, choices: []Choice{AllowExact, AllowDir, KeepDenied, Hide}, def: AllowExact,
	}, {
		name:    "connect by name",
		d:       report.Denial{Kind: report.KindNetwork, Syscall: "connect", Endpoint: "192.0.2.10:443", Host: "api.example.test", Proto: "tcp", Exe: "/usr/bin/curl"},
		exact:   "network.connect: + api.example.test:443 tcp",
		summary: "allow connect api.example.test:443 tcp",
		risk:    policy.RiskHigh, choices: []Choice{AllowExact, KeepDenied}, def: KeepDenied,
	}, {
		name:    "connect by address",
		d:       report.Denial{Kind: report.KindNetwork, Endpoint: "127.0.0.1:8080", Proto: "tcp", Exe: "/usr/bin/curl", Suggest: "network.connect: + 127.0.0.1:8080 tcp"},
		exact:   "network.connect: + 127.0.0.1:8080 tcp",
		summary: "allow connect 127.0.0.1:8080 tcp",
		risk:    policy.RiskCritical, choices: []Choice{AllowExact, KeepDenied}, def: KeepDenied,
	}, {
		name:    "udp send, proto from the section",
		d:       report.Denial{Kind: report.KindNetwork, Syscall: "sendto", Endpoint: "[::1]:53", Exe: cargo},
		exact:   "network.send: + [::1]:53 udp",
		summary: "allow send [::1]:53 udp",
		risk:    policy.RiskHigh, choices: []Choice{AllowExact, KeepDenied}, def: KeepDenied,
	}, {
		name:    "bind ephemeral loopback",
		d:       report.Denial{Kind: report.KindNetwork, Syscall: "bind", Endpoint: "127.0.0.1:0", Proto: "tcp", Exe: cargo},
		exact:   "network.bind: + 127.0.0.1:0 tcp",
		summary: "allow bind 127.0.0.1:0 tcp",
		risk:    policy.RiskLow, choices: []Choice{AllowExact, KeepDenied}, def: AllowExact,
	}, {
		// A refused lookup names no port: the stub answers the name, reviewed by a person.
		name:    "refused DNS lookup",
		d:       report.Denial{Kind: report.KindNetwork, Syscall: "dns", Endpoint: "api.example.test", Host: "api.example.test", Proto: "udp", Exe: "/usr/bin/curl", Change: &policy.Grant{Section: policy.SectionResolve, Item: "api.example.test"}, Suggest: "network.resolve: + api.example.test"},
		exact:   "network.resolve: + api.example.test",
		summary: "answer api.example.test in the DNS stub",
		risk:    policy.RiskLow, choices: []Choice{AllowExact, KeepDenied}, def: KeepDenied,
	}, {
		name:    "unix socket path made portable",
		d:       report.Denial{Kind: report.KindNetwork, Syscall: "connect", Endpoint: "unix:/home/alice/src/hello-rs/.sock", Exe: cargo},
		exact:   "network.connect: + unix:$WORKDIR/.sock",
		summary: "allow connect unix:$WORKDIR/.sock",
		risk:    policy.RiskHigh, choices: []Choice{AllowExact, KeepDenied}, def: KeepDenied,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			props, err := Propose(base(), rep(tc.d), aliceEnv)
			if err != nil {
				t.Fatal(err)
			}
			if len(props) != 1 {
				t.Fatalf("got %d proposals, want 1: %+v", len(props), props)
			}
			p := props[0]
			str := func(x *Patch) string {
				if x == nil {
					return ""
				}
				return x.String()
			}
			got := []string{p.Exact.String(), str(p.Dir), str(p.Hide), p.Summary, p.Risk.String(), p.Default.String()}
			want := []string{tc.exact, tc.dir, tc.hide, tc.summary, tc.risk.String(), tc.def.String()}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("exact, dir, hide, summary, risk, default (-want +got):\n%s", diff)
			}
			if !slices.Equal(p.Choices, tc.choices) {
				t.Errorf("choices = %v, want %v", p.Choices, tc.choices)
			}
			if p.Exact.Section != "" && len(p.Changes) == 0 {
				t.Errorf("no changes listed for %s", p.Exact)
			}
			// Every choice it offers applies cleanly and gives a valid profile.
			for _, c := range p.Choices {
				if _, err := Apply(base(), []Decision{{p, c}}); err != nil {
					t.Errorf("Apply %s: %v", c, err)
				}
			}
		})
	}
}

func TestProvenance(t *testing.T) {
	d := report.Denial{Kind: report.KindFile, Path: "/usr/bin/curl", Access: "exec", Exe: buildScript}
	props, err := Propose(base(), rep(d), aliceEnv)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Apply(base(), []Decision{{props[0], AllowExact}})
	if err != nil {
		t.Fatal(err)
	}
	want := []policy.PathRule{{Path: "/usr/bin/curl", Provenance: policy.Provenance{By: buildP}, Note: Note}}
	if diff := cmp.Diff(want, out.Filesystem.Exec); diff != "" {
		t.Errorf("exec rules (-want +got):\n%s", diff)
	}
}

func TestAuditReportProposesTheSame(t *testing.T) {
	d := report.Denial{Kind: report.KindSyscall, Syscall: "utimensat", Arch: "x86_64", Exe: cargo, Suggest: "syscalls.allow: + utimensat"}
	a := d
	a.Allowed = true
	p1, err := Propose(base(), rep(d), aliceEnv)
	if err != nil {
		t.Fatal(err)
	}
	r := rep(a)
	r.Audit = true
	p2, err := Propose(base(), r, aliceEnv)
	if err != nil {
		t.Fatal(err)
	}
	if len(p1) != 1 || len(p2) != 1 || p1[0].Exact.String() != p2[0].Exact.String() || p1[0].Risk != p2[0].Risk {
		t.Errorf("audit proposals differ: %v vs %v", p1, p2)
	}
}

func TestDedupAndOrder(t *testing.T) {
	r := rep(
		report.Denial{Kind: report.KindSyscall, Syscall: "utimensat", Exe: cargo, Count: 14, Suggest: "syscalls.allow: + utimensat"},
		report.Denial{Kind: report.KindFile, Path: "/usr/bin/curl", Access: "exec", Exe: buildScript},
		report.Denial{Kind: report.KindSyscall, Syscall: "utimensat", Exe: "/home/alice/.rustup/toolchains/stable-x86_64-unknown-linux-gnu/bin/rustc", Count: 3, Suggest: "syscalls.allow: + utimensat"},
		report.Denial{Kind: report.KindFile, Path: "/home/alice/.ssh/id_ed25519", Access: "read", Exe: buildScript, Count: 2},
		report.Denial{Kind: report.KindFile, Path: "/home/alice/.ssh/id_ed25519", Access: "read", Exe: cargo},
		// Already allowed: the work tree is readable.
		report.Denial{Kind: report.KindFile, Path: "/home/alice/src/hello-rs/src/main.rs", Access: "read", Exe: cargo},
	)
	props, err := Propose(base(), r, aliceEnv)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range props {
		got = append(got, p.Risk.String()+" "+p.Summary+" x"+strconv.Itoa(p.Denial.Count)+" by "+strings.Join(p.Exes, ","))
	}
	want := []string{
		"critical allow reading $HOME/.ssh/id_ed25519 x3 by " + cargoP + "," + buildP,
		"high allow /usr/bin/curl to run x1 by " + buildP,
		"low allow syscall utimensat x17 by " + cargoP + ",$RUSTUP_HOME/toolchains/stable-x86_64-unknown-linux-gnu/bin/rustc",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("proposals (-want +got):\n%s", diff)
	}
	if n := len(props[2].Denials); n != 2 {
		t.Errorf("utimensat folds %d denials, want 2", n)
	}
}

// allDenials has one denial of every kind the package handles.
func allDenials() *report.Report {
	return rep(
		report.Denial{Kind: report.KindSyscall, Syscall: "utimensat", Exe: cargo, Suggest: "syscalls.allow: + utimensat"},
		report.Denial{Kind: report.KindSyscall, Syscall: "write", Arch: "i386", Exe: cargo, Suggest: "syscalls.architectures: + i386"},
		report.Denial{Kind: report.KindSyscall, Syscall: "socket", Exe: cargo, Suggest: "syscalls.args: socket arg 0: + AF_INET"},
		report.Denial{Kind: report.KindSyscall, Syscall: "ioctl", Exe: cargo, Suggest: "syscalls.args: ioctl arg 1: + TIOCSTI"},
		report.Denial{Kind: report.KindFile, Path: "/home/alice/.ssh/id_ed25519", Access: "read", Exe: buildScript},
		report.Denial{Kind: report.KindFile, Path: "/home/alice/.aws/config", Access: "read", Exe: buildScript},
		report.Denial{Kind: report.KindFile, Path: "/usr/bin/curl", Access: "exec", Exe: buildScript},
		report.Denial{Kind: report.KindFile, Path: "/tmp/tmp.XyZ12abQ9/out.o", Access: "write", Exe: buildScript},
		report.Denial{Kind: report.KindNetwork, Syscall: "connect", Endpoint: "192.0.2.10:443", Host: "api.example.test", Proto: "tcp", Exe: "/usr/bin/curl"},
		report.Denial{Kind: report.KindNetwork, Syscall: "bind", Endpoint: "127.0.0.1:0", Proto: "tcp", Exe: cargo},
	)
}

func TestApplyAllThenProposeNothing(t *testing.T) {
	p := base()
	props, err := Propose(p, allDenials(), aliceEnv)
	if err != nil {
		t.Fatal(err)
	}
	if len(props) != 10 {
		t.Fatalf("got %d proposals, want 10", len(props))
	}
	var ds []Decision
	for _, pr := range props {
		ds = append(ds, Decision{pr, AllowExact})
	}
	out, err := Apply(p, ds)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Propose(out, allDenials(), aliceEnv)
	if err != nil {
		t.Fatal(err)
	}
	for _, pr := range again {
		t.Errorf("after applying everything, still proposed: %s (%s)", pr.Summary, pr.Exact)
	}
	// And applying again changes nothing.
	out2, err := Apply(out, ds)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(out, out2); diff != "" {
		t.Errorf("applying twice differs (-once +twice):\n%s", diff)
	}
	// The argument rules took the values: AF_INET added, TIOCSTI off the deny list.
	var socketVals, ioctlDeny []string
	for _, r := range out.Syscalls.Args {
		switch r.Syscall {
		case "socket":
			socketVals = r.Values
		case "ioctl":
			ioctlDeny = r.Deny
		}
	}
	if !slices.Equal(socketVals, []string{"AF_INET", "AF_UNIX"}) || !slices.Equal(ioctlDeny, []string{"TIOCLINUX"}) {
		t.Errorf("socket values %v (want AF_INET, AF_UNIX), ioctl deny %v (want TIOCLINUX)", socketVals, ioctlDeny)
	}
}

func TestApplyDoesNotMutate(t *testing.T) {
	p := base()
	before := base()
	props, err := Propose(p, allDenials(), aliceEnv)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, p); diff != "" {
		t.Fatalf("Propose modified the profile:\n%s", diff)
	}
	for _, c := range []Choice{AllowExact, AllowDir, Hide} {
		var ds []Decision
		for _, pr := range props {
			if slices.Contains(pr.Choices, c) {
				ds = append(ds, Decision{pr, c})
			}
		}
		out, err := Apply(p, ds)
		if err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		if diff := cmp.Diff(before, p); diff != "" {
			t.Fatalf("Apply(%s) modified its input (-before +after):\n%s", c, diff)
		}
		if cmp.Equal(out, p) {
			t.Errorf("Apply(%s) changed nothing", c)
		}
	}
}

func TestApplyChoices(t *testing.T) {
	props, err := Propose(base(), allDenials(), aliceEnv)
	if err != nil {
		t.Fatal(err)
	}
	find := func(summary string) Proposal {
		for _, p := range props {
			if p.Summary == summary {
				return p
			}
		}
		t.Fatalf("no proposal %q", summary)
		return Proposal{}
	}
	ssh := find("allow reading $HOME/.ssh/id_ed25519")
	aws := find("allow reading $HOME/.aws/config")
	curl := find("allow /usr/bin/curl to run")
	out, err := Apply(base(), []Decision{{ssh, KeepDenied}, {aws, Hide}, {curl, AllowDir}})
	if err != nil {
		t.Fatal(err)
	}
	changes := policy.Diff(base(), out)
	var got []string
	for _, c := range changes {
		got = append(got, c.String())
	}
	want := []string{
		"+ high filesystem.exec added: /usr/bin (new executable path: more code may run)",
		"- none filesystem.hidden added: $HOME/.aws (newly hidden)",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
	if _, err := Apply(base(), []Decision{{ssh, AllowDir}}); err == nil {
		t.Errorf("AllowDir on a credential store was accepted")
	}
	if _, err := Apply(nil, nil); err == nil {
		t.Errorf("Apply(nil) did not fail")
	}
}

func TestPortable(t *testing.T) {
	for in, want := range map[string]string{
		"/home/alice/.ssh/id_ed25519":                                        "$HOME/.ssh/id_ed25519", // credential store: literal
		"/home/alice/.cargo/registry/index":                                  "$CARGO_HOME/registry/index",
		"/home/alice/.cache/go-build/ab/abcdef0123456789-d":                  "$GOCACHE/*/*-d",
		"/home/alice/src/hello-rs/target/debug/build/x-1a2b3c4d5e6f7a8b/out": "$WORKDIR/target/debug/build/x-*/out",
		"/home/alice":            "$HOME",
		"/home/alicex/file":      "/home/alicex/file",
		"/tmp/rustcAb12Cd/lib":   "$TMPDIR/rustc*/lib",
		"/proc/4242/status":      "/proc/self/status",
		"/dev/pts/3":             "/dev/pts",
		"/sys/fs/cgroup/x/12345": "/sys/fs/cgroup/x/12345",
		"/usr/bin/../bin/curl":   "/usr/bin/curl",
		"$HOME/x":                "$HOME/x",
		"relative/path":          "relative/path",
	} {
		if got := Portable(in, aliceEnv); got != want {
			t.Errorf("Portable(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestChoiceKeys(t *testing.T) {
	seen := map[byte]bool{}
	for _, c := range []Choice{AllowExact, AllowDir, KeepDenied, Hide} {
		k := c.Key()
		if seen[k] || !strings.Contains(c.Label(), "["+string(k)+"]") {
			t.Errorf("choice %s: key %q not unique or not in its label %q", c, k, c.Label())
		}
		seen[k] = true
	}
	var zero Choice
	if zero != KeepDenied {
		t.Errorf("the zero Choice must be KeepDenied")
	}
}

func TestUnhandledDenialsAreShown(t *testing.T) {
	for _, d := range []report.Denial{
		{Kind: report.KindFile, What: "relative read", Path: "src/main.rs", Access: "read", Exe: cargo, Risk: report.RiskHigh},
		{Kind: report.KindFile, What: "odd access", Path: "/etc/passwd", Access: "chmod", Exe: cargo},
		{Kind: report.KindNetwork, What: "no port", Endpoint: "192.0.2.1", Proto: "tcp", Exe: cargo},
		{Kind: "ioctl-storm", What: "something new", Exe: cargo},
	} {
		props, err := Propose(base(), rep(d), aliceEnv)
		if err != nil {
			t.Fatal(err)
		}
		if len(props) != 1 {
			t.Fatalf("%s: %d proposals, want 1", d.What, len(props))
		}
		p := props[0]
		if !slices.Equal(p.Choices, []Choice{KeepDenied}) || p.Default != KeepDenied || !strings.Contains(p.Summary, "cannot be allowed") {
			t.Errorf("%s: choices %v default %s summary %q: want only keep, and why", d.What, p.Choices, p.Default, p.Summary)
		}
		if _, err := Apply(base(), []Decision{{p, AllowExact}}); err == nil {
			t.Errorf("%s: AllowExact accepted on a proposal that cannot be allowed", d.What)
		}
	}
}

func TestExitedExecutableHasNoProvenance(t *testing.T) {
	d := report.Denial{Kind: report.KindSyscall, Syscall: "utimensat", Exe: "(exited)", Suggest: "syscalls.allow: + utimensat"}
	props, err := Propose(base(), rep(d), aliceEnv)
	if err != nil {
		t.Fatal(err)
	}
	if props[0].Exact.By != "" || props[0].Exes[0] != "(exited)" {
		t.Errorf("by %q, exes %v: want no provenance, and (exited) shown", props[0].Exact.By, props[0].Exes)
	}
}

func TestArgFlagsAndMPTCP(t *testing.T) {
	p := base()
	p.Syscalls.Allow = append(p.Syscalls.Allow, policy.Syscall{Name: "clone"})
	p.Syscalls.Args = append(p.Syscalls.Args,
		policy.ArgRule{Syscall: "clone", Arg: 0, Name: "flags", Flags: []string{"CLONE_VM", "CLONE_FS", "SIGCHLD"}},
		policy.ArgRule{Syscall: "socket", Arg: 2, Name: "protocol", Values: []string{"0"}})
	r := rep(
		report.Denial{Kind: report.KindSyscall, Syscall: "clone", Exe: cargo, Suggest: "syscalls.args: clone arg 0: + CLONE_NEWUSER|CLONE_NEWNS"},
		report.Denial{Kind: report.KindSyscall, Syscall: "socket", Exe: cargo, Suggest: "network.connect: + ENDPOINT proto: mptcp (or syscalls.args: socket arg 2: + IPPROTO_MPTCP)"},
	)
	props, err := Propose(p, r, aliceEnv)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	var ds []Decision
	for _, pr := range props {
		got = append(got, pr.Risk.String()+" "+pr.Exact.String())
		ds = append(ds, Decision{pr, AllowExact})
	}
	want := []string{
		"critical syscalls.args: clone arg 0: + CLONE_NEWUSER|CLONE_NEWNS",
		"high syscalls.args: socket arg 2: + IPPROTO_MPTCP",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("proposals (-want +got):\n%s", diff)
	}
	out, err := Apply(p, ds)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := Propose(out, r, aliceEnv); len(again) != 0 {
		t.Errorf("still proposed after applying: %v", again[0].Exact)
	}
}

// A denied write in the private /tmp of a profile that writes nothing there: enforce gives such
// a profile no write in its private /tmp at all (Landlock has no rule for it), so refine must
// propose the temp file — it used to say the profile already allowed it, and every later run
// was denied again (issue 15). Once the profile writes in its private /tmp (the enforcer then
// grants the whole tmpfs), other temp files need nothing.
func TestPrivateTmpWriteProposedUntilTheTmpIsWritable(t *testing.T) {
	p := base()
	p.Filesystem.PrivateTmp = true
	r := rep(report.Denial{Kind: report.KindFile, Path: "/tmp/tmp.XyZ12abQ9/out.o", Access: "create", Exe: "/usr/bin/cc"})
	ps, err := Propose(p, r, aliceEnv)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 1 || ps[0].Exact.Section != policy.SectionWrite || !strings.HasPrefix(ps[0].Exact.Item, "$TMPDIR/") {
		t.Fatalf("a write to the private /tmp of a profile with no write there: want one $TMPDIR write proposal, got %v", ps)
	}
	out, err := Apply(p, []Decision{{ps[0], AllowExact}})
	if err != nil {
		t.Fatal(err)
	}
	if !out.Filesystem.PrivateTmp {
		t.Error("refine turned the private /tmp off")
	}
	if again, _ := Propose(out, r, aliceEnv); len(again) != 0 {
		t.Errorf("still proposed after applying: %v", again[0].Exact)
	}
	other := rep(report.Denial{Kind: report.KindFile, Path: "/tmp/cc4Fq2x.s", Access: "create", Exe: "/usr/bin/cc"})
	if ps, _ := Propose(out, other, aliceEnv); len(ps) != 0 {
		t.Errorf("another temp file once the private /tmp is writable needs no change: got %v", ps[0].Exact)
	}
}
