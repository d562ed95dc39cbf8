package enforcer

import (
	"os"
	"slices"
	"sync"

	"github.com/sysprof/sysprof/bpf"
	"github.com/sysprof/sysprof/enforcer/guard"
	"github.com/sysprof/sysprof/internal/kernrun"
	"github.com/sysprof/sysprof/internal/spawn"
	"github.com/sysprof/sysprof/report"
)

// The guard (package guard) as a run uses it.

// Prewarm starts loading what a root run's guard needs in the background, so that Run finds it
// loaded (the next Run of this process takes it), and copies the embedded init program into
// its sealed memfd (initProgram) meanwhile. None is required: Run does each itself otherwise.
// (The host's unix sockets are read by Compile, only for a profile that can address one.) Only the first call in a
// process does anything (the CLI calls it as early as it can, and again in enforce).
func Prewarm() { prewarmOnce() }

var prewarmOnce = sync.OnceFunc(func() {
	guard.Prewarm()
	go initProgram()
	go primePidfd()
	go warmJSON()
})

// primePidfd runs package os's one-time pidfd check, which clones a child to see that
// clone(CLONE_PIDFD) works (~0.3 ms), and reads the kernel's last capability (spawn.AllCaps,
// ~0.15 ms) while the CLI parses: vforkStage, on the start's critical path, waits for both
// otherwise.
func primePidfd() {
	if p, err := os.FindProcess(os.Getpid()); err == nil {
		p.Release()
	}
	spawn.AllCaps()
}

// PinRoot is the bpffs directory where enforce keeps the guard's verified programs between runs
// (for `sysprof doctor`).
func PinRoot() string { return guard.PinRoot() }

// guardAvailable reports why the root-only guard cannot run here, or nil (a seam: tests take the
// guard away to see the ordinary user's fallback).
var guardAvailable = guard.Available

// guardConfig is what the guard of a run of c reports against: file denials and failed connects
// (a covered host socket, a TCP port Landlock refused; the rest of the network is the egress
// proxy's); it takes load (from guard.TakeLoad) and cg (the early stage's cgroup, or nil).
func (c *Compiled) guardConfig(env Env, audit bool, load *guard.Load, cg *kernrun.Cgroup) guard.Config {
	return guard.Config{
		Files: true, MayExecute: c.mayExecute, Audit: audit,
		Hidden: c.Plan.Hidden, Covers: c.Plan.ReadOnly, BoundProtected: boundProtected(c.Plan.Writable, env), Masked: c.MaskedSecrets, Sockets: c.HiddenSockets, Landlock: c.stageExec.mountExec(c.Plan.Landlock), Vars: env.Vars,
		FileRisk:    func(access, portable string) report.Risk { return fileRisk(c.profile, access, portable) },
		MaxDistinct: maxDistinct, Load: load, Cgroup: cg,
	}
}

// boundProtected are the protected paths bound writable whole (a .git a rule accepted as
// such): renaming or removing one away answers EBUSY (a mount point), a refusal to record.
func boundProtected(writable []string, env Env) []string {
	var out []string
	for _, q := range protectedHostPaths(env) {
		if slices.Contains(writable, q) {
			out = append(out, q)
		}
	}
	return out
}

// mayExecute reports whether the run's seccomp filter can let the x86_64 syscall name reach the
// kernel (allowed, possibly under argument checks). One it always refuses is reported by the
// supervisor and never gets as far as Landlock or a read-only mount, so its exit tracepoint has
// nothing to observe. True when unsure (another host ABI, no compiled filter).
func (c *Compiled) mayExecute(name string) bool {
	if c == nil || c.spec == nil || len(c.spec.ABIs) == 0 {
		return true
	}
	a := c.spec.ABIs[0]
	if a.Info == nil || a.Info != bpf.NativeArch || !a.Allowed {
		return true
	}
	nr, ok := bpf.NativeArch.SyscallNames[name]
	if !ok {
		return true
	}
	return a.Rules[uint32(nr)] != nil
}
