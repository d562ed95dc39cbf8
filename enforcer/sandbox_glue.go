package enforcer

import (
	"cmp"
	"fmt"
	"maps"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/enforcer/initstage"
	"github.com/sysprof/sysprof/paths"
	"github.com/sysprof/sysprof/sandbox"
)

// sandboxAvailable reports whether this build applies the sandbox layers (a seam: Run refuses
// profiles that need them when false, unless degrading).
var sandboxAvailable = true

// namespaceAttr is the namespace part of starting the init stage.
func namespaceAttr(p *sandbox.Plan, id sandbox.Identity) *syscall.SysProcAttr {
	return p.NamespaceAttr(id)
}

// identity is who a run's command in work tree dir is on the host (sandbox.ChooseIdentity for
// this process).
func identity(hostRoot bool, dir string, degrade Degrade) sandbox.Identity {
	var rootIdmap error
	var tree sandbox.Tree
	owner := -1
	if os.Geteuid() == 0 {
		rootIdmap = canIdmapRoot()
		var ok bool
		if tree, ok = workTree(dir, degrade); ok {
			owner = tree.UID
		}
	}
	sudoUID, sudoGID := sudoUser(os.Getenv("SUDO_UID"), os.Getenv("SUDO_GID"), owner)
	return sandbox.ChooseIdentity(os.Geteuid(), os.Getuid(), os.Getgid(), sudoUID, sudoGID, hostRoot, rootIdmap, tree)
}

// workTree is work tree dir's mount and owner for sandbox.ChooseIdentity as root (ok false:
// dir cannot be stat'ed). Per mount, not only /: the replica idmaps each mount it can, and a
// tree on one it cannot (an overlay, NFS, FUSE) would show as nobody's. Only a --degrade
// naming userns (not a bare --degrade, "all") turns root's tree on such a mount into host
// uid 0: that changes who the command is, not only which layer may go (TestWorkTreeHostUID0).
func workTree(dir string, degrade Degrade) (sandbox.Tree, bool) {
	var st unix.Stat_t
	if unix.Stat(dir, &st) != nil {
		return sandbox.Tree{}, false
	}
	return sandbox.Tree{Idmap: sandbox.CanIdmap(dir), UID: int(st.Uid), GID: int(st.Gid), HostUID0: slices.Contains(degrade, LayerUserNS)}, true
}

// sudoUser is $SUDO_UID and $SUDO_GID when the work tree belongs to that user (owner, its
// uid), nothing otherwise: the command then runs as plain root's does. Under sudo the
// unsandboxed command is root, to whom a root-owned tree is its own (git, which as root with
// SUDO_UID trusts a repository of either owner); the invoking user in it would be a stranger
// (git: "dubious ownership"), who could not write it either.
func sudoUser(sudoUID, sudoGID string, owner int) (string, string) {
	if u, err := strconv.Atoi(sudoUID); err != nil || u != owner {
		return "", ""
	}
	return sudoUID, sudoGID
}

// UserEnviron is environ as enforce gives it to a command in work tree dir when sysprof runs
// under sudo (userEnviron for the identity enforce chooses there), and what it changed; nil
// when nothing changes or sysprof is not root under sudo. learn and drift run their command
// with it, so that $HOME is the user's in the profile as in the enforced run.
func UserEnviron(dir string, environ []string) ([]string, string) {
	if os.Geteuid() != 0 || os.Getenv("SUDO_UID") == "" {
		return nil, ""
	}
	return userEnviron(environ, identity(false, dir, nil), dir)
}

// canIdmapRoot is sandbox.CanIdmap("/"), once per process.
var canIdmapRoot = sync.OnceValue(func() error { return sandbox.CanIdmap("/") })

// stageParts are the layers' parts of plan the init stage applies (each layer's Part), in
// stageOrder, each marked whether degrade lets the run go without it.
func stageParts(p *sandbox.Plan, degrade Degrade) []initstage.Part {
	var parts []initstage.Part
	for _, name := range stageOrder {
		if sub, want := layerNamed(name).Part(p, degrade); want {
			parts = append(parts, initstage.Part{Name: name, Plan: sub, Degrade: degrade.Allows(name)})
		}
	}
	return parts
}

// userEnviron is the command's environment (environ; nil: sysprof's own) for a run whose
// command is id in work tree dir: where root's command is another user (under sudo the
// invoking user, in a user's tree on a mount that cannot be idmapped its owner), sudo's default
// (env_reset) and root's own login leave HOME, USER and LOGNAME root's, a home that user cannot
// read (git: EACCES on /root/.config/git/attributes on every run). Those name the user then,
// from the password database, as a login of theirs would; a HOME that is not root's (sudo -E,
// env_keep, set by hand) is kept. Root's command in root's tree on a mount that cannot be
// idmapped gets gitSafeTree's. It returns nil, and what it set, when nothing changes.
func userEnviron(environ []string, id sandbox.Identity, dir string) ([]string, string) {
	if id.Model == "root-idmap" && id.Note != "" {
		return gitSafeTree(environ, dir)
	}
	if id.Model != "sudo" && id.Model != "root-owner" {
		return nil, ""
	}
	if environ == nil {
		environ = os.Environ()
	}
	u, err := user.LookupId(strconv.Itoa(id.UID))
	if err != nil || !filepath.IsAbs(u.HomeDir) {
		return nil, "" // sudo itself refuses a user the password database lacks
	}
	rootHome := "/root"
	if r, err := user.LookupId("0"); err == nil && filepath.IsAbs(r.HomeDir) {
		rootHome = r.HomeDir
	}
	get := paths.EnvList(environ)
	home, _ := get("HOME")
	if home != "" && paths.Resolve(home) != paths.Resolve(rootHome) {
		return nil, ""
	}
	set := map[string]string{"HOME": u.HomeDir}
	for _, k := range []string{"USER", "LOGNAME"} {
		if v, ok := get(k); ok && v == "root" {
			set[k] = u.Username
		}
	}
	out := slices.DeleteFunc(slices.Clone(environ), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		_, ok := set[k]
		return ok
	})
	for _, k := range slices.Sorted(maps.Keys(set)) {
		out = append(out, k+"="+set[k])
	}
	return out, fmt.Sprintf("environment: HOME=%s, the command's user's: it runs as uid %d, to whom root's home (%s) is closed", u.HomeDir, id.UID, cmp.Or(home, "unset"))
}

// gitSafeTree is environ with git told that the repository holding dir is safe
// (safe.directory, through GIT_CONFIG_COUNT: command-line scope, which git honours for it),
// when root's command runs as RootUID in root's tree on a mount that cannot be idmapped:
// inside, the tree shows as nobody's and git would refuse it ("dubious ownership"), where root
// unsandboxed, its owner, trusts it. Only that one repository (its top level, the nearest
// directory above dir holding .git), and only when the host says root owns it and its .git:
// a repository of anyone else's is one root's git refuses unsandboxed too. The command's uid
// is unchanged; nil when nothing applies.
func gitSafeTree(environ []string, dir string) ([]string, string) {
	top := dir
	for {
		var st, gst unix.Stat_t
		if unix.Lstat(filepath.Join(top, ".git"), &gst) == nil {
			if unix.Stat(top, &st) != nil || st.Uid != 0 || gst.Uid != 0 {
				return nil, ""
			}
			break
		}
		up := filepath.Dir(top)
		if up == top {
			return nil, ""
		}
		top = up
	}
	if environ == nil {
		environ = os.Environ()
	}
	n := 0
	if v, ok := paths.EnvList(environ)("GIT_CONFIG_COUNT"); ok {
		c, err := strconv.Atoi(v)
		if err != nil || c < 0 {
			return nil, "" // git refuses the run's config itself
		}
		n = c
	}
	out := slices.DeleteFunc(slices.Clone(environ), func(kv string) bool { return strings.HasPrefix(kv, "GIT_CONFIG_COUNT=") })
	out = append(out, fmt.Sprintf("GIT_CONFIG_KEY_%d=safe.directory", n), fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", n, top), fmt.Sprintf("GIT_CONFIG_COUNT=%d", n+1))
	return out, fmt.Sprintf("environment: GIT_CONFIG_COUNT=%d with safe.directory=%s: root's repository shows as nobody's inside, git is told it is safe (the command stays uid %d)", n+1, top, sandbox.RootUID)
}
