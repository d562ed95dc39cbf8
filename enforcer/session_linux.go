package enforcer

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/enforcer/guard"
	"github.com/sysprof/sysprof/enforcer/initstage"
	"github.com/sysprof/sysprof/internal/phase"
	"github.com/sysprof/sysprof/internal/stdiofds"
	"github.com/sysprof/sysprof/internal/wire"
	"github.com/sysprof/sysprof/paths"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/report"
	"github.com/sysprof/sysprof/sandbox"
)

// runStart is what start needs to run the command once. c is read only: plan is the run's copy
// of c.Plan with the stages' overlay directories filled in.
type runStart struct {
	opts    Options
	c       *Compiled
	plan    sandbox.Plan
	dir     string
	id      sandbox.Identity
	sandbox bool // apply the sandbox (else the init stage only installs seccomp)
	rep     *report.Report
	guard   *guard.Guard // nil: no guard
	stage   *stage       // an init stage started early, or nil
	egress  *egress      // nil: no network allowlist
	layers  layerRuns    // the layers' parts outside the init stage (the limits' cgroup the stage is moved into)
}

type runResult struct {
	exit    int
	denials []report.Denial
}

// start runs the command once: it sends the init stage (r.stage, or one it spawns) its
// config, takes the seccomp listener, starts the egress proxy and the supervisor, releases the
// stage to exec and waits for the command.
func start(ctx context.Context, r runStart) (runResult, error) {
	st := r.stage
	if st == nil {
		var err error
		if st, err = r.spawn(); err != nil {
			return runResult{}, err
		}
	}
	defer st.finish()
	if r.guard != nil {
		r.guard.SetRoot(st.pid)
		if r.sandbox {
			r.guard.RootStays()
		}
	}
	r.layers.enter(st.pid)
	defer r.layers.wait() // before the stage is released, or on the way out
	cfg := r.initConfig(st)
	r.rep.SetEnvRemoved(cfg.UnsetEnv)
	phase.Mark("config: stages, layers, environment")
	if err := writeConfig(st.cfgW, cfg); err != nil {
		st.kill()
		return runResult{}, err
	}
	phase.Mark("write config")
	if cfg.Replica {
		plain, err := st.sendReplica(append(r.plan.Reach(), r.dir))
		if err != nil {
			st.kill()
			return runResult{}, err
		}
		replicaNote(r.rep, plain)
		phase.Mark("send replica")
	}
	if r.sandbox && r.id.UserNS {
		state := report.LayerApplied
		if r.id.Weaker != "" {
			state = report.LayerDegraded // decideLayers refused it unless degrading
		}
		r.rep.SetLayer(report.Layer{Name: LayerUserNS, State: state, Detail: r.id.Detail()})
	} else if r.sandbox {
		r.rep.Notes = append(r.rep.Notes, "uid: "+r.id.Detail())
	}

	s := newSession(st, r.rep, r.opts.Command[0])
	listener, err := s.takeListener(ctx, r.guard)
	if err != nil {
		return runResult{}, err
	}
	defer unix.Close(listener)
	r.rep.SetLayer(report.Layer{Name: LayerSeccomp, State: report.LayerApplied})
	if r.guard != nil && r.sandbox {
		// The stage's mounts are in place and the command has not started: a read of a hidden
		// file from now on is on the record.
		if err := r.guard.WatchHidden(st.pid); err != nil {
			r.rep.Notes = append(r.rep.Notes, err.Error()+" (those reads still read as empty, without a record)")
		}
	}
	if r.egress != nil {
		if err := s.startEgress(r.egress, r.c); err != nil {
			return runResult{}, err
		}
	}
	memfdMnt := -1
	if cfg.MemfdTmpfs {
		if memfdMnt, err = s.takeMemfdTmpfs(); err != nil {
			return runResult{}, err
		}
	}
	execOut := -1
	if len(initstage.ExecOutputs(cfg.Parts))+len(initstage.ExecFiles(cfg.Parts)) > 0 {
		if execOut, err = s.takeExecOutputs(); err != nil {
			if memfdMnt >= 0 {
				unix.Close(memfdMnt)
			}
			return runResult{}, err
		}
	}
	sup, err := newSupervisor(listener, st.pid, r.c, r.opts.Audit)
	if err != nil {
		if memfdMnt >= 0 {
			unix.Close(memfdMnt)
		}
		if execOut >= 0 {
			unix.Close(execOut)
		}
		return runResult{}, s.abort(fmt.Errorf("supervisor: %w", err))
	}
	if memfdMnt >= 0 {
		sup.useMemfdTmpfs(memfdMnt, r.id.UID, r.id.GID)
	}
	if r.egress != nil {
		sup.egress = r.egress.Proxy
	}
	// Also without the socket (-1: the stage is not PID 1): the supervised mkdirs and execs
	// then go on unchanged, the outputs stay noexec (fail closed), none is refused for it.
	sup.useExecOutputs(execOut, initstage.ExecOutputs(cfg.Parts), initstage.ExecFiles(cfg.Parts))
	go sup.run()
	r.layers.wait()
	if _, err := st.syncW.Write([]byte{1}); err != nil {
		sup.stop()
		return runResult{}, s.abort(fmt.Errorf("release init stage: %w", err))
	}
	st.syncW.Close()
	return s.wait(ctx, sup)
}

// spawn starts the run's own init stage: in the sandbox's namespaces (none without the
// sandbox), born into the guard's cgroup, under its programs, so there is no window before
// they apply.
func (r runStart) spawn() (*stage, error) {
	attr := namespaceAttr(&r.plan, r.id)
	if !r.sandbox {
		attr = &syscall.SysProcAttr{}
	}
	if r.guard != nil {
		attr.UseCgroupFD = true
		attr.CgroupFD = r.guard.Cgroup().FD
	}
	phase.Mark("prepare start")
	env, stdin, stdout, stderr := stageIO(&r.opts)
	join := r.layers.joinFiles()
	st, err := spawnStage(attr, r.dir, env, stdin, stdout, stderr, r.sandbox && r.id.Idmap, false, join)
	for _, f := range join {
		f.Close()
	}
	if err != nil {
		return nil, err
	}
	if r.guard != nil {
		st.cgid = r.guard.Cgroup().ID
	}
	return st, nil
}

// initConfig is what the init stage st receives for this run.
func (r runStart) initConfig(st *stage) initConfig {
	cfg := initConfig{Argv: r.opts.Command, Dir: r.dir, Filter: r.c.Filter, Sockets: r.c.HiddenSockets,
		Sandbox: r.sandbox, UnshareNet: r.sandbox && r.plan.NetNS && !st.netns, Ctty: r.opts.RelayTerminal}
	// The stage, early or not, was started without any secret-looking variable (stageIO): the
	// ones env.pass names travel here, brokered ones as their stand-ins (credentials.go).
	callerEnv := r.opts.Env
	if callerEnv == nil {
		callerEnv = os.Environ()
	}
	cfg.CloseStdio = closedStdio(r.opts)
	pass := r.opts.Profile.Env.Pass
	_, cfg.UnsetEnv = policy.ScrubEnv(callerEnv, pass)
	var brokered []string
	if b := r.c.creds; b != nil {
		brokered = b.unset
		cfg.UnsetEnv = slices.Compact(slices.Sorted(slices.Values(append(cfg.UnsetEnv, b.unset...))))
	}
	for _, kv := range callerEnv {
		name, value, _ := strings.Cut(kv, "=")
		if slices.Contains(pass, name) && policy.SecretEnv(name, value) != "" && !slices.Contains(brokered, name) {
			cfg.SetEnv = append(cfg.SetEnv, kv)
		}
	}
	if b := r.c.creds; b != nil {
		cfg.SetEnv = append(cfg.SetEnv, b.env...)
	}
	// The loader variables the stage was started without (stageIO): the command's.
	for _, kv := range callerEnv {
		if name, _, _ := strings.Cut(kv, "="); paths.LoaderEnv(name) && !slices.Contains(cfg.UnsetEnv, name) {
			cfg.SetEnv = append(cfg.SetEnv, kv)
		}
	}
	// less keeps no history in the sandbox: synth never grants its history file (a file rule in
	// $HOME), so its read and its save through $HOME/.lesshsQ would be denied on every paged run;
	// git pages only at a terminal: a profile that runs no pager gets none; and git makes no
	// optional index refresh, a write into .git by timing alone (paths.RunEnv).
	cfg.SetEnv = append(cfg.SetEnv, paths.RunEnv(r.opts.Profile.ExecPaths(), paths.EnvList(callerEnv))...)
	if r.egress != nil {
		cfg.Egress = &r.c.Egress.Inside
	}
	// The noexec tmpfs memfds are made on (memfd_linux.go): the stage mounts it, in its own user
	// namespace (an ordinary user's supervisor cannot), and lets the command reach it (Landlock).
	cfg.MemfdTmpfs = r.sandbox && !r.opts.Audit && r.c.supervisesMemfds()
	cfg.Replica = st.replicaW != nil && r.sandbox
	if r.sandbox {
		cfg.Parts = stageParts(&r.plan, r.opts.Degrade)
	}
	return cfg
}

// session is the parent's side of one init stage once it has its config: the status lines it
// writes (read in the background until EOF: the exec happened, or the stage died), what they
// said, and the failure one of them reported.
type session struct {
	st        *stage
	rep       *report.Report
	command   string // argv[0], for an ExecError
	msgs      chan initStatus
	failure   *initStatus
	egressFDs []int
	memfdNum  int // the stage's fd of the memfd tmpfs (Config.MemfdTmpfs), 0 before it said
	// execOutNum: the stage's fd of its exec output socket (Status.ExecOutputs), -1 none, 0
	// before it said.
	execOutNum int
}

func newSession(st *stage, rep *report.Report, command string) *session {
	s := &session{st: st, rep: rep, command: command, msgs: make(chan initStatus, 16)}
	go func() {
		r := bufio.NewReader(st.statusR)
		for {
			var m initStatus
			if err := wire.ReadFrame(r, &m); err != nil {
				close(s.msgs)
				return
			}
			s.msgs <- m
		}
	}()
	return s
}

// handle records one status line: the egress sockets, the layers applied or degraded, the
// sandbox's notes, the first failure.
func (s *session) handle(m initStatus) {
	if len(m.Egress) > 0 {
		s.egressFDs = m.Egress
	}
	if m.MemfdTmpfs > 0 {
		s.memfdNum = m.MemfdTmpfs
	}
	if m.ExecOutputs != 0 {
		s.execOutNum = m.ExecOutputs
	}
	for _, l := range m.Layers {
		state := report.Layer{Name: l.Name, State: report.LayerApplied, Detail: l.Detail}
		if l.Degraded {
			state.State = report.LayerDegraded
		}
		s.rep.SetLayer(state)
	}
	for _, n := range m.Notes {
		s.rep.Notes = append(s.rep.Notes, "sandbox: "+n)
	}
	if m.Stage != "" && s.failure == nil {
		f := m
		s.failure = &f
	}
}

// abort kills the init stage before the command runs and returns err.
func (s *session) abort(err error) error {
	s.st.kill()
	return err
}

// failed waits for the init stage that reported a failure and returns that failure.
func (s *session) failed() error {
	s.st.wait()
	return initFailure(s.failure, s.command)
}

// takeListener waits until the init stage installed its filter and the guard (setting up in
// the background) is attached, and takes the filter's listener with pidfd_getfd. When the
// guard failed the command runs unobserved (Run notes why).
func (s *session) takeListener(ctx context.Context, g *guard.Guard) (int, error) {
	num, err := s.waitListener(ctx)
	if err != nil {
		return -1, err
	}
	phase.Mark("wait for init stage ready")
	if g != nil {
		_ = g.Wait()
		phase.Mark("wait for guard")
	}
	listener, err := unix.PidfdGetfd(s.st.pidfd, num, 0)
	if err != nil {
		return -1, s.abort(fmt.Errorf("take seccomp listener (pidfd_getfd): %w", err))
	}
	if link, _ := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", listener)); link != "anon_inode:seccomp notify" {
		err := s.abort(fmt.Errorf("BUG: fd %d of the init stage is %q, not a seccomp listener", num, link))
		unix.Close(listener)
		return -1, err
	}
	return listener, nil
}

// waitListener returns the listener's fd number in the init stage: from the ready message, or
// (when the init stage's write is itself waiting for a supervisor) by looking for it in
// /proc/PID/fd once the init stage says it is installing the filter: at once and every 20 µs
// for a while (findListenerSoon), then every 5 ms.
func (s *session) waitListener(ctx context.Context) (int, error) {
	listenerNum := -1
	poll := 5 * time.Millisecond
	// No listener exists before the installing message: the scans start with it.
	timer := time.NewTimer(poll)
	timer.Stop()
	for listenerNum < 0 && s.failure == nil {
		select {
		case m, ok := <-s.msgs:
			if !ok {
				if s.failure == nil {
					return -1, s.abort(fmt.Errorf("init stage exited before installing seccomp"))
				}
				break
			}
			s.handle(m)
			if m.Ready {
				listenerNum = m.Listener
			}
			if m.Installing {
				if n, ok := findListenerSoon(s.st.pid, m.Listener); ok {
					listenerNum = n
				} else {
					timer.Reset(poll)
				}
			}
		case <-timer.C:
			if n, err := findListener(s.st.pid); err == nil {
				listenerNum = n
			}
			timer.Reset(poll)
		case <-ctx.Done():
			timer.Stop()
			return -1, s.abort(ctx.Err())
		}
	}
	timer.Stop()
	if s.failure != nil {
		return -1, s.failed()
	}
	return listenerNum, nil
}

// findListenerSoon looks for pid's listener at once and every 20 µs for 20 ms: it appears within
// microseconds of the init stage saying it installs the filter, and the init stage waits for
// it. It reads the one fd the stage expects it at (guess; 0: none) and scans the whole table
// only every 50th time. The waits sleep this (locked) thread: the runtime's timers would wake
// it up to a millisecond late. (takeListener checks what it takes either way.)
func findListenerSoon(pid, guess int) (int, bool) {
	at := ""
	if guess > 0 {
		at = "/proc/" + strconv.Itoa(pid) + "/fd/" + strconv.Itoa(guess)
	}
	for i, deadline := 0, time.Now().Add(20*time.Millisecond); time.Now().Before(deadline); i++ {
		if at != "" {
			if link, err := os.Readlink(at); err == nil && link == "anon_inode:seccomp notify" {
				return guess, true
			}
		}
		if at == "" || i%50 == 49 {
			if n, err := findListener(pid); err == nil {
				return n, true
			}
		}
		_ = unix.Nanosleep(&unix.Timespec{Nsec: 20_000}, nil)
	}
	return -1, false
}

// awaitStageMessage handles the init stage's messages until got reports what was awaited, the
// stage fails, or its pipe ends (got still false then: the caller says what is missing).
func (s *session) awaitStageMessage(got func() bool) error {
	for !got() && s.failure == nil {
		m, ok := <-s.msgs
		if !ok {
			break
		}
		s.handle(m)
	}
	if s.failure != nil {
		return s.failed()
	}
	return nil
}

// takeExecOutputs takes the socket on which the init stage makes exec output directories
// (Status.ExecOutputs), or returns -1 when it has none (the watch alone binds them). Its message
// came before the filter's, as the memfd tmpfs's did.
func (s *session) takeExecOutputs() (int, error) {
	if err := s.awaitStageMessage(func() bool { return s.execOutNum != 0 }); err != nil {
		return -1, err
	}
	if s.execOutNum <= 0 {
		return -1, nil
	}
	fd, err := unix.PidfdGetfd(s.st.pidfd, s.execOutNum, 0)
	if err != nil {
		return -1, s.abort(fmt.Errorf("take the exec output socket (pidfd_getfd): %w", err))
	}
	return fd, nil
}

// takeMemfdTmpfs takes the noexec tmpfs the init stage mounted for memfds (Config.MemfdTmpfs).
// Its message came before the filter's, as startEgress's did.
func (s *session) takeMemfdTmpfs() (int, error) {
	if err := s.awaitStageMessage(func() bool { return s.memfdNum != 0 }); err != nil {
		return -1, err
	}
	if s.memfdNum == 0 {
		return -1, s.abort(errors.New("init stage exited before it said where its memfd tmpfs is"))
	}
	fd, err := unix.PidfdGetfd(s.st.pidfd, s.memfdNum, 0)
	if err != nil {
		return -1, s.abort(fmt.Errorf("take the memfd tmpfs (pidfd_getfd): %w", err))
	}
	return fd, nil
}

// startEgress takes the sockets the init stage opened for the DNS stub and the proxy, and
// starts them. Their message came before the filter's (it is in the pipe): it is read up to
// there when the listener was found by looking.
func (s *session) startEgress(px *egress, c *Compiled) error {
	for s.egressFDs == nil && s.failure == nil {
		m, ok := <-s.msgs
		if !ok {
			break
		}
		s.handle(m)
	}
	if s.failure != nil {
		return s.failed()
	}
	if err := px.start(s.st.pidfd, s.st.pid, s.egressFDs); err != nil {
		return s.abort(&LayerError{Layer: LayerNetwork, Reason: err.Error()})
	}
	px.setLayer(s.rep, c)
	phase.Mark("egress: take the sockets, start the proxy")
	return nil
}

// wait forwards the user's signals while the command runs, waits for it (and, through its
// process group, for what it left), stops the supervisor and returns the exit status and the
// supervisor's denials.
func (s *session) wait(ctx context.Context, sup *supervisor) (runResult, error) {
	fw := forwardSignals(ctx, s.st.process())
	defer fw.release()
	phase.Mark("take listener, release")
	for m := range s.msgs { // EOF: the exec happened (or the init stage died)
		s.handle(m)
	}
	phase.Mark("wait for exec")
	groupKilled := killGroupOnExit(s.st.pidfd, s.st.pid)
	werr := s.st.wait()
	<-groupKilled // the process is gone: its pidfd is readable
	phase.Mark("cmd.Wait")
	fw.stop()
	sup.stop()
	phase.Mark("supervisor stop")
	var res runResult
	var dropped int
	res.denials, dropped = sup.take()
	for _, note := range []string{sup.memfdNote(), sup.linkNote()} {
		if note != "" {
			s.rep.Notes = append(s.rep.Notes, note)
		}
	}
	if dropped > 0 {
		s.rep.Notes = append(s.rep.Notes, fmt.Sprintf("%d more denied calls with distinct arguments were counted but not listed (more than %d distinct)", dropped, maxDistinct))
	}
	res.exit = exitStatus(s.st.processState())
	if s.failure != nil {
		return res, initFailure(s.failure, s.command)
	}
	if werr != nil && s.st.processState() == nil {
		return res, fmt.Errorf("wait: %w", werr)
	}
	return res, nil
}

// signalForwarder passes the signals a user sends to sysprof on to the command.
type signalForwarder struct {
	sigs chan os.Signal
	done chan struct{}
}

// forwardSignals passes SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to sysprof on to cmd, and
// kills it when ctx is done, until stop. sysprof keeps catching them (not dying of them) until
// release.
func forwardSignals(ctx context.Context, proc *os.Process) *signalForwarder {
	f := &signalForwarder{sigs: make(chan os.Signal, 4), done: make(chan struct{})}
	signal.Notify(f.sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	go func() {
		for {
			select {
			case s := <-f.sigs:
				proc.Signal(s)
			case <-ctx.Done():
				proc.Kill()
				return
			case <-f.done:
				return
			}
		}
	}()
	return f
}

func (f *signalForwarder) stop()    { close(f.done) }
func (f *signalForwarder) release() { signal.Stop(f.sigs) }

// killGroupOnExit kills what is left of pid's process group once pid exits (a lingering child
// would also keep cmd.Wait waiting for stdout's EOF): nothing of the sandbox outlives the
// command. The returned channel closes when that is done. The pidfd must stay open until then:
// polled after it is closed, its number could be reused by the next pipe (such as exec's status
// pipe in ClosePerfEvents' helper), and a poll of that pipe's write end holds it open: exec
// then waits forever.
func killGroupOnExit(pidfd, pid int) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
		for {
			if _, err := unix.Poll(fds, -1); err != nil && errors.Is(err, unix.EINTR) {
				continue
			}
			break
		}
		_ = unix.Kill(-pid, unix.SIGKILL)
	}()
	return done
}

func initFailure(st *initStatus, command string) error {
	switch st.Stage {
	case "lookup", "exec":
		return &ExecError{Command: command, Reason: st.Error, Code: st.Exit}
	case "sandbox":
		layer := st.Layer
		if layer == "" {
			layer = "sandbox"
		}
		return &LayerError{Layer: layer, Reason: st.Error}
	case "seccomp":
		return &LayerError{Layer: LayerSeccomp, Reason: st.Error}
	}
	return fmt.Errorf("init stage (%s): %s", st.Stage, st.Error)
}

// exitStatus is the command's status as a shell reports it: 128+N for a signal.
func exitStatus(ps *os.ProcessState) int {
	if ps == nil {
		return 125
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// writeConfig sends the init stage its config (wire.Marshal) and closes the pipe (EOF
// ends it).
func writeConfig(w *os.File, cfg initConfig) error {
	b, err := wire.Marshal(&cfg)
	if err != nil {
		return fmt.Errorf("encode init config: %w", err)
	}
	_, err = w.Write(b)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("send the init stage its config: %w", err)
	}
	return nil
}

// replicaNote names (five of) the mounts a root-idmap replica carries without idmapping.
func replicaNote(rep *report.Report, plain []string) {
	if len(plain) == 0 {
		return
	}
	more := ""
	if len(plain) > 5 {
		plain, more = plain[:5], fmt.Sprintf(" and %d more", len(plain)-5)
	}
	rep.Notes = append(rep.Notes, "uid: files on these mounts cannot be idmapped and show as owned by nobody to the command: "+strings.Join(plain, ", ")+more)
}

// closedStdio are the standard fds the command gets closed: those sysprof's caller closed
// (Go's runtime opened /dev/null on them: stdiofds) that the run hands on as sysprof's own.
// A print to a closed stdout fails with EBADF without sysprof, and must under it too.
func closedStdio(opts Options) []int {
	var out []int
	for fd, x := range []any{opts.Stdin, opts.Stdout, opts.Stderr} {
		own := []*os.File{os.Stdin, os.Stdout, os.Stderr}[fd]
		if stdiofds.Closed(fd) && (x == nil || same(x, own)) {
			out = append(out, fd)
		}
	}
	return out
}
