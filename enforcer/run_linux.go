package enforcer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sysprof/sysprof/changeset"
	"github.com/sysprof/sysprof/enforcer/guard"
	"github.com/sysprof/sysprof/internal/phase"
	"github.com/sysprof/sysprof/netproxy"
	"github.com/sysprof/sysprof/paths"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/report"
	"github.com/sysprof/sysprof/sandbox"
)

// Options is one enforced run.
type Options struct {
	Profile     *policy.Profile
	ProfilePath string // for the report; protected in the run (Env.Own)
	// ReportsDir is where sysprof leaves its run reports (the record `sysprof audit` reads):
	// protected in the run (Env.Own). Empty: none.
	ReportsDir string
	Command    []string // argv; Command[0] is looked up in PATH inside the sandbox
	Dir        string   // working directory ($WORKDIR); empty: the current one
	Env        []string // the command's environment; nil: sysprof's
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
	// RelayTerminal: the streams that are a terminal are the pty of sysprof's terminal relay
	// (OpenTerminalRelay): the command's session gets it as its controlling terminal.
	RelayTerminal bool
	// relayPTY is that pty's slave (Relayed): given to the command's host uid (relayTo).
	relayPTY *os.File

	// Resolve overrides the host's DNS for names of the network allowlist (the proxy dials
	// these addresses, loopback included), like curl's --resolve.
	Resolve map[string][]netip.Addr
	// LogAllowed lists every allowed connection in the report's notes (name, port, binary,
	// bytes each way).
	LogAllowed bool

	// Early is an init stage StartEarly started for this run (Run takes it, or kills it when
	// the run does not fit it); nil: Run starts one.
	Early *Early

	// Apply is what of the run's changeset (the writes into staged directories) is applied
	// when the command ends: changeset.ApplyLearned ("": the default), ApplySafe or ApplyNone.
	// What is not applied stays held for `sysprof changes`.
	Apply changeset.ApplyMode
	// Changeset is a changeset shared by the steps of a gated run (changeset.Begin): this run's
	// stages join it (a directory an earlier step staged keeps its layers: this step sees what
	// that one wrote) and nothing is applied; the caller applies it once every step passed
	// (FinishChangeset). nil: the run has its own, applied as Apply says.
	Changeset *changeset.Run
}

// Run runs the command under the profile and returns the report, the command's exit status
// (128+N when a signal killed it) and an error only when the command could not be run as asked:
// a *LayerError (a layer the profile needs cannot be applied; exit 125), an *ExecError (126/127),
// or another setup failure (125). Use ExitCode(err) for the CLI's status. The context kills the
// command when done.
//
// Run compiles the profile (Compile) and then executes the compiled result without changing it:
// what differs from run to run (the stages' overlay directories) goes into a copy of the plan.
// Run is Prepare followed by Prepared.Run.
//
// Requires Linux 5.9 (SECCOMP_USER_NOTIF_FLAG_CONTINUE, close_range, pidfd_getfd) and the
// process's main to call MaybeInit first.
func Run(ctx context.Context, opts Options) (*report.Report, int, error) {
	p := Prepare(opts)
	phase.Mark("compile")
	return p.Run(ctx, opts.Early)
}

// Prepared is a run made ready ahead of starting anything (Prepare): its host values and its
// compiled profile.
type Prepared struct {
	r   *enforcedRun
	c   *Compiled
	err error
}

// Prepare does what Run does before it starts a process: it checks opts, finds the host's values
// and compiles the profile. Nothing of it is bound to a goroutine's thread: the CLI prepares on
// another goroutine while StartEarly's init stage starts, then calls Run on StartEarly's
// goroutine. opts.Early is not used (Prepared.Run takes the early stage). Call Run or Discard.
func Prepare(opts Options) *Prepared {
	r, err := newEnforcedRun(opts)
	if err != nil {
		return &Prepared{err: err}
	}
	ensureStateDir()
	compiled, err := Compile(opts.Profile, r.env)
	if err != nil {
		r.discardLoad()
		return &Prepared{err: fmt.Errorf("compile profile: %w", err)}
	}
	// The binaries' hashes too (a file read per binary, or its cached hash).
	r.changed = checkBinaries(opts.Profile, r.env)
	return &Prepared{r: r, c: compiled}
}

// Run runs the prepared run as Run does, in early when it fits (a stage StartEarly started on
// this goroutine, or nil), and closes early.
func (p *Prepared) Run(ctx context.Context, early *Early) (*report.Report, int, error) {
	defer early.Close() // a no-op once the run took it
	if p.err != nil {
		return nil, 125, p.err
	}
	r := p.r
	r.opts.Early = early
	defer r.discardLoad()
	return r.execute(ctx, p.c)
}

// Discard drops a prepared run that will not run (what it holds of the guard's load).
func (p *Prepared) Discard() {
	if p != nil && p.r != nil {
		p.r.discardLoad()
	}
}

// enforcedRun is one Run: its options and host, the compiled profile it executes (read only),
// and what it starts and ends around the command (the guard, the egress proxy, the report).
type enforcedRun struct {
	opts Options
	dir  string // the working directory ($WORKDIR)
	env  Env
	// envNote says what userEnviron changed in the command's environment (empty: nothing).
	envNote string
	// knownHidden are the host paths of the hidden rules the tool read when learned (listHidden).
	knownHidden []string
	asRoot      bool
	c           *Compiled
	rep         *report.Report
	load        *guard.Load  // guard.c loading, until the guard takes it
	guard       *guard.Guard // nil: no guard, or closed
	px          *egress      // nil: no network allowlist
	// changed are the profile's binaries that changed since learn (checkBinaries, in Prepare).
	changed []report.ChangedBinary
	// gitConfigs are the work tree's git configs in bound directories before the run
	// (snapshotGitConfigs), by host path.
	gitConfigs *gitConfigSnaps
	// id is who the command is (identity), decided once: its HOME and the run follow it.
	id sandbox.Identity
}

// newEnforcedRun checks opts and finds the run's directory and host values. As root it takes
// guard.c's load first (Prewarm may have started it): it loads while the profile compiles and
// the init stage starts, and a run that does not use it discards it (discardLoad).
func newEnforcedRun(opts Options) (*enforcedRun, error) {
	if len(opts.Command) == 0 {
		return nil, errors.New("enforce: no command")
	}
	if opts.Profile == nil {
		return nil, errors.New("enforce: no profile")
	}
	dir := opts.Dir
	if dir == "" {
		d, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("enforce: %w", err)
		}
		dir = d
	}
	// The real path: a work tree reached through a symlink (a $PWD naming the link) is
	// entered by the path the sandbox's mounts hold.
	dir = paths.Resolve(dir)
	// Who the command is decides its HOME (sudo's model: the invoking user's), before the
	// profile's $HOME is expanded.
	id := identity(opts.Profile.HostRoot, dir, opts.Degrade)
	env, envNote := userEnviron(opts.Env, id, dir)
	if env != nil {
		opts.Env = env
	}
	r := &enforcedRun{opts: opts, dir: dir, asRoot: os.Geteuid() == 0, envNote: envNote, id: id}
	// Every profile gets Landlock (an empty filesystem section is the base only, see withBase),
	// whose refusals the guard reports: a root run always may use it.
	if r.asRoot {
		r.load = guard.TakeLoad()
	}
	r.env = HostEnvFor(dir, opts.Env)
	for k, v := range opts.Vars {
		r.env.Vars[k] = v
	}
	r.env.Command = commandPath(opts.Command, dir)
	r.env.Terminal = stdioTerminal(opts.Stdin, opts.Stdout, opts.Stderr)
	r.env.Audit = opts.Audit
	for _, own := range []string{opts.ProfilePath, opts.ReportsDir} {
		if p, err := filepath.Abs(own); err == nil && own != "" {
			r.env.Own = append(r.env.Own, p)
		}
	}
	return r, nil
}

// ensureStateDir makes the changesets' state directory when it does not exist yet (a run begun
// and dropped: made as Begin makes it, owned by the sudo user under sudo), so that Compile
// hides it from the command (withBase) on the first run too: a run's manifest and layers
// begin after Compile, and a command with a writable parent of them (a rule on $HOME/.local)
// must not rewrite what is applied after it.
func ensureStateDir() {
	d, err := changeset.StateDir()
	if err != nil {
		return
	}
	if _, err := os.Lstat(d); err == nil {
		return
	}
	if run, err := changeset.Begin(changeset.Run{Command: []string{"(state directory)"}}); err == nil {
		_ = run.Drop()
	}
}

// discardLoad drops guard.c's load when no guard took it.
func (r *enforcedRun) discardLoad() {
	if r.load != nil {
		r.load.Discard()
		r.load = nil
	}
}

// execute runs the command under c, which it reads and never changes.
func (r *enforcedRun) execute(ctx context.Context, c *Compiled) (*report.Report, int, error) {
	r.c = c
	r.rep = report.New(r.opts.Command, r.opts.ProfilePath, r.opts.Audit)
	r.rep.Started = time.Now().UTC()
	if r.envNote != "" {
		r.rep.Notes = append(r.rep.Notes, r.envNote)
	}
	if err := r.checkBinaries(); err != nil {
		return r.rep, 125, err
	}
	phase.Mark("binaries")
	r.rep.Notes = append(r.rep.Notes, c.Notes...)
	r.listHidden(c)
	for _, d := range c.Refused {
		r.rep.Notes = append(r.rep.Notes, d)
		fmt.Fprintf(r.warn(), "sysprof: %s\n", report.Printable(d))
	}
	for _, d := range c.Dropped {
		r.rep.Notes = append(r.rep.Notes, "dropped (means nothing on this host): "+d)
	}
	id := r.id
	relayTo(r.opts.relayPTY, id.UID)
	dec := r.decide(id)
	if dec.Refuse != nil {
		return r.rep, 125, dec.Refuse
	}
	if id.Note != "" && dec.Sandbox {
		// Said, not refused: the run works but for tools that check ownership (git).
		r.rep.Notes = append(r.rep.Notes, "uid: "+id.Note)
		fmt.Fprintf(r.warn(), "sysprof: %s\n", report.Printable(id.Note))
	}
	if dec.Guard {
		r.startGuard()
	}
	defer r.closeGuard() // unless collect closed it
	// Egress by name: the DNS stub and the proxy serve the sandbox's network namespace from
	// here (decideLayers refused a run without the sandbox).
	if c.Egress != nil {
		broker := c.creds.brokerOrNil()
		opts := netproxy.Options{Resolve: r.opts.Resolve, LogAllowed: r.opts.LogAllowed, Broker: broker, ConnectsSeen: c.ConnectsSeen}
		order := r.execOrder(c, broker)
		if order != nil {
			opts.ExecOrder = order.lookup
		}
		r.px = &egress{Proxy: netproxy.New(c.Egress, opts), broker: broker, publish: c.Publish, warn: r.warn(), order: order}
		defer r.px.close(r.rep, nil)
	}
	plan := c.Plan
	var staged *stagedRun
	if dec.Sandbox {
		r.gitConfigs = snapshotGitConfigs(topLevelPaths(c.Plan.Writable), c.Plan.ReadOnly, r.env)
		var err error
		meta := changeset.Run{Command: r.opts.Command, WorkDir: r.dir, Profile: r.opts.ProfilePath}
		if staged, err = prepareStages(c.Stages, id, r.opts.Changeset, meta, r.env); err != nil {
			return r.rep, 125, fmt.Errorf("enforce: %w", err)
		}
		defer staged.remove()
		plan = staged.plan(c.Plan)
	}
	var cgid uint64
	if r.guard != nil {
		cgid = r.guard.Cgroup().ID
	}
	st := r.opts.Early.take(&r.opts, r.dir, dec.Sandbox, plan.NetNS, cgid, id)
	layers := r.startLayers(dec, &plan, id)
	defer layers.remove()
	res, err := start(ctx, runStart{opts: r.opts, c: c, plan: plan, dir: r.dir, id: id, sandbox: dec.Sandbox,
		rep: r.rep, guard: r.guard, stage: st, egress: r.px, layers: layers})
	phase.Mark("start..wait")
	layers.report(r.rep, &res, r.opts.Profile)
	if staged != nil && !staged.shared {
		res.denials = append(res.denials, writeLimitDenials(staged.stages, r.opts.Profile, r.env)...)
	}
	r.collect(&res, staged, id, dec.Sandbox)
	r.rep.Finished = time.Now().UTC()
	for _, d := range res.denials {
		if hiddenRead(d, r.knownHidden) {
			r.rep.AddHidden(report.HiddenRead{Path: d.Path, Access: d.Access, Exe: d.Exe, Count: d.Count})
			continue
		}
		r.rep.Add(d)
	}
	r.rep.Sort()
	r.rep.ExitCode = res.exit
	if err != nil {
		return r.rep, ExitCode(err), err
	}
	return r.rep, res.exit, nil
}

// checkBinaries warns about every binary of the profile that changed since learn, and refuses
// the run (a *BinaryError) when opts.VerifyBinaries.
func (r *enforcedRun) checkBinaries() error {
	changed := r.changed
	if len(changed) == 0 {
		return nil
	}
	r.rep.ChangedBinaries = changed
	warn := r.warn()
	for _, c := range changed {
		fmt.Fprintf(warn, "sysprof: warning: binary %s (%s) changed since learn: sha256 %s, learned %s\n", report.Printable(c.Path), report.Printable(c.File), report.Printable(c.Now), report.Printable(c.Learned))
	}
	if r.opts.VerifyBinaries {
		return &BinaryError{Changed: changed}
	}
	return nil
}

// warn is where sysprof's own warnings go: the run's stderr.
func (r *enforcedRun) warn() io.Writer {
	if r.opts.Stderr != nil {
		return r.opts.Stderr
	}
	return os.Stderr
}

// decide gathers the host's facts (id: who the command will be) and decides which layers run, degrade or refuse
// (decideLayers), noting the decision in the report.
func (r *enforcedRun) decide(id sandbox.Identity) layerDecision {
	facts := hostFacts{AsRoot: r.asRoot, Sandbox: sandboxAvailable, Degrade: r.opts.Degrade, Audit: r.opts.Audit, UIDWeaker: id.Weaker}
	if r.asRoot && sandboxAvailable && r.c.Plan.Landlock != nil {
		facts.Guard = guardAvailable()
	}
	host := thisHost()
	facts.RAM, facts.CPUs, facts.FileMax, facts.LimitCgroup = host.RAM, host.CPUs, host.FileMax, host.LimitCgroup
	facts.UserCounts = host.UserCounts
	dec := decideLayers(r.c, facts)
	r.rep.Notes = append(r.rep.Notes, dec.Notes...)
	for _, l := range dec.Degraded {
		r.rep.SetLayer(l)
	}
	r.rep.Unobservable = unobservable(false)
	return dec
}

// startGuard starts the guard for the run: guard.c is set up in the background while the init
// stage starts, and start waits for it before the command may exec. A guard that cannot start
// is noted; the run goes on unobserved.
func (r *enforcedRun) startGuard() {
	if r.load == nil {
		r.load = guard.TakeLoad()
	}
	g, why := guard.Start(r.c.guardConfig(r.env, r.opts.Audit, r.load, r.opts.Early.takeCgroup()))
	r.load = nil // Start took it
	if why != nil {
		r.rep.Notes = append(r.rep.Notes, guardLostNote(why))
	} else {
		r.guard = g
	}
	phase.Mark("guard setup")
}

// closeGuard closes a guard the run did not collect (a setup failure).
func (r *enforcedRun) closeGuard() {
	if r.guard != nil {
		r.guard.Close()
		r.guard = nil
	}
}

// collect gathers, once the command and its PID namespace are gone, what the run's observers
// saw: the changeset of the stages (applied as opts.Apply says, the rest held), the guard's
// file denials and the proxy's refusals. The guard closes (its ring buffer drained, its
// program handed to the linger helper) while the stages are swept and finished: neither
// depends on the other, and each is a few ms the user waits for after the command.
func (r *enforcedRun) collect(res *runResult, staged *stagedRun, id sandbox.Identity, sandboxed bool) {
	guardDone := r.closeGuardAsync()
	// Nothing writes to the stages or the bound directories any more.
	var stripped []report.Change
	if sandboxed {
		staged, stripped = r.sweepBound(staged, id)
	}
	changes, notes := staged.finish(r.opts.Apply)
	if len(stripped) > 0 {
		if changes == nil {
			changes = &report.Changes{Apply: string(r.opts.Apply), Held: []report.Change{}}
		}
		changes.Held = append(changes.Held, stripped...)
	}
	r.rep.Changes = changes
	r.rep.Notes = append(r.rep.Notes, notes...)
	if guardDone != nil {
		g := <-guardDone
		if g.lost != nil { // the background setup failed
			r.rep.Notes = append(r.rep.Notes, guardLostNote(g.lost))
		} else {
			r.rep.Unobservable = unobservable(true)
		}
		res.denials = append(res.denials, g.denials...)
		r.rep.Notes = append(r.rep.Notes, g.notes...)
		r.rep.LostRecords += g.lostRecords
	}
	r.px.close(r.rep, res)
}

// guardResult is what a closed guard saw.
type guardResult struct {
	lost        error // why its setup failed (then nothing was observed)
	denials     []report.Denial
	notes       []string
	lostRecords uint64 // refusals counted but not recorded (report.LostRecords)
}

// closeGuardAsync closes the run's guard in the background and returns where its result
// arrives (nil without a guard).
func (r *enforcedRun) closeGuardAsync() <-chan guardResult {
	g := r.guard
	if g == nil {
		return nil
	}
	r.guard = nil
	done := make(chan guardResult, 1)
	go func() {
		var res guardResult
		res.lost = g.Wait()
		res.denials, res.notes = g.Close()
		res.lostRecords = g.Lost()
		phase.Mark("guard close")
		done <- res
	}()
	return done
}

// sweepBound checks the directories bound writable for what must not leave the run through them
// (bound_linux.go): set-id bits and capabilities are stripped (returned, for the report), and a
// symlink out of its tree or at a protected path, or a nested repository's hooks and config the
// run wrote, is moved into the run's changeset (begun here when the run staged nothing), where
// it is held. It returns the run's stages.
func (r *enforcedRun) sweepBound(staged *stagedRun, id sandbox.Identity) (*stagedRun, []report.Change) {
	var stripped []report.Change
	for _, b := range topLevelPaths(r.c.Plan.Writable) {
		f := sweepBound(b, r.rep.Started, r.env, r.gitConfigs)
		stripped = append(stripped, f.stripped...)
		r.rep.Notes = append(r.rep.Notes, f.errs...)
		if len(f.held) > 0 && b == filepath.Clean(r.env.Vars["TMPDIR"]) {
			// The host's $TMPDIR is shared with the user's other programs, whose links made
			// meanwhile look the same: noted, not moved. A git config of the work tree's that
			// gained a code-running setting is the run's: held below.
			var configs, left []string
			for _, w := range f.restoreWhy {
				configs = append(configs, w.rel)
			}
			for _, rel := range f.held {
				if !slices.Contains(configs, rel) {
					left = append(left, rel)
				}
			}
			if len(left) > 0 {
				r.rep.Notes = append(r.rep.Notes, fmt.Sprintf("bound %s ($TMPDIR): %d symlink(s) out of the tree, special file(s) or nested repository hook(s) made during the run left in place: %s", b, len(left), report.Printable(strings.Join(left, ", "))))
			}
			f.held = topLevelPaths(configs)
		}
		if len(f.held) == 0 {
			continue
		}
		if staged == nil {
			staged = &stagedRun{run: r.opts.Changeset, shared: r.opts.Changeset != nil}
			if staged.run == nil {
				run, err := changeset.Begin(changeset.Run{Command: r.opts.Command, WorkDir: r.dir, Profile: r.opts.ProfilePath})
				if err != nil {
					r.rep.Notes = append(r.rep.Notes, f.keepAside(err)...)
					staged = nil
					continue
				}
				staged.run = run
			}
		}
		notes, err := holdBoundLinks(staged.run, f, id.FileUID, id.FileGID)
		r.rep.Notes = append(r.rep.Notes, notes...)
		if err != nil {
			r.rep.Notes = append(r.rep.Notes, fmt.Sprintf("bound %s: holding its symlinks out of the tree, special files, nested repository hooks and git configs: %v", b, err))
		}
	}
	phase.Mark("bound sweep")
	return staged, stripped
}

// listHidden lists in the report the secrets the profile says the tool reads (a hidden rule
// with by:, set by learn) and that are hidden here: they read as empty, in every mode, and
// are information for the reviewer, not denials.
func (r *enforcedRun) listHidden(c *Compiled) {
	for _, h := range r.opts.Profile.Filesystem.Hidden {
		if h.By == "" {
			continue
		}
		p, err := paths.Expand(h.Path, r.env.Vars)
		if err != nil || !slices.Contains(c.Plan.Hidden, p) {
			continue
		}
		r.knownHidden = append(r.knownHidden, p)
		r.rep.AddHidden(report.HiddenRead{Path: h.Path, Exe: h.By, Count: 1,
			What: fmt.Sprintf("reads %s (seen when learned): hidden, it reads as empty", h.Path)})
	}
	// A masked file the profile reads (git reading .git/config) is information too; a tool
	// that never read it when learned reaching for it is a denial.
	for _, m := range c.MaskedSecrets {
		port := paths.Portable(m, r.env.Vars)
		if slices.ContainsFunc(r.opts.Profile.Filesystem.Read, func(pr policy.PathRule) bool { return paths.Covers(pr.Path, port) }) ||
			slices.ContainsFunc(r.opts.Profile.Filesystem.Hidden, func(h policy.PathRule) bool { return h.By != "" && paths.Covers(h.Path, port) }) {
			r.knownHidden = append(r.knownHidden, m)
		}
	}
}

// hiddenRead reports a file denial at a hidden path the profile says the tool reads (known:
// the hidden rules with by:): information for the report's Hidden list, not a denial to allow
// (refine would suggest reading the secret). A secret the tool did not reach for when learned
// stays a denial: that is new behaviour worth a finding (a build step reading ~/.ssh).
func hiddenRead(d report.Denial, hidden []string) bool {
	return d.Kind == report.KindFile && d.Path != "" && paths.CoveredBy(d.Path, hidden)
}

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
