package changeset

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/paths"
)

// Run states.
const (
	StateRunning     = "running"
	StateFinished    = "finished"
	StateInterrupted = "interrupted" // recorded running, but its sysprof is gone (List, Open)
)

// Run is one enforced run's changeset on disk: RUN/run.json under StateDir, and the overlay
// layers of its stages (which may lie elsewhere, on each staged directory's file system).
type Run struct {
	ID         string    `json:"id"`
	Started    time.Time `json:"started"`
	Command    []string  `json:"command"`
	WorkDir    string    `json:"workDir"`
	Profile    string    `json:"profile,omitempty"`
	SysprofPID int       `json:"sysprofPID"`
	State      string    `json:"state"`
	Stages     []Stage   `json:"stages"`

	dir   string         // RUN directory
	lock  *os.File       // RUN/lock, flocked while this process owns the run
	roots map[string]int // layer and staged directories OpenNew/OpenOld opened (O_PATH)
	left  int            // changes the last Apply left (Finish trusts it: no second scan)
	known bool           // left is valid: an Apply ran and nothing wrote since
}

// Stage is one staged directory of a run: its rules and its overlay layers.
type Stage struct {
	Rules Rules  `json:"rules"`
	Upper string `json:"upper"`
	Work  string `json:"work"`
	// Top is the directory holding Upper and Work, removed with the run.
	Top string `json:"top"`
	// Since, when later than the run's start, is when sysprof itself last set the stage's
	// host side (the sweep put back a git config it holds here): a host change before it is
	// no conflict for Apply.
	Since time.Time `json:"since,omitzero"`
}

// StateDir is where runs live: $XDG_STATE_HOME/sysprof/runs, else ~/.local/state/sysprof/runs
// (~ from $HOME, else the password database);
// as root under sudo, the invoking user's (like the profiles sysprof writes under sudo).
// SYSPROF_STATE_DIR overrides it (tests, CI).
func StateDir() (string, error) {
	if d := os.Getenv("SYSPROF_STATE_DIR"); filepath.IsAbs(d) {
		return filepath.Clean(d), nil
	}
	if uid, _, ok := sudoUser(); ok {
		u, err := user.LookupId(strconv.Itoa(uid))
		if err != nil || !filepath.IsAbs(u.HomeDir) {
			return "", fmt.Errorf("home of sudo user %d: %v: set SYSPROF_STATE_DIR", uid, err)
		}
		return filepath.Join(u.HomeDir, ".local", "state", "sysprof", "runs"), nil
	}
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "sysprof", "runs"), nil
	}
	h, err := os.UserHomeDir()
	if err != nil || !filepath.IsAbs(h) {
		// $HOME unset (a cron job, `env -u HOME`): the password database's, as paths.Host
		// finds $HOME for the profile.
		if u, uerr := user.Current(); uerr == nil && filepath.IsAbs(u.HomeDir) {
			h, err = u.HomeDir, nil
		}
	}
	if err != nil || !filepath.IsAbs(h) {
		return "", fmt.Errorf("no home directory for sysprof's run state: set XDG_STATE_HOME or SYSPROF_STATE_DIR")
	}
	d := filepath.Join(h, ".local", "state", "sysprof", "runs")
	if !canMake(d) {
		// A home sysprof cannot write (read-only, or `sudo -u nobody`'s /nonexistent): the
		// runs are kept in a directory of this user's own in /var/tmp (kept across reboots),
		// so that a run that writes is not refused for where sysprof keeps its state.
		return filepath.Join(fallbackRoot, fmt.Sprintf("sysprof-%d", os.Geteuid()), "runs"), nil
	}
	return d, nil
}

// fallbackRoot holds the run state of a user whose home sysprof cannot write (a seam for tests).
var fallbackRoot = "/var/tmp"

// canMake reports whether d exists or its nearest existing parent is writable (access W_OK:
// a read-only mount answers EROFS, a directory of another user EACCES).
func canMake(d string) bool {
	for ; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil {
			return unix.Access(d, unix.W_OK) == nil
		}
		if d == filepath.Dir(d) {
			return false
		}
	}
}

// sudoUser is the user sudo started sysprof for, when sysprof runs as root under sudo.
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

// Begin makes the run's directory and writes its manifest (state running) before the command
// starts, so that a kill -9 of sysprof leaves it findable. It holds the run's lock until
// Finish or Drop (or the process's end); LockFile lets a process that outlives sysprof (the
// sandbox's init) hold it too. meta's ID, Started, SysprofPID and State are filled in when
// empty.
func Begin(meta Run) (*Run, error) {
	root, err := StateDir()
	if err != nil {
		return nil, err
	}
	if err := mkdirAllOwned(root); err != nil {
		return nil, fmt.Errorf("run state %s: %w", root, err)
	}
	if top := filepath.Dir(root); filepath.Dir(top) == fallbackRoot {
		// /var/tmp is everyone's: the fallback is used only when it is this user's own and
		// nobody else may write it (no link, no directory another user made first).
		var st unix.Stat_t
		if err := unix.Lstat(top, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR || int(st.Uid) != os.Geteuid() || st.Mode&0o022 != 0 {
			return nil, fmt.Errorf("run state %s: not a directory of this user's own that only it may write: set XDG_STATE_HOME or SYSPROF_STATE_DIR", top)
		}
	}
	r := meta
	r.Stages = slices.Clone(meta.Stages)
	if r.Started.IsZero() {
		r.Started = time.Now()
	}
	if r.SysprofPID == 0 {
		r.SysprofPID = os.Getpid()
	}
	r.State = StateRunning
	for range 10 {
		if r.ID == "" || meta.ID == "" {
			r.ID = newID(r.Started)
		}
		r.dir = filepath.Join(root, r.ID)
		err = os.Mkdir(r.dir, 0o711) // searchable: a stage's layers may live in it
		if err == nil || !errors.Is(err, fs.ErrExist) || meta.ID != "" {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("run directory: %w", err)
	}
	giveToSudoUser(r.dir)
	if err := r.takeLock(true); err != nil {
		_ = os.RemoveAll(r.dir)
		return nil, err
	}
	if err := r.save(); err != nil {
		r.unlock()
		_ = os.RemoveAll(r.dir)
		return nil, err
	}
	return &r, nil
}

// newID names a run by its start time (sortable) and 4 random bytes.
func newID(t time.Time) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return t.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b)
}

// Dir is the run's directory (RUN/, holding run.json).
func (r *Run) Dir() string { return r.dir }

// LockFile is the run's lock, held (flock) by this process when it began or applies the run.
// An enforcer may pass it to the sandbox's init (without O_CLOEXEC) so that the lock is held as
// long as anything can still write into the run's layers: Apply and Drop from another process
// refuse while it is held. nil when this process does not hold it.
func (r *Run) LockFile() *os.File { return r.lock }

// takeLock flocks RUN/lock (creating it when create): exclusive, not waiting.
func (r *Run) takeLock(create bool) error {
	if r.lock != nil {
		return nil
	}
	flags := os.O_RDWR | unix.O_CLOEXEC | unix.O_NOFOLLOW
	if create {
		flags |= os.O_CREATE
	}
	f, err := os.OpenFile(filepath.Join(r.dir, "lock"), flags, 0o600)
	if err != nil {
		return fmt.Errorf("run %s: lock: %w", r.ID, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return fmt.Errorf("run %s is in use (its enforce, pid %d, or another `sysprof changes`, is still running): %w", r.ID, r.SysprofPID, ErrBusy)
		}
		return fmt.Errorf("run %s: lock: %w", r.ID, err)
	}
	if r.stageCopying() {
		f.Close()
		return fmt.Errorf("run %s is in use (its sandbox is still copying the command's writes out of their bounded layer; try again in a moment): %w", r.ID, ErrBusy)
	}
	if create {
		giveToSudoUser(f.Name())
	}
	r.lock = f
	return nil
}

// ErrBusy: the run's lock is held by a live process.
var ErrBusy = errors.New("run busy")

func (r *Run) unlock() {
	if r.lock != nil {
		r.lock.Close()
		r.lock = nil
	}
}

// stageCopying reports whether a stage's directory is locked by the sandbox that copies the
// command's writes into it (a bounded stage, once sysprof is gone: see sandbox.Stage.Size).
func (r *Run) stageCopying() bool {
	for _, s := range r.Stages {
		fd, err := unix.Open(s.Top, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
		if err != nil {
			continue
		}
		err = unix.Flock(fd, unix.LOCK_SH|unix.LOCK_NB)
		unix.Close(fd)
		if errors.Is(err, unix.EWOULDBLOCK) {
			return true
		}
	}
	return false
}

// busy reports whether another process holds the run's lock, or a stage's.
func (r *Run) busy() bool {
	if r.lock != nil {
		return false
	}
	if r.stageCopying() {
		return true
	}
	f, err := os.OpenFile(filepath.Join(r.dir, "lock"), os.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	return errors.Is(err, unix.EWOULDBLOCK)
}

// save writes run.json atomically: a temporary file renamed over it, so that a sysprof killed
// at any point leaves the old manifest or the new one. Not fsynced: a manifest that outlives a
// power loss would name layers that did not (the overlay is mounted volatile), and each fsync
// cost every run milliseconds.
func (r *Run) save() error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(r.dir, ".run.json-*")
	if err != nil {
		return fmt.Errorf("run %s: manifest: %w", r.ID, err)
	}
	_, err = tmp.Write(append(b, '\n'))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		giveToSudoUser(tmp.Name())
		err = os.Rename(tmp.Name(), filepath.Join(r.dir, "run.json"))
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("run %s: manifest: %w", r.ID, err)
	}
	return nil
}

// AddStage makes the overlay layers of one staged directory, empty, owned by uid/gid (overlay
// writes with the mounter's credentials), and records them in the manifest before returning.
// They lie on rules.Dir's file system when a writable place outside it exists (applying is
// then a rename), never on a tmpfs that dies with the run; see layerParent.
func (r *Run) AddStage(rules Rules, uid, gid int) (Stage, error) {
	n := len(r.Stages)
	parent, err := r.layerParent(rules.Dir, uid, gid)
	if err != nil {
		return Stage{}, err
	}
	top := filepath.Join(parent, fmt.Sprintf("stage-%d", n))
	if parent != r.dir {
		top = filepath.Join(parent, fmt.Sprintf("%s-stage-%d", r.ID, n))
	}
	if err := os.Mkdir(top, 0o700); err != nil {
		return Stage{}, fmt.Errorf("stage %s: layers: %w", rules.Dir, err)
	}
	s := Stage{Rules: rules, Upper: filepath.Join(top, "upper"), Work: filepath.Join(top, "work"), Top: top}
	for _, d := range []string{s.Upper, s.Work} {
		if err := os.Mkdir(d, 0o755); err != nil {
			_ = os.RemoveAll(top)
			return Stage{}, fmt.Errorf("stage %s: layers: %w", rules.Dir, err)
		}
	}
	if os.Geteuid() == 0 && (uid != 0 || gid != 0) {
		for _, d := range []string{top, s.Upper, s.Work} {
			if err := os.Lchown(d, uid, gid); err != nil {
				_ = os.RemoveAll(top)
				return Stage{}, fmt.Errorf("stage %s: chown layers: %w", rules.Dir, err)
			}
		}
	}
	r.Stages = append(r.Stages, s)
	if err := r.save(); err != nil {
		r.Stages = r.Stages[:n]
		_ = os.RemoveAll(top)
		return Stage{}, err
	}
	return s, nil
}

// SetRules replaces stage i's rules (a gated run's later step widening what is learned) and
// records them in the manifest, so that a later `sysprof changes` classifies by them too.
func (r *Run) SetRules(i int, rules Rules) error {
	if i < 0 || i >= len(r.Stages) {
		return fmt.Errorf("BUG: run %s has no stage %d", r.ID, i)
	}
	old := r.Stages[i].Rules
	r.Stages[i].Rules = rules
	if err := r.save(); err != nil {
		r.Stages[i].Rules = old
		return err
	}
	return nil
}

// SetSince records that sysprof set stage i's host side at t (Stage.Since).
func (r *Run) SetSince(i int, t time.Time) error {
	if i < 0 || i >= len(r.Stages) {
		return fmt.Errorf("BUG: run %s has no stage %d", r.ID, i)
	}
	old := r.Stages[i].Since
	r.Stages[i].Since = t
	if err := r.save(); err != nil {
		r.Stages[i].Since = old
		return err
	}
	return nil
}

// layerParent picks where a stage's layers live: the first candidate that is writable, not
// inside dir (overlay refuses a layer inside a lower one) and not on overlayfs (which cannot
// hold an upper layer), preferring one on dir's file system. The run's own directory comes
// first; then places that outlive the run (/var/tmp, the user cache), then the temp dirs
// ($TMPDIR, $XDG_RUNTIME_DIR, /dev/shm: they end at reboot or logout, not with the run).
//
// The layers' owner (uid, gid) must be able to reach them: a candidate whose path it cannot
// search (a run directory under root's 0700 home, for a command mapped to another uid) is
// skipped.
func (r *Run) layerParent(dir string, uid, gid int) (string, error) {
	cands := append([]string{r.dir}, LayerPlaces()...)
	var st unix.Stat_t
	haveDev := unix.Stat(dir, &st) == nil
	fallback := ""
	for _, c := range cands {
		if paths.Within(c, dir) || paths.Within(dir, c) {
			continue
		}
		// Judge c by itself when it exists, else by its nearest existing parent.
		probe := c
		for {
			if _, err := os.Lstat(probe); err == nil || probe == filepath.Dir(probe) {
				break
			}
			probe = filepath.Dir(probe)
		}
		var cs unix.Stat_t
		var sfs unix.Statfs_t
		if unix.Stat(probe, &cs) != nil || unix.Access(probe, unix.W_OK) != nil || unix.Statfs(probe, &sfs) != nil ||
			sfs.Type == unix.OVERLAYFS_SUPER_MAGIC || !searchable(probe, uid, gid) {
			continue
		}
		if haveDev && cs.Dev == st.Dev {
			if ok := r.ownPlace(c); ok {
				return c, nil
			}
			continue
		}
		if fallback == "" && r.ownPlace(c) {
			fallback = c
		}
	}
	if fallback == "" {
		return "", fmt.Errorf("stage %s: no directory for its overlay layers (writable, outside it, not on overlayfs): set SYSPROF_STATE_DIR to one", dir)
	}
	return fallback, nil
}

// LayerPlaces are the directories outside the run state where AddStage may put a stage's
// layers, in the order it tries them (after the run's own directory): what an enforcer hides
// from the command besides StateDir. Each is made only when chosen, and used only when it is
// this user's and nobody else may write it.
func LayerPlaces() []string {
	out := []string{"/var/tmp/sysprof-changes"}
	if h, err := os.UserCacheDir(); err == nil {
		out = append(out, filepath.Join(h, "sysprof", "changes"))
	}
	out = append(out, filepath.Join(os.TempDir(), "sysprof-changes"))
	if x := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(x) {
		out = append(out, filepath.Join(x, "sysprof-changes"))
	}
	return append(out, "/dev/shm/sysprof-changes")
}

// ownPlace makes layer place c when missing and reports whether it is this user's own
// directory that nobody else may write (so that nobody can swap a layer in it).
func (r *Run) ownPlace(c string) bool {
	if c == r.dir {
		return true
	}
	if err := os.MkdirAll(c, 0o711); err != nil {
		return false
	}
	var cs unix.Stat_t
	return unix.Lstat(c, &cs) == nil && cs.Mode&unix.S_IFMT == unix.S_IFDIR && int(cs.Uid) == os.Geteuid() && cs.Mode&0o022 == 0
}

// Finish marks the run finished; a run that holds no change any more is removed.
func (r *Run) Finish() error {
	left := r.left
	if !r.known {
		changes, err := r.Scan()
		if err != nil {
			return err
		}
		left = len(changes)
	}
	if left == 0 {
		return r.Drop()
	}
	r.State = StateFinished
	err := r.save()
	r.unlock()
	return err
}

// Drop removes the run: its manifest and every stage's layers, with what they hold. It refuses
// while another process holds the run (its enforce still running).
func (r *Run) Drop() error {
	if err := r.takeLock(false); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	for _, s := range r.Stages {
		if !r.ownsTop(s.Top) {
			return fmt.Errorf("run %s: manifest names %s as a stage: not one of sysprof's layer directories, not removed", r.ID, s.Top)
		}
		ChmodDirs(s.Work)
		if err := os.RemoveAll(s.Top); err != nil {
			return fmt.Errorf("run %s: remove %s: %w", r.ID, s.Top, err)
		}
	}
	err := os.RemoveAll(r.dir)
	r.unlock()
	if err != nil {
		return fmt.Errorf("run %s: remove: %w", r.ID, err)
	}
	return nil
}

// ownsTop reports whether top is a layer directory AddStage would make for this run (a
// manifest edited to name another directory is not followed into it).
func (r *Run) ownsTop(top string) bool {
	b := filepath.Base(top)
	return filepath.Dir(top) == r.dir && strings.HasPrefix(b, "stage-") ||
		strings.HasPrefix(b, r.ID+"-stage-") && slices.Contains(LayerPlaces(), filepath.Dir(top))
}

// ChmodDirs makes dir and the directories below it searchable again, so their owner can remove
// them: overlay leaves directories with mode 0 in a work directory (work/work,
// work/incompat/volatile).
func ChmodDirs(dir string) {
	if os.Chmod(dir, 0o700) != nil {
		return
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.IsDir() {
			ChmodDirs(filepath.Join(dir, e.Name()))
		}
	}
}

// Open reads the run id ("" = the newest; a unique prefix is enough). A run recorded running
// whose lock nobody holds is reported interrupted.
func Open(id string) (*Run, error) {
	runs, err := all()
	if err != nil {
		return nil, err
	}
	if len(runs) == 0 {
		return nil, fmt.Errorf("no runs with held changes")
	}
	if id == "" {
		return runs[len(runs)-1], nil
	}
	var found *Run
	for _, r := range runs {
		if r.ID == id {
			return r, nil
		}
		if strings.HasPrefix(r.ID, id) {
			if found != nil {
				return nil, fmt.Errorf("run %q is ambiguous: %s, %s, ...", id, found.ID, r.ID)
			}
			found = r
		}
	}
	if found == nil {
		return nil, fmt.Errorf("no run %q: `sysprof changes` lists them", id)
	}
	return found, nil
}

// List returns every run on record, oldest first: finished runs hold changes (a run that held
// none was removed), running ones belong to a live enforce, interrupted ones to a sysprof that
// died (their changes survived).
func List() ([]*Run, error) { return all() }

func all() ([]*Run, error) {
	root, err := StateDir()
	if err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("run state %s: %w", root, err)
	}
	var out []*Run
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		r, err := load(filepath.Join(root, e.Name()))
		if err != nil {
			continue // a run being made (no manifest yet), or not a run
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b *Run) int {
		if c := a.Started.Compare(b.Started); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

func load(dir string) (*Run, error) {
	b, err := os.ReadFile(filepath.Join(dir, "run.json"))
	if err != nil {
		return nil, err
	}
	var r Run
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	if r.ID != filepath.Base(dir) {
		return nil, fmt.Errorf("%s: manifest of run %q", dir, r.ID)
	}
	r.dir = dir
	if r.State == StateRunning && !r.busy() {
		r.State = StateInterrupted
	}
	return &r, nil
}

// Alive reports whether the run's sysprof process still exists (an interrupted run's does not).
func (r *Run) Alive() bool {
	return r.SysprofPID > 0 && unix.Kill(r.SysprofPID, 0) == nil
}

// searchable reports whether uid/gid may search every directory from / down to dir (root
// may search anything).
func searchable(dir string, uid, gid int) bool {
	if uid == 0 {
		return true
	}
	for d := dir; ; d = filepath.Dir(d) {
		var st unix.Stat_t
		if unix.Stat(d, &st) != nil {
			return false
		}
		var bit uint32 = 0o001
		switch {
		case int(st.Uid) == uid:
			bit = 0o100
		case int(st.Gid) == gid:
			bit = 0o010
		}
		if st.Mode&bit == 0 {
			return false
		}
		if d == filepath.Dir(d) {
			return true
		}
	}
}

func mkdirAllOwned(dir string) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	// Make each missing component, handing it to the sudo user (their state, not root's).
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil || d == filepath.Dir(d) {
			break
		}
		missing = append(missing, d)
	}
	for i := len(missing) - 1; i >= 0; i-- {
		if err := os.Mkdir(missing[i], 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		giveToSudoUser(missing[i])
	}
	return nil
}

func giveToSudoUser(p string) {
	if uid, gid, ok := sudoUser(); ok {
		_ = os.Lchown(p, uid, gid)
	}
}
