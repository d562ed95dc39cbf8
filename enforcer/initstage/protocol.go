package initstage

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/net/bpf"

	"github.com/sysprof/sysprof/netproxy/inside"
	"github.com/sysprof/sysprof/sandbox"
)

// Arg is the hidden first argument that makes sysprof's main (or the embedded program) run
// the init stage.
const Arg = "__sysprof_init__"

// ArgNetNS, after Arg, makes a stage started early (before its profile is known) enter a new
// network namespace of its own while it waits for its config: every sandboxed plan has one
// (loopback only, or the egress proxy's), and making it costs ~1 ms the run would otherwise
// wait for. Such a stage then expects UnshareNet in its config and refuses any other.
const ArgNetNS = "netns"

// Inherited file descriptors of the init stage (exec.Cmd.ExtraFiles start at 3).
const (
	// FDConfig is the read end of a pipe: one frame, the Switch (nil: none; wire.WriteFrame),
	// sent as soon as the id maps are written; then Config (wire.Marshal), then EOF.
	FDConfig = 3
	FDSync   = 4 // read end: the parent writes one byte once it holds the seccomp listener
	FDStatus = 5 // write end, close-on-exec: Status frames (wire.WriteFrame); EOF without an error = exec done
	// FDReplica is a SOCK_SEQPACKET socket (root-idmap only): the host's mounts as idmapped
	// clones (sandbox.Replica).
	FDReplica = 6
	// FDJoin and on: the run's cgroup v1 tasks files, opened by sysprof (ArgJoin says how
	// many), that the stage writes 0 to first thing from the thread that execs: a move by pid
	// would wait for an RCU grace period, this needs no global lock; the command (exec'd or
	// forked from that thread) and its children are born in them.
	FDJoin = 7
)

// ArgJoin, after Arg, followed by a count: that many files from FDJoin on to join (FDJoin).
const ArgJoin = "join="

// The layer names the stage itself reports (package enforcer's layer table names them all and
// uses these values).
const (
	LayerMounts  = "mounts"
	LayerNetNS   = "netns"
	LayerNetwork = "network-allowlist"
	LayerUserNS  = "userns"
)

// Config is what the init stage receives: everything it needs, nothing it must compute.
type Config struct {
	Argv   []string   `json:"argv"`
	Dir    string     `json:"dir"` // entered again after the mounts: the old cwd is on the host's mount
	Filter SockFilter `json:"filter"`
	// Parts are the sandbox layers' parts of the run's plan, in the order the stage applies
	// them (package enforcer's layer table and stage order decide them).
	Parts   []Part   `json:"parts,omitempty"`
	Sockets []string `json:"sockets,omitempty"` // host daemon sockets to hide after the mounts part
	Sandbox bool     `json:"sandbox"`           // a sandboxed run (false only when degrading without the sandbox package)
	// UnshareNet: the stage was started before the profile was known (early), without
	// CLONE_NEWNET: it enters a new network namespace itself, on the thread that execs (at
	// once when started with ArgNetNS).
	UnshareNet bool `json:"unshare_net,omitempty"`
	// Replica: enter the host's mounts as an idmapped replica (FDReplica) before anything else
	// of the sandbox (root-idmap).
	Replica bool `json:"replica,omitempty"`
	// UnsetEnv names the variables the command does not get (policy.ScrubEnv of the stage's
	// environment): the stage may have been started with the caller's whole environment
	// before the profile was known, so it removes them itself, right before exec.
	UnsetEnv []string `json:"unset_env,omitempty"`
	// SetEnv are NAME=value entries the command gets on top: brokered variables' stand-ins and
	// the CA bundle variables.
	SetEnv []string `json:"set_env,omitempty"`
	// CloseStdio are the standard fds (0-2) the command gets closed, as sysprof's caller left
	// them (Go's runtime put /dev/null there in sysprof and in this stage: internal/stdiofds).
	CloseStdio []int `json:"close_stdio,omitempty"`
	// Egress: set up the DNS stub's and the proxy's sockets in the new network namespace
	// (inside.Setup, right after the netns part) and report their fds (Status.Egress).
	Egress *inside.Inside `json:"egress,omitempty"`
	// MemfdTmpfs: mount a detached noexec tmpfs (sandbox.NoExecTmpfs) before the layers, add
	// it to the Landlock part's rules and report its fd (Status.MemfdTmpfs): the supervisor
	// makes the command's memfds there (an ordinary user's could not mount one itself).
	MemfdTmpfs bool `json:"memfd_tmpfs,omitempty"`
	// Ctty: the stdio that is a terminal is sysprof's relay pty (ptyrelay): the stage takes it
	// as its session's controlling terminal and runs the command in the foreground process
	// group of its own (the terminal's signals reach the command, not the stage).
	Ctty bool `json:"ctty,omitempty"`
}

// Switch is the capabilities of a stage started with its capabilities ambient (spawn.Start:
// its child took the ids before the execve, or execs before its maps exist): it keeps exactly
// those Go's forkExec would have given it, first thing once the Switch, sent after the maps,
// arrives (the first line on FDConfig).
type Switch struct {
	// Ambient are the capabilities the stage keeps ambient, and alone keeps at all (an
	// unprivileged uid's: sandbox.InitAmbientCaps); empty: it is root in its namespace and
	// keeps every permitted one, none inheritable or ambient.
	Ambient []uintptr `json:"ambient,omitempty"`
}

// Part is one layer's part of the run's plan.
type Part struct {
	Name string       `json:"name"`
	Plan sandbox.Plan `json:"plan"`
	// Degrade: the run may go without this layer when it cannot apply (--degrade names it);
	// the stage then reports it degraded instead of failing.
	Degrade bool `json:"degrade,omitempty"`
}

// Status is one message the init stage writes to its parent.
type Status struct {
	// Installing: the filter is being installed; its listener appears in /proc/PID/fd in a
	// moment (the ready message may be held up: the init stage's write goes through the filter,
	// and with a profile without write it waits for a supervisor).
	// With Installing, Listener is the fd number the listener will most likely get (the lowest
	// free one just before), 0 when unknown: the parent looks there first.
	Installing bool `json:"installing,omitempty"`
	// Ready: the filter is installed; Listener is its fd number in the init stage.
	Ready    bool `json:"ready,omitempty"`
	Listener int  `json:"listener,omitempty"`
	// Layers the init stage applied or degraded.
	Layers []LayerState `json:"layers,omitempty"`
	// Notes from the sandbox: skipped paths, implied rules.
	Notes []string `json:"notes,omitempty"`
	// Egress are the fds of the sockets inside.Setup opened (the parent takes them with
	// pidfd_getfd before it releases the stage).
	Egress []int `json:"egress,omitempty"`
	// MemfdTmpfs is the fd of the tmpfs Config.MemfdTmpfs asked for (taken like Egress).
	MemfdTmpfs int `json:"memfd_tmpfs,omitempty"`
	// ExecOutputs is the fd of the socket on which the stage makes exec output directories
	// and binds exec output files (sandbox.ServeExecOutputMkdirs; taken like Egress), or -1
	// when it could not: sent exactly when the config's parts have ExecOutputs or ExecFiles.
	ExecOutputs int `json:"exec_outputs,omitempty"`
	// Failure: Stage is sandbox, seccomp, lookup or exec; Exit is the status the init stage
	// exits with (125 for sysprof's own failures, 126/127 for the command).
	Stage string `json:"stage,omitempty"`
	Layer string `json:"layer,omitempty"`
	Error string `json:"error,omitempty"`
	Exit  int    `json:"exit,omitempty"`
}

// ExecOutputs are the exec output directories of cfg's parts (sandbox.Plan.ExecOutputs).
func ExecOutputs(parts []Part) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p.Plan.ExecOutputs...)
	}
	return out
}

// UserCounts are the per-user counts of cfg's parts (sandbox.Plan.UserCounts).
func UserCounts(parts []Part) []sandbox.UserCount {
	var out []sandbox.UserCount
	for _, p := range parts {
		out = append(out, p.Plan.UserCounts...)
	}
	return out
}

// ExecFiles are the exec output files of cfg's parts (sandbox.Plan.ExecFiles).
func ExecFiles(parts []Part) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p.Plan.ExecFiles...)
	}
	return out
}

// LayerState is a layer the stage applied, or degraded and why.
type LayerState struct {
	Name     string `json:"name"`
	Degraded bool   `json:"degraded,omitempty"`
	Detail   string `json:"detail,omitempty"`
}

// LayerError is a layer's part the stage could not apply.
type LayerError struct {
	Layer string
	Err   error
}

func (e *LayerError) Error() string { return e.Layer + ": " + e.Err.Error() }
func (e *LayerError) Unwrap() error { return e.Err }

// SockFilter is the seccomp program as the kernel's struct sock_filter array, sent packed (8
// bytes an instruction: wire uses MarshalBinary).
type SockFilter []bpf.RawInstruction

func (f SockFilter) MarshalBinary() ([]byte, error) {
	b := make([]byte, 0, 8*len(f))
	for _, ins := range f {
		b = binary.NativeEndian.AppendUint16(b, ins.Op)
		b = append(b, ins.Jt, ins.Jf)
		b = binary.NativeEndian.AppendUint32(b, ins.K)
	}
	return b, nil
}

func (f *SockFilter) UnmarshalBinary(b []byte) error {
	if len(b)%8 != 0 {
		return fmt.Errorf("seccomp filter of %d bytes: not whole instructions", len(b))
	}
	if len(b) == 0 {
		*f = nil
		return nil
	}
	out := make(SockFilter, len(b)/8)
	for i := range out {
		x := b[8*i:]
		out[i] = bpf.RawInstruction{Op: binary.NativeEndian.Uint16(x), Jt: x[2], Jf: x[3], K: binary.NativeEndian.Uint32(x[4:])}
	}
	*f = out
	return nil
}
