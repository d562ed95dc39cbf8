package enforcer

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/paths"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/report"
	"github.com/sysprof/sysprof/sandbox"
)

func fullProfile() *policy.Profile {
	p := testProfile()
	p.Syscalls.Architectures = []string{"aarch64", "i386", "x86_64"}
	p.Syscalls.Allow = append(p.Syscalls.Allow, policy.Syscall{Name: "no_such_syscall"}, policy.Syscall{Name: "rt_sigreturn", Base: true})
	p.Syscalls.Args = append(p.Syscalls.Args, policy.ArgRule{Syscall: "clone3", Arg: 0, Errno: "ENOSYS"},
		policy.ArgRule{Syscall: "ioctl", Arg: 1, Deny: []string{"TIOCSTI", "TIOCLINUX"}})
	rules := func(paths ...string) (out []policy.PathRule) {
		for _, p := range paths {
			out = append(out, policy.PathRule{Path: p})
		}
		return out
	}
	p.Filesystem = policy.Filesystem{
		Read:       rules("/usr", "$HOME/.gitconfig", "/dev/urandom"),
		Write:      rules("$WORKDIR", "$TMPDIR/go-build*", "/dev/null"),
		Exec:       rules("/usr/bin"),
		Hidden:     rules("$HOME/.ssh"),
		PrivateTmp: true,
	}
	p.Network.Connect = []policy.Endpoint{{Endpoint: "127.0.0.1:8080", Proto: "tcp"}, {Endpoint: "unix:@dbus", Proto: ""}}
	p.Network.Bind = []policy.Endpoint{{Endpoint: "127.0.0.1:0", Proto: "tcp"}}
	return p
}

func TestCompileDoesNotModifyProfile(t *testing.T) {
	p := fullProfile()
	before, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	if _, err := Compile(p, Env{Vars: map[string]string{"HOME": home, "WORKDIR": "/w", "TMPDIR": "/tmp"}, Arch: "x86_64"}); err != nil {
		t.Fatal(err)
	}
	after, _ := json.Marshal(p)
	if diff := cmp.Diff(string(before), string(after)); diff != "" {
		t.Errorf("Compile modified the profile:\n%s", diff)
	}
}

func TestCompilePlan(t *testing.T) {
	home := t.TempDir()
	os.MkdirAll(filepath.Join(home, ".ssh"), 0o700)
	work := t.TempDir()
	c, err := Compile(fullProfile(), Env{Vars: map[string]string{"HOME": home, "WORKDIR": work, "TMPDIR": "/tmp"}, Arch: "x86_64"})
	if err != nil {
		t.Fatal(err)
	}
	pl := c.Plan
	if !pl.ReadOnlyRoot || !pl.PrivateTmp || !pl.DropCaps || !pl.NetNS { // a network allowlist gets its own namespace too (the egress proxy)
		t.Errorf("plan flags: %+v", pl)
	}
	// $WORKDIR is writable, but protected paths that do not exist yet (.github, .husky, ...)
	// could be created in it: it is staged, not bound.
	if len(pl.Writable) != 0 || len(pl.Staged) != 1 || pl.Staged[0].Path != work {
		t.Errorf("writable = %v, staged = %v: want $WORKDIR staged only (the glob is in the private /tmp)", pl.Writable, pl.Staged)
	}
	if !slices.Contains(pl.Landlock.Write, "/tmp") {
		t.Errorf("landlock write = %v, want the private /tmp for the glob", pl.Landlock.Write)
	}
	if !slices.Contains(pl.Hidden, filepath.Join(home, ".ssh")) {
		t.Errorf("hidden = %v, want $HOME/.ssh", pl.Hidden)
	}
	ll := pl.Landlock
	if ll == nil {
		t.Fatal("no Landlock layer")
	}
	if !slices.Equal(ll.Devices, []string{"/dev/full", "/dev/null", "/dev/random", "/dev/urandom", "/dev/zero"}) || !slices.Equal(ll.Exec, []string{"/usr/bin"}) ||
		!slices.Equal(ll.ConnectTCP, []uint16{8080}) || !slices.Equal(ll.BindTCP, []uint16{0}) || ll.ScopeAbstractUnix || !ll.ScopeSignals {
		t.Errorf("landlock = %+v", *ll)
	}
	if !slices.Contains(c.Layers, LayerNetwork) || c.Egress == nil || len(c.Egress.Rules) != 1 || !pl.NetNS {
		t.Errorf("a network allowlist must get its own namespace and the egress proxy: layers %v, egress %+v, netns %v", c.Layers, c.Egress, pl.NetNS)
	}
	joined := strings.Join(c.Dropped, "\n")
	if !strings.Contains(joined, "no_such_syscall") {
		t.Errorf("dropped no_such_syscall not reported: %v", c.Dropped)
	}
	// aarch64 is another machine's architecture: nothing is lost on this one.
	if strings.Contains(joined, "aarch64") {
		t.Errorf("aarch64 reported as dropped on x86_64: %v", c.Dropped)
	}
	if !strings.Contains(strings.Join(c.Notes, "\n"), "go-build* is in the private /tmp") {
		t.Errorf("glob widening not noted: %v", c.Notes)
	}
}

func TestCompileNoNetworkMeansNetNS(t *testing.T) {
	c, err := Compile(testProfile(), Env{Arch: "x86_64"})
	if err != nil {
		t.Fatal(err)
	}
	if !c.Plan.NetNS || !slices.Contains(c.Layers, LayerNetNS) {
		t.Errorf("no network: plan %+v layers %v", c.Plan, c.Layers)
	}
}

// TestCompileEmptyFilesystemIsBaseOnly: no filesystem section, or an empty one, is "nothing
// beyond the base", never "no filesystem layer": read-only root, Landlock with BaseRead and the
// command only, the credential stores hidden, a private /tmp.
func TestCompileEmptyFilesystemIsBaseOnly(t *testing.T) {
	home, work := t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(home, ".ssh"), 0o700)
	os.WriteFile(filepath.Join(home, ".npmrc"), []byte("token\n"), 0o600)
	os.WriteFile(filepath.Join(work, ".env"), []byte("KEY=1\n"), 0o600)
	env := Env{Vars: map[string]string{"HOME": home, "WORKDIR": work, "TMPDIR": "/tmp"}, Arch: "x86_64", Command: "/usr/bin/true"}
	for name, fs := range map[string]policy.Filesystem{"missing": {}, "empty lists": {Read: []policy.PathRule{}, Hidden: []policy.PathRule{}}} {
		p := testProfile()
		p.Filesystem = fs
		c, err := Compile(p, env)
		if err != nil {
			t.Fatal(err)
		}
		pl := c.Plan
		if !pl.ReadOnlyRoot || !pl.PrivateTmp || pl.Landlock == nil ||
			!slices.Contains(c.Layers, LayerMounts) || !slices.Contains(c.Layers, LayerLandlock) {
			t.Fatalf("%s: plan %+v layers %v", name, pl, c.Layers)
		}
		ll := pl.Landlock
		var base []string
		for _, r := range BaseRead {
			if !isDevice(r) {
				base = append(base, r)
			}
		}
		slices.Sort(base)
		if !slices.Equal(ll.Read, base) || len(ll.Write) != 0 || len(ll.List) != 0 || !slices.Equal(ll.Exec, []string{"/usr/bin/true"}) {
			t.Errorf("%s: landlock = %+v, want the base only", name, *ll)
		}
		for _, h := range []string{filepath.Join(home, ".ssh"), filepath.Join(home, ".npmrc"), filepath.Join(work, ".env")} {
			if !slices.Contains(pl.Hidden, h) {
				t.Errorf("%s: %s not hidden: %v", name, h, pl.Hidden)
			}
		}
	}
	// A profile that names a path inside a store keeps that store visible (refine's allow).
	p := testProfile()
	p.Filesystem.Read = []policy.PathRule{{Path: "$HOME/.npmrc"}}
	c, err := Compile(p, env)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(c.Plan.Hidden, filepath.Join(home, ".npmrc")) || !slices.Contains(c.Plan.Hidden, filepath.Join(home, ".ssh")) {
		t.Errorf("named store: hidden %v, want ~/.ssh but not ~/.npmrc", c.Plan.Hidden)
	}
}

func TestCompileErrors(t *testing.T) {
	for name, mutate := range map[string]func(*policy.Profile){
		"unset variable":    func(p *policy.Profile) { p.Filesystem.Read = []policy.PathRule{{Path: "$NOPE/x"}} },
		"relative path":     func(p *policy.Profile) { p.Filesystem.Read = []policy.PathRule{{Path: "src"}} },
		"unknown symbol":    func(p *policy.Profile) { p.Syscalls.Args[0].Values = []string{"AF_NOPE"} },
		"bad errno":         func(p *policy.Profile) { p.Syscalls.Args[0].Errno = "EWHAT" },
		"argument index":    func(p *policy.Profile) { p.Syscalls.Args[0].Arg = 6 },
		"bad port":          func(p *policy.Profile) { p.Network.Connect = []policy.Endpoint{{Endpoint: "host:http"}} },
		"unknown host arch": func(p *policy.Profile) {},
	} {
		t.Run(name, func(t *testing.T) {
			p := testProfile()
			mutate(p)
			env := Env{Vars: map[string]string{"HOME": "/h"}, Arch: "x86_64"}
			if name == "unknown host arch" {
				env.Arch = "sparc"
			}
			if _, err := Compile(p, env); err == nil {
				t.Errorf("compiled without error")
			}
		})
	}
}

func TestExpand(t *testing.T) {
	env := Env{Vars: map[string]string{"HOME": "/home/u", "WORKDIR": "/src/p"}}
	for in, want := range map[string]string{
		"$HOME/.ssh": "/home/u/.ssh", "${HOME}/.cargo": "/home/u/.cargo", "$WORKDIR": "/src/p",
		"/usr/lib/../bin": "/usr/bin", "$HOMEX": "",
	} {
		got, err := expand(in, env)
		if (err != nil) != (want == "") || got != want {
			t.Errorf("expand(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestFailClosedWithoutSandbox(t *testing.T) {
	testutil.RequireRoot(t)
	saved := sandboxAvailable
	sandboxAvailable = false
	defer func() { sandboxAvailable = saved }()
	p := victimProfile() // no network: needs the netns layer
	_, code, err := Run(context.Background(), Options{Profile: p, Command: []string{"true"}})
	var le *LayerError
	if !asLayerError(err, &le) || code != 125 {
		t.Fatalf("ran without a layer the profile needs: code %d err %v", code, err)
	}
	if !strings.Contains(err.Error(), "--degrade") {
		t.Errorf("error does not say how to run anyway: %v", err)
	}
	rep, code, err := Run(context.Background(), Options{Profile: p, Command: []string{testutil.BuildC(t, "escape/escape.c"), "ok"}, Degrade: DegradeAll})
	if err != nil || code != 0 {
		t.Fatalf("degraded run: code %d err %v", code, err)
	}
	var degraded []string
	for _, l := range rep.Degraded() {
		degraded = append(degraded, l.Name)
	}
	if !slices.Contains(degraded, LayerNetNS) {
		t.Errorf("degraded layers %v, want netns listed", degraded)
	}
	var b strings.Builder
	rep.WriteTable(&b)
	if !strings.Contains(b.String(), "netns was NOT applied") {
		t.Errorf("degraded layer not printed:\n%s", b.String())
	}
	if l := findLayer(rep, LayerSeccomp); l == nil || l.State != report.LayerApplied {
		t.Errorf("seccomp not applied: %+v", rep.Layers)
	}
}

func findLayer(r *report.Report, name string) *report.Layer {
	for i := range r.Layers {
		if r.Layers[i].Name == name {
			return &r.Layers[i]
		}
	}
	return nil
}

func TestDaemonSockets(t *testing.T) {
	dir, err := os.MkdirTemp("/tmp", "sysprof-sock-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	a, b := filepath.Join(dir, "a.sock"), filepath.Join(dir, "b.sock")
	for _, p := range []string{a, b} {
		l, err := net.Listen("unix", p)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
	}
	n := policy.Network{Connect: []policy.Endpoint{{Endpoint: "unix:" + b}}}
	got, _ := daemonSockets(Env{}, n, false, nil)
	if !slices.Contains(got, a) || slices.Contains(got, b) {
		t.Errorf("sockets %v: want %s (a host daemon) and not %s (the profile connects to it)", got, a, b)
	}
	if got, _ := daemonSockets(Env{}, n, true, nil); slices.Contains(got, a) {
		t.Errorf("with a private /tmp the host's /tmp sockets are invisible; got %v", got)
	}
	if got, _ := daemonSockets(Env{}, n, true, []string{dir}); !slices.Contains(got, a) || slices.Contains(got, b) {
		t.Errorf("with a private /tmp into which %s is bound: sockets %v, want %s and not %s", dir, got, a, b)
	}
}

// A socket bound below the levels the walk lists is found through /proc/net/unix.
func TestDaemonSocketsDeep(t *testing.T) {
	dir, err := os.MkdirTemp("/tmp", "sysprof-sock-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	deep := filepath.Join(dir, "a", "b", "c", "deep.sock")
	os.MkdirAll(filepath.Dir(deep), 0o755)
	l, err := net.Listen("unix", deep)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if got, _ := daemonSockets(Env{}, policy.Network{}, false, nil); !slices.Contains(got, deep) {
		t.Errorf("sockets %v: want %s", got, deep)
	}
}

func TestBoundSocketsParse(t *testing.T) {
	f := filepath.Join(t.TempDir(), "unix")
	os.WriteFile(f, []byte(`Num       RefCount Protocol Flags    Type St Inode Path
0000000000000000: 00000002 00000000 00010000 0001 01 1001 /run/a.sock
0000000000000000: 00000002 00000000 00010000 0001 01 1002 @abstract
0000000000000000: 00000003 00000000 00000000 0001 03 1003
0000000000000000: 00000002 00000000 00010000 0001 01 1004 /tmp/with space/b.sock
0000000000000000: 00000002 00000000 00010000 0001 01 1005 relative.sock
`), 0o644)
	b, _ := os.ReadFile(f)
	want := []netUnixEntry{{1001, "/run/a.sock"}, {1004, "/tmp/with space/b.sock"}, {1005, "relative.sock"}}
	if got := parseNetUnix(b); !slices.Equal(got, want) {
		t.Errorf("parseNetUnix() = %v, want %v", got, want)
	}
}

func TestHiddenGlobsHideMatchesOnly(t *testing.T) {
	work := t.TempDir()
	for _, p := range []string{".env", "sub/deeper/.env", "sub/.env.local", "sub/keep.txt"} {
		full := filepath.Join(work, p)
		os.MkdirAll(filepath.Dir(full), 0o755)
		os.WriteFile(full, nil, 0o600)
	}
	p := testProfile()
	p.Filesystem.Read = []policy.PathRule{{Path: "$WORKDIR"}}
	p.Filesystem.Hidden = []policy.PathRule{{Path: "$WORKDIR/**/.env"}, {Path: "$WORKDIR/**/.env.*"}, {Path: "$TMPDIR/ssh-*"}}
	c, err := Compile(p, Env{Vars: map[string]string{"WORKDIR": work, "TMPDIR": "/tmp"}, Arch: "x86_64"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(work, ".env"), filepath.Join(work, "sub/.env.local"), filepath.Join(work, "sub/deeper/.env")}
	var got []string
	for _, h := range c.Plan.Hidden {
		if strings.HasPrefix(h, work) || h == "/tmp" {
			got = append(got, h)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("hidden %v, want exactly %v (never the glob's directory)", got, want)
	}
}

// A hidden glob that stops at its limit says so in the notes (the report shows them): what it
// did not reach is not hidden.
func TestHiddenGlobLimitNoted(t *testing.T) {
	work := t.TempDir()
	for i := range 20 {
		os.MkdirAll(filepath.Join(work, "deps", strconv.Itoa(i)), 0o755)
	}
	old := globLimit
	globLimit = 10
	defer func() { globLimit = old }()
	p := testProfile()
	p.Filesystem.Read = []policy.PathRule{{Path: "$WORKDIR"}}
	p.Filesystem.Hidden = []policy.PathRule{{Path: "$WORKDIR/**/.env"}}
	c, err := Compile(p, Env{Vars: map[string]string{"WORKDIR": work, "TMPDIR": "/tmp"}, Arch: "x86_64"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(c.Notes, func(n string) bool {
		return strings.Contains(n, "$WORKDIR/**/.env") && strings.Contains(n, "not hidden")
	}) {
		t.Errorf("notes %q: want one saying $WORKDIR/**/.env stopped early", c.Notes)
	}
}

// A file rule, a missing output and a file outside the work tree are never widened to their
// directory: the directory is staged and only what the rules cover is applied (issue 14 item 3).
func TestWriteRulesOnFilesAreStaged(t *testing.T) {
	work := t.TempDir()
	os.WriteFile(filepath.Join(work, "hello"), nil, 0o755)
	home := t.TempDir()
	p := testProfile()
	p.Filesystem.Write = []policy.PathRule{{Path: "$WORKDIR/hello"}, {Path: "$WORKDIR/main.o"}, {Path: "$WORKDIR/out/x.o"}, {Path: "/etc/newtool.conf"}}
	c, err := Compile(p, Env{Vars: map[string]string{"WORKDIR": work, "HOME": home, "TMPDIR": "/tmp"}, Arch: "x86_64"})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Plan.Writable) != 0 {
		t.Errorf("writable %v: a file rule must not make its directory writable", c.Plan.Writable)
	}
	want := []StageSpec{
		{Dir: "/etc", Keep: []string{"/etc/newtool.conf"}},
		{Dir: work, Keep: []string{filepath.Join(work, "hello"), filepath.Join(work, "main.o"), filepath.Join(work, "out/x.o")},
			Protected: protectedUnder(t, work, home)},
	}
	if diff := cmp.Diff(want, c.Stages); diff != "" {
		t.Errorf("stages (-want +got):\n%s", diff)
	}
	if len(c.Unenforceable) != 0 {
		t.Errorf("unenforceable %v: staging enforces file rules exactly", c.Unenforceable)
	}
	for _, d := range []string{"/etc", work} {
		if !slices.Contains(c.Plan.NoExec, d) {
			t.Errorf("noexec %v: want %s (no exec rule in it)", c.Plan.NoExec, d)
		}
	}
	if _, err := os.Stat(filepath.Join(work, "main.o")); err == nil {
		t.Errorf("compile created a missing write path on the host")
	}
}

func protectedUnder(t *testing.T, dir, home string) []string {
	t.Helper()
	var out []string
	for _, q := range protectedHostPaths(Env{Vars: map[string]string{"WORKDIR": dir, "HOME": home}}) {
		if paths.Within(q, dir) {
			out = append(out, q)
		}
	}
	return out
}

// With a private /tmp a hidden glob inside it can only match what is bound in from the host: a
// work tree in /tmp keeps its .env hidden, and with nothing bound the host's /tmp is not even
// looked at (its matches are invisible in the sandbox).
func TestHiddenGlobsInPrivateTmp(t *testing.T) {
	work, err := os.MkdirTemp("/tmp", "sysprof-hidden-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(work)
	os.WriteFile(filepath.Join(work, ".env"), nil, 0o600)
	agent := filepath.Join(work, "ssh-agent.sock")
	os.WriteFile(agent, nil, 0o600)
	elsewhere := t.TempDir() // a work tree outside the private tmp dirs, when TMPDIR is elsewhere
	if privateTmpRoot(elsewhere) != "" {
		elsewhere = "/work-does-not-matter"
	}
	for _, tc := range []struct {
		name, workdir string
		want          []string
	}{
		{"work tree in /tmp", work, []string{filepath.Join(work, ".env"), agent}},
		{"nothing bound into /tmp", elsewhere, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := testProfile()
			p.Filesystem.Read = []policy.PathRule{{Path: "$WORKDIR"}}
			p.Filesystem.PrivateTmp = true
			p.Filesystem.Hidden = []policy.PathRule{{Path: "$WORKDIR/**/.env"}, {Path: work + "/ssh-*"}}
			c, err := Compile(p, Env{Vars: map[string]string{"WORKDIR": tc.workdir, "TMPDIR": "/tmp"}, Arch: "x86_64"})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, h := range c.Plan.Hidden {
				if strings.HasPrefix(h, work+"/") {
					got = append(got, h)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("hidden under %s: %q, want %q", work, got, tc.want)
			}
		})
	}
}

// TestNotWeakerRefuses: a plan weaker than the profile is refused, whatever made it so.
func TestNotWeakerRefuses(t *testing.T) {
	home := t.TempDir()
	os.MkdirAll(filepath.Join(home, ".ssh"), 0o700)
	os.MkdirAll(filepath.Join(home, ".aws"), 0o700) // hidden by the base (withBase), not the profile
	os.MkdirAll(filepath.Join(home, ".cache", "sysprof"), 0o700)
	env := Env{Vars: map[string]string{"HOME": home, "WORKDIR": t.TempDir(), "TMPDIR": "/tmp"}, Arch: "x86_64"}
	p := testProfile()
	p.Filesystem.Hidden = []policy.PathRule{{Path: "$HOME/.ssh"}}
	p.Filesystem.Read = []policy.PathRule{{Path: "/usr"}} // rules, no private /tmp: home (in /tmp) is the host's
	c, err := Compile(p, env)
	if err != nil {
		t.Fatalf("the real plan: %v", err)
	}
	for name, weaken := range map[string]func(*Compiled){
		"no landlock":       func(c *Compiled) { c.Plan.Landlock = nil },
		"writable root":     func(c *Compiled) { c.Plan.ReadOnlyRoot = false },
		"hidden not hidden": func(c *Compiled) { c.Plan.Hidden = nil },
		"base's credential store not hidden": func(c *Compiled) {
			c.Plan.Hidden = slices.DeleteFunc(slices.Clone(c.Plan.Hidden), func(h string) bool { return h == filepath.Join(home, ".aws") })
		},
		"sysprof's state not hidden": func(c *Compiled) {
			c.Plan.Hidden = slices.DeleteFunc(slices.Clone(c.Plan.Hidden), func(h string) bool { return h == filepath.Join(home, ".cache", "sysprof") })
		},
	} {
		w := *c
		weaken(&w)
		if err := w.notWeaker(p, env); err == nil {
			t.Errorf("%s: not refused", name)
		}
	}
	if err := c.notWeaker(p, env); err != nil {
		t.Errorf("the real plan refused: %v", err)
	}
}

// TestRuleInsideCredentialStore: a rule for a path inside a credential store grants that path:
// everything else in the store stays hidden (a directory store entry by entry, a pattern store
// match by match), and notWeaker holds the plan to it.
func TestRuleInsideCredentialStore(t *testing.T) {
	home, work := t.TempDir(), t.TempDir()
	for _, f := range []string{".aws/config", ".aws/credentials", ".aws/sso/cache/tok", ".aws/cli/alias", ".aws/cli/cache/x", ".aws/cli/a[1]*", ".env", "sub/.env", "deep/er/.env"} {
		p := filepath.Join(home, f)
		if strings.Contains(f, "env") {
			p = filepath.Join(work, f)
		}
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte("secret"), 0o600)
	}
	env := Env{Vars: map[string]string{"HOME": home, "WORKDIR": work, "TMPDIR": "/tmp"}, Arch: "x86_64"}
	p := testProfile()
	p.Filesystem.Read = []policy.PathRule{{Path: "$HOME"}, {Path: "$WORKDIR"}, {Path: "$HOME/.aws/config"}, {Path: "$WORKDIR/sub/.env"}}
	p.Filesystem.Write = []policy.PathRule{{Path: "$HOME/.aws/cli/cache"}}
	c, err := Compile(p, env)
	if err != nil {
		t.Fatal(err)
	}
	aws := filepath.Join(home, ".aws")
	for _, h := range []string{"credentials", "sso", "cli/alias", "cli/a[1]*"} {
		if !slices.Contains(c.Plan.Hidden, filepath.Join(aws, h)) {
			t.Errorf("$HOME/.aws/%s not hidden: %q", h, c.Plan.Hidden)
		}
	}
	for _, h := range []string{filepath.Join(work, ".env"), filepath.Join(work, "deep/er/.env")} {
		if !slices.Contains(c.Plan.Hidden, h) {
			t.Errorf("%s not hidden: %q", h, c.Plan.Hidden)
		}
	}
	for _, shown := range []string{aws, filepath.Join(aws, "config"), filepath.Join(aws, "cli"), filepath.Join(aws, "cli/cache"), filepath.Join(work, "sub/.env")} {
		if paths.CoveredBy(shown, c.Plan.Hidden) {
			t.Errorf("%s is hidden, want it reachable (the profile names it or a path below it): %q", shown, c.Plan.Hidden)
		}
	}
	// A store that is a link to its directory is walked the same way.
	home2 := t.TempDir()
	os.Symlink(aws, filepath.Join(home2, ".aws"))
	env2 := Env{Vars: map[string]string{"HOME": home2, "WORKDIR": work, "TMPDIR": "/tmp"}, Arch: "x86_64"}
	if c, err := Compile(p, env2); err != nil || !slices.Contains(c.Plan.Hidden, filepath.Join(home2, ".aws", "credentials")) ||
		paths.CoveredBy(filepath.Join(home2, ".aws", "config"), c.Plan.Hidden) {
		t.Errorf("a linked store: err %v, hidden %q: want credentials hidden, config not", err, c.Plan.Hidden)
	}
	// The store named itself is the profile's word: not hidden.
	p.Filesystem.Read = append(p.Filesystem.Read, policy.PathRule{Path: "$HOME/.aws"})
	if c, err := Compile(p, env); err != nil || paths.CoveredBy(filepath.Join(aws, "credentials"), c.Plan.Hidden) {
		t.Errorf("a rule naming the store: err %v, hidden %q", err, c.Plan.Hidden)
	}
}

// Temp files have incidental names: a write rule in a host $TMPDIR (outside the private /tmp)
// grants that $TMPDIR, not the one learned name (a stage would report the next run's names).
func TestHostTmpdirWritableAsAWhole(t *testing.T) {
	home := t.TempDir()
	tmp := filepath.Join(home, "tmp")
	os.Mkdir(tmp, 0o755)
	p := testProfile()
	p.Filesystem.Write = []policy.PathRule{{Path: "$TMPDIR/tmpab12cd34"}}
	p.Filesystem.PrivateTmp = true
	c, err := Compile(p, Env{Vars: map[string]string{"HOME": home, "WORKDIR": t.TempDir(), "TMPDIR": tmp}, Arch: "x86_64"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.Plan.Writable, []string{tmp}) || len(c.Stages) != 0 {
		t.Errorf("writable %v, stages %v: want the host $TMPDIR %s bound as a whole", c.Plan.Writable, c.Stages, tmp)
	}
}

// Compile itself refuses a writable path that is a symlink, or a stage that passes through one
// (the init stage checks again at mount time: that second check must not be the only one).
func TestCompileRefusesSymlinkedWritablePaths(t *testing.T) {
	work, elsewhere := t.TempDir(), t.TempDir()
	if err := os.Symlink(elsewhere, filepath.Join(work, "out")); err != nil {
		t.Fatal(err)
	}
	for _, rule := range []string{"$WORKDIR/out", "$WORKDIR/out/x.o"} {
		p := testProfile()
		p.Filesystem.Write = []policy.PathRule{{Path: rule}}
		c, err := Compile(p, Env{Vars: map[string]string{"WORKDIR": work, "HOME": t.TempDir(), "TMPDIR": "/tmp"}, Arch: "x86_64"})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(c.Unenforceable, func(u string) bool { return strings.Contains(u, "symlink") }) {
			t.Errorf("%s: unenforceable %v, want the symlink refused", rule, c.Unenforceable)
		}
		for _, w := range slices.Concat(c.Plan.Writable, stageDirsOf(c.Stages), c.Plan.Landlock.Write) {
			if paths.Within(w, elsewhere) || paths.Within(w, filepath.Join(work, "out")) {
				t.Errorf("%s: %s is granted (through the symlink)", rule, w)
			}
		}
	}
}

// writesExact refuses a plan whose write grants reach further than planWrites decided: a
// Landlock write rule that is neither a bind nor a stage, and a bound directory holding a
// protected path that is neither read-only nor named.
func TestWritesExactRefusesWiderPlans(t *testing.T) {
	work := t.TempDir()
	os.MkdirAll(filepath.Join(work, ".git", "hooks"), 0o755)
	env := Env{Vars: map[string]string{"WORKDIR": work, "HOME": t.TempDir()}}
	ok := &Compiled{Plan: sandbox.Plan{Writable: []string{filepath.Join(work, "out")}, Landlock: &sandbox.Landlock{Write: []string{filepath.Join(work, "out")}}}}
	if err := ok.writesExact(env); err != nil {
		t.Fatalf("an exact plan refused: %v", err)
	}
	wider := &Compiled{Plan: sandbox.Plan{Writable: []string{filepath.Join(work, "out")}, Landlock: &sandbox.Landlock{Write: []string{work}}}}
	if err := wider.writesExact(env); err == nil {
		t.Error("a Landlock write rule on the work tree (no bind, no stage) was not refused")
	}
	bound := &Compiled{Plan: sandbox.Plan{Writable: []string{work}, Landlock: &sandbox.Landlock{Write: []string{work}}}}
	if err := bound.writesExact(env); err == nil || !strings.Contains(err.Error(), "protected "+work+"/.") {
		t.Errorf("a bound work tree with its protected paths writable was not refused: %v", err)
	}
}

// An existing output directory in the work tree (dist/, web/build/, target/) is staged with its
// parent, not bound over itself: a bound directory is a mount point, which a tool's `rm -rf
// dist`, cargo clean or npm ci cannot remove (EBUSY) nor rename (EXDEV). A directory outside
// the work tree (a cache in HOME) and one inside a protected path stay bound. An exec rule on
// an output of the run is granted on the directory holding the output (the new target/ that
// cargo clean && cargo build makes has new inodes), the stage root at most.
func TestOutputDirsInTheWorkTreeAreStagedWithTheirParent(t *testing.T) {
	work, home := t.TempDir(), t.TempDir()
	for _, d := range []string{"dist", "web/build", "target/debug/build", ".git/objects"} {
		os.MkdirAll(filepath.Join(work, d), 0o755)
	}
	os.MkdirAll(filepath.Join(home, ".cache", "tool"), 0o755)
	p := testProfile()
	p.Filesystem.Write = rulesOf("$WORKDIR/dist", "$WORKDIR/web/build", "$WORKDIR/target", "$WORKDIR/.git/objects", "$HOME/.cache/tool")
	p.Filesystem.Exec = append(p.Filesystem.Exec, rulesOf("$WORKDIR/target/debug/build/app-*/build-script-build")...)
	c, err := Compile(p, Env{Vars: map[string]string{"WORKDIR": work, "HOME": home, "TMPDIR": "/tmp"}, Arch: "x86_64"})
	if err != nil {
		t.Fatal(err)
	}
	// target/ holds an exec rule: it stays bound over itself (exec there is a mount of its
	// own), since exec in the work tree's stage would be granted on the work tree, where a
	// package's shipped files would become executable too.
	wantBound := []string{filepath.Join(work, ".git/objects"), filepath.Join(work, "target"), filepath.Join(home, ".cache/tool")}
	if got := slices.Sorted(slices.Values(c.Plan.Writable)); !slices.Equal(got, wantBound) {
		t.Errorf("bound writable %v, want %v (the caches outside the work tree, an output holding an exec rule and a protected path's own rule)", got, wantBound)
	}
	var stage *StageSpec
	for i := range c.Stages {
		if c.Stages[i].Dir == work {
			stage = &c.Stages[i]
		}
	}
	if stage == nil {
		t.Fatalf("stages %+v: want the work tree staged for its output directories", c.Stages)
	}
	for _, k := range []string{"dist", "web/build"} {
		if !slices.Contains(stage.Keep, filepath.Join(work, k)) {
			t.Errorf("stage keep %v: want %s learned", stage.Keep, k)
		}
	}
	if slices.Contains(c.Plan.Landlock.Exec, work) {
		t.Errorf("landlock exec %v: the work tree must not be executable (only target/, bound, holds the build script)", c.Plan.Landlock.Exec)
	}
}

func rulesOf(ps ...string) []policy.PathRule {
	var out []policy.PathRule
	for _, p := range ps {
		out = append(out, policy.PathRule{Path: p})
	}
	return out
}

// An exec rule on a file inside an output directory bound for it (meson's build/hello) is
// granted on the directory holding the file: the linker replaces the file after an edit, and a
// Landlock rule on the old inode refused the new one (EACCES at `meson test`, not reported).
// A protected path's own bind (.git/objects) and the work tree keep the file rule.
func TestBoundOutputExecRuleSurvivesARelink(t *testing.T) {
	work, home := t.TempDir(), t.TempDir()
	for _, f := range []string{"build/hello", ".git/objects/tool"} {
		os.MkdirAll(filepath.Join(work, filepath.Dir(f)), 0o755)
		os.WriteFile(filepath.Join(work, f), []byte("x"), 0o755)
	}
	os.WriteFile(filepath.Join(work, "app"), []byte("x"), 0o755)
	p := testProfile()
	p.Filesystem.Write = rulesOf("$WORKDIR/build", "$WORKDIR/.git/objects")
	p.Filesystem.Exec = append(p.Filesystem.Exec, rulesOf("$WORKDIR/build/hello", "$WORKDIR/.git/objects/tool", "$WORKDIR/app")...)
	c, err := Compile(p, Env{Vars: map[string]string{"WORKDIR": work, "HOME": home, "TMPDIR": "/tmp"}, Arch: "x86_64"})
	if err != nil {
		t.Fatal(err)
	}
	ex := c.Plan.Landlock.Exec
	if !slices.Contains(ex, filepath.Join(work, "build")) || slices.Contains(ex, filepath.Join(work, "build/hello")) {
		t.Errorf("landlock exec %v: want build/ (the bound output holding the exec rule), not the file's inode", ex)
	}
	for _, keep := range []string{".git/objects/tool", "app"} {
		if !slices.Contains(ex, filepath.Join(work, keep)) {
			t.Errorf("landlock exec %v: want the file rule %s kept", ex, keep)
		}
	}
	if slices.Contains(ex, work) || slices.Contains(ex, filepath.Join(work, ".git/objects")) {
		t.Errorf("landlock exec %v: the work tree and .git/objects must not be executable", ex)
	}
}

// A recursive make's profile: lib/ an output directory staged with the work tree, app/
// bound writable inside that stage for the program its sub-make links and the recipe runs
// (app/app, missing before the build). Exec is granted on app/ as for a bind outside a stage
// (the run's EACCES at ./app/app otherwise); lib/ and the work tree stay without exec.
func TestMissingExecRuleInABindInsideAStage(t *testing.T) {
	work, home := t.TempDir(), t.TempDir()
	for _, d := range []string{"app", "lib"} {
		os.MkdirAll(filepath.Join(work, d), 0o755)
		os.WriteFile(filepath.Join(work, d, "src.c"), []byte("x"), 0o644)
	}
	p := testProfile()
	p.Filesystem.Write = rulesOf("$WORKDIR/app", "$WORKDIR/lib")
	p.Filesystem.Exec = append(p.Filesystem.Exec, rulesOf("$WORKDIR/app/app")...)
	c, err := Compile(p, Env{Vars: map[string]string{"WORKDIR": work, "HOME": home, "TMPDIR": "/tmp"}, Arch: "x86_64"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(c.Stages, func(s StageSpec) bool { return s.Dir == work }) || !slices.Contains(c.Plan.Writable, filepath.Join(work, "app")) {
		t.Fatalf("stages %v, writable %v: want the work tree staged and app/ bound inside it (what this test is about)", c.Stages, c.Plan.Writable)
	}
	ex := c.Plan.Landlock.Exec
	if !slices.Contains(ex, filepath.Join(work, "app")) {
		t.Errorf("landlock exec %v: want app/, the bind holding the missing program", ex)
	}
	for _, no := range []string{work, filepath.Join(work, "lib")} {
		if slices.Contains(ex, no) {
			t.Errorf("landlock exec %v: %s must not be executable", ex, no)
		}
	}
}

// A hidden glob of a private /tmp walks the host's tmp root only on the way to what is bound
// into it: what the binds show is hidden (the bind itself when the glob names it), a sibling
// the sandbox cannot see is neither listed nor hidden.
func TestPrivateTmpGlobsWalkOnlyTheBinds(t *testing.T) {
	root := t.TempDir()
	if privateTmpRoot(root) == "" {
		testutil.NotAvailable("the test's temporary directory is not in a private tmp root")
	}
	work := filepath.Join(root, "work")
	for _, p := range []string{"work/ssh-in/agent", "work/sub/ssh-deep", "ssh-sibling/agent", "other/ssh-x"} {
		full := filepath.Join(root, p)
		os.MkdirAll(filepath.Dir(full), 0o755)
		os.WriteFile(full, nil, 0o600)
	}
	p := testProfile()
	p.Filesystem.Read = []policy.PathRule{{Path: "$WORKDIR"}}
	p.Filesystem.PrivateTmp = true
	p.Filesystem.Hidden = []policy.PathRule{{Path: root + "/**/ssh-*"}, {Path: root + "/wor?"}}
	c, err := Compile(p, Env{Vars: map[string]string{"WORKDIR": work, "TMPDIR": "/tmp"}, Arch: "x86_64"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, h := range c.Plan.Hidden {
		if strings.HasPrefix(h, root+"/") {
			got = append(got, h)
		}
	}
	want := []string{work, filepath.Join(work, "ssh-in"), filepath.Join(work, "sub/ssh-deep")}
	if !slices.Equal(got, want) {
		t.Errorf("hidden under %s: %q, want %q", root, got, want)
	}
	d := &dirListings{scope: []string{work}}
	if ents := d.read(root); len(ents) != 1 || ents[0].Name() != "work" || !ents[0].IsDir() {
		t.Errorf("scoped listing of %s: %v, want only the way to %s", root, ents, work)
	}
	if ents := d.read(work); len(ents) != 2 {
		t.Errorf("scoped listing of %s: %v, want it whole (ssh-in, sub)", work, ents)
	}
}
