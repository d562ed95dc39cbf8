package synth

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/trace"
)

// A learn run without a controlling terminal sees /dev/tty fail with ENXIO; the profile must
// still let the tool open it where a terminal exists, or enforcement reports a false denial.
func TestFailedTTYOpenIsAllowed(t *testing.T) {
	tr := &trace.Trace{
		Version:   trace.Version,
		Command:   []string{"make"},
		Context:   map[string]string{"WORKDIR": "/w", "HOME": "/home/a", "TMPDIR": "/tmp"},
		Host:      trace.Host{Kernel: "6.18", Arch: trace.ArchX86_64},
		Processes: []trace.Process{{ID: 1, PID: 10, Exe: "/usr/bin/bash"}},
		Files: []trace.FileAccess{
			{Exe: "/usr/bin/bash", Path: "/dev/tty", Access: trace.AccessWrite, OK: false, Errno: 6, Count: 1},
			{Exe: "/usr/bin/bash", Path: "/etc/missing.conf", Access: trace.AccessRead, OK: false, Errno: 2, Count: 1},
		},
	}
	res, err := Synthesize(tr, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := map[string]string{"WORKDIR": "/w", "HOME": "/home/b", "TMPDIR": "/tmp"}
	if !Allows(res.Profile, ctx, Access{Kind: trace.AccessWrite, Path: "/dev/tty"}) {
		t.Errorf("/dev/tty write not allowed: %+v", res.Profile.Filesystem)
	}
	if Allows(res.Profile, ctx, Access{Kind: trace.AccessRead, Path: "/etc/missing.conf"}) {
		t.Errorf("a failed probe of an ordinary file must not become a rule")
	}
}

func TestSecretTouchesAreReported(t *testing.T) {
	tr := &trace.Trace{
		Version:   trace.Version,
		Command:   []string{"make"},
		Context:   map[string]string{"WORKDIR": "/w", "HOME": "/home/a", "TMPDIR": "/tmp"},
		Host:      trace.Host{Kernel: "6.18", Arch: trace.ArchX86_64},
		Processes: []trace.Process{{ID: 1, PID: 10, Exe: "/usr/bin/make"}},
		Files: []trace.FileAccess{
			{Exe: "/usr/bin/make", Path: "/home/a/.ssh/id_test", Access: trace.AccessRead, OK: true, Count: 1},
		},
	}
	res, err := Synthesize(tr, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.SecretTouches) != 1 || res.SecretTouches[0].Path != "$HOME/.ssh/id_test" || res.SecretTouches[0].Store != "$HOME/.ssh" {
		t.Fatalf("SecretTouches = %+v, want the read of $HOME/.ssh/id_test", res.SecretTouches)
	}
}

// A tool that opens /dev/tty only at a terminal (git's credential prompt, less) learned without
// one: the profile still allows the controlling terminal (the terminal family), or enforce at
// a terminal reports a Landlock denial the learn run could not have seen. --exact does not.
func TestControllingTerminalAllowedWhenNeverSeen(t *testing.T) {
	tr := &trace.Trace{
		Version:   trace.Version,
		Command:   []string{"git", "fetch"},
		Context:   map[string]string{"WORKDIR": "/w", "HOME": "/home/a", "TMPDIR": "/tmp"},
		Host:      trace.Host{Kernel: "6.18", Arch: trace.ArchX86_64},
		Processes: []trace.Process{{ID: 1, PID: 10, Exe: "/usr/bin/git"}},
		Syscalls:  []trace.SyscallCount{{Name: "read", Arch: trace.ArchX86_64, Exe: "/usr/bin/git", Count: 1}},
		Files:     []trace.FileAccess{{Exe: "/usr/bin/git", Path: "/w/.git/config", Access: trace.AccessRead, OK: true, Count: 1}},
	}
	ctx := map[string]string{"WORKDIR": "/w", "HOME": "/home/b", "TMPDIR": "/tmp"}
	for _, exact := range []bool{false, true} {
		res, err := Synthesize(tr, Options{Exact: exact})
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{trace.AccessRead, trace.AccessWrite} {
			if got := Allows(res.Profile, ctx, Access{Kind: k, Path: "/dev/tty"}); got == exact {
				t.Errorf("exact=%v: /dev/tty %s allowed=%v, want %v", exact, k, got, !exact)
			}
		}
		if exact {
			continue
		}
		// The family gives the terminal probes only, never the injection requests.
		var ioctl *policy.ArgRule
		for i, a := range res.Profile.Syscalls.Args {
			if a.Syscall == "ioctl" && a.Arg == 1 {
				ioctl = &res.Profile.Syscalls.Args[i]
			}
		}
		if ioctl == nil || slices.Contains(ioctl.Values, "TIOCSTI") || !slices.Contains(ioctl.Deny, "TIOCSTI") && len(ioctl.Values) == 0 {
			t.Errorf("ioctl rule with the controlling terminal: %+v, want the terminal probes only", ioctl)
		}
	}
}

// less at a terminal (git log) writes its history through $HOME/.lesshsQ: as a write rule that
// file would make enforce refuse the profile ("its directory $HOME is too broad"). It is not
// granted; the synthesis says so; the profile read back stays the same.
func TestPagerHistoryIsNotGranted(t *testing.T) {
	tr := &trace.Trace{
		Version:   trace.Version,
		Command:   []string{"git", "log"},
		Context:   map[string]string{"WORKDIR": "/w", "HOME": "/home/a", "TMPDIR": "/tmp"},
		Host:      trace.Host{Kernel: "6.18", Arch: trace.ArchX86_64},
		Processes: []trace.Process{{ID: 1, PID: 10, Exe: "/usr/bin/git"}, {ID: 2, Parent: 1, PID: 11, Exe: "/usr/bin/less"}},
		Files: []trace.FileAccess{
			{Exe: "/usr/bin/less", Path: "/home/a/.lesshst", Access: trace.AccessRead, OK: true, Count: 1},
			{Exe: "/usr/bin/less", Path: "/home/a/.lesshsQ", Access: trace.AccessCreate, OK: true, Count: 1},
			{Exe: "/usr/bin/less", Path: "/home/a/.lesshst", Access: trace.AccessCreate, OK: true, Count: 1},
			{Exe: "/usr/bin/less", Path: "/home/a/.local/state/lesshst", Access: trace.AccessWrite, OK: true, Count: 1},
			{Exe: "/usr/bin/git", Path: "/w/.git/logs/HEAD", Access: trace.AccessWrite, OK: true, Count: 1},
		},
	}
	res, err := Synthesize(tr, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range res.Profile.Filesystem.Write {
		if strings.Contains(w.Path, "lesshs") {
			t.Errorf("pager history granted: write %s", w.Path)
		}
	}
	if !slices.ContainsFunc(res.Profile.Filesystem.Write, func(r policy.PathRule) bool { return strings.HasPrefix(r.Path, "$WORKDIR/.git") }) {
		t.Errorf("the tool's own write is gone too: %v", res.Profile.Filesystem.Write)
	}
	if ex := string(explainText(res)); !strings.Contains(ex, "pager's history") {
		t.Errorf("the synthesis does not say it left the pager history out:\n%s", ex)
	}
}

// openpty (issue 25): learn sees /dev/ptmx opened and /dev/pts/N only looked at (the other end
// is opened by ioctl TIOCGPTPEER); enforce checks that open, or libc's fallback by name,
// against /dev/pts. The profile grants the directory, where terminals made later are too.
func TestOpenptyGrantsTheTerminalDirectory(t *testing.T) {
	tr := &trace.Trace{
		Version:   trace.Version,
		Command:   []string{"python3"},
		Context:   map[string]string{"WORKDIR": "/w", "HOME": "/home/a", "TMPDIR": "/tmp"},
		Host:      trace.Host{Kernel: "6.18", Arch: trace.ArchX86_64},
		Processes: []trace.Process{{ID: 1, PID: 10, Exe: "/usr/bin/python3"}},
		Files: []trace.FileAccess{
			{Exe: "/usr/bin/python3", Path: "/dev/ptmx", Access: trace.AccessWrite, OK: true, Count: 1},
			{Exe: "/usr/bin/python3", Path: "/dev/pts/3", Access: trace.AccessMetadata, OK: true, Count: 1},
		},
	}
	for _, exact := range []bool{false, true} {
		res, err := Synthesize(tr, Options{Exact: exact})
		if err != nil {
			t.Fatal(err)
		}
		ctx := map[string]string{"WORKDIR": "/w", "HOME": "/home/b", "TMPDIR": "/tmp"}
		if !Allows(res.Profile, ctx, Access{Kind: trace.AccessWrite, Path: "/dev/pts/7"}) {
			t.Errorf("exact=%v: a later terminal /dev/pts/7 is not writable: %v", exact, res.Profile.Filesystem.Write)
		}
		if !slices.ContainsFunc(res.Profile.Filesystem.Write, func(r policy.PathRule) bool { return r.Path == "/dev/pts" }) {
			t.Errorf("exact=%v: want the rule /dev/pts (a glob is expanded before the terminal exists): %v", exact, res.Profile.Filesystem.Write)
		}
	}
}

// Learned at a terminal, less and node read their terminal by name (/dev/pts/N): a read rule on
// /dev/pts would let a later run read every terminal of the user (another shell's keystrokes).
// None is written; the enforcer grants the terminal the command's stdio is on.
func TestTerminalReadIsNotEveryTerminal(t *testing.T) {
	tr := &trace.Trace{
		Version:   trace.Version,
		Command:   []string{"git", "log", "-p"},
		Context:   map[string]string{"WORKDIR": "/w", "HOME": "/home/a", "TMPDIR": "/tmp"},
		Host:      trace.Host{Kernel: "6.18", Arch: trace.ArchX86_64},
		Processes: []trace.Process{{ID: 1, PID: 10, Exe: "/usr/bin/git"}, {ID: 2, Parent: 1, PID: 11, Exe: "/usr/bin/less"}},
		Files: []trace.FileAccess{
			{Exe: "/usr/bin/less", Path: "/dev/pts/3", Access: trace.AccessRead, OK: true, Count: 1},
			{Exe: "/usr/bin/node", Path: "/dev/pts/3", Access: trace.AccessWrite, OK: true, Count: 1},
		},
	}
	res, err := Synthesize(tr, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := map[string]string{"WORKDIR": "/w", "HOME": "/home/a", "TMPDIR": "/tmp"}
	for _, k := range []string{trace.AccessRead, trace.AccessWrite} {
		if Allows(res.Profile, ctx, Access{Kind: k, Path: "/dev/pts/7"}) {
			t.Errorf("another terminal /dev/pts/7 is allowed for %s: read %v write %v", k, res.Profile.Filesystem.Read, res.Profile.Filesystem.Write)
		}
	}
}

// TestIOConditionDecidesNothing (issue 24 item 8): head into /dev/null asks whether it is a
// terminal (ioctl TCGETS), into a pipe it does not; git arms a timer (setitimer) only at a
// terminal. Learned either way, the syscalls and their argument rules are the same: a learned
// probe is the probes rule (not every request but injection), and setitimer (a terminal call
// of every profile) brings no timers family in.
func TestIOConditionDecidesNothing(t *testing.T) {
	learn := func(sys []string, args []trace.ArgValue) *policy.Profile {
		tr := &trace.Trace{
			Version:   trace.Version,
			Command:   []string{"head"},
			Context:   map[string]string{"WORKDIR": "/w", "HOME": "/home/a", "TMPDIR": "/tmp"},
			Host:      trace.Host{Kernel: "6.18", Arch: trace.ArchX86_64},
			Processes: []trace.Process{{ID: 1, PID: 10, Exe: "/usr/bin/head"}},
			Args:      args,
		}
		for _, n := range append([]string{"read", "write", "openat", "close"}, sys...) {
			tr.Syscalls = append(tr.Syscalls, trace.SyscallCount{Exe: "/usr/bin/head", Arch: trace.ArchX86_64, Name: n, Count: 1})
		}
		res, err := Synthesize(tr, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return res.Profile
	}
	rules := func(p *policy.Profile) (names []string, args []string) {
		for _, s := range p.Syscalls.Allow {
			names = append(names, s.Name)
		}
		for _, r := range p.Syscalls.Args {
			args = append(args, fmt.Sprintf("%s/%d values=%v deny=%v", r.Syscall, r.Arg, r.Values, r.Deny))
		}
		return names, args
	}
	pipe := learn(nil, nil)
	null := learn([]string{"ioctl", "setitimer"}, []trace.ArgValue{{Exe: "/usr/bin/head", Syscall: "ioctl", Kind: "ioctl_request", Value: 0x5401, Count: 1}})
	pn, pa := rules(pipe)
	nn, na := rules(null)
	if !slices.Equal(pn, nn) || !slices.Equal(pa, na) {
		t.Errorf("the I/O condition decided the profile:\npipe: %v\n      %v\nnull: %v\n      %v", pn, pa, nn, na)
	}
	if slices.Contains(nn, "timer_create") {
		t.Errorf("setitimer brought the timers family in: %v", nn)
	}
	// A request that is not a terminal one keeps every request but injection.
	raw := learn([]string{"ioctl"}, []trace.ArgValue{{Exe: "/usr/bin/head", Syscall: "ioctl", Kind: "ioctl_request", Value: 0x541B, Count: 1}})
	if _, ra := rules(raw); !slices.ContainsFunc(ra, func(s string) bool { return strings.HasPrefix(s, "ioctl/1") && strings.Contains(s, "TIOCSTI") }) {
		t.Errorf("a learned FIONREAD must keep the deny list: %v", ra)
	}
}

// TestTerminfoReadWhole (issue 24 item 8): less reads $TERM's terminfo entry: x/xterm at a
// terminal, d/dumb in a CI job. Learned either way, the read rule is the database.
func TestTerminfoReadWhole(t *testing.T) {
	reads := func(entry string) []string {
		tr := &trace.Trace{
			Version:   trace.Version,
			Command:   []string{"less"},
			Context:   map[string]string{"WORKDIR": "/w", "HOME": "/home/a", "TMPDIR": "/tmp"},
			Host:      trace.Host{Kernel: "6.18", Arch: trace.ArchX86_64},
			Processes: []trace.Process{{ID: 1, PID: 10, Exe: "/usr/bin/less"}},
			Files:     []trace.FileAccess{{Exe: "/usr/bin/less", Path: entry, Access: trace.AccessRead, OK: true, Count: 1}},
		}
		res, err := Synthesize(tr, Options{})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range res.Profile.Filesystem.Read {
			if strings.Contains(r.Path, "terminfo") {
				out = append(out, r.Path)
			}
		}
		return out
	}
	tty, ci := reads("/usr/lib/terminfo/x/xterm"), reads("/usr/lib/terminfo/d/dumb")
	if !slices.Equal(tty, ci) || !slices.Equal(tty, []string{"/usr/lib/terminfo"}) {
		t.Errorf("terminfo reads: at a terminal %v, in CI %v; want [/usr/lib/terminfo] both", tty, ci)
	}
}
