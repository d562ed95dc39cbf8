package enforcer

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/changeset"
	"github.com/sysprof/sysprof/internal/fscopy"
	"github.com/sysprof/sysprof/paths"
	"github.com/sysprof/sysprof/report"
)

// A directory bound writable is the host's own: writes there land at once and are not part of
// the changeset. Two things must still never leave a run through one (issue 22 item 2): set-id
// bits or file capabilities, and a symlink out of its tree or at a protected path. seccomp
// refuses a set-id chmod and a set-id create; what got there anyway, and every such symlink, is
// found once the command is gone by sweepBound: set-id bits and capabilities are stripped (and
// reported), such a symlink is moved into the run's changeset, where it is held as dangerous.
// So is what the run wrote at the hooks or config of a git repository nested in the bound
// directory (paths.RepoHooks: a vendored repository in out/, a `cargo new` inside target/):
// git runs what they name when the user works there later, as the top repository's.
//
// The sweep reads only what the run can have changed: a directory whose ctime is before the run
// started gained, lost or renamed no entry during it, so its entries are not looked at (its
// subdirectories are still walked); a new or renamed-in file changes its directory's ctime.

// boundFinding is what sweepBound found in one bound directory.
type boundFinding struct {
	dir      string
	held     []string        // relative paths to hold: dangerous symlinks, nested repositories' hooks and config
	stripped []report.Change // set-id bits or capabilities removed
	errs     []string
	rules    changeset.Rules // the bound directory's rules, to classify by
	// restore are the git configs that gained a code-running setting: what to put back
	// (nil: remove), by host path (gitconfig_sweep_linux.go).
	restore    map[string]*gitConfigSnap
	restoreWhy map[string]restoreWhy
}

// sweepSlack is how far before the run's start a ctime still counts as the run's (the kernel's
// ctime is coarse: a jiffy).
const sweepSlack = time.Second

// sweepBound walks the bound writable directory dir for what the run may have left there.
func sweepBound(dir string, started time.Time, env Env, snaps *gitConfigSnaps) boundFinding {
	f := boundFinding{dir: dir, rules: boundRules(dir, env)}
	f.sweepGitConfigs(snaps, env, started.Add(-sweepSlack))
	fd, err := unix.Openat2(unix.AT_FDCWD, dir, &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC | unix.O_NOFOLLOW,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
	if err != nil {
		f.errs = append(f.errs, fmt.Sprintf("bound %s: not checked for set-id files and links: %v", dir, err))
		return f
	}
	f.walk(fd, "", started.Add(-sweepSlack))
	// A name both passes hold (a config replaced by a dangerous link) is moved once, and what
	// lies below a held directory (one that replaced a config, held whole) moves with it.
	f.held = topLevelPaths(f.held)
	return f
}

// boundRules are the changeset rules of a bound directory: everything in it is learned (it is
// bound because a rule names it), links must stay in the work tree (or in it).
func boundRules(dir string, env Env) changeset.Rules {
	tree := dir
	if wd := filepath.Clean(env.Vars["WORKDIR"]); filepath.IsAbs(wd) && paths.Within(dir, wd) {
		tree = wd
	}
	var protected []string
	for _, q := range protectedHostPaths(env) {
		if paths.Within(q, dir) {
			protected = append(protected, q)
		}
	}
	return changeset.Rules{Dir: dir, Tree: tree, Keep: []string{dir}, ExecOK: []string{dir}, Protected: protected, Vars: env.Vars}
}

// walk looks at directory fd (rel below f.dir) and closes it.
func (f *boundFinding) walk(fd int, rel string, since time.Time) {
	dirf := os.NewFile(uintptr(fd), filepath.Join(f.dir, rel))
	defer dirf.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return
	}
	changed := !time.Unix(st.Ctim.Unix()).Before(since)
	ents, err := dirf.ReadDir(-1)
	if err != nil {
		f.errs = append(f.errs, fmt.Sprintf("bound %s: read %s: %v", f.dir, report.Printable(rel), err))
	}
	for _, e := range ents {
		name, r := e.Name(), filepath.Join(rel, e.Name())
		switch {
		case !e.IsDir() && f.nestedGit(r):
			// A file rewritten in place leaves its directory's ctime as it was.
			f.check(fd, name, r, since)
		case e.IsDir():
			sub, err := unix.Openat2(fd, name, &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC | unix.O_NOFOLLOW,
				Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV})
			if err == nil {
				f.walk(sub, r, since)
			}
			if changed {
				f.check(fd, name, r, since)
			}
		case changed:
			f.check(fd, name, r, since)
		}
	}
}

// check classifies one entry the run may have made: a dangerous symlink, fifo or device node
// is queued to be held, set-id bits and capabilities are stripped.
func (f *boundFinding) check(dirfd int, name, rel string, since time.Time) {
	var st unix.Stat_t
	if unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || time.Unix(st.Ctim.Unix()).Before(since) {
		return
	}
	host := filepath.Join(f.dir, rel)
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFLNK, unix.S_IFIFO, unix.S_IFCHR, unix.S_IFBLK:
		// A fifo hangs the host program that opens it (git at .git/HEAD); a device node (a
		// 0/0 whiteout is all a user namespace can make) never leaves a run either. A socket
		// is inert once its listener is gone, and may be a host agent's: left.
		c := changeset.Change{Path: host, Op: changeset.OpSpecial, Type: changeset.TypeOf(st.Mode)}
		if c.Type == changeset.TypeSymlink {
			buf := make([]byte, unix.PathMax)
			n, err := unix.Readlinkat(dirfd, name, buf)
			if err != nil {
				return
			}
			c.Op, c.Target = changeset.OpSymlink, string(buf[:n])
		}
		if changeset.Classify(c, f.rules).Class == changeset.Dangerous {
			f.held = append(f.held, rel)
		}
	case unix.S_IFREG:
		if f.nestedGit(rel) && !strings.HasSuffix(name, ".sample") { // git never runs a sample
			c := changeset.Classify(changeset.Change{Path: host, Op: changeset.OpModify, Type: changeset.TypeFile}, f.rules)
			if c.Class == changeset.Dangerous {
				f.held = append(f.held, rel)
				return
			}
		}
		f.strip(dirfd, name, host, &st, since)
	case unix.S_IFDIR:
		f.strip(dirfd, name, host, &st, since) // a default ACL of the run's grants every later file
	}
}

// strip removes from entry name of dirfd what never leaves a run (changeset.Strip: set-id
// bits, file capabilities, an ACL but the host's), recorded. An entry born before the run
// (statx's birth time; unknown: counted as born before) is the host's, and so are its ACLs as
// they are: the sweep cannot tell the host's from a change the run made (the supervisor
// records each ACL the run sets: xattr_linux.go). One the run made keeps only what its
// directory's default ACL gives it.
func (f *boundFinding) strip(dirfd int, name, host string, st *unix.Stat_t, since time.Time) {
	fd, err := unix.Openat2(dirfd, name, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC | unix.O_NOFOLLOW, Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS})
	if err != nil {
		return
	}
	defer unix.Close(fd)
	var before changeset.Before
	var stx unix.Statx_t
	if unix.Statx(fd, "", unix.AT_EMPTY_PATH, unix.STATX_BTIME, &stx) != nil || stx.Mask&unix.STATX_BTIME == 0 ||
		time.Unix(stx.Btime.Sec, int64(stx.Btime.Nsec)).Before(since) {
		before = changeset.ReadBefore(fd)
	}
	what, err := changeset.Strip(fd, st, dirfd, host, before)
	if err != nil {
		f.errs = append(f.errs, fmt.Sprintf("bound %s: %s", f.dir, report.Printable(err.Error())))
		return
	}
	if len(what) > 0 {
		reason := fmt.Sprintf("%s removed: written in a directory bound writable, never installed on the host", strings.Join(what, " and "))
		f.stripped = append(f.stripped, report.Change{Path: host, Op: string(changeset.OpMode), Type: changeset.TypeOf(st.Mode),
			Class: string(changeset.Dangerous), State: report.ChangeStripped, Reason: reason, Risk: report.RiskCritical})
	}
}

// nestedGit reports whether rel, below the bound directory, lies in a git directory of its own
// (sub/.git/..., x.git/...) or in a submodule's hooks in the work tree's own .git
// (.git/modules/m/hooks: git runs them in the submodule, and no git command but clone writes
// them, samples only). The rest of the work tree's own .git is not: its hooks are the plan's
// covers, and a .git rule accepted whole is bound as such (its configs: sweepGitConfigs).
func (f *boundFinding) nestedGit(rel string) bool {
	host := filepath.Join(f.dir, rel)
	if own := filepath.Join(f.rules.Tree, ".git"); paths.Within(host, own) {
		r, err := filepath.Rel(f.rules.Tree, host)
		if err != nil {
			return false
		}
		h := paths.RepoHooks("$WORKDIR/" + filepath.ToSlash(r))
		return strings.HasSuffix(h, "/hooks") && h != "$WORKDIR/.git/hooks"
	}
	return strings.Contains("/"+rel, ".git/")
}

// holdBoundLinks moves what f holds (dangerous symlinks, a nested repository's hooks and
// config, a git config that gained a code-running setting, which is put back) into run's
// changeset (a stage of f.dir in run: an upper layer holding them, the bound directory its
// lower), where Scan finds each as a dangerous change, held. It returns the notes that say so:
// a config's says where the run's file went (held, or set aside when it could not be moved).
func holdBoundLinks(run *changeset.Run, f boundFinding, uid, gid int) ([]string, error) {
	if len(f.held) == 0 {
		return nil, nil
	}
	st, err := run.AddStage(f.rules, uid, gid)
	if err != nil {
		return f.keepAside(err), err
	}
	var errs []error
	moved := map[string]bool{}
	for _, rel := range f.held {
		src := filepath.Join(f.dir, rel)
		dst := filepath.Join(st.Upper, rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			errs = append(errs, err)
			continue
		}
		// Same file system: a rename; else the link or file is made again and the host's removed.
		if err := unix.Renameat2(unix.AT_FDCWD, src, unix.AT_FDCWD, dst, unix.RENAME_NOREPLACE); err != nil {
			if err := copyHeld(src, dst); err != nil {
				errs = append(errs, err)
				continue
			}
			if err := os.RemoveAll(src); err != nil {
				errs = append(errs, err)
			}
		}
		moved[rel] = true
	}
	// The configs that gained a code-running setting go back as they were; what a person
	// approves later replaces them without a conflict. One whose file could not be moved is
	// set aside first: nothing of the run's is lost, and the note says where it is.
	var notes []string
	for p, old := range f.restore {
		where := ""
		var err error
		rel := f.restoreWhy[p].rel
		if !slices.ContainsFunc(slices.Collect(maps.Keys(moved)), func(m string) bool { return rel == m || strings.HasPrefix(rel, m+"/") }) {
			// not moved, nor with a directory held whole
			where, err = f.setAside(p)
		}
		if perr := putBack(p, old); perr != nil {
			errs = append(errs, fmt.Errorf("put back %s: %w", report.Printable(p), perr))
		}
		notes = append(notes, f.configNote(p, where, err))
	}
	if len(f.restore) > 0 {
		if err := run.SetSince(len(run.Stages)-1, time.Now()); err != nil {
			errs = append(errs, err)
		}
	}
	slices.Sort(notes)
	return notes, errors.Join(errs...)
}

// copyHeld makes symlink or regular file src again at dst (mode bits less set-id), not
// following a link.
func copyHeld(src, dst string) error {
	fi, err := os.Lstat(src)
	if err != nil {
		return err
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		target, err := os.Readlink(src)
		if err != nil {
			return err
		}
		return os.Symlink(target, dst)
	}
	if fi.Mode()&os.ModeNamedPipe != 0 {
		return unix.Mkfifo(dst, uint32(fi.Mode().Perm()))
	}
	if fi.Mode()&os.ModeDevice != 0 { // as root; a user's run holds it only on one file system
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return fmt.Errorf("%s: no device number", report.Printable(src))
		}
		return unix.Mknod(dst, st.Mode, int(st.Rdev))
	}
	if fi.IsDir() { // what replaced a git config (sweepGitConfigs)
		ents, err := os.ReadDir(src)
		if err != nil {
			return err
		}
		if err := os.Mkdir(dst, fi.Mode().Perm()|0o700); err != nil {
			return err
		}
		for _, e := range ents {
			if err := copyHeld(filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())); err != nil {
				return err
			}
		}
		return nil
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s: neither a symlink, a fifo, a directory nor a regular file", report.Printable(src))
	}
	in, err := os.OpenFile(src, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fi.Mode().Perm())
	if err != nil {
		return err
	}
	// Holes stay holes: a sparse hook of a terabyte is no room in the run's directory and must
	// be none in the changeset's either.
	if err := fscopy.Data(int(out.Fd()), int(in.Fd())); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
