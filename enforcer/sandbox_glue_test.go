package enforcer

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/paths"
	"github.com/sysprof/sysprof/sandbox"
)

// TestSudoUser: under sudo the command is the invoking user only in a work tree of theirs.
func TestSudoUser(t *testing.T) {
	for _, tc := range []struct {
		uid, gid string
		owner    int
		want     bool
	}{
		{"1000", "1000", 1000, true},
		{"1000", "1000", 0, false},
		{"1000", "1000", -1, false},
		{"", "", 0, false},
		{"x", "1000", 1000, false},
	} {
		u, g := sudoUser(tc.uid, tc.gid, tc.owner)
		if got := u != ""; got != tc.want || (got && (u != tc.uid || g != tc.gid)) {
			t.Errorf("sudoUser(%q, %q, owner %d) = %q %q, want kept %v", tc.uid, tc.gid, tc.owner, u, g, tc.want)
		}
	}
}

// TestUserEnviron: where root's command is another user (sudo's invoking user, a tree's owner),
// HOME, USER and LOGNAME of root's become that user's; a HOME of another's choosing stays, and no other
// model's environment changes.
func TestUserEnviron(t *testing.T) {
	nobody, err := user.LookupId("65534")
	if err != nil {
		t.Fatalf("the password database has no uid 65534: %v", err)
	}
	rootHome := "/root"
	if r, err := user.LookupId("0"); err == nil {
		rootHome = r.HomeDir
	}
	sudo := sandbox.Identity{Model: "sudo", UID: 65534, GID: 65534}
	base := []string{"PATH=/usr/bin:/bin", "SUDO_UID=65534"}
	for _, tc := range []struct {
		name    string
		id      sandbox.Identity
		environ []string
		want    map[string]string // nil: unchanged
	}{
		{"sudo, root's HOME", sudo, append(slices.Clone(base), "HOME="+rootHome, "USER=root", "LOGNAME=root"),
			map[string]string{"HOME": nobody.HomeDir, "USER": nobody.Username, "LOGNAME": nobody.Username}},
		{"sudo, root's HOME, USER kept", sudo, append(slices.Clone(base), "HOME="+rootHome+"/", "USER=someone"),
			map[string]string{"HOME": nobody.HomeDir, "USER": "someone"}},
		{"sudo, no HOME", sudo, slices.Clone(base), map[string]string{"HOME": nobody.HomeDir}},
		{"sudo -E: the user's HOME", sudo, append(slices.Clone(base), "HOME=/home/someone", "USER=root"), nil},
		{"plain root", sandbox.Identity{Model: "root-idmap"}, append(slices.Clone(base), "HOME="+rootHome), nil},
		{"root-owner: the tree's owner, root's HOME", sandbox.Identity{Model: "root-owner", UID: 65534, GID: 65534}, append(slices.Clone(base), "HOME="+rootHome, "LOGNAME=root"),
			map[string]string{"HOME": nobody.HomeDir, "LOGNAME": nobody.Username}},
		{"root-owner, a CI's HOME", sandbox.Identity{Model: "root-owner", UID: 65534, GID: 65534}, append(slices.Clone(base), "HOME=/github/home"), nil},
		{"sudo, a user the password database lacks", sandbox.Identity{Model: "sudo", UID: 1 << 30}, append(slices.Clone(base), "HOME="+rootHome), nil},
	} {
		got, note := userEnviron(tc.environ, tc.id, "")
		if tc.want == nil {
			if got != nil || note != "" {
				t.Errorf("%s: changed the environment: %q (%s)", tc.name, got, note)
			}
			continue
		}
		get := paths.EnvList(got)
		for k, v := range tc.want {
			if g, _ := get(k); g != v {
				t.Errorf("%s: %s=%q, want %q (%q)", tc.name, k, g, v, got)
			}
		}
		if n := slices.IndexFunc(got, func(kv string) bool { return strings.HasPrefix(kv, "HOME=") }); n < 0 || slices.IndexFunc(got[n+1:], func(kv string) bool { return strings.HasPrefix(kv, "HOME=") }) >= 0 {
			t.Errorf("%s: want HOME once: %q", tc.name, got)
		}
		if g, _ := get("PATH"); g != "/usr/bin:/bin" {
			t.Errorf("%s: PATH %q lost", tc.name, g)
		}
		if !strings.Contains(note, "HOME="+nobody.HomeDir) {
			t.Errorf("%s: note %q does not say the HOME set", tc.name, note)
		}
	}
}

// TestWorkTreeHostUID0: host uid 0 for root's tree on a mount that cannot be idmapped only when
// --degrade names userns; a bare --degrade ("all") lets layers go, never changes who the
// command is.
func TestWorkTreeHostUID0(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		degrade Degrade
		want    bool
	}{
		{nil, false}, {DegradeAll, false}, {Degrade{LayerLandlock}, false},
		{Degrade{LayerUserNS}, true}, {Degrade{"all", LayerUserNS}, true},
	} {
		tree, ok := workTree(dir, tc.degrade)
		if !ok || tree.HostUID0 != tc.want {
			t.Errorf("--degrade=%v: tree %+v (ok %v), want HostUID0 %v", tc.degrade, tree, ok, tc.want)
		}
	}
	if _, ok := workTree(dir+"/missing", Degrade{LayerUserNS}); ok {
		t.Error("a work tree that is not there gave a tree")
	}
}

// Root's command in root's tree on a mount that cannot be idmapped sees the tree as nobody's:
// git is told that exact repository is safe (safe.directory in command-line scope, which git
// honours: checked here with git itself as another uid), appended to the caller's own
// GIT_CONFIG_COUNT. A repository whose top or .git the host says is not root's gets nothing
// (root's git refuses it unsandboxed too), nor does a directory in no repository, nor another
// identity.
func TestGitSafeTree(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireTools(t, os.Getenv("PATH"), "git", "setpriv")
	root := t.TempDir()
	for _, d := range []string{filepath.Dir(root), root} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	top := filepath.Join(root, "repo")
	sub := filepath.Join(top, "sub")
	if out, err := exec.Command("sh", "-c", "git init -q "+top+" && mkdir "+sub).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	note := sandbox.Identity{Model: "root-idmap", Note: "the work tree is root's"}
	base := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + root, "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=color.ui", "GIT_CONFIG_VALUE_0=never"}
	env, msg := userEnviron(base, note, sub)
	get := paths.EnvList(env)
	for k, v := range map[string]string{"GIT_CONFIG_COUNT": "2", "GIT_CONFIG_KEY_0": "color.ui", "GIT_CONFIG_KEY_1": "safe.directory", "GIT_CONFIG_VALUE_1": top} {
		if g, _ := get(k); g != v {
			t.Errorf("%s=%q, want %q (%q)", k, g, v, env)
		}
	}
	if !strings.Contains(msg, "safe.directory="+top) {
		t.Errorf("the note does not say what was set: %q", msg)
	}
	// git itself, as a uid that does not own the tree (what RootUID is inside).
	git := func(env []string) error {
		c := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "git", "-C", sub, "status", "--short")
		c.Env = env
		out, err := c.CombinedOutput()
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	}
	if err := git(base); err == nil || !strings.Contains(err.Error(), "dubious ownership") {
		t.Fatalf("control: git as another uid in root's tree: %v", err)
	}
	if err := git(env); err != nil {
		t.Errorf("git with the safe tree's environment: %v", err)
	}
	for _, tc := range []struct {
		name  string
		chown string
		id    sandbox.Identity
		dir   string
	}{
		{"no note (an idmapped tree)", "", sandbox.Identity{Model: "root-idmap"}, sub},
		{"root-owner", "", sandbox.Identity{Model: "root-owner", UID: 65534, GID: 65534}, sub},
		{"no repository", "", note, root},
		{"the top is another uid's", top, note, sub},
		{"its .git is another uid's", filepath.Join(top, ".git"), note, sub},
	} {
		if tc.chown != "" {
			if err := os.Lchown(tc.chown, 1000, 0); err != nil {
				t.Fatal(err)
			}
		}
		got, msg := userEnviron(base, tc.id, tc.dir)
		if v, _ := paths.EnvList(got)("GIT_CONFIG_COUNT"); v == "2" || strings.Contains(msg, "safe.directory") {
			t.Errorf("%s: git told the tree is safe: %q", tc.name, got)
		}
		if tc.chown != "" {
			if err := os.Lchown(tc.chown, 0, 0); err != nil {
				t.Fatal(err)
			}
		}
	}
}
