package changeset

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/internal/fscopy"
	"github.com/sysprof/sysprof/paths"
)

// ApplyMode selects what Apply applies without naming it.
type ApplyMode string

// Apply modes.
const (
	ApplyLearned ApplyMode = "learned" // what a learned write rule covers (enforce's default)
	ApplySafe    ApplyMode = "safe"    // learned, and held ordinary changes inside the run's work tree but build definitions
	ApplyAll     ApplyMode = "all"     // learned and held; never dangerous ones (`changes apply --all`)
	ApplyNone    ApplyMode = "none"    // nothing (a CI job that only verifies); named paths still apply
)

// ParseApplyMode reads learned, safe, all or none.
func ParseApplyMode(s string) (ApplyMode, error) {
	switch m := ApplyMode(s); m {
	case ApplyLearned, ApplySafe, ApplyAll, ApplyNone:
		return m, nil
	}
	return "", fmt.Errorf("unknown apply mode %q: want learned, safe or none", s)
}

// Result is what Apply did. Every change of the run is in exactly one list: Applied (gone
// from the changeset), Held (selected by nobody, or left by an error: still in the changeset),
// Conflicts (the host side moved since the run started: held, never overwritten), Refused
// (cannot be placed safely: held) or Dropped (a regenerable cache: removed from the changeset,
// never applied, even when named).
type Result struct {
	Applied   []Change `json:"applied"`
	Dropped   []Change `json:"dropped,omitempty"`
	Held      []Change `json:"held"`
	Conflicts []Change `json:"conflicts,omitempty"`
	Refused   []Change `json:"refused,omitempty"`
	Errors    []string `json:"errors,omitempty"`
}

// errConflict and errRefused mark a change that stays held for a reason, not an I/O error.
var (
	errConflict = errors.New("conflict")
	errRefused  = errors.New("refused")
)

// Apply applies the run's changes that mode selects, and those only names (host paths: a
// change at or below a named directory; a dangerous change only when named exactly), and
// removes what it applied from the changeset; the rest stays held. The names of one file
// (hard links made in the run) apply together or not at all: naming one names the others
// that are not dangerous.
//
// The changeset is hostile input (issue 22 item 5): it is scanned and classified again now;
// every name is opened below a directory fd with openat2 RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS
// and checked against what the scan saw (same inode) before it moves; set-id bits and file
// capabilities are stripped (Change.Stripped says so); a special file, a hard link with names
// outside the changeset and a link leaving its tree or naming a protected path are refused
// even when named. A change whose host side changed since the run started (its ctime is
// later than Run.Started, or it appeared or vanished) is a conflict: never overwritten. Each
// change lands whole or not at all (a rename; across file systems a copy to a temporary name
// renamed into place, keeping mode, owner and times); after an error such as ENOSPC nothing
// further is tried and Result says what was applied and what is left. Two applies on one
// staged directory take turns (a flock on the directory). Apply refuses while another
// process holds the run (its enforce still running).
func (r *Run) Apply(mode ApplyMode, only []string) (Result, error) {
	var res Result
	owner := r.lock != nil // Begin's: nothing else writes the layers while this process lives
	if r.lock == nil {
		if err := r.takeLock(false); err != nil {
			return res, err
		}
		defer r.unlock() // taken here: given back here (Begin's stays until Finish)
	}
	changes, err := r.Scan()
	if err != nil {
		return res, err
	}
	sel, together := selection(changes, mode, only, r.WorkDir)
	applied := map[string]bool{} // stage/rel
	stop := false
	for i, s := range r.Stages {
		var mine []Change
		for _, c := range changes {
			if c.Stage == i {
				mine = append(mine, c)
			}
		}
		if len(mine) == 0 {
			continue
		}
		a, err := r.openStage(s)
		if err != nil {
			res.Errors = append(res.Errors, err.Error())
			res.Held = append(res.Held, mine...)
			continue
		}
		for _, c := range mine {
			if c.Class == Dropped {
				if err := a.discard(c); err != nil {
					res.Errors = append(res.Errors, err.Error())
					res.Held = append(res.Held, c)
					continue
				}
				applied[key(c)] = true // gone from the changeset, as an applied change is
				res.Dropped = append(res.Dropped, c)
				continue
			}
			if stop || !sel[key(c)] {
				if why := together[key(c)]; why != "" {
					c.Reason += "; " + why
				}
				res.Held = append(res.Held, c)
				continue
			}
			err := a.apply(&c)
			switch {
			case err == nil:
				applied[key(c)] = true
				res.Applied = append(res.Applied, c)
			case errors.Is(err, errConflict):
				c.Reason = err.Error()
				res.Conflicts = append(res.Conflicts, c)
			case errors.Is(err, errRefused):
				c.Reason = err.Error()
				res.Refused = append(res.Refused, c)
			default:
				res.Errors = append(res.Errors, fmt.Sprintf("%s: %v", c.Path, err))
				res.Held = append(res.Held, c)
				if errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EDQUOT) || errors.Is(err, unix.EROFS) {
					res.Errors = append(res.Errors, "stopped: nothing further applied (free space, then `sysprof changes apply` again)")
					stop = true
				}
			}
		}
		var left []Change
		for _, c := range mine {
			if !applied[key(c)] {
				left = append(left, c)
			}
		}
		res.Errors = append(res.Errors, a.setLater()...)
		a.prune(left)
		a.restoreUp()
		a.close()
	}
	// Only an Apply holding the run (Begin's lock: nothing else writes its layers) may tell
	// Finish what is left.
	r.left, r.known = len(res.Held)+len(res.Conflicts)+len(res.Refused), owner && len(res.Errors) == 0
	return res, nil
}

func key(c Change) string { return fmt.Sprint(c.Stage) + "/" + c.Rel }

// selection says which changes Apply applies (selected), the names of one file (hard links
// in the changeset) together: placing one name takes the file out of the changeset, and its
// other names would be refused for good (a hard link with names outside the changeset).
// Naming one name names its other names that are not dangerous; a file whose names are not
// all selected stays held whole, and together says why.
func selection(changes []Change, mode ApplyMode, only []string, workDir string) (sel map[string]bool, together map[string]string) {
	sel, together = map[string]bool{}, map[string]string{}
	named := map[string]bool{}
	files := map[[3]uint64][]Change{}
	for _, c := range changes {
		sel[key(c)] = selected(c, mode, only, workDir)
		named[key(c)] = selected(c, ApplyNone, only, workDir)
		if len(c.Names) > 0 && c.LinksOutside == 0 {
			k := [3]uint64{uint64(c.Stage), c.dev, c.ino}
			files[k] = append(files[k], c)
		}
	}
	for _, names := range files {
		if slices.ContainsFunc(names, func(c Change) bool { return named[key(c)] }) {
			for _, c := range names {
				if c.Class != Dangerous {
					sel[key(c)] = true
				}
			}
		}
		var left []string
		for _, c := range names {
			if !sel[key(c)] {
				left = append(left, c.Path)
			}
		}
		if len(left) == 0 || len(left) == len(names) {
			continue
		}
		for _, c := range names {
			sel[key(c)] = false
			together[key(c)] = fmt.Sprintf("a hard link applies with all its names, and %s is not selected: name it too", strings.Join(left, ", "))
		}
	}
	return sel, together
}

// selected reports whether mode or only selects c.
func selected(c Change, mode ApplyMode, only []string, workDir string) bool {
	for _, o := range only {
		o = filepath.Clean(o)
		if o == c.Path || c.Class != Dangerous && paths.Within(c.Path, o) {
			return true
		}
	}
	switch mode {
	case ApplyLearned:
		return c.Class == Learned
	case ApplySafe:
		return c.Class == Learned || c.Class == Held && workDir != "" && paths.Within(c.Path, workDir) && c.BuildDefinition == ""
	case ApplyAll:
		return c.Class == Learned || c.Class == Held
	}
	return false
}

// applier applies the changes of one stage: the upper layer and the host directory as fds.
type applier struct {
	started  time.Time
	stage    Stage
	upper    int // the upper layer (O_PATH)
	host     int // the staged directory (O_PATH)
	lock     int // the staged directory, flocked while applying
	sameFS   bool
	root     bool
	upDirs   map[string]int // rel dir -> O_PATH fd in the upper layer
	hostDirs map[string]int // rel dir -> O_PATH fd on the host
	// unlinked are host inodes (dev, ino) with other names (hard links) that this apply took
	// one name of, unchanged when it did: removing a name sets the inode's ctime, so without
	// them the file's next name (cargo's target/debug/app and deps/app-HASH) read as moved.
	unlinked map[[2]uint64]bool
	// later are the modes of directories that deny their owner writing (Go's module cache,
	// 0555), set once the stage's changes are in them: as an ordinary user nothing could be
	// added to them after.
	later map[string]uint32
	// upModes are the modes of upper directories opened to their owner to move a file out
	// (openUp), given back once the stage is applied.
	upModes map[string]uint32
}

func (r *Run) openStage(s Stage) (*applier, error) {
	started := r.Started
	if s.Since.After(started) {
		started = s.Since
	}
	a := &applier{started: started, stage: s, upper: -1, host: -1, lock: -1, upDirs: map[string]int{}, hostDirs: map[string]int{},
		unlinked: map[[2]uint64]bool{}, later: map[string]uint32{}, upModes: map[string]uint32{}}
	var err error
	if a.upper, err = openRoot(s.Upper, unix.O_PATH); err != nil {
		return nil, fmt.Errorf("stage %s: %w", s.Rules.Dir, err)
	}
	if a.host, err = openRoot(s.Rules.Dir, unix.O_PATH); err != nil {
		a.close()
		return nil, fmt.Errorf("stage %s: %w", s.Rules.Dir, err)
	}
	if a.lock, err = openBeneath(a.host, ".", unix.O_RDONLY|unix.O_DIRECTORY); err == nil {
		err = flockWait(a.lock)
	}
	if err != nil {
		a.close()
		return nil, fmt.Errorf("stage %s: lock: %w", s.Rules.Dir, err)
	}
	var us, hs unix.Stat_t
	if unix.Fstat(a.upper, &us) == nil && unix.Fstat(a.host, &hs) == nil {
		a.sameFS = us.Dev == hs.Dev
	}
	a.root = unix.Geteuid() == 0
	a.upDirs[""], a.hostDirs[""] = a.upper, a.host
	return a, nil
}

func flockWait(fd int) error {
	for {
		err := unix.Flock(fd, unix.LOCK_EX)
		if err != unix.EINTR {
			return err
		}
	}
}

func (a *applier) close() {
	for k, fd := range a.upDirs {
		if k != "" {
			unix.Close(fd)
		}
	}
	for k, fd := range a.hostDirs {
		if k != "" {
			unix.Close(fd)
		}
	}
	for _, fd := range []int{a.upper, a.host, a.lock} {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
}

// upDir opens directory rel of the upper layer (cached).
func (a *applier) upDir(rel string) (int, error) {
	if fd, ok := a.upDirs[rel]; ok {
		return fd, nil
	}
	fd, err := openBeneath(a.upper, rel, unix.O_PATH|unix.O_DIRECTORY)
	if err != nil {
		return -1, fmt.Errorf("open %s in the changeset: %w", rel, err)
	}
	a.upDirs[rel] = fd
	return fd, nil
}

// hostDir opens directory rel on the host (cached), making the missing ones as the upper layer
// has them (a change below a new directory brings the directory).
func (a *applier) hostDir(rel string) (int, error) {
	if fd, ok := a.hostDirs[rel]; ok {
		return fd, nil
	}
	fd, err := openBeneath(a.host, rel, unix.O_PATH|unix.O_DIRECTORY)
	if errors.Is(err, unix.ENOENT) && rel != "" {
		parent, perr := a.hostDir(dirOf(rel))
		if perr != nil {
			return -1, perr
		}
		if err := a.mkdirLike(parent, rel); err != nil && !errors.Is(err, unix.EEXIST) {
			return -1, err
		}
		fd, err = openBeneath(a.host, rel, unix.O_PATH|unix.O_DIRECTORY)
	}
	if err != nil {
		if errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) {
			return -1, fmt.Errorf("%w: %s on the host is not a directory any more", errConflict, filepath.Join(a.stage.Rules.Dir, rel))
		}
		return -1, fmt.Errorf("open %s: %w", filepath.Join(a.stage.Rules.Dir, rel), err)
	}
	a.hostDirs[rel] = fd
	return fd, nil
}

// mkdirLike makes host directory rel in parent with the upper directory's mode (no set-id bit
// but an inherited set-group-ID) and, as root, its owner.
func (a *applier) mkdirLike(parent int, rel string) error {
	ufd, err := a.upDir(dirOf(rel))
	if err != nil {
		return err
	}
	var st unix.Stat_t
	if err := unix.Fstatat(ufd, baseOf(rel), &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("stat %s in the changeset: %w", rel, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return fmt.Errorf("%w: %s in the changeset is not a directory", errRefused, rel)
	}
	if err := unix.Mkdirat(parent, baseOf(rel), st.Mode&0o777); err != nil {
		return fmt.Errorf("mkdir %s: %w", filepath.Join(a.stage.Rules.Dir, rel), err)
	}
	fd, err := openBeneath(parent, baseOf(rel), unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if a.root {
		_ = unix.Fchown(fd, int(st.Uid), int(st.Gid))
	}
	return a.chmodDir(fd, rel, dirMode(parent, st.Mode))
}

// openUp gives the owner write access to upper directory rel (fd up) that denies it (a
// read-only module directory, whose files an ordinary user cannot rename out of it), and
// reports whether it did; restoreUp gives the mode back.
func (a *applier) openUp(rel string, up int) bool {
	if _, done := a.upModes[rel]; done {
		return false
	}
	var st unix.Stat_t
	if unix.Fstat(up, &st) != nil || st.Mode&0o200 != 0 {
		return false
	}
	if unix.Chmod(fdPath(up, ""), st.Mode&0o7777|0o700) != nil {
		return false
	}
	a.upModes[rel] = st.Mode & 0o7777
	return true
}

func (a *applier) restoreUp() {
	for rel, m := range a.upModes {
		if fd, err := openBeneath(a.upper, rel, unix.O_PATH|unix.O_DIRECTORY); err == nil {
			_ = unix.Chmod(fdPath(fd, ""), m)
			unix.Close(fd)
		}
	}
}

// chmodDir sets directory rel's mode m, or u+rwx now and m once the stage's changes are
// applied (setLater) when m denies the owner writing or searching it.
func (a *applier) chmodDir(fd int, rel string, m uint32) error {
	if m&0o300 == 0o300 {
		delete(a.later, rel)
		return unix.Fchmod(fd, m)
	}
	a.later[rel] = m
	return unix.Fchmod(fd, m|0o700)
}

// setLater sets the modes chmodDir put off, deepest first.
func (a *applier) setLater() []string {
	rels := make([]string, 0, len(a.later))
	for rel := range a.later {
		rels = append(rels, rel)
	}
	slices.SortFunc(rels, func(x, y string) int { return len(y) - len(x) })
	var errs []string
	for _, rel := range rels {
		fd, err := openBeneath(a.host, rel, unix.O_RDONLY|unix.O_DIRECTORY)
		if err == nil {
			err = unix.Fchmod(fd, a.later[rel])
			unix.Close(fd)
		}
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: set its mode %#o: %v", filepath.Join(a.stage.Rules.Dir, rel), a.later[rel], err))
		}
	}
	return errs
}

// dirMode drops set-user-ID and keeps set-group-ID only where the parent has it (inherited).
func dirMode(parent int, mode uint32) uint32 {
	m := mode & 0o1777
	var ps unix.Stat_t
	if mode&0o2000 != 0 && unix.Fstat(parent, &ps) == nil && ps.Mode&0o2000 != 0 {
		m |= 0o2000
	}
	return m
}

func dirOf(rel string) string {
	d := filepath.Dir(rel)
	if d == "." {
		return ""
	}
	return d
}

func baseOf(rel string) string { return filepath.Base(rel) }

// apply applies one change of this stage.
func (a *applier) apply(c *Change) error {
	if why := unplaceable(*c, a.stage.Rules); why != "" {
		return fmt.Errorf("%w: %s", errRefused, why)
	}
	name := baseOf(c.Rel)
	up, err := a.upDir(dirOf(c.Rel))
	if err != nil && c.Op != OpDelete && c.Op != OpRmdir {
		return err
	}
	host, err := a.hostDir(dirOf(c.Rel))
	if err != nil {
		return err
	}
	var hst unix.Stat_t
	herr := unix.Fstatat(host, name, &hst, unix.AT_SYMLINK_NOFOLLOW)
	hostNow := herr == nil
	if herr != nil && !errors.Is(herr, unix.ENOENT) {
		return fmt.Errorf("stat %s: %w", c.Path, herr)
	}
	if hostNow && a.moved(&hst) {
		return fmt.Errorf("%w: %s changed on the host at %s, after the run started (%s): not overwritten", errConflict,
			c.Path, time.Unix(hst.Ctim.Unix()).Format(time.RFC3339), a.started.Format(time.RFC3339))
	}
	if hostNow != c.HostExists {
		return fmt.Errorf("%w: %s appeared or vanished on the host while applying", errConflict, c.Path)
	}
	switch c.Op {
	case OpDelete, OpRmdir:
		if !hostNow {
			return a.dropWhiteout(up, name)
		}
		if err := a.removeHost(host, name, c.Path); err != nil {
			return err
		}
		return a.dropWhiteout(up, name)
	case OpMkdir, OpMode:
		if c.Type == TypeDir {
			return a.applyDir(c, up, host, name, hostNow, &hst)
		}
	}
	// A file, symlink or hard link: verify it is what the scan saw, make it safe, move it.
	var st unix.Stat_t
	if err := unix.Fstatat(up, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("stat %s in the changeset: %w", c.Path, err)
	}
	if st.Dev != c.dev || st.Ino != c.ino || TypeOf(st.Mode) != c.Type {
		return fmt.Errorf("%w: %s changed in the changeset while applying", errRefused, c.Path)
	}
	if c.Op == OpMode && isMetacopy(up, name) {
		return a.chmodHost(c, host, name, up)
	}
	if c.Type == TypeFile {
		if err := a.sanitize(c, up, host, name); err != nil {
			return err
		}
	}
	if testHookBeforeMove != nil {
		testHookBeforeMove(up, name)
	}
	return a.move(c, up, host, name, hostNow, &hst)
}

// discard removes a dropped change from the upper layer (a directory goes with prune, once
// empty).
func (a *applier) discard(c Change) error {
	if c.Type == TypeDir {
		return nil
	}
	up, err := a.upDir(dirOf(c.Rel))
	if err != nil {
		return err
	}
	if err := unix.Unlinkat(up, baseOf(c.Rel), 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("drop %s from the changeset: %w", c.Path, err)
	}
	return nil
}

// testHookBeforeMove lets a test act as a command still writing into the layer between the
// checks and the move.
var testHookBeforeMove func(upperDir int, name string)

// unplaceable says why a change can never be placed on the host, even when named.
func unplaceable(c Change, r Rules) string {
	switch {
	case c.Op == OpSpecial:
		return "special files (devices, FIFOs, sockets) are never placed on the host"
	case c.LinksOutside > 0:
		return "a hard link with names outside the changeset is never placed on the host"
	case c.Unreadable != "":
		return "the directory could not be read in the changeset: " + c.Unreadable
	}
	if why := linkLeaves(c, r); why != "" {
		return "no run leaves a link that points out of its tree or at a protected path: " + why
	}
	return ""
}

// moved reports whether a host entry changed since the run started (its ctime: set by the
// kernel on every write, chmod, rename or link, and not settable by anyone).
func (a *applier) moved(st *unix.Stat_t) bool {
	return time.Unix(st.Ctim.Unix()).After(a.started) && !a.unlinked[[2]uint64{st.Dev, st.Ino}]
}

// unlinking records that this apply is about to take a name of host inode st, checked not
// moved, which has other names (see applier.unlinked).
func (a *applier) unlinking(st *unix.Stat_t) {
	if st.Mode&unix.S_IFMT != unix.S_IFDIR && st.Nlink > 1 {
		a.unlinked[[2]uint64{st.Dev, st.Ino}] = true
	}
}

// sanitize strips what never leaves a run (Strip: host is the directory it moves into) from an
// upper file before it moves.
func (a *applier) sanitize(c *Change, up, host int, name string) error {
	fd, err := openBeneath(up, name, unix.O_RDONLY|unix.O_NONBLOCK)
	if err != nil {
		return fmt.Errorf("open %s in the changeset: %w", c.Path, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Ino != c.ino || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fmt.Errorf("%w: %s changed in the changeset while applying", errRefused, c.Path)
	}
	c.before = Before{}
	if hfd, err := openBeneath(host, name, unix.O_PATH); err == nil {
		c.before = ReadBefore(hfd)
		unix.Close(hfd)
	} else if !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("open %s on the host: %w", c.Path, err)
	}
	stripped, err := Strip(fd, &st, host, c.Path, c.before)
	if err != nil {
		return err
	}
	if len(stripped) > 0 {
		c.Stripped = strings.Join(stripped, " and ") + " removed"
	}
	return nil
}

// move puts upper entry name in place of host entry name: a rename on one file system (the
// host side exchanged, checked to be the entry that was checked, then removed), else a copy
// to a temporary name in the host directory, renamed the same way.
func (a *applier) move(c *Change, up, host int, name string, hostNow bool, hst *unix.Stat_t) error {
	if hostNow && hst.Mode&unix.S_IFMT == unix.S_IFDIR && c.Type != TypeDir {
		// What replaces a host directory removes all it holds: never what the host changed
		// there since the run started.
		if p, err := a.movedBelow(host, name); err != nil {
			return err
		} else if p != "" {
			return fmt.Errorf("%w: %s/%s changed on the host after the run started: %s not replaced", errConflict, c.Path, p, c.Path)
		}
	}
	src, srcName := up, name
	if !a.sameFS {
		tmp, err := a.copyIn(c, up, host, name)
		if err != nil {
			return err
		}
		src, srcName = host, tmp
	}
	err := a.place(src, srcName, host, name, hostNow, hst, c.Path)
	if errors.Is(err, unix.EXDEV) && src == up {
		a.sameFS = false
		return a.move(c, up, host, name, hostNow, hst)
	}
	if errors.Is(err, unix.EACCES) && src == up && a.openUp(dirOf(c.Rel), up) {
		return a.move(c, up, host, name, hostNow, hst)
	}
	if src != up {
		if err != nil {
			_ = unix.Unlinkat(host, srcName, 0)
			return err
		}
		err = unix.Unlinkat(up, name, 0)
	}
	if err != nil {
		return err
	}
	return a.verifyPlaced(c, host, name)
}

// verifyPlaced checks what now lies at host/name, where the command cannot reach: a file that
// is not the type the change said (an entry swapped between the checks and the rename by a
// command still running) is taken off the host again, and what never leaves a run found on a
// file (Strip) is stripped, whatever happened before.
func (a *applier) verifyPlaced(c *Change, host int, name string) error {
	var st unix.Stat_t
	if err := unix.Fstatat(host, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("stat %s after placing it: %w", c.Path, err)
	}
	if TypeOf(st.Mode) != c.Type {
		_ = unix.Unlinkat(host, name, 0)
		return fmt.Errorf("%w: %s changed type while applying: taken off the host again", errRefused, c.Path)
	}
	if c.Type != TypeFile {
		return nil
	}
	fd, err := openBeneath(host, name, unix.O_RDONLY|unix.O_NONBLOCK)
	if err != nil {
		return fmt.Errorf("open %s after placing it: %w", c.Path, err)
	}
	defer unix.Close(fd)
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	stripped, err := Strip(fd, &st, host, c.Path, c.before)
	if err != nil {
		return err
	}
	if len(stripped) > 0 {
		c.Stripped = strings.Join(stripped, " and ") + " removed"
	}
	return nil
}

// place renames src/srcName to host/name: RENAME_NOREPLACE when the host has none (another
// writer's new file is a conflict), RENAME_EXCHANGE when it has one, then the entry swapped
// out must be the one checked (else swapped back: a conflict), and is removed.
func (a *applier) place(src int, srcName string, host int, name string, hostNow bool, hst *unix.Stat_t, path string) error {
	if !hostNow {
		err := unix.Renameat2(src, srcName, host, name, unix.RENAME_NOREPLACE)
		if errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("%w: %s appeared on the host while applying", errConflict, path)
		}
		return err
	}
	if err := unix.Renameat2(src, srcName, host, name, unix.RENAME_EXCHANGE); err != nil {
		return err
	}
	var old unix.Stat_t
	if err := unix.Fstatat(src, srcName, &old, unix.AT_SYMLINK_NOFOLLOW); err != nil || old.Ino != hst.Ino || old.Dev != hst.Dev {
		_ = unix.Renameat2(src, srcName, host, name, unix.RENAME_EXCHANGE)
		return fmt.Errorf("%w: %s changed on the host while applying", errConflict, path)
	}
	if old.Mode&unix.S_IFMT == unix.S_IFDIR {
		return removeAllAt(src, srcName)
	}
	a.unlinking(&old)
	return unix.Unlinkat(src, srcName, 0)
}

// copyIn copies upper entry name into host directory host under a temporary name, with its
// mode (no set-id bit), owner (as root) and times; the temporary name is removed on failure.
func (a *applier) copyIn(c *Change, up, host int, name string) (string, error) {
	tmp := tmpName()
	var st unix.Stat_t
	if err := unix.Fstatat(up, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return "", err
	}
	times := []unix.Timespec{st.Atim, st.Mtim}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFLNK:
		t, err := readlinkat(up, name)
		if err != nil {
			return "", err
		}
		if err := unix.Symlinkat(t, host, tmp); err != nil {
			return "", fmt.Errorf("copy %s: %w", c.Path, err)
		}
		if a.root {
			_ = unix.Fchownat(host, tmp, int(st.Uid), int(st.Gid), unix.AT_SYMLINK_NOFOLLOW)
		}
		_ = unix.UtimesNanoAt(host, tmp, times, unix.AT_SYMLINK_NOFOLLOW)
		return tmp, nil
	case unix.S_IFREG:
	default:
		return "", fmt.Errorf("%w: %s: only files and symlinks are copied", errRefused, c.Path)
	}
	in, err := openBeneath(up, name, unix.O_RDONLY|unix.O_NONBLOCK)
	if err != nil {
		return "", err
	}
	defer unix.Close(in)
	out, err := unix.Openat(host, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return "", fmt.Errorf("copy %s: %w", c.Path, err)
	}
	fail := func(err error) (string, error) {
		unix.Close(out)
		_ = unix.Unlinkat(host, tmp, 0)
		return "", fmt.Errorf("copy %s: %w", c.Path, err)
	}
	if err := fscopy.Data(out, in); err != nil { // holes stay holes: a sparse terabyte is not written out
		return fail(err)
	}
	if a.root {
		if err := unix.Fchown(out, int(st.Uid), int(st.Gid)); err != nil {
			return fail(err)
		}
	}
	if err := unix.Fchmod(out, st.Mode&0o1777); err != nil {
		return fail(err)
	}
	if err := unix.UtimesNanoAt(out, "", times, unix.AT_EMPTY_PATH); err != nil {
		if err := unix.UtimesNanoAt(host, tmp, times, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return fail(err)
		}
	}
	if err := unix.Fsync(out); err != nil {
		return fail(err)
	}
	unix.Close(out)
	return tmp, nil
}

func tmpName() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return ".sysprof-apply-" + hex.EncodeToString(b)
}

// applyDir applies a directory's own change: a new directory (replacing a non-directory the
// host had), an opaque one (what the host held beyond it is deleted by its own changes), or a
// mode change.
func (a *applier) applyDir(c *Change, up, host int, name string, hostNow bool, hst *unix.Stat_t) error {
	if hostNow && hst.Mode&unix.S_IFMT != unix.S_IFDIR {
		if err := unix.Unlinkat(host, name, 0); err != nil {
			return fmt.Errorf("replace %s by a directory: %w", c.Path, err)
		}
		hostNow = false
	}
	if !hostNow {
		if err := a.mkdirLike(host, c.Rel); err != nil {
			return err
		}
		return nil
	}
	var st unix.Stat_t
	if err := unix.Fstatat(up, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return err
	}
	fd, err := openBeneath(host, name, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return a.chmodDir(fd, c.Rel, dirMode(host, st.Mode))
}

// chmodHost applies a metadata-only copy-up: the host file's mode, without set-id bits.
func (a *applier) chmodHost(c *Change, host int, name string, up int) error {
	fd, err := openBeneath(host, name, unix.O_RDONLY|unix.O_NONBLOCK)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if c.Mode&0o6000 != 0 {
		c.Stripped = "set-id bits removed"
	}
	if err := unix.Fchmod(fd, c.Mode&0o1777); err != nil {
		return err
	}
	return unix.Unlinkat(up, name, 0)
}

// removeHost deletes host entry name (a directory with what it holds), unless something in it
// changed since the run started (a conflict: nothing is deleted).
func (a *applier) removeHost(host int, name, path string) error {
	var st unix.Stat_t
	if err := unix.Fstatat(host, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		a.unlinking(&st)
		return unix.Unlinkat(host, name, 0)
	}
	if p, err := a.movedBelow(host, name); err != nil {
		return err
	} else if p != "" {
		return fmt.Errorf("%w: %s/%s changed on the host after the run started: %s not deleted", errConflict, path, p, path)
	}
	return removeAllAt(host, name)
}

// movedBelow returns the first entry below directory name that changed since the run started.
func (a *applier) movedBelow(dir int, name string) (string, error) {
	fd, err := openBeneath(dir, name, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return "", err
	}
	defer unix.Close(fd)
	names, err := readNames(fd)
	if err != nil {
		return "", err
	}
	for _, n := range names {
		var st unix.Stat_t
		if err := unix.Fstatat(fd, n, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			continue
		}
		if a.moved(&st) {
			return n, nil
		}
		if st.Mode&unix.S_IFMT == unix.S_IFDIR {
			if p, err := a.movedBelow(fd, n); err != nil || p != "" {
				return filepath.Join(n, p), err
			}
		}
	}
	return "", nil
}

// removeAllAt removes name below dirfd and all it holds, by fds, following no link.
func removeAllAt(dirfd int, name string) error {
	err := unix.Unlinkat(dirfd, name, 0)
	if err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	if !errors.Is(err, unix.EISDIR) && !errors.Is(err, unix.EPERM) {
		return err
	}
	fd, err := openBeneath(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return err
	}
	names, err := readNames(fd)
	if err == nil {
		for _, n := range names {
			if err = removeAllAt(fd, n); err != nil {
				break
			}
		}
	}
	unix.Close(fd)
	if err != nil {
		return err
	}
	return unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR)
}

// dropWhiteout removes the whiteout of an applied delete from the upper layer (a delete found
// below an opaque directory has none).
func (a *applier) dropWhiteout(up int, name string) error {
	if up < 0 {
		return nil
	}
	var st unix.Stat_t
	if unix.Fstatat(up, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || !isWhiteout(&st) {
		return nil
	}
	return unix.Unlinkat(up, name, 0)
}

// prune removes the upper directories left empty whose own change and everything below them
// was applied (or that carried none: the parents overlay copied up).
func (a *applier) prune(left []Change) {
	keep := map[string]bool{}
	for _, c := range left {
		for d := c.Rel; d != ""; d = dirOf(d) {
			keep[d] = true
		}
	}
	ufd, err := openBeneath(a.upper, ".", unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return
	}
	defer unix.Close(ufd)
	pruneDir(ufd, "", keep)
}

func pruneDir(fd int, rel string, keep map[string]bool) {
	names, err := readNames(fd)
	if err != nil {
		return
	}
	slices.Sort(names)
	for _, n := range names {
		r := filepath.Join(rel, n)
		var st unix.Stat_t
		if unix.Fstatat(fd, n, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
			continue
		}
		cfd, err := openBeneath(fd, n, unix.O_RDONLY|unix.O_DIRECTORY)
		if err != nil {
			continue
		}
		pruneDir(cfd, r, keep)
		unix.Close(cfd)
		if !keep[r] {
			_ = unix.Unlinkat(fd, n, unix.AT_REMOVEDIR) // fails while not empty
		}
	}
}
