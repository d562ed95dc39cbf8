package enforcer

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/enforcer/initstage"
	"github.com/sysprof/sysprof/internal/feature"
	"github.com/sysprof/sysprof/internal/kernrun"
	"github.com/sysprof/sysprof/internal/phase"
	"github.com/sysprof/sysprof/internal/spawn"
	"github.com/sysprof/sysprof/internal/wire"
	"github.com/sysprof/sysprof/paths"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/sandbox"
)

// stage is a started init stage waiting for its config (fdConfig), before anything of the
// profile reaches it.
type stage struct {
	cmd *exec.Cmd // started by os/exec; or by spawn.Start (vfork): proc
	// proc, state: a stage started by spawn.Start (vfork); creds: who it becomes (its config's).
	proc    *os.Process
	state   *os.ProcessState
	creds   *initstage.Switch
	streams *streams
	pid     int
	pidfd   int
	cfgW    *os.File // write end of the config pipe: the config, then EOF
	syncW   *os.File // one byte releases the stage to exec
	// statusR is the read end of the status pipe (JSON lines; EOF: exec done).
	statusR *os.File
	// netns: the stage was created with CLONE_NEWNET (otherwise it unshares one itself when
	// the plan asks).
	netns bool
	cgid  uint64 // the cgroup it was born into (0: sysprof's own)
	model string // the sandbox.Identity it was created for
	// locked: the spawning goroutine was locked to its thread for Pdeathsig; finish unlocks it.
	locked bool
	// replicaW, for a stage in a root-idmap user namespace: where it expects the host's mounts
	// as an idmapped replica (sendReplica).
	replicaW *os.File
	// earlyNet: started with initstage.ArgNetNS, the stage enters a network namespace of its
	// own before its config arrives; it fits only a plan with one.
	earlyNet bool
}

// spawnStage starts sysprof's init stage with attr (namespaces, cgroup) completed with what
// every run needs: a new session (no terminal to inject input into) and death with sysprof.
// Pdeathsig fires when the thread that forked exits: the calling goroutine stays locked to its
// thread until finish (call finish on the same goroutine). With idmap (sandbox.Identity.Idmap)
// the stage expects the host's mounts as an idmapped replica (sendReplica), and starts in /
// (dir may be out of its host uid's reach until then; it enters dir again after the mounts).
// join are cgroup v1 tasks files the stage joins first thing (initstage.FDJoin).
func spawnStage(attr *syscall.SysProcAttr, dir string, env []string, stdin io.Reader, stdout, stderr io.Writer, idmap, earlyNet bool, join []*os.File) (*stage, error) {
	cfgR, cfgW, err := blockingPipe()
	if err != nil {
		return nil, err
	}
	syncR, syncW, err := blockingPipe()
	if err != nil {
		cfgR.Close()
		cfgW.Close()
		return nil, err
	}
	statusR, statusW, err := blockingPipe()
	if err != nil {
		cfgR.Close()
		cfgW.Close()
		syncR.Close()
		syncW.Close()
		return nil, err
	}
	closeChildEnds := func() {
		cfgR.Close()
		syncR.Close()
		statusW.Close()
	}
	extra := []*os.File{cfgR, syncR, statusW}
	var replicaW *os.File // the parent's end of the replica's socket
	if idmap {
		pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			closeChildEnds()
			cfgW.Close()
			syncW.Close()
			statusR.Close()
			return nil, fmt.Errorf("replica socket: %w", err)
		}
		replicaR := os.NewFile(uintptr(pair[1]), "replica")
		replicaW = os.NewFile(uintptr(pair[0]), "replica")
		extra = append(extra, replicaR)
		closeChildEnds = func() {
			cfgR.Close()
			syncR.Close()
			statusW.Close()
			replicaR.Close()
		}
		dir = "/"
	}
	if len(join) > 0 {
		if !idmap {
			extra = append(extra, nil) // FDReplica: none
		}
		extra = append(extra, join...)
	}
	attr.Setsid = true
	attr.Pdeathsig = syscall.SIGKILL
	pidfd := -1
	attr.PidFD = &pidfd
	args := []string{"sysprof-init", initArg}
	if earlyNet {
		args = append(args, initstage.ArgNetNS)
	}
	if len(join) > 0 {
		args = append(args, initstage.ArgJoin+strconv.Itoa(len(join)))
	}
	cmd := &exec.Cmd{
		Path:        initProgram(),
		Args:        args,
		Env:         env,
		Dir:         dir,
		Stdin:       stdin,
		Stdout:      stdout,
		Stderr:      stderr,
		ExtraFiles:  extra,
		SysProcAttr: attr,
		// A child that left the process group may hold stdout open: stop waiting for it.
		WaitDelay: 2 * time.Second,
	}
	failed := func() {
		runtime.UnlockOSThread()
		closeChildEnds()
		cfgW.Close()
		syncW.Close()
		statusR.Close()
		if replicaW != nil {
			replicaW.Close()
		}
	}
	runtime.LockOSThread()
	if st, err := vforkStage(cmd, attr); st != nil || err != nil {
		if err != nil {
			failed()
			return nil, err
		}
		phase.Mark("cmd.Start (vfork)")
		closeChildEnds()
		startKeeper()
		st.cfgW, st.syncW, st.statusR, st.replicaW = cfgW, syncW, statusR, replicaW
		if err := sendSwitch(cfgW, st.creds); err != nil {
			st.kill()
			st.finish()
			return nil, err
		}
		st.netns, st.locked, st.earlyNet = attr.Cloneflags&unix.CLONE_NEWNET != 0, true, earlyNet
		return st, nil
	}
	if err := cmd.Start(); err != nil {
		failed()
		if errors.Is(err, unix.EPERM) && attr.Cloneflags&unix.CLONE_NEWUSER != 0 {
			return nil, userNSRefused(err)
		}
		return nil, fmt.Errorf("start init stage: %w", err)
	}
	phase.Mark("cmd.Start (fork/clone)")
	closeChildEnds()
	startKeeper() // after the stage's fork: the keeper's must not delay it
	st := &stage{cmd: cmd, pid: cmd.Process.Pid, pidfd: pidfd, cfgW: cfgW, syncW: syncW, statusR: statusR,
		netns: attr.Cloneflags&unix.CLONE_NEWNET != 0, locked: true, earlyNet: earlyNet}
	st.replicaW = replicaW
	if err := sendSwitch(cfgW, nil); err != nil { // Go's fork set the ids
		st.kill()
		st.finish()
		return nil, err
	}
	return st, nil
}

// sendSwitch sends the stage the ids and capabilities to take (nil: none), the first frame on
// its config pipe, once its id maps are written: it takes them while it waits for its config.
func sendSwitch(w *os.File, sw *initstage.Switch) error {
	if err := wire.WriteFrame(w, &sw); err != nil {
		return fmt.Errorf("send the init stage its ids: %w", err)
	}
	return nil
}

// sendReplica clones the host's mounts that reach names (sandbox.PrepareReplica), idmapped with
// the stage's user namespace, and sends them; it closes the socket either way (a stage waiting
// for them sees EOF when anything failed). It returns the mounts that could not be idmapped, or
// an error: the stage cannot be the unprivileged root the run was promised.
func (s *stage) sendReplica(reach []string) ([]string, error) {
	w := s.replicaW
	s.replicaW = nil
	defer w.Close()
	fail := func(err error) ([]string, error) {
		return nil, &LayerError{Layer: LayerUserNS, Reason: "the command cannot run as an unprivileged uid owning root's files: " + err.Error() +
			" (run sysprof as an ordinary user or under sudo, or give the profile hostRoot: true)"}
	}
	ns, err := unix.Open(fmt.Sprintf("/proc/%d/ns/user", s.pid), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fail(fmt.Errorf("open the init stage's user namespace: %w", err))
	}
	defer unix.Close(ns)
	r, err := sandbox.PrepareReplica(ns, reach)
	if err != nil {
		return fail(err)
	}
	defer r.Close()
	if err := r.Send(int(w.Fd())); err != nil {
		return fail(err)
	}
	return r.Plain, nil
}

// blockingPipe is os.Pipe without the runtime's poller: a goroutine reading the status pipe
// blocks in read(2) on a thread of its own and wakes as the line arrives. Through the poller a
// busy process noticed the init stage's messages up to a few milliseconds late.
func blockingPipe() (r, w *os.File, err error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return nil, nil, fmt.Errorf("pipe: %w", err)
	}
	return os.NewFile(uintptr(p[0]), "|0"), os.NewFile(uintptr(p[1]), "|1"), nil
}

// vforkStage starts the stage cmd describes with spawn.Start when it gets a user namespace
// (Go's forkExec makes that a full fork of sysprof; spawn's child shares its memory until
// the execve, writes the id maps and takes the ids as Go's child would have), and says which
// capabilities the stage keeps (initstage.Switch, sent by sendSwitch). It returns nil and no
// error when os/exec must start it: not in a user namespace (Go vforks then too), or spawn
// not available here (clone3 refused included: os/exec then says why).
func vforkStage(cmd *exec.Cmd, attr *syscall.SysProcAttr) (*stage, error) {
	if attr.Cloneflags&unix.CLONE_NEWUSER == 0 {
		return nil, nil
	}
	// What spawn does not do (sysprof asks for none of it) is left to os/exec.
	if attr.Chroot != "" || attr.Ptrace || attr.Setpgid || attr.Setctty || attr.Noctty || attr.Foreground ||
		attr.Unshareflags != 0 || (attr.Credential != nil && attr.Credential.NoSetGroups) {
		return nil, nil
	}
	ios, err := stageStreams(cmd)
	if err != nil {
		return nil, fmt.Errorf("start init stage: %w", err)
	}
	files := ios.fds
	for _, f := range cmd.ExtraFiles {
		files = append(files, int(f.Fd()))
	}
	// The ids are the child's to take before its execve (spawn.IDs): the stage sets only this
	// thread's capabilities.
	creds := &initstage.Switch{Ambient: attr.AmbientCaps}
	ambient := attr.AmbientCaps
	if len(ambient) == 0 { // root in its namespace: every capability, as uid 0's execve gives
		ambient = spawn.AllCaps()
	}
	a := &spawn.Attr{Path: cmd.Path, Argv: cmd.Args, Env: cmd.Env, Dir: cmd.Dir, Files: files,
		CloneFlags: uint64(attr.Cloneflags), CgroupFD: -1, Setsid: attr.Setsid, Pdeathsig: attr.Pdeathsig, Ambient: ambient,
		IDs: &spawn.IDs{Uids: attr.UidMappings, Gids: attr.GidMappings, EnableSetgroups: attr.GidMappingsEnableSetgroups, Cred: attr.Credential}}
	if attr.UseCgroupFD {
		a.CgroupFD = attr.CgroupFD
	}
	p, err := spawn.Start(a)
	ios.started()
	var sce *os.SyscallError
	if errors.Is(err, feature.ErrNotSupported) || errors.As(err, &sce) {
		ios.abandon()
		return nil, nil
	}
	if err != nil {
		ios.abandon()
		return nil, fmt.Errorf("start init stage: %w", err)
	}
	proc, _ := os.FindProcess(p.Pid) // never fails on Unix
	return &stage{proc: proc, pid: p.Pid, pidfd: p.PidFD, creds: creds, streams: ios}, nil
}

// streams are a vfork'd stage's fds 0-2, as os/exec makes them: a file as it is, nil
// /dev/null, any other reader or writer a pipe copied by a goroutine (one for stdout and
// stderr when they are the same writer).
type streams struct {
	fds    []int
	child  []*os.File // the child's ends this process opened: closed once it has them
	copies chan error
	n      int
}

func stageStreams(cmd *exec.Cmd) (*streams, error) {
	s := &streams{copies: make(chan error, 3)}
	var parent []*os.File
	fail := func(err error) (*streams, error) {
		for _, f := range append(parent, s.child...) {
			f.Close()
		}
		return nil, err
	}
	for i, x := range []any{cmd.Stdin, cmd.Stdout, cmd.Stderr} {
		if i == 2 && x != nil && same(x, cmd.Stdout) {
			// One pipe for both, as os/exec: two copies into one writer would race.
			s.fds = append(s.fds, s.fds[1])
			continue
		}
		switch f := x.(type) {
		case *os.File:
			s.fds = append(s.fds, int(f.Fd()))
			continue
		case nil:
			null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
			if err != nil {
				return fail(err)
			}
			s.child = append(s.child, null)
			s.fds = append(s.fds, int(null.Fd()))
			continue
		}
		r, w, err := os.Pipe()
		if err != nil {
			return fail(err)
		}
		if i == 0 {
			s.child, parent = append(s.child, r), append(parent, w)
			s.fds = append(s.fds, int(r.Fd()))
			s.n++
			go func() {
				_, err := io.Copy(w, x.(io.Reader))
				w.Close()
				s.copies <- err
			}()
			continue
		}
		s.child, parent = append(s.child, w), append(parent, r)
		s.fds = append(s.fds, int(w.Fd()))
		s.n++
		go func() {
			_, err := io.Copy(x.(io.Writer), r)
			r.Close()
			s.copies <- err
		}()
	}
	return s, nil
}

// started closes the child's ends: it has its own now (or never will).
func (s *streams) started() {
	for _, f := range s.child {
		f.Close()
	}
	s.child = nil
}

// abandon is for a child that was never started: the copies end with the closed ends (a
// reader's copy when its source ends).
func (s *streams) abandon() { s.started() }

// wait waits for the copies once the stage is gone: its whole PID namespace is then, so
// nothing else holds the pipes; the bound is os/exec's WaitDelay of spawnStage.
func (s *streams) wait() {
	if s == nil {
		return
	}
	timeout := time.After(2 * time.Second)
	for ; s.n > 0; s.n-- {
		select {
		case <-s.copies:
		case <-timeout:
			return
		}
	}
}

// process is the stage's process.
func (s *stage) process() *os.Process {
	if s.proc != nil {
		return s.proc
	}
	return s.cmd.Process
}

// wait waits for the stage's process; processState is its end afterwards.
func (s *stage) wait() error {
	if s.proc == nil {
		return s.cmd.Wait()
	}
	if s.state != nil {
		return errors.New("wait: the init stage was waited for already")
	}
	st, err := s.proc.Wait()
	s.state = st
	s.streams.wait()
	if err == nil && !st.Success() {
		err = &exec.ExitError{ProcessState: st}
	}
	return err
}

func (s *stage) processState() *os.ProcessState {
	if s.proc != nil {
		return s.state
	}
	return s.cmd.ProcessState
}

// kill ends a stage that will not run the command and waits for it.
func (s *stage) kill() {
	s.process().Kill()
	s.wait()
}

// finish closes what the supervisor side still holds and unlocks the spawning goroutine's
// thread. The process must be gone (waited for).
func (s *stage) finish() {
	s.cfgW.Close()
	s.syncW.Close()
	s.statusR.Close()
	if s.replicaW != nil {
		s.replicaW.Close()
	}
	if s.pidfd >= 0 {
		unix.Close(s.pidfd)
		s.pidfd = -1
	}
	if s.locked {
		s.locked = false
		runtime.UnlockOSThread()
	}
}

// Early is an init stage started before the profile is loaded and compiled (StartEarly), so
// that its own start (a second Go runtime, a few ms) overlaps them. It is created with the
// namespaces every sandboxed run has (mount, IPC, PID and user; as root the user namespace
// of sandbox.ChooseIdentity without hostRoot), as root born
// into a fresh run cgroup for the guard, and it unshares the network namespace itself when the
// profile asks for one. Run takes it when the run fits it and starts its own otherwise.
type Early struct {
	st    *stage
	cg    *kernrun.Cgroup // the cgroup st was born into, until the run's guard takes it
	lim   *runLimitGroup  // the limits cgroup st is being moved into, until the run takes it
	opts  Options         // Dir, Env and the streams it was started with
	taken bool            // Run ran the command in it
}

// StartEarly starts the init stage for a later Run with the same Dir, Env and streams as opts
// (its other fields do not matter yet), or returns nil when that is not possible here (Run then
// starts its own and reports what fails). Pass it in Options.Early and call Close when done (a
// no-op once Run took it). Run and Close must be called on the goroutine that called
// StartEarly: the sandbox dies with that goroutine's thread.
func StartEarly(opts Options) *Early {
	if !sandboxAvailable {
		return nil
	}
	if opts.Dir == "" {
		d, err := os.Getwd()
		if err != nil {
			return nil
		}
		opts.Dir = d
	}
	opts.Dir = paths.Resolve(opts.Dir) // as Run's
	asRoot := os.Geteuid() == 0
	// A profile asking for real root (rare) does not fit this stage: Run then starts its own.
	id := identity(false, opts.Dir, opts.Degrade)
	if env, _ := userEnviron(opts.Env, id, opts.Dir); env != nil {
		opts.Env = env // as newEnforcedRun's, so that the run takes this stage
	}
	attr := (&sandbox.Plan{}).NamespaceAttr(id)
	var cg *kernrun.Cgroup
	if asRoot && guardAvailable() == nil {
		// Born into the run's cgroup: moving a process into it later waits for an RCU grace
		// period (5-15 ms measured here), clone3's CLONE_INTO_CGROUP does not.
		var err error
		if cg, err = kernrun.NewCgroup(); err != nil {
			return nil
		}
		attr.UseCgroupFD = true
		attr.CgroupFD = cg.FD
		phase.Mark("early: cgroup")
	}
	env, stdin, stdout, stderr := stageIO(&opts)
	// Every sandboxed plan has a network namespace: the stage makes it while it waits.
	// The limits cgroup first: in cgroup v1 the stage joins it itself before anything else
	// (initstage.FDJoin), as root and for an ordinary user with a delegated subtree; a host
	// (or user) without cgroup limits leaves lim without a cgroup.
	go kernrun.LimitsAvailable()
	lim, join := joinedLimitGroup(cg)
	born := lim.bornInto(attr) // cgroup2 (own or delegated): born into it, no move
	st, err := spawnStage(attr, opts.Dir, env, stdin, stdout, stderr, id.Idmap, attr.Cloneflags&unix.CLONE_NEWNET == 0, join)
	if err != nil && born {
		// A kernel or delegation that refuses the birth still allows the move (enter).
		attr.UseCgroupFD, born = false, false
		st, err = spawnStage(attr, opts.Dir, env, stdin, stdout, stderr, id.Idmap, attr.Cloneflags&unix.CLONE_NEWNET == 0, join)
	}
	lim.born(born && err == nil)
	for _, f := range join {
		f.Close()
	}
	if err != nil {
		lim.remove()
		if cg != nil {
			cg.Remove()
		}
		return nil
	}
	if cg != nil {
		st.cgid = cg.ID
	}
	st.model = id.Model
	lim.enter(st.pid) // cgroup2 (own or delegated), not born into it: moved, in the background
	return &Early{st: st, cg: cg, lim: lim, opts: Options{Dir: opts.Dir, Env: opts.Env, Stdin: opts.Stdin, Stdout: opts.Stdout, Stderr: opts.Stderr}}
}

// stageIO is the environment and streams of an init stage for opts: sysprof's own where opts
// has none.
func stageIO(opts *Options) (env []string, stdin io.Reader, stdout, stderr io.Writer) {
	env, stdin, stdout, stderr = opts.Env, os.Stdin, os.Stdout, os.Stderr
	if env == nil {
		env = os.Environ()
	}
	// No secret-looking variable enters the sandbox's init stage (it lives on as PID 1 there):
	// those the profile passes, and brokered ones' stand-ins, come with its config. Nor does a
	// loader variable: where the stage program is dynamically linked (sysprof built without the
	// embedded one, by plain `go build` or `go install`, re-executes itself), the caller's
	// LD_PRELOAD would run in PID 1 before any layer, with the host's mounts: libfaketime made
	// /dev/shm/faketime_shm_1 in the host's /dev/shm as RootUID. They come with the config too.
	env, _ = policy.ScrubEnv(env, nil)
	env = slices.DeleteFunc(env, func(kv string) bool { name, _, _ := strings.Cut(kv, "="); return paths.LoaderEnv(name) })
	if opts.Stdin != nil {
		stdin = opts.Stdin
	}
	if opts.Stdout != nil {
		stdout = opts.Stdout
	}
	if opts.Stderr != nil {
		stderr = opts.Stderr
	}
	return env, stdin, stdout, stderr
}

// Close kills the early init stage unless Run took it, and removes its cgroup unless the run's
// guard took it.
func (e *Early) Close() {
	if e == nil {
		return
	}
	if e.st != nil {
		e.st.kill()
		e.st.finish()
		e.st = nil
	}
	e.lim.remove()
	e.lim = nil
	if e.cg != nil {
		e.cg.Remove()
		e.cg = nil
	}
}

// takeLimits hands the run that took the early stage its limits cgroup, or returns nil.
func (e *Early) takeLimits() *runLimitGroup {
	if e == nil || !e.taken {
		return nil
	}
	lim := e.lim
	e.lim = nil
	return lim
}

// takeCgroup hands the early stage's cgroup to the run's guard (which removes it when done), or
// returns nil.
func (e *Early) takeCgroup() *kernrun.Cgroup {
	if e == nil || e.st == nil {
		return nil
	}
	cg := e.cg
	e.cg = nil
	return cg
}

// take returns the early stage for a run that fits it: the same Dir, Env and streams,
// sandboxed, with a network namespace when the stage made one (netns: the plan has one), the
// same identity (user namespace or real root), and born into the guard's cgroup (cgid; 0
// without a guard). Otherwise it kills the stage and returns nil.
func (e *Early) take(opts *Options, dir string, applySandbox, netns bool, cgid uint64, id sandbox.Identity) *stage {
	if e == nil || e.st == nil {
		return nil
	}
	st := e.st
	fits := applySandbox && (netns || !st.earlyNet) && dir == e.opts.Dir && st.cgid == cgid && st.model == id.Model &&
		slices.Equal(opts.Env, e.opts.Env) && (opts.Env == nil) == (e.opts.Env == nil) &&
		same(opts.Stdin, e.opts.Stdin) && same(opts.Stdout, e.opts.Stdout) && same(opts.Stderr, e.opts.Stderr)
	if !fits {
		e.Close()
		return nil
	}
	e.st, e.taken = nil, true
	return st
}

// same reports whether two streams are the same value (false for values == cannot compare).
func same(a, b any) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	ta, tb := reflect.TypeOf(a), reflect.TypeOf(b)
	return ta == tb && ta.Comparable() && a == b
}

// userNSRefused explains an EPERM from starting the init stage in a user namespace: the
// kernel refuses one to a process in a chroot (sbuild, pbuilder and mock's chroot modes), and
// where user namespaces are switched off.
func userNSRefused(err error) error {
	chroot := "run it outside the chroot, or in a builder that uses a mount namespace and pivot_root " +
		"instead of chroot (sbuild --chroot-mode=unshare, mock --isolation=nspawn, `unshare -m` and pivot_root)"
	switch chrooted() {
	case unix.EACCES:
		// A chrooted process may not follow init's root: the likely case.
		return fmt.Errorf("start init stage: %w: the kernel refused a new user namespace, most likely because sysprof runs inside a chroot "+
			"(it may not see init's root), where the kernel refuses one; %s. Otherwise user namespaces are off here: see sysprof doctor", err, chroot)
	case nil:
		return fmt.Errorf("start init stage: %w: sysprof runs inside a chroot, where the kernel refuses a new user namespace; %s", err, chroot)
	}
	return fmt.Errorf("start init stage: %w: the kernel refused a new user namespace; check that user namespaces are enabled (sysprof doctor)", err)
}

// chrooted returns nil when this process's root is not init's (another file, or the same one
// through another mount: a chroot into a bind mount of /), EACCES when init's root cannot be
// looked at (what a chrooted process gets), and ENOENT otherwise.
func chrooted() error {
	var self, init unix.Statx_t
	const mask = unix.STATX_INO | unix.STATX_MNT_ID
	if err := unix.Statx(unix.AT_FDCWD, "/proc/1/root/", 0, mask, &init); err != nil {
		if errors.Is(err, unix.EACCES) {
			return unix.EACCES
		}
		return unix.ENOENT
	}
	if unix.Statx(unix.AT_FDCWD, "/", 0, mask, &self) != nil {
		return unix.ENOENT
	}
	if self.Ino != init.Ino || self.Dev_major != init.Dev_major || self.Dev_minor != init.Dev_minor ||
		self.Mask&init.Mask&unix.STATX_MNT_ID != 0 && self.Mnt_id != init.Mnt_id {
		return nil
	}
	return unix.ENOENT
}

// bornInto makes attr's clone3 put the stage into the limits cgroup when it is a cgroup2
// directory a move would be needed for (birth) and attr names no cgroup yet. Call born with
// whether the stage was spawned with it.
func (rg *runLimitGroup) bornInto(attr *syscall.SysProcAttr) bool {
	if rg == nil || rg.birth == nil || attr.UseCgroupFD {
		return false
	}
	attr.UseCgroupFD = true
	attr.CgroupFD = int(rg.birth.Fd())
	return true
}

// born records whether the stage was spawned into birth (no move then) and closes it.
func (rg *runLimitGroup) born(ok bool) {
	if rg == nil || rg.birth == nil {
		return
	}
	rg.birth.Close()
	rg.birth = nil
	rg.self = ok
}
