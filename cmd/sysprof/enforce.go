package main

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/sysprof/sysprof/changeset"
	"github.com/sysprof/sysprof/enforcer"
	"github.com/sysprof/sysprof/internal/phase"
	"github.com/sysprof/sysprof/internal/profilecache"
	"github.com/sysprof/sysprof/internal/ptyrelay"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/project"
	"github.com/sysprof/sysprof/report"
	"github.com/sysprof/sysprof/runview"
	"github.com/sysprof/sysprof/trace"
)

type enforceOptions struct {
	streams
	Command []string
	Profile string
	Audit   bool
	// Degrade is --degrade[=LAYER,...]: the layers that may degrade (a bare --degrade: all).
	Degrade enforcer.Degrade
	Report  string
	// HTML is --html FILE: the run's process tree as one HTML page.
	HTML string
	// trace is what an audit run as root recorded (nil otherwise): its tree is the real one.
	trace *trace.Trace
	// Resolve are --resolve NAME=ADDR[,ADDR]: where the egress proxy dials an allowed name.
	Resolve []string
	// Publish are --publish PORT: loopback listeners to publish to the host that the
	// profile did not learn (each adds a bind rule 127.0.0.1:PORT).
	Publish []uint16
	// VerifyBinaries refuses a binary whose content differs from the profile's sha256.
	VerifyBinaries bool
	// FailOnDenial: exit exitDenied when CMD succeeded with denials; FailOnDenialSet: the flag
	// was given (it then overrides failOnDenial of sysprof.yaml for steps).
	FailOnDenial, FailOnDenialSet bool
	// Steps and All select steps of sysprof.yaml instead of a command (see learn).
	Steps []string
	All   bool
	Gates []project.Step
	// Reports leaves a run report per run in the reports directory (nil: none is set).
	Reports *runReporter
	// Apply is --apply: what of the run's changeset is applied when it ends.
	Apply changeset.ApplyMode
	// relay is the terminal relay of a plain command's run at a terminal (nil: none).
	relay *ptyrelay.Relay
}

func init() {
	add := func(s streams) *cobra.Command { return newEnforceCmd(s, runEnforce) }
	subcommands = append(subcommands, add)
	alone["enforce"] = add
}

func newEnforceCmd(s streams, runF func(context.Context, *enforceOptions) error) *cobra.Command {
	o := &enforceOptions{streams: s}
	cmd := &cobra.Command{
		Use:   "enforce [-p FILE] [--audit] [--report FILE] -- CMD [ARGS...] | enforce --step NAME | --all",
		Short: "Run CMD under its profile and explain every denial",
		Long: `enforce runs CMD so that it can do what its profile allows and nothing else: a read-only
root with the profile's writable directories, hidden credential stores, a private /tmp, Landlock,
a seccomp allowlist with argument rules, and the network allowlist. Every denial is collected and
printed on stderr at exit with the one-line profile change that would allow it. If a layer the
profile needs cannot be applied on this host, enforce refuses to run (exit 125) unless you name
it: --degrade=LAYER[,LAYER...] lets those layers go (a bare --degrade: any), and the report lists
what was dropped.
The exit status is CMD's; with --fail-on-denial it is 1 when CMD succeeded but something was
denied (or would have been, under --audit), and when CMD failed with no denial reported enforce
says in one line which kinds of denial this run could not observe.

With --step NAME (repeatable) or --all, enforce runs the steps of sysprof.yaml in order, each in
its workdir under its own profile (format, lint, build and test gates inside the sandbox). It
stops at the first step that fails, with that step's status, and prints the denials of every
step that ran in one table; --report FILE writes one report per step, FILE.<step>.json.
failOnDenial: true in sysprof.yaml does for steps what --fail-on-denial does (the flag wins).
The steps are a ratchet: they write into one changeset, each sees what the steps before it
wrote, and nothing is applied until every step passed; a failed gate holds everything (its
report names the gate) and the end prints the review.

Writes into staged directories (a file rule, a directory that does not exist yet, a tree with
protected paths in it) go into the run's changeset: --apply learned (the default) applies what
the profile's write rules cover, safe also held ordinary changes inside the work tree but
build definitions (a Makefile, package.json), none nothing; everything else is held for review with 'sysprof changes', never discarded.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.FailOnDenialSet = cmd.Flags().Changed("fail-on-denial")
			if len(args) > 0 && slices.Contains(enforcer.DegradableLayers, args[0]) && slices.Equal(o.Degrade, enforcer.DegradeAll) {
				// `--degrade userns -- CMD`: the layer would become the command.
				return fmt.Errorf("--degrade takes its layers after '=': --degrade=%s", args[0])
			}
			if gates, cfg, ok, err := resolveGates(cmd, args, o.Steps, o.All, o.Profile); ok || err != nil {
				if err != nil {
					return err
				}
				o.Gates = gates
				if !o.FailOnDenialSet && cfg.Project != nil {
					o.FailOnDenial = cfg.Project.FailOnDenial
				}
				if o.Reports, err = newRunReporter(cfg, o.Err); err != nil {
					return err
				}
				return runF(cmd.Context(), o)
			}
			cfg, err := commandTarget(cmd, args, &o.Command, &o.Profile)
			if err != nil {
				return err
			}
			if o.Reports, err = newRunReporter(cfg, o.Err); err != nil {
				return err
			}
			return runF(cmd.Context(), o)
		},
	}
	cmd.Flags().SetInterspersed(false)
	f := cmd.Flags()
	f.StringVarP(&o.Profile, "profile", "p", "", "profile file (default .sysprof/<name>.yaml)")
	f.BoolVar(&o.Audit, "audit", false, "complain mode: allow everything, report what would have been denied")
	f.BoolVar(&o.VerifyBinaries, "verify-binaries", false, "refuse to run when a binary differs from the sha256 learn recorded (exit 125)")
	f.Var(degradeFlag{&o.Degrade}, "degrade", "run without the named layers when this host cannot apply them (reported): LAYER[,LAYER...] of "+strings.Join(enforcer.DegradableLayers, ", ")+"; bare --degrade: any")
	f.Lookup("degrade").NoOptDefVal = "all"
	f.StringVar(&o.Report, "report", "", "write the denial report as JSON to `FILE` (input for sysprof refine)")
	f.StringVar(&o.HTML, "html", "", "write the run's process tree, with its denials marked, as one self-contained HTML page to `FILE`")
	f.StringArrayVar(&o.Resolve, "resolve", nil, "NAME=ADDR[,ADDR...]: the egress proxy dials ADDR for the allowed NAME instead of resolving it (like curl's --resolve; loopback allowed)")
	f.Var(publishFlag{&o.Publish}, "publish", "let CMD listen on 127.0.0.1:`PORT` and publish it to the host (learned loopback listeners are published without it; repeatable)")
	f.BoolVar(&o.FailOnDenial, "fail-on-denial", false, "exit 1 when CMD succeeded but something was denied or held for review (a gate: no denial passes silently)")
	f.Var(applyFlag{&o.Apply}, "apply", "what of the run's writes to staged directories is applied when it ends: learned (what the profile's write rules cover), safe (also held ordinary changes inside the work tree, never dangerous ones nor build definitions) or none (a CI job that only verifies); the rest is held for review with sysprof changes")
	addStepFlags(f, &o.Steps, &o.All)
	return cmd
}

// enforceProcess sets this process up for enforce, once: main calls it before the CLI parses
// anything (the init program's memfd and the guard's programs then overlap the parsing), runEnforce again.
var enforceProcess = sync.OnceFunc(func() {
	// Startup allocates a few MB and keeps little: with the default 4 MB goal a collection
	// ran in the middle of it on every run. The supervisor's heap stays small afterwards.
	debug.SetGCPercent(400)
	// The supervisor's goroutines spend their time in blocking syscalls (perf_event_open waits
	// on a kernel mutex, the seccomp listener, the status pipe). A goroutine in a syscall keeps
	// its P until sysmon takes it back, 20 µs to 10 ms later: with GOMAXPROCS=2 the goroutine
	// that hands the sandbox its listener waited for a P for 0.5-3 ms (BENCHMARKS.md). Spare
	// Ps cost nothing.
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(max(runtime.GOMAXPROCS(0), 8))
	}
	// As root the guard's BPF programs are opened (or loaded) while the profile loads.
	enforcer.Prewarm()
})

func runEnforce(ctx context.Context, o *enforceOptions) error {
	// SYSPROF_CPUPROFILE=FILE (undocumented): a Go CPU profile of sysprof itself, for bench work.
	if f := os.Getenv("SYSPROF_CPUPROFILE"); f != "" {
		if w, err := os.Create(f); err == nil && pprof.StartCPUProfile(w) == nil {
			defer func() { pprof.StopCPUProfile(); w.Close() }()
		}
	}
	enforceProcess()
	if len(o.Gates) > 0 {
		return runEnforceGates(ctx, o)
	}
	phase.Mark("cli")
	// The profile loads and compiles on another goroutine while the init stage starts on this
	// one (it dies with this goroutine's thread): the memfd of its program and its clone take
	// a few ms, mostly in the kernel.
	resolve, resolveErr := parseResolve(o.Resolve)
	// At a terminal the command gets a pty of sysprof's (before the early stage: its streams).
	relay, err := enforcer.OpenTerminalRelay()
	phase.Mark("terminal relay")
	if err != nil {
		fmt.Fprintf(o.Err, "sysprof: %v; the command runs without a terminal of its own\n", err)
	}
	o.relay = relay
	defer relay.Close() // the user's terminal gets its modes back on every way out
	if errTTY, ok := o.Err.(*os.File); ok && relay != nil && errTTY == os.Stderr && relay.Streams[2] != nil {
		o.Err = relay.Streams[2] // sysprof's lines before the command ends go the command's way
		defer func() { o.Err = errTTY }()
	}
	prep := make(chan preparedEnforce, 1)
	go func() { prep <- o.prepare(resolve, resolveErr == nil) }()
	early := enforcer.StartEarly(enforcer.Relayed(enforcer.Options{Degrade: o.Degrade}, relay))
	defer early.Close()
	pe := <-prep
	phase.Mark("policy.Load, compile (wait)")
	p, err := pe.p, pe.err
	if err != nil {
		return withCode(exitSysprof, fmt.Errorf("%w (learn one with `sudo sysprof learn -p %s -- CMD`)", err, o.Profile))
	}
	warnIncomplete(o.Err, "", o.Profile, p)
	if o.Report != "" {
		if err := checkWritable(o.Report); err != nil {
			pe.run.Discard()
			return withCode(exitSysprof, err)
		}
	}
	if resolveErr != nil {
		return withCode(exitSysprof, resolveErr)
	}
	var rep *report.Report
	var code int
	if pe.run == nil { // o.Audit && canAuditByLearning()
		early.Close()
		o.Err = o.endRelay(nil)
		rep, code, err = auditByLearning(ctx, o, p)
	} else {
		rep, code, err = pe.run.Run(ctx, early)
		o.Err = o.endRelay(rep)
	}
	// The command is gone: what it left set on the terminal must not hide what follows (and a
	// run with nothing to say writes nothing).
	o.Err = report.ResetBeforeFirstWrite(o.Err)
	if err != nil {
		return commandErrorEnforce(code, err)
	}
	phase.Mark("enforcer.Run")
	if err := rep.WriteTable(o.Err); err != nil {
		return withCode(exitSysprof, err)
	}
	o.Reports.save(enforceKind(rep), project.Step{Command: o.Command}, o.Profile, p, rep, nil)
	if o.HTML != "" {
		r := runview.FromProfile(o.Profile, p)
		if o.trace != nil {
			r = runview.FromTrace(o.trace)
			r.Profile = o.Profile
		}
		r.AddReport(rep)
		if err := writeRunHTML(o.Err, o.HTML, r); err != nil {
			return err
		}
	}
	writeChanges(o.Err, "", rep.Changes)
	if o.Report != "" {
		if err := rep.Save(o.Report); err != nil {
			return withCode(exitSysprof, fmt.Errorf("write report: %w", err))
		}
		giveToSudoUser(o.Err, o.Report)
	}
	if o.FailOnDenial {
		if failed := denialVerdict(o.Err, "", rep, code); failed != nil {
			return failed
		}
	}
	if code != 0 {
		return withCode(code, nil)
	}
	return nil
}

// preparedEnforce is the profile of a plain enforce run (p, or err when it did not load) and the
// run prepared from it (nil for an audit run that learns instead).
type preparedEnforce struct {
	p   *policy.Profile
	run *enforcer.Prepared
	err error
}

// prepare loads the profile (what policy.Load made of these bytes before, verified by
// profilecache, or a load) and, when compile, prepares the run (enforcer.Prepare: host values,
// compile) unless an audit run learns instead.
func (o *enforceOptions) prepare(resolve map[string][]netip.Addr, compile bool) preparedEnforce {
	start := time.Now()
	p, err := profilecache.Load(o.Profile, version)
	phase.Since("policy.Load", start)
	if err != nil {
		return preparedEnforce{err: err}
	}
	addPublished(p, o.Publish)
	if !compile || o.Audit && canAuditByLearning() {
		return preparedEnforce{p: p}
	}
	start = time.Now()
	run := enforcer.Prepare(o.runOptions(p, project.Step{Command: o.Command, Profile: o.Profile}, resolve))
	phase.Since("host env, compile", start)
	return preparedEnforce{p: p, run: run}
}

// runOptions is what enforcer.Run gets for a step, or for a plain command (a step without a
// name, run here with sysprof's environment): every flag applies to both.
func (o *enforceOptions) runOptions(p *policy.Profile, st project.Step, resolve map[string][]netip.Addr) enforcer.Options {
	opts := enforcer.Options{
		Profile:        p,
		ProfilePath:    st.Profile,
		Command:        st.Command,
		Dir:            st.Workdir,
		Audit:          o.Audit,
		Degrade:        o.Degrade,
		VerifyBinaries: o.VerifyBinaries,
		Resolve:        resolve,
		LogAllowed:     o.Report != "",
		Apply:          o.Apply,
	}
	if st.Name != "" {
		opts.Env = st.Environ()
	} else {
		opts = enforcer.Relayed(opts, o.relay)
	}
	if o.Reports != nil {
		opts.ReportsDir = o.Reports.dir
	}
	return opts
}

// endRelay closes the terminal relay (the command is gone), records what its filter dropped
// in rep, and returns where sysprof's own lines go now.
func (o *enforceOptions) endRelay(rep *report.Report) io.Writer {
	if o.relay == nil {
		return o.Err
	}
	start := time.Now()
	o.relay.Close()
	phase.Since("terminal relay: drain and close", start)
	if rep != nil {
		rep.Notes = append(rep.Notes, o.relay.Notes()...)
	}
	if f, ok := o.Err.(*os.File); ok && f == o.relay.Streams[2] {
		return os.Stderr
	}
	return o.Err
}

// warnIncomplete warns that the profile about to be enforced was marked incomplete when learned
// (events lost, or the learn was interrupted): what it missed will be denied. prefix names the
// step ("" for a command).
func warnIncomplete(w io.Writer, prefix, path string, p *policy.Profile) {
	if !p.Metadata.Incomplete {
		return
	}
	why := "its learn lost kernel events or was interrupted"
	if len(p.Metadata.IncompleteReasons) > 0 {
		why = strings.Join(p.Metadata.IncompleteReasons, "; ")
	}
	fmt.Fprintf(w, "sysprof: WARNING: %s%s is marked incomplete (%s): what the learn missed will be denied; learn it again to complete it\n", prefix, path, why)
}

// denialVerdict is --fail-on-denial's decision on one enforced command that exited with code:
// an error carrying exitDenied when CMD succeeded with denials; when CMD failed with none
// reported, a one-line pointer to what this run could not observe (and nil: CMD's status stands).
func denialVerdict(w io.Writer, prefix string, rep *report.Report, code int) error {
	n := 0
	for _, d := range rep.Denials {
		n += d.Count
	}
	held := rep.Changes.Review()
	switch {
	case code == 0 && n+held == 0 && rep.LostRecords > 0:
		return withCode(exitDenied, fmt.Errorf("%s--fail-on-denial: the command succeeded, but %d record(s) of refused operations were lost (exit %d)", prefix, rep.LostRecords, exitDenied))
	case code == 0 && n+held > 0:
		verb := "denied"
		if rep.Audit {
			verb = "would have been denied (audit)"
		}
		what := fmt.Sprintf("%d operation(s) %s", n, verb)
		switch {
		case n == 0:
			what = fmt.Sprintf("%d change(s) were held for review (run %s)", held, rep.Changes.Run)
		case held > 0:
			what += fmt.Sprintf(" and %d change(s) were held for review (run %s)", held, rep.Changes.Run)
		}
		return withCode(exitDenied, fmt.Errorf("%s--fail-on-denial: the command succeeded, but %s (exit %d)", prefix, what, exitDenied))
	case code != 0 && n == 0:
		unseen := "nothing: every denial is observable in this run"
		if len(rep.Unobservable) > 0 {
			unseen = strings.Join(rep.Unobservable, "; ")
		}
		fmt.Fprintf(w, "sysprof: %sthe command failed (status %d) with no denial reported; this run could not observe: %s\n", prefix, code, unseen)
	}
	return nil
}

// commandErrorEnforce keeps 126/127 from the init stage and maps everything else to 125.
func commandErrorEnforce(code int, err error) error {
	if code == exitNotExec || code == exitNotFound {
		return withCode(code, err)
	}
	return withCode(exitSysprof, err)
}

// degradeFlag is --degrade[=LAYER,...] (enforcer.ParseDegrade).
type degradeFlag struct{ d *enforcer.Degrade }

func (f degradeFlag) String() string {
	if f.d == nil {
		return ""
	}
	return strings.Join(*f.d, ",")
}

func (f degradeFlag) Set(s string) error {
	d, err := enforcer.ParseDegrade(s)
	if err != nil {
		return err
	}
	*f.d = append(*f.d, d...)
	return nil
}

func (degradeFlag) Type() string { return "layers" }

// publishFlag is --publish PORT (repeatable).
type publishFlag struct{ ports *[]uint16 }

func (f publishFlag) String() string {
	if f.ports == nil || len(*f.ports) == 0 {
		return ""
	}
	return fmt.Sprint(*f.ports)
}

func (f publishFlag) Set(s string) error {
	n, err := strconv.ParseUint(s, 10, 16)
	if err != nil || n == 0 {
		return fmt.Errorf("--publish %q: a TCP port, 1-65535 (the command's listener on 127.0.0.1)", s)
	}
	*f.ports = append(*f.ports, uint16(n))
	return nil
}

func (publishFlag) Type() string { return "PORT" }

// addPublished adds a bind rule for each --publish PORT: the command may listen there, and the
// listener is published to the host like a learned one (plain and --step/--all runs alike).
func addPublished(p *policy.Profile, ports []uint16) {
	for _, port := range ports {
		p.Network.Bind = append(p.Network.Bind, enforcer.PublishEndpoint(port))
	}
}
