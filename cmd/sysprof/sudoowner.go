package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/paths"
	"github.com/sysprof/sysprof/trace"
)

// Files sysprof writes while running under sudo (profiles, their lock files, traces, reports,
// the directories it made for them) belong to the user who ran sudo, not to root: a profile in
// a work tree that its owner can no longer edit, refine or commit is of no use.

// sudoUser is the user sudo started sysprof for (SUDO_UID, SUDO_GID) when sysprof runs as root
// under sudo; ok is false otherwise (and for SUDO_UID=0: root owns its files already).
func sudoUser() (uid, gid int, ok bool) {
	if os.Geteuid() != 0 {
		return 0, 0, false
	}
	u, err1 := strconv.Atoi(os.Getenv("SUDO_UID"))
	g, err2 := strconv.Atoi(os.Getenv("SUDO_GID"))
	if err1 != nil || err2 != nil || u <= 0 || g < 0 {
		return 0, 0, false
	}
	return u, g, true
}

// giveToSudoUser hands paths this run wrote to the user who ran sudo; it does nothing when
// sysprof is not running under sudo. A failure is a warning on w, never fatal: the files are
// written.
func giveToSudoUser(w io.Writer, paths ...string) {
	uid, gid, ok := sudoUser()
	if !ok {
		return
	}
	for _, p := range paths {
		if err := chownNoFollow(p, uid, gid); err != nil {
			fmt.Fprintf(w, "sysprof: WARNING: %s stays owned by root: %v (`chown %d:%d` it yourself)\n", p, err, uid, gid)
		}
	}
}

// errNotOurs: the path is not a file sysprof (as root) would have written.
var errNotOurs = errors.New("not a root-owned directory or regular file with a single link")

// chownNoFollow changes the owner of path itself, as root: never what a symlink points to, and
// only a root-owned directory or regular file with one link (a hard link to someone else's
// file is left alone). Symlinks in path's directories are resolved first; the result is then
// opened without following any (RESOLVE_NO_SYMLINKS), so that a directory swapped for a symlink
// meanwhile makes the change fail instead of landing elsewhere.
func chownNoFollow(path string, uid, gid int) error {
	dir, err := filepath.EvalSymlinks(filepath.Dir(path))
	if err != nil {
		return err
	}
	fd, err := unix.Openat2(unix.AT_FDCWD, filepath.Join(dir, filepath.Base(path)), &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS,
	})
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	switch typ := st.Mode & unix.S_IFMT; {
	case int(st.Uid) == uid:
		return nil
	case st.Uid != 0, typ != unix.S_IFDIR && typ != unix.S_IFREG, typ == unix.S_IFREG && st.Nlink != 1:
		return errNotOurs
	}
	return unix.Fchownat(fd, "", uid, gid, unix.AT_EMPTY_PATH)
}

// missingDirs lists dir and those of its ancestors that do not exist, outermost first: what
// MkdirAll(dir) will create.
func missingDirs(dir string) []string {
	var out []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil {
			break
		}
		out = append([]string{d}, out...)
		if d == filepath.Dir(d) {
			break
		}
	}
	return out
}

// giveHomeFilesToSudoUser hands what a learn's command created or wrote under the user's home
// (home: the HOME enforcer.UserEnviron gave it; the command itself ran as root) to the user who
// ran sudo, with the directories between: a cache or a config the tool made there as root would
// lock the user out of it on the next ordinary run. chownNoFollow's rules: only root-owned
// directories and single-link regular files, never through a symlink.
func giveHomeFilesToSudoUser(tr *trace.Trace, home string) {
	uid, gid, ok := sudoUser()
	if !ok || !filepath.IsAbs(home) {
		return
	}
	home, err := filepath.EvalSymlinks(home)
	if err != nil {
		return
	}
	done := map[string]bool{}
	for _, f := range tr.Files {
		if !f.OK || f.Access != trace.AccessCreate && f.Access != trace.AccessWrite {
			continue
		}
		for p := filepath.Clean(f.Path); p != home && paths.Within(p, home) && !done[p]; p = filepath.Dir(p) {
			done[p] = true
			// Still in the home with its links resolved (chownNoFollow resolves the directories').
			if real, err := filepath.EvalSymlinks(p); err == nil && real != home && paths.Within(real, home) {
				_ = chownNoFollow(p, uid, gid) // not ours: left as it is
			}
		}
	}
}
