package enforcer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/enforcer/guard"
	"github.com/sysprof/sysprof/internal/phase"
	"github.com/sysprof/sysprof/netproxy"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/report"
	"github.com/sysprof/sysprof/sandbox"
)

// Options is one enforced run.
type Options struct {
	Profile     *policy.Profile
	ProfilePath string   // for the report
	Command     []string // argv; Command[0] is looked up in PATH inside the sandbox
	Dir         string   // working directory ($WORKDIR); empty: the current one
	Env         []string // the command's environment; nil: sysprof's
	// Vars overrides the host values of profile variables ($HOME, $WORKDIR, ...).
	Vars map[string]string
	// Audit lets every call the profile does not allow through, and reports it.
	Audit bool
	// VerifyBinaries refuses to run (a *BinaryError, exit 125) when a binary of the profile
	// differs from its learned sha256; without it the change is a warning and a report entry.
	VerifyBinaries bool
	// Degrade names the layers that may degrade when the profile needs them and they cannot be
	// applied here (DegradeAll: any); the report lists the degraded layers. For any other
	// layer Run refuses with a *LayerError (fail closed).
	Degrade Degrade

	// The command's standard streams; nil means sysprof's own (they and the terminal pass
	// through as file descriptors).
	Stdin          io.Reader
	Stdout, Stderr io.Writer

	// Resolve overrides the host's DNS for names of the network allowlist (the proxy dials
	// these addresses, loopback included), like curl's --resolve.
	Resolve map[string][]netip.Addr
	// LogAllowed lists every allowed connection in the report's notes (name, port, binary,
	// bytes each way).
	LogAllowed bool

	// Early is an init stage StartEarly started for this run (Run takes it, or kills it when
	// the run does not fit it); nil: Run starts one.
	Early *Early
}

// Run runs the command under the profile and returns the report, the command's exit status
// (128+N when a signal killed it) and an error only when the command could not be run as asked:
// a *LayerError (a layer the profile needs cannot be applied; exit 125), an *ExecError (126/127),
// or another setup failure (125). Use ExitCode(err) for the CLI's status. The context kills the
// command when done.
//
// Requires Linux 5.9 (SECCOMP_USER_NOTIF_FLAG_CONTINUE, close_range, pidfd_getfd) and the
// process's main to call MaybeInit first.
func Run(ctx context.Context, opts Options) (*report.Report, int, error) {
	if len(opts.Command) == 0 {
		return nil, 125, errors.New("enforce: no command")
	}
	if opts.Profile == nil {
		return nil, 125, errors.New("enforce: no profile")
	}
	dir := opts.Dir
	if dir == "" {
		d, err := os.Getwd()
		if err != nil {
			return nil, 125, fmt.Errorf("enforce: %w", err)
		}
		dir = d
	}
	asRoot := os.Geteuid() == 0
	early := opts.Early
	defer early.Close() // unless taken below
	// As root guard.c loads while the profile compiles and the init stage starts (Prewarm may
	// have started it already); a run that does not use it discards it.
	var load *guard.Load
	if asRoot && mayWantGuard(opts.Profile) {
		load = guard.TakeLoad()
	}
	defer func() {
		if load != nil {
			load.Discard()
		}
	}()
	env := HostEnvFor(dir, opts.Env)
	for k, v := range opts.Vars {
		env.Vars[k] = v
	}
	env.Command = commandPath(opts.Command, dir)
	phase.Mark("host env")
	compiled, err := Compile(opts.Profile, env)
	if err != nil {
		return nil, 125, fmt.Errorf("compile profile: %w", err)
	}
	phase.Mark("compile")
	rep := report.New(opts.Command, opts.ProfilePath, opts.Audit)
	rep.Started = time.Now().UTC()
	if changed := checkBinaries(opts.Profile, env); len(changed) > 0 {
		rep.ChangedBinaries = changed
		warn := io.Writer(os.Stderr)
		if opts.Stderr != nil {
			warn = opts.Stderr
		}
		for _, c := range changed {
			fmt.Fprintf(warn, "sysprof: warning: binary %s (%s) changed since learn: sha256 %s, learned %s\n", c.Path, c.File, c.Now, c.Learned)
		}
		if opts.VerifyBinaries {
			return rep, 125, &BinaryError{Changed: changed}
		}
	}
	phase.Mark("binaries")
	rep.Notes = append(rep.Notes, compiled.Notes...)
	for _, d := range compiled.Dropped {
		rep.Notes = append(rep.Notes, "dropped (means nothing on this host): "+d)
	}
	// Which layers run, degrade or refuse: decided from the compiled profile and the host.
	id := identity(opts.Profile.HostRoot)
	facts := hostFacts{AsRoot: asRoot, Sandbox: sandboxAvailable, Degrade: opts.Degrade, Audit: opts.Audit, UIDWeaker: id.Weaker}
	if asRoot && sandboxAvailable && compiled.Plan.Landlock != nil {
		facts.Guard = guardAvailable()
	}
	dec := decideLayers(compiled, facts)
	rep.Notes = append(rep.Notes, dec.Notes...)
	for _, l := range dec.Degraded {
		rep.SetLayer(l)
	}
	rep.Unobservable = unobservable(false)
	if dec.Refuse != nil {
		return rep, 125, dec.Refuse
	}
	var g *guard.Guard
	if dec.Guard {
		if load == nil {
			load = guard.TakeLoad()
		}
		// guard.c is set up in the background while the init stage starts; start waits for
		// it before the command may exec.
		var why error
		if g, why = guard.Start(ctx, compiled.guardConfig(env, opts.Audit, load, early.takeCgroup())); why != nil {
			rep.Notes = append(rep.Notes, guardLostNote(why))
		}
		load = nil
		phase.Mark("guard setup")
	}
	if g != nil {
		defer func() {
			if g != nil { // start did not take it (a setup failure)
				g.Close()
			}
		}()
	}

	// Egress by name: the DNS stub and the proxy serve the sandbox's network namespace from
	// here (decideLayers refused a run without the sandbox).
	var px *egress
	if compiled.Egress != nil {
		px = &egress{Proxy: netproxy.New(compiled.Egress, netproxy.Options{Resolve: opts.Resolve, LogAllowed: opts.LogAllowed})}
		defer px.close(rep, nil)
	}

	var cgid uint64
	if g != nil {
		cgid = g.Cgroup().ID
	}
	var staged *stagedRun
	if dec.Sandbox {
		if staged, err = prepareStages(compiled, id); err != nil {
			return rep, 125, fmt.Errorf("enforce: %w", err)
		}
		defer staged.remove()
	}
	st := early.take(&opts, dir, dec.Sandbox, cgid, id)
	res, err := start(ctx, runStart{opts: opts, c: compiled, dir: dir, id: id, sandbox: dec.Sandbox, rep: rep, guard: g, stage: st, egress: px})
	phase.Mark("start..wait")
	// The command and its PID namespace are gone: nothing writes to the stages any more.
	stageDenials, stageNotes := staged.finish(opts.Profile, env)
	res.denials = append(res.denials, stageDenials...)
	rep.Notes = append(rep.Notes, stageNotes...)
	phase.Mark("stages copied back")
	if g != nil {
		if why := g.Wait(); why != nil { // the background setup failed
			rep.Notes = append(rep.Notes, guardLostNote(why))
		} else {
			rep.Unobservable = unobservable(true)
		}
	}
	if g != nil {
		denials, notes := g.Close()
		phase.Mark("guard close")
		g = nil
		res.denials = append(res.denials, denials...)
		rep.Notes = append(rep.Notes, notes...)
	}
	px.close(rep, &res)
	rep.Finished = time.Now().UTC()
	for _, d := range res.denials {
		rep.Add(d)
	}
	rep.Sort()
	rep.ExitCode = res.exit
	if err != nil {
		return rep, ExitCode(err), err
	}
	return rep, res.exit, nil
}

// mayWantGuard reports whether a root run of p may use the guard (then Run loads it before
// compiling): always, since every profile gets Landlock (an empty filesystem section is the
// base only, see withBase), whose refusals the guard reports.
func mayWantGuard(*policy.Profile) bool { return true }

// commandPath is the executable argv starts, as the init stage will find it (PATH, or
// relative to dir), or "" when there is none.
func commandPath(argv []string, dir string) string {
	if len(argv) == 0 {
		return ""
	}
	if strings.Contains(argv[0], "/") {
		if filepath.IsAbs(argv[0]) {
			return filepath.Clean(argv[0])
		}
		return filepath.Join(dir, argv[0])
	}
	p, err := exec.LookPath(argv[0])
	if err != nil || !filepath.IsAbs(p) {
		return ""
	}
	return p
}

type runResult struct {
	exit    int
	denials []report.Denial
}

// runStart is what start needs to run the command once.
type runStart struct {
	opts    Options
	c       *Compiled
	dir     string
	id      sandbox.Identity
	sandbox bool // apply the sandbox (else the init stage only installs seccomp)
	rep     *report.Report
	guard   *guard.Guard // nil: no guard
	stage   *stage       // an init stage started early, or nil
	egress  *egress      // nil: no network allowlist
}

func start(ctx context.Context, r runStart) (runResult, error) {
	opts, c, dir, id, applySandbox, rep, g, st, px := r.opts, r.c, r.dir, r.id, r.sandbox, r.rep, r.guard, r.stage, r.egress
	var res runResult
	if st == nil {
		attr := namespaceAttr(&c.Plan, id)
		if !applySandbox {
			attr = &syscall.SysProcAttr{}
		}
		if g != nil { // born into the run's cgroup, under its hooks: no window before they apply
			attr.UseCgroupFD = true
			attr.CgroupFD = g.Cgroup().FD
		}
		phase.Mark("prepare start")
		env, stdin, stdout, stderr := stageIO(&opts)
		var err error
		if st, err = spawnStage(attr, dir, env, stdin, stdout, stderr, applySandbox && id.Idmap); err != nil {
			return res, err
		}
		if g != nil {
			st.cgid = g.Cgroup().ID
		}
	}
	defer st.finish()
	cmd, pid, pidfd, syncW, statusR := st.cmd, st.pid, st.pidfd, st.syncW, st.statusR
	if g != nil {
		g.SetRoot(pid)
	}
	cfg := initConfig{Argv: opts.Command, Dir: dir, Filter: c.Filter, Plan: c.Plan, Sockets: c.HiddenSockets, Sandbox: applySandbox, Degrade: opts.Degrade,
		UnshareNet: applySandbox && c.Plan.NetNS && !st.netns}
	stageEnv, _, _, _ := stageIO(&opts) // what the stage, early or not, was started with
	_, cfg.UnsetEnv = policy.ScrubEnv(stageEnv, opts.Profile.Env.Pass)
	if n := len(cfg.UnsetEnv); n > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("environment: %d secret-looking variable(s) removed: %s (to pass one: env: {pass: [NAME]})", n, strings.Join(cfg.UnsetEnv, ", ")))
	}
	if px != nil {
		cfg.Egress = &c.Egress.Inside
	}
	cfg.Replica = st.replicaW != nil && applySandbox
	if err := writeConfig(st.cfgW, cfg); err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		return res, err
	}
	if cfg.Replica {
		plain, err := st.sendReplica(append(c.Plan.Reach(), dir))
		if err != nil {
			cmd.Process.Kill()
			cmd.Wait()
			return res, err
		}
		replicaNote(rep, plain)
	}

	if applySandbox && id.UserNS {
		state := report.LayerApplied
		if id.Weaker != "" {
			state = report.LayerDegraded // decideLayers refused it unless degrading
		}
		rep.SetLayer(report.Layer{Name: LayerUserNS, State: state, Detail: id.Detail()})
	} else if applySandbox {
		rep.Notes = append(rep.Notes, "uid: "+id.Detail())
	}

	msgs := make(chan initStatus, 16)
	go func() {
		dec := json.NewDecoder(statusR)
		for {
			var st initStatus
			if err := dec.Decode(&st); err != nil {
				close(msgs)
				return
			}
			msgs <- st
		}
	}()

	abort := func(err error) (runResult, error) {
		cmd.Process.Kill()
		cmd.Wait()
		return res, err
	}
	var failure *initStatus
	var egressFDs []int
	handle := func(st initStatus) {
		if len(st.Egress) > 0 {
			egressFDs = st.Egress
		}
		for _, l := range st.Layers {
			state := report.Layer{Name: l.Name, State: report.LayerApplied, Detail: l.Detail}
			if l.Degraded {
				state.State = report.LayerDegraded
			}
			rep.SetLayer(state)
		}
		for _, s := range st.Notes {
			rep.Notes = append(rep.Notes, "sandbox: "+s)
		}
		if st.Stage != "" && failure == nil {
			f := st
			failure = &f
		}
	}

	// Take the listener: from the ready message, or (when the init stage's write is itself
	// waiting for a supervisor) by looking for it in /proc/PID/fd: every 5 ms, and once the
	// init stage says it is installing the filter, at once and every 20 µs for a while (it
	// appears within microseconds, and the init stage waits for it). Those waits sleep this
	// (locked) thread: the runtime's timers would wake it up to a millisecond late.
	listenerNum := -1
	poll := 5 * time.Millisecond
	timer := time.NewTimer(poll)
	for listenerNum < 0 && failure == nil {
		select {
		case st, ok := <-msgs:
			if !ok {
				if failure == nil {
					return abort(fmt.Errorf("init stage exited before installing seccomp"))
				}
				break
			}
			handle(st)
			if st.Ready {
				listenerNum = st.Listener
			}
			if st.Installing {
				for deadline := time.Now().Add(20 * time.Millisecond); time.Now().Before(deadline); {
					if n, err := findListener(pid); err == nil {
						listenerNum = n
						break
					}
					_ = unix.Nanosleep(&unix.Timespec{Nsec: 20_000}, nil)
				}
			}
		case <-timer.C:
			if n, err := findListener(pid); err == nil {
				listenerNum = n
			}
			timer.Reset(poll)
		case <-ctx.Done():
			timer.Stop()
			return abort(ctx.Err())
		}
	}
	timer.Stop()
	if failure != nil {
		cmd.Wait()
		return res, initFailure(failure, opts.Command[0])
	}
	phase.Mark("wait for init stage ready")
	if g != nil {
		// The guard setting up in the background must be attached before the command runs;
		// when it failed the command runs unobserved (Run notes why).
		_ = g.Wait()
		phase.Mark("wait for guard")
	}
	listener, err := unix.PidfdGetfd(pidfd, listenerNum, 0)
	if err != nil {
		return abort(fmt.Errorf("take seccomp listener (pidfd_getfd): %w", err))
	}
	defer unix.Close(listener)
	if link, _ := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", listener)); link != "anon_inode:seccomp notify" {
		return abort(fmt.Errorf("BUG: fd %d of the init stage is %q, not a seccomp listener", listenerNum, link))
	}
	rep.SetLayer(report.Layer{Name: LayerSeccomp, State: report.LayerApplied})
	if px != nil {
		// The sockets' message came before the filter (it is in the pipe): read up to it when
		// the listener was found by looking.
		for egressFDs == nil && failure == nil {
			st, ok := <-msgs
			if !ok {
				break
			}
			handle(st)
		}
		if failure != nil {
			cmd.Wait()
			return res, initFailure(failure, opts.Command[0])
		}
		if err := px.start(pidfd, pid, egressFDs); err != nil {
			return abort(&LayerError{Layer: LayerNetwork, Reason: err.Error()})
		}
		px.setLayer(rep, c)
		phase.Mark("egress: take the sockets, start the proxy")
	}
	sup, err := newSupervisor(listener, pid, c, opts.Audit)
	if err != nil {
		return abort(fmt.Errorf("supervisor: %w", err))
	}
	go sup.run()
	if _, err := syncW.Write([]byte{1}); err != nil {
		sup.stop()
		return abort(fmt.Errorf("release init stage: %w", err))
	}
	syncW.Close()

	// Forward the signals a user sends to sysprof.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer signal.Stop(sigs)
	waitDone := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-sigs:
				cmd.Process.Signal(s)
			case <-ctx.Done():
				cmd.Process.Kill()
				return
			case <-waitDone:
				return
			}
		}
	}()

	phase.Mark("take listener, release")
	for st := range msgs { // EOF: the exec happened (or the init stage died)
		handle(st)
	}
	phase.Mark("wait for exec")
	// Nothing of the sandbox outlives the command: when it exits, kill what is left of its
	// process group (a lingering child would also keep cmd.Wait waiting for stdout's EOF).
	// The pidfd stays open until this goroutine is done: polled after the deferred close, its
	// number could be reused by the next pipe (such as exec's status pipe in ClosePerfEvents'
	// helper), and a poll of that pipe's write end holds it open: exec then waits forever.
	pollDone := make(chan struct{})
	go func() {
		defer close(pollDone)
		fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
		for {
			if _, err := unix.Poll(fds, -1); err != nil && errors.Is(err, unix.EINTR) {
				continue
			}
			break
		}
		_ = unix.Kill(-pid, unix.SIGKILL)
	}()
	werr := cmd.Wait()
	<-pollDone // the process is gone: its pidfd is readable
	phase.Mark("cmd.Wait")
	close(waitDone)
	sup.stop()
	phase.Mark("supervisor stop")
	var dropped int
	res.denials, dropped = sup.take()
	if dropped > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("%d more denied calls with distinct arguments were counted but not listed (more than %d distinct)", dropped, maxDistinct))
	}
	res.exit = exitStatus(cmd.ProcessState)
	if failure != nil {
		return res, initFailure(failure, opts.Command[0])
	}
	if werr != nil && cmd.ProcessState == nil {
		return res, fmt.Errorf("wait: %w", werr)
	}
	return res, nil
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

// writeConfig sends the init stage its config as JSON and closes the pipe (EOF ends it).
func writeConfig(w *os.File, cfg initConfig) error {
	b, err := json.Marshal(cfg)
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
