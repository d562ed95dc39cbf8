package enforcer

import (
	"github.com/sysprof/sysprof/enforcer/initstage"
	"net/netip"
	"os"
	"slices"
	"sync"

	"golang.org/x/net/bpf"

	"github.com/sysprof/sysprof/netproxy"
	"github.com/sysprof/sysprof/paths"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/sandbox"
	"github.com/sysprof/sysprof/seccomp"
)

// Env is what a profile's portable names mean on this host.
type Env struct {
	// Vars expands $VARS in profile paths: WORKDIR, HOME, TMPDIR, CARGO_HOME, ... (see HostEnv).
	Vars map[string]string
	// Arch is the host's architecture as go-seccomp-bpf names it ("x86_64"); empty: this host.
	Arch string
	// Command is the executable the run starts (resolved): what a profile without exec rules
	// may run, and nothing else. Empty: nothing.
	Command string
	// Environ is the command's environment (nil: sysprof's own): where brokered variables'
	// real values come from.
	Environ []string `json:"-"`
	// Terminal is the pseudo-terminal the command's stdio is on (stdioTerminal), which it may
	// reopen; empty: none.
	Terminal string
	// Audit: the run lets refused syscalls continue (enforce --audit), so every syscall may
	// reach the kernel (the host's sockets are hidden whatever the filter allows).
	Audit bool `json:"-"`
	// Own are sysprof's own files for this run (absolute): the profile it enforces and the run
	// reports directory. They are protected as paths.ProtectedPaths are: a run must not write
	// the profile of its next run, nor the record of earlier ones.
	Own []string
}

// HostEnv returns the Env of this process for a command run in workdir: the path variables
// as paths.Host finds them in sysprof's own environment (what learn reads too), and
// XDG_RUNTIME_DIR for the daemon sockets.
func HostEnv(workdir string) Env { return hostEnv(workdir, os.LookupEnv) }

// HostEnvFor is HostEnv for a command run with its own environment (nil: sysprof's).
func HostEnvFor(workdir string, environ []string) Env {
	if environ == nil {
		return HostEnv(workdir)
	}
	e := hostEnv(workdir, paths.EnvList(environ))
	e.Environ = environ
	return e
}

// lookup reads the command's environment (Environ, else sysprof's own).
func (e Env) lookup() paths.Lookup {
	if e.Environ != nil {
		return paths.EnvList(e.Environ)
	}
	return os.LookupEnv
}

func hostEnv(workdir string, lookup paths.Lookup) Env {
	v := paths.Host(workdir, lookup)
	if x, _ := lookup("XDG_RUNTIME_DIR"); x != "" {
		v["XDG_RUNTIME_DIR"] = x
	}
	return Env{Vars: v}
}

// Compiled is a profile compiled for one host: the seccomp program, the sandbox plan, and what
// the compile step had to leave out or add. It is what the init stage receives.
type Compiled struct {
	Arch   string               `json:"arch"`
	Filter []bpf.RawInstruction `json:"filter"`
	Plan   sandbox.Plan         `json:"plan"`
	// Layers the profile asks for, in the order they are applied; Run marks each one applied
	// or degraded in the report.
	Layers []string `json:"layers"`
	// Dropped lists profile entries that mean nothing on this host (a syscall this
	// architecture does not have, an architecture it cannot run). Dropping them forbids nothing
	// that could run here.
	Dropped []string `json:"dropped,omitempty"`
	// Notes say what compile added or widened: hardening rules, clone3's ENOSYS, globs that
	// became directories.
	Notes []string `json:"notes,omitempty"`
	// Publish are the sandbox's loopback listeners published to the host (publish.go).
	Publish []netip.AddrPort `json:"publish,omitempty"`
	// Refused lists rules the run holds refused instead of allowing (UDP other than DNS, which
	// the egress proxy does not carry): said on stderr and in the report's notes.
	Refused []string `json:"refused,omitempty"`
	// Unenforceable lists parts of the profile no layer here can enforce (a write rule that
	// cannot be staged). Run refuses unless degrading.
	Unenforceable []string `json:"unenforceable,omitempty"`
	// Stages are the staged directories of the plan and the rules of their changeset.
	Stages []StageSpec `json:"stages,omitempty"`
	// HiddenSockets are the host's pathname unix sockets the init stage covers after the
	// plan's mounts (not part of the plan: they come and go while the sandbox starts).
	HiddenSockets []string `json:"hiddenSockets,omitempty"`
	// MaskedSecrets are the masked files that held credentials (git configs, brokered stores;
	// not the CA bundle): the guard records reads of them.
	MaskedSecrets []string `json:"maskedSecrets,omitempty"`
	// Egress is the DNS stub's and the proxy's plan for a network allowlist (egress.go).
	Egress *netproxy.Plan `json:"egress,omitempty"`
	// ProcWrites are the per-process /proc files the profile writes, which the supervisor
	// grants file by file (procwrite.go).
	ProcWrites []ProcWrite `json:"procWrites,omitempty"`
	// ConnectsSeen: the filter sends every connect to the supervisor, which tells the proxy
	// who made it (a per-binary network rule: connectsByBinary).
	ConnectsSeen bool `json:"connectsSeen,omitempty"`

	// creds are the run's brokered credentials (credentials.go): never marshalled.
	creds *brokered

	spec *seccomp.Spec
	// stageExec are the noexec stages and their exec outputs (execoutputs.go): the guard
	// reports an exec refused there.
	stageExec stageExec
	// profile is what was compiled (read only): denials are rated against it.
	profile *policy.Profile
	// vars are the host's path variables the profile was compiled with (for portable names).
	vars map[string]string
}

// Layer names, as they appear in reports and errors.
const (
	LayerSeccomp  = "seccomp"
	LayerMounts   = initstage.LayerMounts
	LayerLandlock = "landlock"
	LayerNetNS    = initstage.LayerNetNS
	LayerNetwork  = initstage.LayerNetwork
	LayerCaps     = "capabilities"
	LayerUserNS   = initstage.LayerUserNS
	// LayerFileRules is the precision of the profile's write rules: degraded when a rule had to
	// be widened beyond the work tree, temp and cache directories.
	LayerFileRules = "filesystem-rules"
)

// linksMayStage reports whether p's links go to the supervisor (stagedlink_linux.go): it links
// and writes, so its plan may stage a directory. Decided from the profile alone, so that the
// filter compiles once, beside the plan; a run whose plan stages nothing answers them at once.
func linksMayStage(p *policy.Profile) bool {
	return len(p.Filesystem.Write) > 0 && slices.ContainsFunc(p.Syscalls.Allow, func(s policy.Syscall) bool { return s.Name == "link" || s.Name == "linkat" })
}

// Compile turns a profile into what this host runs: the seccomp program (CompileSeccomp) and
// the host plan (paths, mounts, sockets). It never modifies p.
//
// The two halves run side by side (the seccomp half is pure and reads only p): the plan half
// needs of it only the /proc writes, which it finds itself.
func Compile(p *policy.Profile, env Env) (*Compiled, error) {
	p = policy.WithoutPending(p) // what nobody accepted yet is denied (and reported)
	// The user's LD_PRELOAD (faketime) is the run's, not the tool's: its own calls come in.
	p, preloadNote := policy.WithUserPreload(p, env.lookup())
	type half struct {
		c   *Compiled
		err error
	}
	filter := make(chan half, 1)
	links, connects := linksMayStage(p), connectsByBinary(p)
	go func() {
		c, err := compileSeccomp(p, env.Arch, true, supervise{links: links, connects: connects})
		filter <- half{c, err}
	}()
	if env.Audit || mayAddressSockets(p) {
		PrefetchSockets() // likely needed: read them beside the plan
	}
	var f half
	filterDone := sync.OnceFunc(func() { f = <-filter })
	c := &Compiled{profile: p, ProcWrites: procWrites(p), vars: env.Vars}
	if preloadNote != "" {
		c.Notes = append(c.Notes, preloadNote)
	}
	planErr := c.compilePlan(p, env, func() bool {
		filterDone()
		return env.Audit || f.err != nil || f.c.addressesSockets()
	})
	filterDone()
	if f.err != nil {
		return nil, f.err
	}
	if planErr != nil {
		return nil, planErr
	}
	if len(c.Plan.ExecOutputs)+len(c.Plan.ExecFiles) > 0 {
		// The init stage makes an exec output directory the command's mkdir names and binds
		// it before the call returns: every mkdir goes to the supervisor (execoutputs.go).
		// Without it the inotify watch still binds it, a moment later. An exec output file is
		// bound when the command execs it: every execve goes to the supervisor.
		sup := supervise{mkdirs: len(c.Plan.ExecOutputs) > 0, execs: len(c.Plan.ExecFiles) > 0, links: links, connects: connects}
		if g, err := compileSeccomp(p, env.Arch, true, sup); err == nil {
			f.c = g
		}
	}
	c.Arch, c.Filter, c.spec = f.c.Arch, f.c.Filter, f.c.spec
	c.ConnectsSeen = connects
	c.Notes = append(f.c.Notes, c.Notes...)
	c.Dropped = append(f.c.Dropped, c.Dropped...)
	if err := c.compileCredentials(p, env); err != nil {
		return nil, err
	}
	if err := c.writesExact(env); err != nil {
		return nil, err
	}
	if err := c.notWeaker(p, env); err != nil {
		return nil, err
	}
	return c, nil
}
