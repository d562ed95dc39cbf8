package enforcer

import (
	"encoding/binary"
	"encoding/json"
	"fmt"

	"github.com/sysprof/sysprof/netproxy"
	"github.com/sysprof/sysprof/sandbox"
	"golang.org/x/net/bpf"
)

// initArg is the hidden first argument that makes sysprof's main run the init stage.
const initArg = "__sysprof_init__"

// Inherited file descriptors of the init stage (exec.Cmd.ExtraFiles start at 3).
const (
	fdConfig = 3 // read end of a pipe: initConfig as JSON, then EOF
	fdSync   = 4 // read end: the parent writes one byte once it holds the seccomp listener
	fdStatus = 5 // write end, close-on-exec: JSON status lines; EOF without an error = exec done
	// fdReplica is a SOCK_SEQPACKET socket (root-idmap only): the host's mounts as idmapped
	// clones (sandbox.Replica).
	fdReplica = 6
)

// initConfig is what the init stage receives: everything it needs, nothing it must compute.
type initConfig struct {
	Argv    []string     `json:"argv"`
	Dir     string       `json:"dir"` // entered again after the mounts: the old cwd is on the host's mount
	Filter  sockFilter   `json:"filter"`
	Plan    sandbox.Plan `json:"plan"`
	Sockets []string     `json:"sockets,omitempty"` // host daemon sockets to hide after the plan's mounts
	Sandbox bool         `json:"sandbox"`           // apply Plan (false only when degrading without the sandbox package)
	Degrade Degrade      `json:"degrade,omitempty"`
	// UnshareNet: the stage was started before the profile was known (Early), without
	// CLONE_NEWNET: it enters a new network namespace itself, on the thread that execs.
	UnshareNet bool `json:"unshare_net,omitempty"`
	// Replica: enter the host's mounts as an idmapped replica (fdReplica) before anything else
	// of the sandbox (root-idmap).
	Replica bool `json:"replica,omitempty"`
	// UnsetEnv names the variables the command does not get (policy.ScrubEnv of the stage's
	// environment): the stage may have been started with the caller's whole environment
	// before the profile was known, so it removes them itself, right before exec.
	UnsetEnv []string `json:"unset_env,omitempty"`
	// SetEnv are NAME=value entries the command gets on top: brokered variables' stand-ins and
	// the CA bundle variables (credentials.go).
	SetEnv []string `json:"set_env,omitempty"`
	// Egress: set up the DNS stub's and the proxy's sockets in the new network namespace
	// (netproxy.SetupInside) and report their fds (initStatus.Egress).
	Egress *netproxy.Inside `json:"egress,omitempty"`
}

// initStatus is one line the init stage writes to its parent.
type initStatus struct {
	// Installing: the filter is being installed; its listener appears in /proc/PID/fd in a
	// moment (the ready message may be held up: the init stage's write goes through the filter,
	// and with a profile without write it waits for a supervisor).
	Installing bool `json:"installing,omitempty"`
	// Ready: the filter is installed; Listener is its fd number in the init stage.
	Ready    bool `json:"ready,omitempty"`
	Listener int  `json:"listener,omitempty"`
	// Layers the init stage applied or degraded.
	Layers []layerState `json:"layers,omitempty"`
	// Notes from the sandbox: skipped paths, implied rules.
	Notes []string `json:"notes,omitempty"`
	// Egress are the fds of the sockets SetupInside opened (the parent takes them with
	// pidfd_getfd before it releases the stage).
	Egress []int `json:"egress,omitempty"`
	// Failure: Stage is sandbox, seccomp, lookup or exec; Exit is the status the init stage
	// exits with (125 for sysprof's own failures, 126/127 for the command).
	Stage string `json:"stage,omitempty"`
	Layer string `json:"layer,omitempty"`
	Error string `json:"error,omitempty"`
	Exit  int    `json:"exit,omitempty"`
}

type layerState struct {
	Name     string `json:"name"`
	Degraded bool   `json:"degraded,omitempty"`
	Detail   string `json:"detail,omitempty"`
}

// sockFilter is the seccomp program as the kernel's struct sock_filter array (8 bytes an
// instruction, base64 in the JSON): the init stage decodes it in microseconds, where a JSON
// object an instruction cost a good part of a millisecond of its start.
type sockFilter []bpf.RawInstruction

func (f sockFilter) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 8*len(f))
	for _, ins := range f {
		b = binary.NativeEndian.AppendUint16(b, ins.Op)
		b = append(b, ins.Jt, ins.Jf)
		b = binary.NativeEndian.AppendUint32(b, ins.K)
	}
	return json.Marshal(b)
}

func (f *sockFilter) UnmarshalJSON(data []byte) error {
	var b []byte
	if err := json.Unmarshal(data, &b); err != nil {
		return err
	}
	if len(b)%8 != 0 {
		return fmt.Errorf("seccomp filter of %d bytes: not whole instructions", len(b))
	}
	out := make(sockFilter, len(b)/8)
	for i := range out {
		x := b[8*i:]
		out[i] = bpf.RawInstruction{Op: binary.NativeEndian.Uint16(x), Jt: x[2], Jf: x[3], K: binary.NativeEndian.Uint32(x[4:])}
	}
	*f = out
	return nil
}
