package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/sysprof/sysprof/internal/phase"
	"github.com/sysprof/sysprof/paths"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/profiler"
	"github.com/sysprof/sysprof/profiles"
	"github.com/sysprof/sysprof/project"
	"github.com/sysprof/sysprof/report"
	"github.com/sysprof/sysprof/synth"
	"github.com/sysprof/sysprof/trace"
)

type learnOptions struct {
	streams
	Command  []string
	Profile  string
	Fresh    bool
	TraceOut string
	Strict   bool
	// AcceptRisky writes the persistence and secret allowances of the run as accepted, not
	// pending (policy.MarkPending).
	AcceptRisky bool
	Explain     bool
	Portable    bool
	Exact       bool
	Arches      []string
	// Runs and Between: learn the command Runs times, running Between (sh -c) before each run
	// after the first, and merge what every run saw.
	Runs         int
	Between      string
	Force        bool
	AllowSecrets []string
	// PassEnv names secret-looking environment variables the profile lets through (env.pass).
	PassEnv []string
	RingBuf int
	Debug   bool
	// FromProfile names a shipped profile (profiles/NAME.yaml, embedded) the learned profile is
	// merged into instead of starting empty.
	FromProfile string
	// Steps and All select steps of sysprof.yaml instead of a command; Gates are the steps
	// selected, in the order they run.
	Steps []string
	All   bool
	Gates []project.Step
}

func init() {
	subcommands = append(subcommands, func(s streams) *cobra.Command { return newLearnCmd(s, runLearn) })
}

func newLearnCmd(s streams, runF func(context.Context, *learnOptions) error) *cobra.Command {
	o := &learnOptions{streams: s}
	cmd := &cobra.Command{
		Use:   "learn [-p FILE] [--fresh] [--trace-out FILE] -- CMD [ARGS...] | learn --step NAME | --all",
		Short: "Run CMD permissively under eBPF and write (or merge) its profile",
		Long: `learn runs CMD with nothing blocked, records what its whole process tree uses (syscalls and
their risky arguments, files, network endpoints and DNS names, executed binaries), synthesizes a
minimal policy and merges it into the profile (unless --fresh). Needs root or CAP_BPF+CAP_PERFMON.
The exit status is CMD's.

With --step NAME (repeatable) or --all, learn runs the steps of sysprof.yaml instead, each in its
workdir with its env, into its own profile, adding the step's writable paths and hosts; it stops
at the first step that fails, with that step's status (its profile is still saved).
--trace-out FILE then writes FILE.<step>.json per step.

With --from-profile NAME, the learned profile starts from a copy of the shipped profile NAME
(reviewed profiles built into sysprof) instead of from nothing: what this run saw is merged into
it, and the result takes this command's name. Shipped: ` + strings.Join(profiles.Names(), ", ") + `.

learn ends with a review list of the risky allowances it just added to the profile, worst first
and rated like ` + "`sysprof diff`" + `: writes to protected paths (.git, .github, .sysprof, shell rc files,
~/.config/systemd, ~/.config/autostart, ...) and anything else critical (writes outside the work
tree and caches such as cron or /proc, readable secrets, privileged syscalls), new network
destinations, and the credential stores the tool touched (kept hidden). With --strict a
non-empty list fails the learn with exit 125 after writing the profile, so CI notices.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if gates, cfg, ok, err := resolveGates(cmd, args, o.Steps, o.All, o.Profile); ok || err != nil {
				if err != nil {
					return err
				}
				if o.FromProfile != "" {
					return withCode(exitSysprof, errors.New("--from-profile works with a command (learn --from-profile NAME -- CMD), not with --step or --all: set the step's profile file instead"))
				}
				o.Gates, o.Debug = gates, cfg.Debug
				return runF(cmd.Context(), o)
			}
			cfg, err := commandTarget(cmd, args, &o.Command, &o.Profile)
			if err != nil {
				return err
			}
			o.Debug = cfg.Debug
			return runF(cmd.Context(), o)
		},
	}
	cmd.Flags().SetInterspersed(false)
	f := cmd.Flags()
	f.StringVarP(&o.Profile, "profile", "p", "", "profile file (default .sysprof/<name>.yaml)")
	f.BoolVar(&o.Fresh, "fresh", false, "replace the profile instead of merging into it")
	f.StringVar(&o.TraceOut, "trace-out", "", "also write the raw trace (JSON) to this file")
	f.BoolVar(&o.AcceptRisky, "accept-risky", false, "accept the persistence and secret allowances of this run (writes to protected paths, reads of credential stores) instead of writing them pending until sysprof refine accepts them (scripted flows; learn says what it accepted)")
	f.BoolVar(&o.Strict, "strict", false, "fail (exit 125) if any kernel event was lost (profile not written), or if the review list is not empty (profile written)")
	f.BoolVar(&o.Explain, "explain", false, "print what each synthesis pass did")
	f.BoolVar(&o.Portable, "portable", true, "the profile runs on other distros (libc-variant syscall families, versions globbed): the default; --portable=false or --exact turn it off")
	f.BoolVar(&o.Exact, "exact", false, "allow only the syscalls seen and the paths as seen: no behaviour-equivalence families (listed by show --explain), no portability (libc variants, versions globbed)")
	f.StringSliceVar(&o.Arches, "arch", nil, "architectures the profile lists (default x86_64,aarch64)")
	f.IntVar(&o.Runs, "runs", 1, "learn the command this many times and merge what every run saw")
	f.StringVar(&o.Between, "between", "", "shell command run (unsandboxed) before each run after the first, e.g. 'touch main.c' to learn an incremental rebuild")
	f.BoolVar(&o.Force, "force", false, "merge even if the profile was learned for a different command")
	f.StringArrayVar(&o.AllowSecrets, "allow-secret", nil, "credential path the tool may read (repeatable)")
	f.StringArrayVar(&o.PassEnv, "pass-env", nil, "secret-looking environment variable enforce passes to the command (repeatable; env.pass)")
	f.IntVar(&o.RingBuf, "ringbuf-size", 0, "ring buffer size in bytes (power of two; default 16 MiB)")
	_ = f.MarkHidden("ringbuf-size")
	f.StringVar(&o.FromProfile, "from-profile", "", "start from the shipped profile NAME (e.g. go-build) instead of from nothing")
	addStepFlags(f, &o.Steps, &o.All)
	return cmd
}

func runLearn(ctx context.Context, o *learnOptions) error {
	// SYSPROF_CPUPROFILE=FILE (undocumented): a Go CPU profile of sysprof itself, for bench work.
	if f := os.Getenv("SYSPROF_CPUPROFILE"); f != "" {
		if w, err := os.Create(f); err == nil && pprof.StartCPUProfile(w) == nil {
			defer func() { pprof.StopCPUProfile(); w.Close() }()
		}
	}
	// The flags are checked once, for a command or for every step.
	for _, a := range o.Arches {
		if !slices.Contains(policy.Architectures, a) {
			return withCode(exitSysprof, fmt.Errorf("--arch %s: not an architecture sysprof knows (%s)", a, strings.Join(policy.Architectures, ", ")))
		}
	}
	if o.Runs < 1 {
		return withCode(exitSysprof, fmt.Errorf("--runs %d: want at least 1", o.Runs))
	}
	if len(o.Gates) > 0 {
		return runLearnGates(ctx, o)
	}
	if err := checkWritable(o.Profile); err != nil {
		return withCode(exitSysprof, err)
	}
	if o.TraceOut != "" {
		if err := checkWritable(o.TraceOut); err != nil {
			return withCode(exitSysprof, err)
		}
	}
	var shipped *policy.Profile
	if o.FromProfile != "" {
		var err error
		if shipped, err = profiles.Load(o.FromProfile); err != nil {
			return withCode(exitSysprof, fmt.Errorf("--from-profile: %w", err))
		}
	}
	return learnTarget(ctx, o, project.Step{Command: o.Command, Profile: o.Profile}, shipped)
}

// learnTarget learns a step, or a plain command (a step without a name, run here with
// sysprof's environment), into its profile: o.Runs runs merged, the step's allowances added,
// started from shipped when not nil; then the summary and the review list.
func learnTarget(ctx context.Context, o *learnOptions, st project.Step, shipped *policy.Profile) error {
	runs := func(ctx context.Context, po profiler.Options, so synth.Options) (*trace.Trace, *synth.Result, time.Duration, error) {
		return learnRuns(ctx, o, po, so)
	}
	if libs, _, _ := paths.UserPreload(os.LookupEnv); len(libs) > 0 && st.Name == "" {
		// The trace cannot tell the preload's calls from the command's.
		fmt.Fprintf(o.Err, "sysprof: note: LD_PRELOAD=%s is set: what it does in every process is learned as the command's (unset it to learn the command alone; enforce and drift allow a preload of system libraries you set for their run)\n", strings.Join(libs, ":"))
	}
	tr, res, wall, err := learnStep(ctx, o.Err, st, o.TraceOut, runs, profiler.Options{RingBufferBytes: o.RingBuf, Debug: o.Debug, Env: paths.LearnEnv()}, synth.Options{
		Exact:          o.Exact,
		Unportable:     !o.Portable,
		Architectures:  o.Arches,
		AllowSecrets:   o.AllowSecrets,
		SysprofVersion: version,
		Stores:         learnStores(o.Err, st.Workdir),
		EnvTokens:      learnEnvTokens(),
	})
	if err != nil {
		return err
	}
	if o.Explain {
		printExplain(o.Err, res.Explain)
	}
	if o.Strict && tr.Loss.Any() {
		return withCode(exitSysprof, fmt.Errorf("%s--strict: %d ring-buffer events and %d map entries were lost; the profile was not written (rerun with a larger --ringbuf-size)", stepPrefix(st), tr.Loss.RingbufDrops, tr.Loss.MapFull))
	}
	learned := res.Profile
	learned.Env.Pass = append(learned.Env.Pass, o.PassEnv...)
	if shipped != nil {
		learned = fromShipped(shipped, learned)
		fmt.Fprintf(o.Err, "sysprof: started from the shipped profile %s (%d syscalls, %d read, %d write, %d exec paths)\n",
			o.FromProfile, len(shipped.Syscalls.Allow), len(shipped.Filesystem.Read), len(shipped.Filesystem.Write), len(shipped.Filesystem.Exec))
	}
	if st.Name != "" {
		st.AddAllowances(learned)
	}
	table := make(chan []byte, 1)
	width := report.Width(o.Err)
	go func() { table <- renderLearnSummary(tr, wall, width) }()
	clock := phase.NewClock("learn")
	review, pending, err := saveLearned(st.Profile, learned, o.Fresh, o.Force, o.AcceptRisky)
	if err != nil {
		return withCode(exitSysprof, fmt.Errorf("%s%w", stepPrefix(st), err))
	}
	giveToSudoUser(o.Err, st.Profile, st.Profile+".lock")
	clock.Mark("save")
	printLearnSummary(o.Err, <-table, tr, st.Profile)
	n := printReview(o.Err, review, res.SecretTouches, pendingUnless(pending, o.AcceptRisky))
	printPending(o.Err, pending, o.AcceptRisky)
	printCredentialFlows(o.Err, res.CredentialFlows)
	if o.Debug || os.Getenv("SYSPROF_STATS") != "" {
		printPeakRSS(o.Err)
	}
	if o.Strict && n > 0 {
		return withCode(exitSysprof, fmt.Errorf("%s--strict: %d item(s) on the review list; %s was written: review it (sysprof show -p %s), then learn again without --strict or edit the profile", stepPrefix(st), n, st.Profile, st.Profile))
	}
	if tr.ExitCode != 0 {
		if st.Name == "" {
			return withCode(tr.ExitCode, nil) // the command's own status, nothing to add
		}
		return withCode(tr.ExitCode, fmt.Errorf("step %s: %s exited with status %d (its profile was saved; later steps were not learned)", st.Name, shellQuote(st.Command), tr.ExitCode))
	}
	return nil
}

// learnRuns learns the command o.Runs times (o.Between before each run after the first) and
// merges the profiles: what one run misses (a cold cache, an incremental rebuild) the next may
// see. It stops at the first run that fails, keeping what the runs so far saw; the trace and
// warnings returned are those of the last run, with the merged profile in res.Profile.
func learnRuns(ctx context.Context, o *learnOptions, po profiler.Options, so synth.Options) (*trace.Trace, *synth.Result, time.Duration, error) {
	var merged *policy.Profile
	var tr *trace.Trace
	var res *synth.Result
	var wall time.Duration
	for i := 0; i < o.Runs; i++ {
		if i > 0 && o.Between != "" {
			c := exec.CommandContext(ctx, "sh", "-c", o.Between)
			c.Stdout, c.Stderr = o.Err, o.Err
			if err := c.Run(); err != nil {
				return nil, nil, 0, withCode(exitSysprof, fmt.Errorf("--between %q before run %d: %w", o.Between, i+1, err))
			}
		}
		t, r, w, err := learnOnce(ctx, po, so)
		if err != nil {
			if merged == nil {
				return nil, nil, 0, err
			}
			fmt.Fprintf(o.Err, "sysprof: run %d of %d failed (%v): keeping what %d run(s) saw\n", i+1, o.Runs, err, i)
			break
		}
		tr, res, wall = t, r, wall+w
		if merged == nil {
			merged = r.Profile
		} else {
			merged = policy.Merge(merged, r.Profile)
		}
		if o.Runs > 1 {
			fmt.Fprintf(o.Err, "sysprof: learn run %d of %d: exit %d\n", i+1, o.Runs, t.ExitCode)
		}
		if t.ExitCode != 0 {
			break
		}
	}
	res.Profile = merged
	return tr, res, wall, nil
}

// learnOnce runs the command under the profiler and synthesizes what it saw.
func learnOnce(ctx context.Context, po profiler.Options, so synth.Options) (*trace.Trace, *synth.Result, time.Duration, error) {
	// Not restored when the run ends: the default brought back with the run's trace and
	// synthesis still live started a collection in the profile's save (~10% of the CPU of a
	// `learn -- true`); past learnGCHeapGoal the default comes back anyway.
	learnGC()
	start := time.Now()
	tr, err := profiler.Run(ctx, po)
	// The command is gone: what it left set on the terminal must not hide the review list.
	report.ResetTerminal(os.Stderr)
	if err != nil {
		return nil, nil, 0, commandError(err)
	}
	wall := time.Since(start)
	clock := phase.NewClock("learn")
	res, err := synth.Synthesize(tr, so)
	clock.Mark("synthesize")
	if err != nil {
		return nil, nil, 0, withCode(exitSysprof, fmt.Errorf("synthesize: %w", err))
	}
	return tr, res, wall, nil
}

// saveLearned merges a learned profile into path under the profile lock so that concurrent learns
// never lose each other's observations. With fresh it replaces the profile, still under the lock,
// without reading (and parsing) what was there. It returns the review list of what the write
// added (policy.Review against the profile that was there; against nothing with fresh or a new file).
//
// Unless acceptRisky, the allowances of persistence and secret kinds are written pending
// (policy.MarkPending): enforce denies them until refine accepts them. pending lists them
// (with acceptRisky: what was accepted).
func saveLearned(path string, learned *policy.Profile, fresh, force, acceptRisky bool) (review, pending []policy.Change, err error) {
	mark := func(old, p *policy.Profile) {
		if acceptRisky {
			p = policy.Clone(p) // only to say what --accept-risky accepted
		}
		pending = policy.MarkPending(old, p)
	}
	if fresh {
		unlock, err := policy.Lock(path)
		if err != nil {
			return nil, nil, err
		}
		defer unlock()
		review = policy.Review(nil, learned)
		mark(nil, learned)
		return review, pending, policy.Save(path, learned)
	}
	err = policy.Update(path, func(old *policy.Profile) (*policy.Profile, error) {
		if old == nil {
			review = policy.Review(nil, learned)
			mark(nil, learned)
			return learned, nil
		}
		if !force && !policy.SameCommand(old, learned) {
			return nil, fmt.Errorf("%s was learned for %q, not %q: use --force to merge anyway or -p for another file", path, old.Metadata.Command, learned.Metadata.Command)
		}
		merged := policy.Merge(old, learned)
		review = policy.Review(old, merged)
		mark(old, merged)
		return merged, nil
	})
	return review, pending, err
}

// printPending says what the run's critical allowances became: pending (and how to accept
// them) or, with --accept-risky, accepted.
func printPending(w io.Writer, pending []policy.Change, acceptRisky bool) {
	if acceptRisky {
		var items []string
		for _, c := range pending {
			items = append(items, c.Section+": + "+c.Item)
		}
		if len(items) > 0 {
			fmt.Fprintf(w, "sysprof: --accept-risky: accepted %d item(s) that would be pending: %s\n", len(items), report.Printable(strings.Join(items, "; ")))
		}
		return
	}
	if len(pending) > 0 {
		fmt.Fprintf(w, "sysprof: %d item(s) written PENDING: enforce denies them until `sysprof refine` accepts them (interactively, or --only naming each), or learn again with --accept-risky\n", len(pending))
	}
}

// pendingUnless is pending, or nothing when the items were accepted.
func pendingUnless(pending []policy.Change, accepted bool) []policy.Change {
	if accepted {
		return nil
	}
	return pending
}

// printReview prints learn's review list: the risky allowances just added, worst first, and
// the credential stores the tool touched (kept hidden). It returns how many items it listed.
func printReview(w io.Writer, review []policy.Change, secrets []synth.SecretTouch, pending []policy.Change) int {
	n := len(review) + len(secrets)
	if n == 0 {
		return 0
	}
	fmt.Fprintf(w, "sysprof: REVIEW: %d risky item(s) in this learn, worst first (rated like `sysprof diff`):\n", n)
	for _, c := range review {
		by := ""
		if c.By != "" {
			by = " (by " + c.By + ")"
		}
		if slices.ContainsFunc(pending, func(p policy.Change) bool { return p.Section == c.Section && p.Item == c.Item }) {
			by += " PENDING"
		}
		fmt.Fprintf(w, "  %-8s %s: + %s%s: %s\n", c.Risk, c.Section, report.Printable(c.Item), report.Printable(by), report.Printable(c.Reason))
	}
	for _, st := range secrets {
		fmt.Fprintf(w, "  %-8s %s %s %s (by %s): not allowed, %s stays hidden\n", policy.RiskCritical, "secret", st.Access, report.Printable(st.Path), report.Printable(st.Exe), report.Printable(st.Store))
	}
	return n
}

// fromShipped merges a learned profile into a copy of a shipped one: everything either allows,
// under the learned command's name, so that later learns of the same command merge into it.
func fromShipped(shipped, learned *policy.Profile) *policy.Profile {
	base := policy.Clone(shipped)
	base.Metadata.Name = learned.Metadata.Name
	base.Metadata.Command = slices.Clone(learned.Metadata.Command)
	return policy.Merge(base, learned)
}

// commandError maps a profiler error to the exit statuses of DESIGN.md.
func commandError(err error) error {
	var ce *profiler.CommandError
	if errors.As(err, &ce) {
		return withCode(ce.Code, err)
	}
	return withCode(exitSysprof, err)
}

// checkWritable fails early, before the command runs, when the output file cannot be written.
func checkWritable(path string) error {
	dir := filepath.Dir(path)
	made := missingDirs(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("profile directory %s: %w", dir, err)
	}
	giveToSudoUser(os.Stderr, made...)
	f, err := os.CreateTemp(dir, ".sysprof-probe-*")
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

func writeJSONAtomic(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(path, append(b, '\n'))
}

func writeFileAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// learnGCPercent and learnGCHeapGoal: see learnGC.
const learnGCPercent = 400

var learnGCHeapGoal uint64 = 256 << 20

// learnGC makes collections rare while learn runs, and returns what restores the setting.
// Most of learn's heap is kept (the trace being built, then synthesis's few MB allocated within
// tens of milliseconds), so a collection frees little, and its marking takes a CPU from the
// command on a 2-vCPU machine: learn of find /usr went 1.53x -> 1.46x and 1.56x -> 1.51x bare
// (interleaved with the binary before, 16 and 24 rounds; BENCHMARKS.md), 61 -> 63 MB peak RSS. Once the heap goal passes
// learnGCHeapGoal (a trace of a huge build) the default comes back, so memory stays ~2x what
// is live rather than 5x. A GOGC the user set (off, or above 400) is kept.
//
// The goal changes only when a collection ends, so it is looked at then (a finalizer that
// re-arms itself each cycle), not on a timer: a 50 ms ticker's ReadMemStats stopped the world
// 20 times a second and woke sysprof while the command ran.
func learnGC() (restore func()) {
	old := debug.SetGCPercent(learnGCPercent)
	if old < 0 || old >= learnGCPercent {
		debug.SetGCPercent(old)
		return func() {}
	}
	var mu sync.Mutex
	done := false
	var watch func(*gcSentinel)
	watch = func(*gcSentinel) {
		mu.Lock()
		defer mu.Unlock()
		if done {
			return
		}
		var ms runtime.MemStats
		if runtime.ReadMemStats(&ms); ms.NextGC > learnGCHeapGoal {
			debug.SetGCPercent(old)
			done = true
			return
		}
		runtime.SetFinalizer(&gcSentinel{}, watch) // the next collection's
	}
	runtime.SetFinalizer(&gcSentinel{}, watch)
	return func() {
		mu.Lock()
		defer mu.Unlock()
		done = true
		debug.SetGCPercent(old)
	}
}

// gcSentinel is what learnGC's finalizer hangs on: garbage at the next collection (32 bytes:
// an object of the tiny allocator, under 16, may never be finalized).
type gcSentinel struct{ _ [32]byte }
