package enforcer

import (
	"os/user"
	"slices"
	"strings"
	"testing"

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
		got, note := userEnviron(tc.environ, tc.id)
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
