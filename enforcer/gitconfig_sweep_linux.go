package enforcer

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/changeset"
	"github.com/sysprof/sysprof/paths"
	"github.com/sysprof/sysprof/report"
)

// A profile that writes the work tree's .git whole (a learned git commit) has it bound
// writable: git's ordinary config writes (submodule update, remote add, branch
// --set-upstream-to) land at once. A setting that makes git run a program (core.fsmonitor,
// an alias with !, a filter: changeset.GitConfigRuns) must not (issue 23): the configs of the
// work tree's git directory (its own, its modules' and its worktrees') are read before the
// run, and at the end one that gained such a setting is put back and the run's file held as a
// dangerous change of the run's changeset. (A nested repository's config is held whatever it
// gains: nestedGit; a linked worktree's common config is read-only: linkedGitDir.)

// gitConfigSnap is a config file as it was before the run.
type gitConfigSnap struct {
	data     []byte
	mode     os.FileMode
	uid, gid int
}

// repoConfigFiles lists the config files of the work tree's git directory that lie in bound
// directory b: config and config.worktree of it, of each module below modules/ (nested too)
// and of each worktrees/ entry. In a `git worktree` or a submodule (.git a file) that is the
// git directory it names and its common directory.
func repoConfigFiles(b string, env Env) []string {
	wd := filepath.Clean(env.Vars["WORKDIR"])
	if !filepath.IsAbs(wd) {
		return nil
	}
	gitDirs := []string{filepath.Join(wd, ".git")}
	if fi, err := os.Lstat(gitDirs[0]); err != nil {
		return nil
	} else if !fi.IsDir() {
		gitdir, common, ok := paths.LinkedGitDirs(wd)
		if !ok {
			return nil
		}
		gitDirs = []string{gitdir, common}
	}
	var out []string
	var add func(gitdir string, depth int)
	add = func(gitdir string, depth int) {
		for _, n := range []string{"config", "config.worktree", "info/attributes", "commondir"} {
			if p := filepath.Join(gitdir, n); paths.Within(p, b) {
				out = append(out, p)
			}
		}
		if depth > 8 {
			return
		}
		for _, sub := range []string{"modules", "worktrees"} {
			ents, _ := os.ReadDir(filepath.Join(gitdir, sub))
			for _, e := range ents {
				if e.IsDir() && e.Type()&os.ModeSymlink == 0 {
					d := filepath.Join(gitdir, sub, e.Name())
					if sub == "modules" {
						if _, err := os.Lstat(filepath.Join(d, "HEAD")); err != nil {
							add(d, depth+1) // a module named a/b: modules/a/b
							continue
						}
					}
					add(d, depth+1)
				}
			}
		}
	}
	for _, g := range gitDirs {
		if paths.Within(g, b) || paths.Within(b, g) {
			add(g, 0)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// gitConfigSnaps are the configs as they were before the run (nil: absent), by host path,
// and the plan's read-only paths (a config below one is out of the run's reach: the plan's
// covers, and the host's own edits during the run are the user's).
type gitConfigSnaps struct {
	files    map[string]*gitConfigSnap
	readOnly []string
}

// snapshotGitConfigs reads the git configs in the bound directories before the run.
func snapshotGitConfigs(bound, readOnly []string, env Env) *gitConfigSnaps {
	snaps := &gitConfigSnaps{files: map[string]*gitConfigSnap{}, readOnly: readOnly}
	for _, b := range bound {
		for _, p := range repoConfigFiles(b, env) {
			snaps.files[p] = readGitConfig(p, -1) // whole: what is put back must be the host's file
		}
	}
	return snaps
}

// readGitConfig reads config file p, not through a symlink, up to limit bytes (all of it when
// limit < 0); nil when it is not a regular file.
func readGitConfig(p string, limit int64) *gitConfigSnap {
	f, err := os.OpenFile(p, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	var r io.Reader = f
	if limit >= 0 {
		r = io.LimitReader(f, limit)
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil
	}
	s := &gitConfigSnap{data: data, mode: fi.Mode().Perm(), uid: -1, gid: -1}
	if st, ok := fi.Sys().(*unix.Stat_t); ok {
		s.uid, s.gid = int(st.Uid), int(st.Gid)
	}
	return s
}

// sweepGitConfigs queues to hold each git config in f.dir that gained a code-running setting
// during the run, or that is no longer a regular file (a symlink git would follow to a file
// of the run's choosing, a fifo git would hang on, a directory; or a directory on its way
// replaced so), and remembers the file to put back. A config the run removed stays removed:
// git runs nothing for it. What was not a regular file before the run (since: its start, less
// the slack) is the host's own (git-new-workdir links config and info/ to the main
// repository's): neither held nor removed.
func (f *boundFinding) sweepGitConfigs(snaps *gitConfigSnaps, env Env, since time.Time) {
	if snaps == nil {
		return
	}
	for _, p := range repoConfigFiles(f.dir, env) {
		if paths.CoveredBy(p, snaps.readOnly) {
			continue
		}
		rel, err := filepath.Rel(f.dir, p)
		if err != nil {
			continue
		}
		old := snaps.files[p]
		var what string
		if bad, kind := nonRegularOnTheWay(f.dir, rel, since); bad != "" {
			// Held is what replaced the file (or its directory): the file goes back in its place.
			rel, what = bad, kind
		} else if now := readGitConfig(p, readLimit(old)); now == nil || old != nil && bytes.Equal(now.data, old.data) {
			continue // none, or as it was: it gained nothing
		} else {
			var before []byte
			if old != nil {
				before = old.data
			}
			runs := changeset.GitRepoFileRuns(p, before, now.data)
			if len(runs) == 0 {
				continue
			}
			what = "gained " + strings.Join(runs, ", ")
		}
		f.held = append(f.held, rel)
		if f.restore == nil {
			f.restore = map[string]*gitConfigSnap{}
		}
		f.restore[p] = old
		if f.restoreWhy == nil {
			f.restoreWhy = map[string]restoreWhy{}
		}
		f.restoreWhy[p] = restoreWhy{rel: rel, what: what}
	}
}

// restoreWhy is why a config is put back (what the run did to it) and what the sweep holds
// for it (rel: the file, or what replaced a directory on its way).
type restoreWhy struct{ rel, what string }

// configNote says what became of config p that the run changed: put back, and the run's file
// held (where: ""), kept beside it (where: its name) or, when neither worked, lost (err).
func (f *boundFinding) configNote(p, where string, err error) string {
	head := fmt.Sprintf("%s %s during the run: put back as it was", report.Printable(p), report.Printable(f.restoreWhy[p].what))
	switch {
	case err == nil && where == "":
		return head + ", the run's file held as dangerous (`sysprof changes`)"
	case err == nil:
		return head + fmt.Sprintf(", the run's file kept as %s (git never reads it; no changeset to hold it)", report.Printable(where))
	}
	return head + fmt.Sprintf("; the run's file could not be kept: %s", report.Printable(err.Error()))
}

// setAside renames what f holds for config p (the run's file, or what replaced a directory on
// its way) beside it as NAME.sysprof-run-TIME, where git reads nothing, for when no changeset
// can hold it: the config is put back and the run's file is not lost. It returns the new name.
func (f *boundFinding) setAside(p string) (string, error) {
	src := filepath.Join(f.dir, f.restoreWhy[p].rel)
	dst := fmt.Sprintf("%s.sysprof-run-%d", src, time.Now().UnixNano())
	if err := unix.Renameat2(unix.AT_FDCWD, src, unix.AT_FDCWD, dst, unix.RENAME_NOREPLACE); err != nil {
		return "", fmt.Errorf("set aside %s: %w", report.Printable(src), err)
	}
	return dst, nil
}

// keepAside is the hold of f without a changeset (none could be begun: why): each changed
// config is set aside and put back, each said; the rest f holds (links, nested hooks) is left
// in place, said.
func (f *boundFinding) keepAside(why error) []string {
	var notes []string
	configs := map[string]bool{}
	for p := range f.restore {
		configs[f.restoreWhy[p].rel] = true
		where, err := f.setAside(p)
		if err == nil {
			err = putBack(p, f.restore[p])
			if err != nil {
				err = fmt.Errorf("put back: %w (the run's file is %s)", err, where)
			}
		} else if perr := putBack(p, f.restore[p]); perr != nil {
			err = errors.Join(err, fmt.Errorf("put back: %w: check it before running git there", perr))
		} else {
			err = fmt.Errorf("%w: overwritten by the host's", err)
		}
		notes = append(notes, f.configNote(p, where, err))
	}
	var left []string
	for _, rel := range f.held {
		if !configs[rel] {
			left = append(left, rel)
		}
	}
	if len(left) > 0 {
		notes = append(notes, fmt.Sprintf("bound %s: %d symlink(s) out of the tree, special file(s) or nested repository hook(s) left in place: no changeset to hold them (%v): %s",
			f.dir, len(left), why, report.Printable(strings.Join(left, ", "))))
	}
	return notes
}

// readLimit is how much of the run's config the sweep reads: a byte past what GitRepoFileRuns
// parses (a larger file is held unread), or past the host's own file when that was larger, so
// that a file left as it was reads as such and is neither held nor put back.
func readLimit(old *gitConfigSnap) int64 {
	if old != nil && len(old.data) >= 1<<20 {
		return int64(len(old.data)) + 1
	}
	return 1<<20 + 1
}

// nonRegularOnTheWay returns the first component of rel below dir that is neither a directory
// (on the way) nor a regular file (rel itself), and what it is; "" when there is none, a
// component is missing, or the first such component's ctime is before since (the host's own,
// not the run's: a link the run made or renamed into place has a ctime of the run).
func nonRegularOnTheWay(dir, rel string, since time.Time) (bad, what string) {
	comps := strings.Split(rel, "/")
	for i := range comps {
		r := filepath.Join(comps[:i+1]...)
		fi, err := os.Lstat(filepath.Join(dir, r))
		if err != nil {
			return "", ""
		}
		last := i == len(comps)-1
		if last && fi.Mode().IsRegular() || !last && fi.IsDir() {
			continue
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok || time.Unix(st.Ctim.Unix()).Before(since) {
			return "", ""
		}
		kind := "a " + changeset.TypeWord(changeset.TypeOf(st.Mode))
		if fi.Mode()&os.ModeSymlink != 0 {
			t, _ := os.Readlink(filepath.Join(dir, r))
			kind = fmt.Sprintf("a symlink to %s", t)
		}
		if !last {
			return r, fmt.Sprintf("was reached through %s, replaced by %s (git would read what it names)", r, kind)
		}
		return r, fmt.Sprintf("was replaced by %s (git would read what it names)", kind)
	}
	return "", ""
}

// openDirNoLinks opens directory d, not through a symlink; with make, it makes d (and up to
// depth missing parents) again when the run moved it away (info/ replaced by a link, held).
func openDirNoLinks(d string, make bool, depth int) (int, error) {
	how := &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC | unix.O_NOFOLLOW,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
	fd, err := unix.Openat2(unix.AT_FDCWD, d, how)
	if !errors.Is(err, unix.ENOENT) || !make || depth == 0 {
		return fd, err
	}
	pfd, err := openDirNoLinks(filepath.Dir(d), make, depth-1)
	if err != nil {
		return -1, err
	}
	defer unix.Close(pfd)
	if err := unix.Mkdirat(pfd, filepath.Base(d), 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
		return -1, err
	}
	var st unix.Stat_t
	if os.Geteuid() == 0 && unix.Fstat(pfd, &st) == nil { // its parent's owner, as git made it
		_ = unix.Fchownat(pfd, filepath.Base(d), int(st.Uid), int(st.Gid), unix.AT_SYMLINK_NOFOLLOW)
	}
	how.Resolve |= unix.RESOLVE_BENEATH
	return unix.Openat2(pfd, filepath.Base(d), how)
}

// putBack replaces p with old (removes it when old is nil), through a temporary file renamed
// into place in p's directory, opened without following links.
func putBack(p string, old *gitConfigSnap) error {
	dfd, err := openDirNoLinks(filepath.Dir(p), old != nil, 2)
	if old == nil && errors.Is(err, unix.ENOENT) {
		return nil // none before, and its directory is gone (moved into the changeset)
	}
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	name := filepath.Base(p)
	if old == nil {
		if err := unix.Unlinkat(dfd, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
			return err
		}
		return nil
	}
	tmp := "." + name + ".sysprof-restore"
	_ = unix.Unlinkat(dfd, tmp, 0)
	fd, err := unix.Openat(dfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(old.mode))
	if err != nil {
		return err
	}
	tf := os.NewFile(uintptr(fd), tmp)
	_, werr := tf.Write(old.data)
	if werr == nil {
		werr = tf.Chmod(old.mode)
	}
	if werr == nil && old.uid >= 0 && os.Geteuid() == 0 {
		werr = tf.Chown(old.uid, old.gid)
	}
	if cerr := tf.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = unix.Renameat(dfd, tmp, dfd, name)
	}
	if werr != nil {
		_ = unix.Unlinkat(dfd, tmp, 0)
	}
	return werr
}
