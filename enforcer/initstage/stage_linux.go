package initstage

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/internal/phase"
	"github.com/sysprof/sysprof/internal/wire"
	"github.com/sysprof/sysprof/netproxy/inside"
	"github.com/sysprof/sysprof/sandbox"
)

// Main runs the init stage (the process was started with Arg) and returns the status to exit
// with: it returns only when it could not exec the command, or as PID 1 once the command is
// gone.
func Main() int {
	// Everything that must survive exec (Landlock, capabilities, no_new_privs, the filter) is
	// per thread: stay on this one.
	runtime.LockOSThread()
	// Into the run's cgroup v1 directories before anything else (FDJoin).
	joinErr := joinCgroups(os.Args[2:], FDJoin)
	// The stage execs within milliseconds, having allocated little: a collection would only
	// delay it.
	debug.SetGCPercent(-1)
	phase.SetName("init")
	phase.Mark("runtime start to MaybeInit")
	cfg := &configPipe{f: os.NewFile(FDConfig, "config")}
	cfg.r = bufio.NewReader(cfg.f)
	// The capabilities first, once the maps exist.
	sw, err := readSwitch(cfg.r)
	if err == nil && sw != nil {
		err = switchCreds(sw)
	}
	cfg.switchErr = err
	cfg.joinErr = joinErr
	phase.Mark("ids")
	var net earlyNet
	if slices.Contains(os.Args[2:], ArgNetNS) {
		// Namespaces are per thread: this one (locked) execs the command.
		net = earlyNet{asked: true, err: unix.Unshare(unix.CLONE_NEWNET)}
		phase.Mark("network namespace (before the config)")
	}
	return initStage(net, cfg)
}

// configPipe is FDConfig: the Switch's line (read in Main), then the config.
type configPipe struct {
	f         *os.File
	r         *bufio.Reader
	switchErr error // of reading or taking the Switch
	joinErr   error // of joining the run's cgroups (FDJoin)
}

// joinCgroups writes 0 to each file from fd first on (ArgJoin in args says how many) and
// closes it: the calling thread, which execs the command, joins those cgroups.
func joinCgroups(args []string, first int) error {
	n := 0
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, ArgJoin); ok {
			var err error
			if n, err = strconv.Atoi(v); err != nil {
				return fmt.Errorf("BUG: bad %s%s", ArgJoin, v)
			}
		}
	}
	var failed error
	for fd := first; fd < first+n; fd++ {
		if _, err := unix.Write(fd, []byte("0")); err != nil && failed == nil {
			failed = fmt.Errorf("join the run's cgroup (fd %d): %v", fd, err)
		}
		unix.Close(fd)
	}
	return failed
}

// readSwitch reads the Switch's frame (nil: the parent's fork set the ids).
func readSwitch(r *bufio.Reader) (*Switch, error) {
	var sw *Switch
	if err := wire.ReadFrame(r, &sw); err != nil {
		return nil, fmt.Errorf("read the ids to take: %w", err)
	}
	return sw, nil
}

// switchCreds gives a stage started by spawn.Start (its ids taken by its child, before the
// execve) on this thread, which execs the command, exactly the capabilities Go's forkExec
// would have given it: c.Ambient permitted, effective, inheritable and ambient; or, for root
// in the namespace, every permitted one and none inheritable or ambient.
func switchCreds(c *Switch) error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	if len(c.Ambient) > 0 {
		data = [2]unix.CapUserData{}
		for _, cp := range c.Ambient {
			bit := uint32(1) << (cp % 32)
			data[cp/32].Permitted |= bit
			data[cp/32].Effective |= bit
			data[cp/32].Inheritable |= bit
		}
	} else {
		for i := range data {
			data[i].Effective, data[i].Inheritable = data[i].Permitted, 0
		}
	}
	// Lowering inheritable or permitted lowers the ambient set with it.
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	return nil
}

// userCountsSkipped says why the user counts were not set, under --degrade=limits.
var userCountsSkipped string

// earlyNet is the network namespace a stage started with ArgNetNS entered before its config.
type earlyNet struct {
	asked bool
	err   error // the unshare's
}

// initStage runs inside the new namespaces: sandbox layers, close-on-exec for every inherited
// fd but 0-2, no_new_privs, seccomp with a listener, wait for the parent to take the listener,
// exec. It returns the exit status only when it could not exec. Each step returns the status
// to fail with, or nil.
func initStage(net earlyNet, pipe *configPipe) int {
	s := openStatus()
	if pipe.switchErr != nil {
		return s.fail(Status{Stage: "config", Layer: LayerUserNS, Error: pipe.switchErr.Error()})
	}
	if pipe.joinErr != nil { // the limits would not hold the command: never run it unbound
		return s.fail(Status{Stage: "sandbox", Layer: sandbox.LayerLimits, Error: pipe.joinErr.Error()})
	}
	// PID 1 of the sandbox's PID namespace: the namespace dies with it. As its init it gets only
	// the signals it handles, and Go handles every signal: a SIGABRT, SIGSEGV or SIGBUS the
	// command sends (kill(1), kill(0) to its process group, tkill of a stage thread) would crash
	// the stage and end the run with its traceback on the user's terminal. So every signal is
	// notified, and those sysprof forwards are passed on and the rest dropped; a real fault of
	// the stage still crashes it (Go tells a fault from a sent signal). Notifying every signal
	// takes a round trip between two threads per signal (~2.4 ms here): on another thread while
	// this one reads the config and builds the sandbox, waited for before the filter.
	asInit := os.Getpid() == 1
	var sigs chan os.Signal
	notified := make(chan struct{})
	if asInit {
		sigs = make(chan os.Signal, 8)
		go func() {
			signal.Notify(sigs)
			close(notified)
		}()
	} else {
		close(notified)
	}
	cfg, st := readInitConfig(pipe)
	if st != nil {
		return s.fail(*st)
	}

	ctty := takeTerminal(cfg.Ctty)
	// The sandbox dies with sysprof. (Go set it at fork; set it again in case creds changed.)
	_ = unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0)
	if os.Getppid() == 1 {
		return s.fail(Status{Stage: "config", Error: "sysprof exited before the sandbox started"})
	}
	if !asInit {
		// Only PID 1 outlives the command to copy a bounded stage's writes out.
		unboundStages(cfg.Parts)
	}
	phase.Mark("config")
	if st := enterNamespaces(cfg, asInit, net); st != nil {
		return s.fail(*st)
	}
	var held []int      // the fds handed to the parent (pidfd_getfd) before the sync: egress sockets, memfd tmpfs
	if cfg.MemfdTmpfs { // before the layers: they drop the capability a mount needs
		fd, err := sandbox.NoExecTmpfs()
		if err != nil {
			return s.fail(Status{Stage: "sandbox", Layer: LayerMounts, Error: "the noexec tmpfs for memfds: " + err.Error()})
		}
		s.send(Status{MemfdTmpfs: fd})
		held = append(held, fd)
		for _, p := range cfg.Parts {
			if p.Plan.Landlock != nil {
				p.Plan.Landlock.MemfdTmpfs = fd
			}
		}
	}
	if cfg.Sandbox {
		// On this thread, which forks the command.
		if err := sandbox.JoinOwnKeyring(); err != nil {
			return s.fail(Status{Stage: "sandbox", Layer: LayerUserNS, Error: err.Error()})
		}
		phase.Mark("session keyring")
		egress, st := s.applyLayers(cfg)
		if st != nil {
			return s.fail(*st)
		}
		held = append(held, egress...)
		if sandbox.HasBoundStages() {
			rescueOnParentDeath()
		}
	}
	if outputs, files := ExecOutputs(cfg.Parts), ExecFiles(cfg.Parts); len(outputs)+len(files) > 0 {
		// The supervisor has the command's mkdir of an output directory made here, and an
		// output file it execs bound (as PID 1, on a thread that keeps the capabilities);
		// anywhere else the watch alone binds the directories, and the files stay noexec.
		fd := -1
		if asInit {
			if f, err := sandbox.ServeExecOutputMkdirs(outputs, files); err == nil {
				fd = f
				held = append(held, f)
				// The command itself an output file (./app): bound before the lookup, whose
				// access check meets the noexec stage (the supervisor binds later execs).
				if a := cfg.Argv[0]; strings.Contains(a, "/") {
					if !filepath.IsAbs(a) {
						a = filepath.Join(cfg.Dir, a)
					}
					if a = filepath.Clean(a); slices.Contains(files, a) {
						_ = sandbox.AskExecFileBind(f, a)
					}
				}
			}
		}
		s.send(Status{ExecOutputs: fd})
	}

	phase.Mark("sandbox")
	if st := reenterDir(cfg.Dir); st != nil {
		return s.fail(*st)
	}
	<-notified // before the filter (the stage's own calls meet it from there) and the command
	// Resolve the command in the sandbox's view of the filesystem, before seccomp.
	path, err := exec.LookPath(cfg.Argv[0])
	if err != nil {
		return s.fail(Status{Stage: "lookup", Error: err.Error(), Exit: lookupExit(err)})
	}
	listener, st := s.installSeccomp(cfg.Filter)
	if st != nil {
		return s.fail(*st)
	}
	// From here on every syscall goes through the filter; the parent's supervisor lets this
	// stage's own calls through until the exec (it sees the status pipe close).
	phase.Mark("lookup, seccomp")
	if st := s.handOver(listener, held); st != nil {
		return s.fail(*st)
	}
	phase.Mark("sync")
	env := append(withoutVars(os.Environ(), cfg.UnsetEnv), cfg.SetEnv...)
	if asInit {
		code := runAsInit(path, cfg.Argv, env, ctty, cfg.CloseStdio, s.status, sigs, s.fail)
		flushStages()
		return code
	}
	for _, fd := range cfg.CloseStdio {
		// As sysprof's caller left it (Config.CloseStdio): nothing opens after this.
		_ = unix.Close(fd)
	}
	err = syscall.Exec(path, cfg.Argv, env)
	return s.fail(Status{Stage: "exec", Error: fmt.Sprintf("exec %s: %v", path, err), Exit: execExit(err)})
}

// stageStatus is the init stage's end of the status pipe (FDStatus, close-on-exec).
type stageStatus struct {
	status *os.File
}

func openStatus() *stageStatus {
	status := os.NewFile(FDStatus, "status")
	unix.CloseOnExec(FDStatus)
	return &stageStatus{status: status}
}

// send writes st to the parent (what fails to reach it, the parent sees as the stage's end).
func (s *stageStatus) send(st Status) { _ = wire.WriteFrame(s.status, &st) }

// fail sends st, exit status 125 unless it says otherwise, and returns that status.
func (s *stageStatus) fail(st Status) int {
	if st.Exit == 0 {
		st.Exit = 125
	}
	s.send(st)
	return st.Exit
}

// readInitConfig reads the stage's config from FDConfig (after the Switch's line), to EOF.
func readInitConfig(pipe *configPipe) (*Config, *Status) {
	b, err := io.ReadAll(pipe.r)
	pipe.f.Close()
	if err != nil {
		return nil, &Status{Stage: "config", Error: err.Error()}
	}
	var cfg Config
	if err := wire.Unmarshal(b, &cfg); err != nil {
		return nil, &Status{Stage: "config", Error: err.Error()}
	}
	if len(cfg.Argv) == 0 {
		return nil, &Status{Stage: "config", Error: "BUG: empty command"}
	}
	return &cfg, nil
}

// enterNamespaces makes the namespaces what the sandbox is built on: the idmapped replica of
// the host's mounts as root (root-idmap), the network namespace an early stage unshares
// itself, and the PID namespace's own /proc.
func enterNamespaces(cfg *Config, asInit bool, net earlyNet) *Status {
	if cfg.Replica {
		// Root-idmap: the host's mounts, idmapped, become this stage's root before any layer
		// is built on them.
		r, err := sandbox.ReceiveReplica(FDReplica)
		if err == nil {
			err = r.Enter()
		}
		unix.Close(FDReplica)
		if err != nil {
			return &Status{Stage: "sandbox", Layer: LayerUserNS, Error: err.Error()}
		}
		phase.Mark("replica")
	}
	switch {
	case cfg.UnshareNet && net.asked:
		if net.err != nil {
			return &Status{Stage: "sandbox", Layer: LayerNetNS, Error: fmt.Sprintf("new network namespace: %v", net.err)}
		}
	case cfg.UnshareNet:
		// Namespaces are per thread: this one (locked) execs the command.
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			return &Status{Stage: "sandbox", Layer: LayerNetNS, Error: fmt.Sprintf("new network namespace: %v", err)}
		}
	case net.asked:
		// The parent runs a plan without a network namespace only in a stage it started
		// without ArgNetNS.
		return &Status{Stage: "config", Error: "BUG: a stage started with its own network namespace got a plan without one"}
	}
	if cfg.Sandbox {
		// The user namespace's own counts: before the namespace's /proc (its /proc/sys is
		// read-only) and the layers (which take CAP_SYS_RESOURCE).
		if err := sandbox.SetUserCounts(UserCounts(cfg.Parts)); err != nil {
			if !slices.ContainsFunc(cfg.Parts, func(p Part) bool { return p.Name == sandbox.LayerLimits && p.Degrade }) {
				return &Status{Stage: "sandbox", Layer: sandbox.LayerLimits, Error: err.Error()}
			}
			userCountsSkipped = "skipped " + sandbox.LayerLimits + ": " + err.Error()
		}
		phase.Mark("user counts")
	}
	if cfg.Sandbox && asInit {
		// The namespace's own /proc, whatever else the plan mounts.
		if err := sandbox.MountProc(); err != nil {
			return &Status{Stage: "sandbox", Layer: LayerMounts, Error: err.Error()}
		}
	}
	return nil
}

// applyLayers applies the layers' parts (ApplyParts), reports what it applied, degraded and
// skipped, and returns the egress sockets it opened.
func (s *stageStatus) applyLayers(cfg *Config) ([]int, *Status) {
	layers, skipped, egress, err := ApplyParts(cfg.Parts, cfg.Sockets, cfg.Egress)
	if userCountsSkipped != "" {
		skipped = append(skipped, userCountsSkipped)
	}
	if err != nil {
		st := Status{Stage: "sandbox", Error: err.Error()}
		var le *LayerError
		if errors.As(err, &le) {
			// The parent builds its own LayerError from these (initFailure).
			st.Layer, st.Error = le.Layer, le.Err.Error()
		}
		return nil, &st
	}
	if len(layers) > 0 || len(skipped) > 0 || len(egress) > 0 {
		s.send(Status{Layers: layers, Notes: skipped, Egress: egress})
	}
	return egress, nil
}

// reenterDir enters the working directory again: it was entered before the mounts and still
// points into the host's mount (read-only now, or covered by the private /tmp). Entered
// through the sandbox's mount tree, relative paths see the writable binds.
func reenterDir(dir string) *Status {
	if dir == "" {
		return nil
	}
	if err := os.Chdir(dir); err != nil {
		return &Status{Stage: "sandbox", Layer: LayerMounts, Error: fmt.Sprintf("working directory %s in the sandbox: %v", dir, err)}
	}
	return nil
}

// installSeccomp marks every fd but 0, 1, 2 close-on-exec, sets no_new_privs and installs the
// filter, saying so first; it returns the filter's listener.
func (s *stageStatus) installSeccomp(filter SockFilter) (int, *Status) {
	// No fd but 0, 1, 2 reaches the command.
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return -1, &Status{Stage: "seccomp", Error: fmt.Sprintf("close_range: %v", err)}
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return -1, &Status{Stage: "seccomp", Error: fmt.Sprintf("no_new_privs: %v", err)}
	}
	// The listener takes the lowest free fd: say which, so that the parent need not scan
	// /proc/PID/fd for it (another thread opening one meanwhile only sends it to the scan).
	guess, err := unix.FcntlInt(0, unix.F_DUPFD_CLOEXEC, 3)
	if err == nil {
		unix.Close(guess)
	} else {
		guess = 0
	}
	s.send(Status{Installing: true, Listener: guess})
	listener, err := installFilter(filter)
	if err != nil {
		return -1, &Status{Stage: "seccomp", Error: err.Error()}
	}
	return listener, nil
}

// handOver tells the parent the filter is installed, waits until it holds the listener (and
// the other fds it takes: egress sockets, the memfd tmpfs), and closes this stage's copies.
func (s *stageStatus) handOver(listener int, egress []int) *Status {
	s.send(Status{Ready: true, Listener: listener})
	var one [1]byte
	if n, err := unix.Read(FDSync, one[:]); n != 1 || err != nil {
		return &Status{Stage: "sync", Error: "sysprof did not take over the seccomp listener"}
	}
	unix.Close(listener) // the parent holds its own copy now
	// So do the egress sockets: PID 1 outlives the exec in the sandbox's namespaces and must
	// hold nothing but 0-2 and the status pipe.
	for _, fd := range egress {
		unix.Close(fd)
	}
	return nil
}

// unboundStages leaves every stage's writes unbounded (its upper layer on the host).
func unboundStages(parts []Part) {
	for _, p := range parts {
		for i := range p.Plan.Staged {
			p.Plan.Staged[i].Size, p.Plan.Staged[i].Files = 0, 0
		}
	}
}

// rescueSignal is the parent-death signal of a stage with bounded stages: sysprof gone, the
// stage kills the command (and everything else in its namespace) instead of dying at once,
// and copies what the command wrote out (flushStages), as the end of a run does.
const rescueSignal = unix.SIGUSR2

func rescueOnParentDeath() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, rescueSignal)
	go func() {
		<-c
		_ = unix.Kill(-1, unix.SIGKILL)
	}()
	_ = unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(rescueSignal), 0, 0, 0)
	if os.Getppid() == 1 { // sysprof died before the signal was armed
		_ = unix.Kill(-1, unix.SIGKILL)
	}
}

// flushStages copies the bounded stages' writes to the host once the command is gone: on
// another thread (this one, the command's parent, holds its Landlock domain and filter),
// after killing and reaping whatever else is left in the namespace, so that nothing writes
// during the copy. What could not be copied is said on stderr (the command's).
func flushStages() {
	if !sandbox.HasBoundStages() {
		return
	}
	done := make(chan error)
	go func() {
		runtime.LockOSThread() // never given back: this thread's state is this goroutine's
		_ = unix.Kill(-1, unix.SIGKILL)
		for {
			if _, err := unix.Wait4(-1, nil, 0, nil); err != nil && !errors.Is(err, unix.EINTR) {
				break
			}
		}
		done <- sandbox.FlushBoundStages()
	}()
	if err := <-done; err != nil {
		fmt.Fprintf(os.Stderr, "sysprof: %v: what was copied is held in the run's changeset\n", err)
	}
}

// takeTerminal makes the first of fds 0-2 that is a terminal the session's controlling
// terminal when asked (Config.Ctty: sysprof's relay pty, never the user's own terminal, which
// TIOCSCTTY without force refuses anyway as another session's), and returns it, or -1.
func takeTerminal(asked bool) int {
	if !asked {
		return -1
	}
	for fd := 0; fd <= 2; fd++ {
		if unix.IoctlSetInt(fd, unix.TIOCSCTTY, 0) == nil {
			return fd
		}
	}
	return -1
}

// forwarded are the signals sysprof passes on to the command.
var forwarded = []os.Signal{unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT}

// runAsInit runs the command as the only child of this stage, PID 1 of the sandbox's PID
// namespace, forwards the signals sysprof passes on, reaps orphans, and returns the command's
// status (128+N for a signal) once the command is gone: exiting then makes the kernel kill
// whatever is left in the namespace (daemons, double-forked children).
//
// The fork happens on this locked thread, so the command inherits its filter, Landlock domain,
// no_new_privs and empty capability sets. The stage's other threads have none of them; the
// command cannot reach them: the stage stops being dumpable first (no ptrace, /proc/1/mem,
// /proc/1/fd or pidfd_getfd without CAP_SYS_PTRACE, which the command does not have), drops
// every signal the command sends it but those it forwards (initStage notifies all), holds no
// fd but 0-2, the status pipe (closed once the command runs) and a bounded stage's tmpfs and
// host layer directories (flushStages), and the supervisor lets through
// only calls made in this stage's address space (kcmp), which the command never shares after
// its exec.
func runAsInit(path string, argv, env []string, ctty int, closeStdio []int, status *os.File, sigs chan os.Signal, fail func(Status) int) int {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fail(Status{Stage: "exec", Error: fmt.Sprintf("init stage: not dumpable: %v", err)})
	}
	attr := &syscall.ProcAttr{Env: env, Files: []uintptr{0, 1, 2}}
	for _, fd := range closeStdio {
		if fd >= 0 && fd < len(attr.Files) {
			attr.Files[fd] = ^uintptr(0) // closed in the child (Config.CloseStdio)
		}
	}
	if ctty >= 0 {
		// Its own foreground process group: Ctrl-C and Ctrl-Z reach the command once (the
		// stage forwards only what sysprof is sent), and it may read the terminal.
		attr.Sys = &syscall.SysProcAttr{Setpgid: true, Foreground: true, Ctty: ctty}
	}
	pid, err := syscall.ForkExec(path, argv, attr)
	if err != nil {
		return fail(Status{Stage: "exec", Error: fmt.Sprintf("exec %s: %v", path, err), Exit: execExit(err)})
	}
	status.Close() // EOF: the command runs
	phase.Mark("fork, exec")
	go func() {
		for s := range sigs {
			if slices.Contains(forwarded, s) {
				_ = unix.Kill(pid, s.(syscall.Signal))
			}
		}
	}()
	for {
		var ws unix.WaitStatus
		got, err := unix.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return 125 // BUG: the command is a child until reaped
		}
		if got != pid {
			continue // an orphan
		}
		if ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ws.ExitStatus()
	}
}

// withoutVars returns env without every entry of the named variables (duplicates included).
func withoutVars(env, names []string) []string {
	if len(names) == 0 {
		return env
	}
	out := env[:0:0]
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(names, name) {
			out = append(out, kv)
		}
	}
	return out
}

// lookupExit maps a command lookup failure to a shell's status: 127 not found, 126 otherwise.
func lookupExit(err error) int {
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
		return 127
	}
	return 126
}

func execExit(err error) int {
	if errors.Is(err, syscall.ENOENT) {
		return 127
	}
	return 126
}

// ApplyParts applies the layers' parts one at a time, in order, so that a layer the host cannot
// apply and the run may go without (Part.Degrade) is skipped and named while the others still
// apply; any other failure is a *LayerError. The host daemon sockets are covered right after
// the mounts part. With egress, the stub's and the proxy's sockets are opened in the new
// network namespace right after lo comes up (before Landlock and the capability drop); that
// never degrades.
func ApplyParts(parts []Part, sockets []string, egress *inside.Inside) ([]LayerState, []string, []int, error) {
	var layers []LayerState
	var skipped []string
	var fds []int
	for _, part := range parts {
		name := part.Name
		res, err := part.Plan.ApplyResult()
		if res != nil {
			for _, sk := range res.Skipped {
				skipped = append(skipped, fmt.Sprintf("skipped %s: %s: %s", sk.Layer, sk.Path, sk.Reason))
			}
			for _, im := range res.Implied {
				skipped = append(skipped, "implied "+name+": "+im)
			}
			if len(res.Dropped) > 0 {
				layers = append(layers, LayerState{Name: name, Degraded: true, Detail: fmt.Sprintf("kernel cannot enforce: %v", res.Dropped)})
				continue
			}
		}
		if err == nil && name == LayerMounts {
			err = hideSockets(sockets)
		}
		if err != nil {
			if !part.Degrade {
				return layers, skipped, nil, &LayerError{Layer: name, Err: err}
			}
			layers = append(layers, LayerState{Name: name, Degraded: true, Detail: err.Error()})
			continue
		}
		layers = append(layers, LayerState{Name: name})
		phase.Mark("part " + name)
		if name == LayerNetNS && egress != nil {
			phase.Mark("sandbox: up to the network namespace")
			if fds, err = inside.Setup(*egress); err != nil {
				return layers, skipped, nil, &LayerError{Layer: LayerNetwork, Err: err}
			}
			phase.Mark("egress: routes, sockets, resolv.conf")
		}
	}
	if egress != nil && fds == nil {
		return layers, skipped, nil, &LayerError{Layer: LayerNetwork, Err: errors.New("egress: no network namespace to set up (the plan has none)")}
	}
	return layers, skipped, fds, nil
}

// hideSockets covers the host daemon sockets that are still there with the sandbox's empty
// read-only file, and the directories compile chose to hide whole (many sockets in them) with
// an empty one. A socket removed while this runs is skipped (it cannot be reached either);
// a failure caused by one vanishing mid-way is retried with the sockets still uncovered.
func hideSockets(sockets []string) error {
	var err error
	for range 3 {
		var left []string
		for _, s := range sockets {
			dir, isDir := strings.CutSuffix(s, "/")
			if st, e := os.Lstat(dir); e == nil && (isDir && st.IsDir() || !isDir && st.Mode()&os.ModeSocket != 0) {
				left = append(left, dir)
			}
		}
		if len(left) == 0 {
			return nil
		}
		if _, err = (&sandbox.Plan{Hidden: left}).ApplyResult(); err == nil {
			return nil
		}
	}
	return fmt.Errorf("hide daemon sockets: %w", err)
}

// installFilter installs the program on the calling thread only (no TSYNC) and returns the
// notification listener. The caller must have set no_new_privs (or hold CAP_SYS_ADMIN) and be
// locked to its OS thread. Requires Linux 5.0 (SECCOMP_FILTER_FLAG_NEW_LISTENER).
func installFilter(raw []bpf.RawInstruction) (int, error) {
	if len(raw) == 0 {
		return -1, fmt.Errorf("seccomp: empty program")
	}
	prog := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		prog[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	fd, _, errno := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
		unix.SECCOMP_FILTER_FLAG_NEW_LISTENER, uintptr(unsafe.Pointer(&fprog)))
	if errno != 0 {
		return -1, fmt.Errorf("seccomp(SET_MODE_FILTER, NEW_LISTENER): %w", errno)
	}
	return int(fd), nil
}
