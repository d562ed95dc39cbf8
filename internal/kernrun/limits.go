package kernrun

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// LimitGroup is where a run's pids and memory limits are kept: the run's cgroup2 directory when
// the pids and memory controllers are on there, else (hybrid hosts, where those controllers
// are bound to cgroup v1) a directory of the same kind in the v1 pids and memory hierarchies,
// below sysprof's own cgroup there, so that limits above sysprof's (a test's, a service's)
// still bound the run.
type LimitGroup struct {
	V2           bool
	Pids, Memory string // the directories (one and the same for cgroup2)
	// CPU is the directory of the cpu controller ("": none here, no CPU weight).
	CPU     string
	created []string
	locks   []int   // fds holding flocks on created (see removeStaleV1)
	own     *Cgroup // a cgroup2 directory of its own (no run cgroup was given): Enter moves
	// Delegated: an ordinary user's group, made in the subtree delegated to it (Delegation).
	Delegated bool
}

// LimitsAvailable says why this process cannot keep a run's limits in a cgroup, or nil: as
// root, with the pids and memory controllers in cgroup2 or as v1 hierarchies. Asked once.
var LimitsAvailable = sync.OnceValue(limitsAvailable)

func limitsAvailable() error {
	if os.Geteuid() != 0 {
		_, err := Delegation()
		return err
	}
	if mnt, err := Cgroup2Mount(); err == nil {
		if b, err := os.ReadFile(filepath.Join(mnt, "cgroup.controllers")); err == nil &&
			slices.Contains(strings.Fields(string(b)), "pids") && slices.Contains(strings.Fields(string(b)), "memory") {
			return nil
		}
	}
	for _, ctrl := range []string{"pids", "memory"} {
		if _, err := v1Dir(ctrl); err != nil {
			return err
		}
	}
	return nil
}

// LimitStats are what the kernel counted in a LimitGroup: peaks, and how often a limit refused.
type LimitStats struct {
	PidsPeak    int   // most tasks at once (pids.peak; 0: not known)
	PidsRefused int   // forks the pids limit refused (pids.events max)
	MemoryPeak  int64 // most bytes charged at once (memory.peak; 0: not known)
	// OOMKills is how many processes the memory limit's OOM killer ended; MemoryHits how often
	// the limit was reached (memory.events max; v1: memory.failcnt).
	OOMKills   int
	MemoryHits int
}

// NewLimitGroup prepares the limits of a run: in run, its cgroup2 directory (nil: none), when the
// controllers can be enabled there, else in fresh v1 directories named after run (or after this
// process); for an ordinary user without a run cgroup, below the subtree delegated to it
// (Delegation). It creates nothing it cannot use: an error means no cgroup limits here.
func NewLimitGroup(run *Cgroup) (*LimitGroup, error) {
	if os.Geteuid() != 0 && run == nil {
		return newDelegatedGroup()
	}
	if run != nil {
		if err := enableControllers(filepath.Dir(run.Dir)); err == nil {
			return &LimitGroup{V2: true, Pids: run.Dir, Memory: run.Dir, CPU: cpuOf(run.Dir)}, nil
		}
	} else if mnt, err := Cgroup2Mount(); err == nil && os.MkdirAll(filepath.Join(mnt, "sysprof"), 0o755) == nil &&
		enableControllers(filepath.Join(mnt, "sysprof")) == nil {
		if own, err := NewCgroup(); err == nil {
			return &LimitGroup{V2: true, Pids: own.Dir, Memory: own.Dir, CPU: cpuOf(own.Dir), own: own}, nil
		}
	}
	name := fmt.Sprintf("sysprof-run-%d-%d-%x", os.Getpid(), runSeq.Add(1), time.Now().UnixNano())
	if run != nil {
		name = "sysprof-" + filepath.Base(run.Dir)
	}
	g := &LimitGroup{}
	for _, h := range []struct {
		ctrl string
		dir  *string
	}{{"pids", &g.Pids}, {"memory", &g.Memory}} {
		parent, err := v1Dir(h.ctrl)
		if err != nil {
			g.Remove()
			return nil, err
		}
		sweep(func() { removeStaleV1(parent) })
		d := filepath.Join(parent, name)
		if err := os.Mkdir(d, 0o755); err != nil {
			g.Remove()
			return nil, fmt.Errorf("create cgroup %s: %w", d, err)
		}
		g.created = append(g.created, d)
		g.locks = append(g.locks, lockDir(d))
		*h.dir = d
	}
	// The CPU weight is best effort: a host without the cpu hierarchy runs without it.
	if parent, err := v1Dir("cpu"); err == nil {
		sweep(func() { removeStaleV1(parent) })
		if d := filepath.Join(parent, name); os.Mkdir(d, 0o755) == nil {
			g.created = append(g.created, d)
			g.locks = append(g.locks, lockDir(d))
			g.CPU = d
		}
	}
	return g, nil
}

// cpuOf is dir when the cpu controller can be enabled for it in cgroup2, else "".
func cpuOf(dir string) string {
	parent := filepath.Dir(dir)
	b, err := os.ReadFile(filepath.Join(parent, "cgroup.subtree_control"))
	if err == nil && !slices.Contains(strings.Fields(string(b)), "cpu") {
		err = os.WriteFile(filepath.Join(parent, "cgroup.subtree_control"), []byte("+cpu"), 0)
	}
	if err != nil {
		return ""
	}
	return dir
}

// SetCPUWeight gives the run weight w of the kernel's default 100 under CPU contention
// (cgroup2 cpu.weight; v1 cpu.shares, 1024 for 100). Without a cpu controller it does nothing.
func (g *LimitGroup) SetCPUWeight(w int) error {
	switch {
	case g.CPU == "":
		return nil
	case g.V2:
		return os.WriteFile(filepath.Join(g.CPU, "cpu.weight"), []byte(strconv.Itoa(w)), 0)
	}
	return os.WriteFile(filepath.Join(g.CPU, "cpu.shares"), []byte(strconv.Itoa(w*1024/100)), 0)
}

// removeStaleV1 removes the v1 directories of sysprof processes that are gone (killed before
// they could remove them); a populated one stays (rmdir refuses it).
func removeStaleV1(parent string) {
	dirs, _ := filepath.Glob(filepath.Join(parent, "sysprof-run-*-*"))
	for _, d := range dirs {
		f := strings.Split(filepath.Base(d), "-")
		pid, err := strconv.Atoi(f[2])
		if err != nil || pid == os.Getpid() || unix.Kill(pid, 0) != unix.ESRCH || locked(d) {
			continue // alive (a locked one in another pid namespace)
		}
		removeTree(d, 1) // a populated one stays
	}
}

// Delegated is a cgroup subtree delegated to this ordinary user (systemd's user@UID.service
// with Delegate=yes, or an administrator's chown): the topmost directory above this process,
// in cgroup2 when the pids and memory controllers are there, else in the v1 pids and memory
// hierarchies, that the user owns and whose cgroup.procs it may write (moving a process needs
// that of the common ancestor).
type Delegated struct {
	V2           bool
	Pids, Memory string
}

// Delegation finds the subtree delegated to this ordinary user that can keep a run's pids and
// memory limits, or says why there is none.
func Delegation() (Delegated, error) {
	uid := os.Geteuid()
	mnt, err := Cgroup2Mount()
	if err != nil {
		return Delegated{}, fmt.Errorf("an ordinary user gets no cgroup of its own: %v", err)
	}
	var why2 error
	if own, err := ownDir("0::", mnt); err != nil {
		why2 = err
	} else if d := topDelegated(own, mnt, uid); d == "" {
		why2 = fmt.Errorf("%s is not delegated to this user", own)
	} else if c, _ := os.ReadFile(filepath.Join(d, "cgroup.controllers")); !hasFields(string(c), "pids", "memory") {
		why2 = fmt.Errorf("%s is delegated without the pids and memory controllers", d)
	} else {
		return Delegated{V2: true, Pids: d, Memory: d}, nil
	}
	// Hybrid hosts bind pids and memory to v1 hierarchies: delegated there, the same holds.
	var dl Delegated
	for _, h := range []struct {
		ctrl string
		dir  *string
	}{{"pids", &dl.Pids}, {"memory", &dl.Memory}} {
		own, err := v1Dir(h.ctrl)
		if err != nil {
			return Delegated{}, fmt.Errorf("an ordinary user gets no cgroup of its own: %v", why2)
		}
		mnt, _ := v1Mount(h.ctrl)
		if *h.dir = topDelegated(own, mnt, uid); *h.dir == "" {
			return Delegated{}, fmt.Errorf("an ordinary user gets no cgroup of its own: %v, and the cgroup v1 %s directory %s is not delegated to it either", why2, h.ctrl, own)
		}
	}
	return dl, nil
}

// topDelegated is the topmost directory from dir up to (not including) the mount mnt that uid
// owns and may move processes into, each one between them included ("": none).
func topDelegated(dir, mnt string, uid int) string {
	top := ""
	for d := filepath.Clean(dir); len(d) > len(mnt) && strings.HasPrefix(d, mnt+"/"); d = filepath.Dir(d) {
		var st unix.Stat_t
		if unix.Stat(d, &st) != nil || int(st.Uid) != uid || unix.Access(filepath.Join(d, "cgroup.procs"), unix.W_OK) != nil {
			break
		}
		top = d
	}
	return top
}

// ownDir is this process's directory in the hierarchy of /proc/self/cgroup's line with prefix
// (cgroup2: "0::") mounted at mnt.
func ownDir(prefix, mnt string) (string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, prefix); ok {
			return filepath.Join(mnt, p), nil
		}
	}
	return "", errors.New("not in the cgroup2 hierarchy")
}

func hasFields(list string, names ...string) bool {
	f := strings.Fields(list)
	for _, n := range names {
		if !slices.Contains(f, n) {
			return false
		}
	}
	return true
}

// newDelegatedGroup makes an ordinary user's run a cgroup of its own in the subtree delegated
// to it: a child of the delegated directory (in cgroup2 with pids and memory enabled for its
// children, which the kernel refuses while the directory holds processes itself: systemd keeps
// them in leaves), that Enter moves the run into.
func newDelegatedGroup() (*LimitGroup, error) {
	dl, err := Delegation()
	if err != nil {
		return nil, err
	}
	name := fmt.Sprintf("sysprof-run-%d-%d-%x", os.Getpid(), runSeq.Add(1), time.Now().UnixNano())
	g := &LimitGroup{V2: dl.V2, Delegated: true}
	if dl.V2 {
		ctl := filepath.Join(dl.Pids, "cgroup.subtree_control")
		if b, err := os.ReadFile(ctl); err != nil || !hasFields(string(b), "pids", "memory") {
			if err := os.WriteFile(ctl, []byte("+pids +memory"), 0); err != nil {
				return nil, fmt.Errorf("enable pids and memory in the delegated %s (it must hold no process itself): %w", dl.Pids, err)
			}
		}
	}
	for _, h := range []struct {
		parent string
		dir    *string
	}{{dl.Pids, &g.Pids}, {dl.Memory, &g.Memory}} {
		if *h.dir = filepath.Join(h.parent, name); g.V2 && len(g.created) > 0 {
			break // one directory for both
		}
		parent := h.parent
		sweep(func() { removeStaleV1(parent) })
		if err := os.Mkdir(*h.dir, 0o755); err != nil {
			g.Remove()
			return nil, fmt.Errorf("create cgroup %s in the delegated subtree: %w", *h.dir, err)
		}
		g.created = append(g.created, *h.dir)
		g.locks = append(g.locks, lockDir(*h.dir))
	}
	if g.V2 {
		g.CPU = cpuOf(g.Pids)
	}
	return g, nil
}

// enableControllers turns pids and memory on for the children of dir (and of its ancestors up
// to the mount, which must pass them down).
func enableControllers(dir string) error {
	mnt, err := Cgroup2Mount()
	if err != nil {
		return err
	}
	var chain []string
	for d := dir; ; d = filepath.Dir(d) {
		chain = append([]string{d}, chain...)
		if d == mnt || len(d) <= len(mnt) {
			break
		}
	}
	// Where the controllers are not (hybrid hosts bind them to v1), a write to subtree_control
	// fails only after taking the cgroup mutex (50 ms once under contention): read first.
	if b, err := os.ReadFile(filepath.Join(mnt, "cgroup.controllers")); err != nil || !hasFields(string(b), "pids", "memory") {
		return fmt.Errorf("the pids and memory controllers are not in cgroup2 at %s", mnt)
	}
	for _, d := range chain {
		b, err := os.ReadFile(filepath.Join(d, "cgroup.subtree_control"))
		if err != nil {
			return err
		}
		if strings.Contains(string(b), "pids") && strings.Contains(string(b), "memory") {
			continue
		}
		if err := os.WriteFile(filepath.Join(d, "cgroup.subtree_control"), []byte("+pids +memory"), 0); err != nil {
			return fmt.Errorf("enable pids and memory in %s: %w", d, err)
		}
	}
	return nil
}

// selfCgroups is /proc/self/cgroup, read once: a run asks for several controllers' directories
// (the limits' check and group: five reads, ~55 µs each), and sysprof stays where it started.
var selfCgroups = sync.OnceValues(func() ([]byte, error) { return os.ReadFile("/proc/self/cgroup") })

// v1Dir is this process's cgroup directory in the v1 hierarchy of ctrl.
func v1Dir(ctrl string) (string, error) {
	b, err := selfCgroups()
	if err != nil {
		return "", err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 || !hasField(parts[1], ctrl) {
			continue
		}
		mnt, err := v1Mount(ctrl)
		if err != nil {
			return "", err
		}
		return filepath.Join(mnt, parts[2]), nil
	}
	return "", fmt.Errorf("no cgroup v1 %s hierarchy and no cgroup2 %s controller: no cgroup limits here", ctrl, ctrl)
}

func hasField(list, name string) bool {
	for _, f := range strings.Split(list, ",") {
		if f == name {
			return true
		}
	}
	return false
}

// v1Mount is where the v1 hierarchy of ctrl is mounted.
func v1Mount(ctrl string) (string, error) {
	mnts, err := v1Mounts()
	if err != nil {
		return "", err
	}
	if m, ok := mnts[ctrl]; ok {
		return m, nil
	}
	return "", fmt.Errorf("the cgroup v1 %s hierarchy is not mounted", ctrl)
}

// v1Mounts are the v1 hierarchies' mount points by controller, read once.
var v1Mounts = sync.OnceValues(func() (map[string]string, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 5 || len(g) < 3 || g[0] != "cgroup" {
			continue
		}
		for _, ctrl := range strings.Split(g[2], ",") {
			if _, seen := out[ctrl]; !seen {
				out[ctrl] = f[4]
			}
		}
	}
	return out, nil
})

// Set writes the limits: at most pids tasks, memory bytes of RAM and no swap (0: leave as is).
func (g *LimitGroup) Set(pids int, memory int64) error {
	var files [][2]string
	if pids > 0 {
		files = append(files, [2]string{filepath.Join(g.Pids, "pids.max"), strconv.Itoa(pids)})
	}
	if memory > 0 {
		m := strconv.FormatInt(memory, 10)
		if g.V2 {
			files = append(files, [2]string{filepath.Join(g.Memory, "memory.max"), m}, [2]string{filepath.Join(g.Memory, "memory.swap.max"), "0"})
		} else {
			files = append(files, [2]string{filepath.Join(g.Memory, "memory.limit_in_bytes"), m})
			// RAM plus swap = RAM: no swap (absent without swap accounting).
			files = append(files, [2]string{filepath.Join(g.Memory, "memory.memsw.limit_in_bytes"), m})
		}
	}
	for _, f := range files {
		if err := os.WriteFile(f[0], []byte(f[1]), 0); err != nil {
			if errors.Is(err, os.ErrNotExist) && (strings.Contains(f[0], "swap") || strings.Contains(f[0], "memsw")) {
				continue // no swap accounting: no swap to limit either
			}
			return fmt.Errorf("set %s to %s: %w", f[0], f[1], err)
		}
	}
	return nil
}

// Enter moves process pid (all its threads) into the v1 directories; born into the cgroup2
// directory, it is there already.
func (g *LimitGroup) Enter(pid int) error {
	dirs := []string{g.Pids, g.Memory}
	if g.CPU != "" && !g.V2 {
		dirs = append(dirs, g.CPU)
	}
	switch {
	case g.V2 && (g.own != nil || g.Delegated):
		dirs = dirs[:1]
	case g.V2:
		return nil
	}
	for _, d := range dirs {
		if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
			return fmt.Errorf("move the run into %s: %w", d, err)
		}
	}
	return nil
}

// BirthDir opens the cgroup2 directory a process must be moved into by Enter (a group of its
// own, or an ordinary user's delegated one), for clone3's CLONE_INTO_CGROUP instead: a move
// by pid takes cgroup_threadgroup_rwsem for writing (an RCU grace period), a process born
// into the group takes nothing. Nil, no error: Enter moves nothing here (cgroup v1, whose
// tasks files JoinFiles opens, or the run's own cgroup2 directory it is born into already).
// The caller closes the file.
func (g *LimitGroup) BirthDir() (*os.File, error) {
	if !g.V2 || (g.own == nil && !g.Delegated) {
		return nil, nil
	}
	return os.OpenFile(g.Pids, os.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
}

// JoinFiles opens the v1 directories' tasks files for the process that is to be bounded, to
// join them itself before anything else (0 written from the thread that will exec): a move by
// pid (Enter) takes the kernel's global cgroup_threadgroup_rwsem, which first waits for an RCU
// grace period (5-18 ms a move here), while a thread that moves itself needs no such lock
// (Measure). The write is checked against the opener's credentials, so a process in a user
// namespace joins through them too. Nil for cgroup2: a process is born into it (or Enter
// moves it). The caller closes the files.
func (g *LimitGroup) JoinFiles() ([]*os.File, error) {
	if g.V2 {
		return nil, nil
	}
	dirs := []string{g.Pids, g.Memory}
	if g.CPU != "" {
		dirs = append(dirs, g.CPU)
	}
	var out []*os.File
	for _, d := range dirs {
		f, err := os.OpenFile(filepath.Join(d, "tasks"), os.O_WRONLY, 0)
		if err != nil {
			for _, f := range out {
				f.Close()
			}
			return nil, fmt.Errorf("open %s to join it: %w", d, err)
		}
		out = append(out, f)
	}
	return out, nil
}

// Stats reads what the kernel counted (fields it cannot read stay 0).
func (g *LimitGroup) Stats() LimitStats {
	var s LimitStats
	s.PidsPeak = int(readInt(filepath.Join(g.Pids, "pids.peak")))
	s.PidsRefused = int(keyed(filepath.Join(g.Pids, "pids.events"), "max"))
	if g.V2 {
		s.MemoryPeak = readInt(filepath.Join(g.Memory, "memory.peak"))
		s.OOMKills = int(keyed(filepath.Join(g.Memory, "memory.events"), "oom_kill"))
		s.MemoryHits = int(keyed(filepath.Join(g.Memory, "memory.events"), "max"))
	} else {
		s.MemoryPeak = readInt(filepath.Join(g.Memory, "memory.max_usage_in_bytes"))
		s.OOMKills = int(keyed(filepath.Join(g.Memory, "memory.oom_control"), "oom_kill"))
		s.MemoryHits = int(readInt(filepath.Join(g.Memory, "memory.failcnt")))
	}
	return s
}

// Remove removes the v1 directories it created (once the run's processes are gone).
func (g *LimitGroup) Remove() {
	if g == nil {
		return
	}
	if g.own != nil {
		_ = g.own.Remove()
		g.own = nil
	}
	for _, fd := range g.locks {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
	g.locks = nil
	for _, d := range g.created {
		removeTree(d, 200)
	}
	g.created = nil
}

// removeTree removes cgroup directory d, and first the directories below it (a nested sysprof
// that was killed left its own), trying each up to tries times 10 ms apart: the last processes
// may still be exiting, and rmdir fails with EBUSY until they are gone.
func removeTree(d string, tries int) {
	subs, _ := os.ReadDir(d)
	for _, e := range subs {
		if e.IsDir() {
			removeTree(filepath.Join(d, e.Name()), tries)
		}
	}
	for range tries {
		if err := os.Remove(d); err == nil || errors.Is(err, os.ErrNotExist) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func readInt(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n
}

// keyed reads the value of key from a "key value" per line file.
func keyed(path, key string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, key+" "); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// Measure readies g for a process the calling thread starts next: cgroup v1 directories are
// joined per thread, so the calling thread (locked to its goroutine by the caller) joins them,
// the child it forks is born in them, and the returned function puts the thread back. A
// cgroup2 directory is joined at clone (CLONE_INTO_CGROUP) and needs nothing.
func (g *LimitGroup) Measure() (restore func(), err error) {
	if g.V2 {
		if g.own != nil || g.Delegated {
			return nil, errors.New("a cgroup2 directory is joined at clone only: measure in the run's own cgroup")
		}
		return func() {}, nil
	}
	// "0" is the writing thread. Named by its tid, the kernel takes the global
	// cgroup_threadgroup_rwsem for writing, which waits for an RCU grace period (6-17 ms a
	// join on this project's VM, most of a learn's start); the caller itself, which can
	// neither exit nor exec meanwhile, needs no such lock (cgroup_procs_write_start).
	self := []byte("0")
	var back []string
	restore = func() {
		for _, d := range back {
			_ = os.WriteFile(filepath.Join(d, "tasks"), self, 0)
		}
	}
	for _, d := range []string{g.Pids, g.Memory} {
		from, err := threadCgroupDir(d)
		if err != nil {
			restore()
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(d, "tasks"), self, 0); err != nil {
			restore()
			return nil, fmt.Errorf("join %s: %w", d, err)
		}
		back = append(back, from)
	}
	return restore, nil
}

// threadCgroupDir is the calling thread's directory in the hierarchy dir belongs to.
func threadCgroupDir(dir string) (string, error) {
	for _, ctrl := range []string{"pids", "memory"} {
		if mnt, err := v1Mount(ctrl); err == nil && strings.HasPrefix(dir, mnt+"/") {
			b, err := os.ReadFile("/proc/thread-self/cgroup")
			if err != nil {
				return "", err
			}
			for _, line := range strings.Split(string(b), "\n") {
				parts := strings.SplitN(line, ":", 3)
				if len(parts) == 3 && hasField(parts[1], ctrl) {
					return filepath.Join(mnt, parts[2]), nil
				}
			}
		}
	}
	return "", fmt.Errorf("%s: not a cgroup v1 directory this thread is in", dir)
}
