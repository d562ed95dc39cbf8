package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/paths"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/report"
)

// The fourth red team (issue 23): a directory bound writable as a whole (one whose protected
// paths all exist, outside the work tree: a profile that writes $HOME/.config, and may rename,
// link, chmod, set times and extended attributes) keeps its protected paths as read-only binds.
// Changing one without opening it for writing is refused by the kernel with an error the
// earlier guard never recorded: a rename over a protected file or directory (git's config.lock
// over a config bound on its own, a new directory over ~/.config/git) or of it away meets a
// mount point (EBUSY); a rename into a protected directory crosses mounts (EXDEV), which the guard took for
// the ordinary cross-mount kind. (A work tree with a protected path missing is staged instead:
// there the same attacks end in the changeset, held dangerous: TestRedTeamPersistence.)

// boundTreeAttacks change protected paths of bound directories by rename, exchange, link of an
// unnamed file, times, mode and extended attributes. Each names the protected path its record
// must name (as root; as an ordinary user file denials are unobservable).
var boundTreeAttacks = []struct{ action, line, path string }{
	{"rename=$HOME/.config/newdir,$HOME/.config/git", "rename: EBUSY", "$HOME/.config/git"},
	{"renamex=$HOME/.config/newdir,$HOME/.config/fish", "renamex: EBUSY", "$HOME/.config/fish"},
	{"rename=$HOME/.config/autostart,$HOME/.config/moved", "rename: EBUSY", "$HOME/.config/autostart"},
	{"rename=$HOME/.config/new.txt,$HOME/.config/systemd/user/evil.service", "rename: EXDEV", "$HOME/.config/systemd/user/evil.service"},
	{"tmplink=$HOME/.config,$HOME/.config/autostart/evil.desktop", "tmplink: EROFS", "$HOME/.config/autostart/evil.desktop"},
	{"utime=$HOME/.config/git/config", "utime: EROFS", "$HOME/.config/git/config"},
	{"xattr=$HOME/.config/git/config,user.sysprof", "xattr: EROFS", "$HOME/.config/git/config"},
	{"chmod=$HOME/.config/git/config", "chmod: EROFS", "$HOME/.config/git/config"},
}

// TestRedTeamBoundTreeCovers runs boundTreeAttacks under the probe's profile widened to write
// $HOME/.config with the calls they need, as root and as an ordinary user:
// each refused, each on the record (the rename's other end not), no protected file changed.
func TestRedTeamBoundTreeCovers(t *testing.T) {
	b, root, profile := redteamBox(t)
	p := loadProfile(t, profile)
	p.Filesystem.Write = append(p.Filesystem.Write, policy.PathRule{Path: "$HOME/.config"})
	for _, n := range []string{"rename", "renameat", "renameat2", "link", "linkat", "utimensat", "setxattr", "chmod", "fchmodat", "mkdir", "mkdirat"} {
		if !slices.ContainsFunc(p.Syscalls.Allow, func(s policy.Syscall) bool { return s.Name == n }) {
			p.Syscalls.Allow = append(p.Syscalls.Allow, policy.Syscall{Name: n})
		}
	}
	wide := filepath.Join(root, "bound.yaml")
	if err := policy.Save(wide, p); err != nil {
		t.Fatal(err)
	}
	protected := map[string]string{
		"$HOME/.config/git/config":             "[core]\n",
		"$HOME/.config/systemd/user/a.service": "[Unit]\n",
		"$HOME/.config/autostart/a.desktop":    "[Desktop Entry]\n",
		"$HOME/.config/environment.d/a.conf":   "A=1\n",
		"$HOME/.config/fish/config.fish":       "\n",
		"$HOME/.config/github-copilot/x.json":  "{}\n",
		"$HOME/.config/direnv/direnvrc":        "\n",
		"$HOME/.config/pip/pip.conf":           "[global]\n",
		// $GOCONFIG/env: every protected path below the bound directory exists (a missing one
		// stages the directory instead, and the attacks are held rather than refused).
		"$HOME/.config/go/env":                   "GOFLAGS=\n",
		"$HOME/.config/nvim/init.lua":            "\n",
		"$HOME/.config/Code/User/settings.json":  "{}\n",
		"$HOME/.config/VSCodium/User/tasks.json": "{}\n",
		"$HOME/.config/tmux/tmux.conf":           "\n",
		"$HOME/.config/mimeapps.list":            "[Default Applications]\n",
		"$HOME/.config/emacs/init.el":            "\n",
	}
	for name, data := range protected {
		testutil.WriteFile(t, expandAttack(b, name), data, 0o644)
	}
	for _, q := range paths.ProtectedBeneath("$HOME/.config") {
		if _, err := os.Lstat(expandAttack(b, q)); err != nil {
			t.Fatalf("protected %s is missing below the bound directory (add it above: a missing one stages the directory instead): %v", q, err)
		}
	}
	argv := []string{"./rt", "put=" + expandAttack(b, "$HOME/.config/newdir/x"), "put=" + expandAttack(b, "$HOME/.config/new.txt")}
	for _, a := range boundTreeAttacks {
		argv = append(argv, expandAttack(b, a.action))
	}
	for _, as := range asUsers {
		t.Run(as.name, func(t *testing.T) {
			if as.wrap != nil {
				chownTree(t, b.Work, 65534)
				chownTree(t, b.Home, 65534)
			}
			rep := filepath.Join(root, as.name+"-bound.json")
			r := enforceAs(t, b, as.wrap, wide, rep, argv...)
			rp := testutil.ReadReport(t, rep)
			if strings.Count(r.Stdout, "put: ok") != 2 {
				t.Fatalf("$HOME/.config is not writable under the widened profile: %s", r)
			}
			lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")[2:]
			if len(lines) != len(boundTreeAttacks) {
				t.Fatalf("the probe printed %d lines for %d attacks: %s", len(lines), len(boundTreeAttacks), r)
			}
			for i, a := range boundTreeAttacks {
				if lines[i] != a.line {
					t.Errorf("%s: got %q, want %q", a.action, lines[i], a.line)
				}
				want := expandAttack(b, a.path)
				name, _, _ := strings.Cut(a.action, "=")
				call := map[string]string{"renamex": "renameat2", "tmplink": "linkat", "utime": "utimensat", "xattr": "setxattr"}[name]
				if call == "" {
					call = name
				}
				recorded := slices.ContainsFunc(rp.Denials, func(d report.Denial) bool {
					return d.Kind == report.KindFile && d.Path == want && d.Syscall == call
				})
				unobservable := as.wrap != nil && slices.ContainsFunc(rp.Unobservable, func(u string) bool { return strings.HasPrefix(u, "file denials") })
				if !recorded && !unobservable {
					t.Errorf("%s (%s): refused, but not on the record (want a file denial of %s by %s)", a.action, lines[i], want, call)
				}
			}
			for _, d := range rp.Denials {
				if d.Kind == report.KindFile && slices.Contains([]string{"new.txt", "newdir", "moved"}, filepath.Base(d.Path)) {
					t.Errorf("the rename's other end is recorded as refused: %s", testutil.DenialString(d))
				}
			}
			for name, data := range protected {
				if got, err := os.ReadFile(expandAttack(b, name)); err != nil || string(got) != data {
					t.Errorf("%s changed on the host: %q, %v", name, got, err)
				}
				if fi, err := os.Stat(expandAttack(b, name)); err == nil && fi.Mode().Perm() != 0o644 {
					t.Errorf("%s changed its mode on the host: %v", name, fi.Mode())
				}
			}
			for _, name := range []string{"$HOME/.config/systemd/user/evil.service", "$HOME/.config/autostart/evil.desktop"} {
				if _, err := os.Lstat(expandAttack(b, name)); err == nil {
					t.Errorf("%s reached the host", name)
				}
			}
			if t.Failed() {
				var ds []string
				for _, d := range rp.Denials {
					ds = append(ds, "  "+testutil.DenialString(d))
				}
				t.Logf("stdout:\n%s\nreport:\n%s", r.Stdout, strings.Join(ds, "\n"))
			}
		})
	}
}

// TestRedTeamUDPPastTheStub: a profile that resolves names gets what a resolver needs
// (policy.CloseResolver: UDP sockets, sendto), and the command may use them for anything else:
// a DNS query straight to a resolver's address (past sysprof's stub, which checks names), a
// datagram to any address. sendto succeeds (the datagram enters the sandbox's own network
// namespace), but nothing leaves: each is on the record, with nothing to allow, as root and as
// an ordinary user. sendmsg, which CloseResolver does not give, is refused by the filter.
func TestRedTeamUDPPastTheStub(t *testing.T) {
	b, root, profile := redteamBox(t)
	p := loadProfile(t, profile)
	p.Network.Resolve = append(p.Network.Resolve, policy.Endpoint{Endpoint: "pkgs.example.test"})
	if !policy.UsesResolver(p) {
		t.Fatal("a profile with a resolve-only name does not use the stub: the test no longer gets a resolver's calls")
	}
	resolving := filepath.Join(root, "resolving.yaml")
	if err := policy.Save(resolving, p); err != nil {
		t.Fatal(err)
	}
	datagrams := []struct{ action, endpoint, syscall string }{
		{"udp=10.53.0.1:53", "10.53.0.1:53", ""},
		{"udp=192.0.2.7:4444", "192.0.2.7:4444", ""},
		{"udpmsg=198.51.100.9:123", "198.51.100.9:123", "sendmsg"},
	}
	argv := []string{"./rt"}
	for _, d := range datagrams {
		argv = append(argv, d.action)
	}
	for _, as := range asUsers {
		t.Run(as.name, func(t *testing.T) {
			if as.wrap != nil {
				chownTree(t, b.Work, 65534)
				chownTree(t, b.Home, 65534)
			}
			rep := filepath.Join(root, as.name+"-udp.json")
			r := enforceAs(t, b, as.wrap, resolving, rep, argv...)
			rp := testutil.ReadReport(t, rep)
			for _, dg := range datagrams {
				recorded := slices.ContainsFunc(rp.Denials, func(d report.Denial) bool {
					return d.Kind == report.KindNetwork && d.Endpoint == dg.endpoint && strings.HasPrefix(d.Suggest, "none: ") ||
						dg.syscall != "" && d.Kind == report.KindSyscall && d.Syscall == dg.syscall
				})
				if !recorded {
					t.Errorf("%s: not on the record as a refused datagram (want a network denial of %s with nothing to allow)", dg.action, dg.endpoint)
				}
			}
			if t.Failed() {
				var ds []string
				for _, d := range rp.Denials {
					ds = append(ds, "  "+testutil.DenialString(d))
				}
				t.Logf("stdout:\n%s\nreport:\n%s\nunobservable: %q", r.Stdout, strings.Join(ds, "\n"), rp.Unobservable)
			}
		})
	}
}
