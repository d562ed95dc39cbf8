package hostcheck

import (
	"errors"
	"fmt"
	"sync"

	"github.com/sysprof/sysprof/internal/feature"
)

// Status is a probe's answer.
//
// The zero value is Unknown, so a Check that was never filled in never claims a feature.
type Status int

const (
	// Unknown means the probe could not tell (for example it needs root).
	Unknown Status = iota
	// Available means the probe made the real call and it worked.
	Available
	// Missing means the probe made the real call and the kernel or host refused it.
	Missing
)

func (s Status) String() string {
	switch s {
	case Available:
		return "available"
	case Missing:
		return "missing"
	case Unknown:
		return "unknown"
	}
	return fmt.Sprintf("Status(%d)", int(s))
}

// MarshalText makes a Status print as its name in JSON and YAML.
func (s Status) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText is the inverse of MarshalText.
func (s *Status) UnmarshalText(b []byte) error {
	switch string(b) {
	case "available":
		*s = Available
	case "missing":
		*s = Missing
	case "unknown":
		*s = Unknown
	default:
		return fmt.Errorf("unknown status %q", b)
	}
	return nil
}

// What a check is needed for.
const (
	ForLearn   = "learn"
	ForEnforce = "enforce"
	ForBoth    = "both"
)

// Check names, stable: the CLI and other packages look checks up by them.
const (
	CheckPrivLearn        = "privileges (learn)"
	CheckPrivEnforce      = "privileges (enforce)"
	CheckUnprivBPF        = "unprivileged_bpf_disabled"
	CheckBTF              = "btf"
	CheckTracefs          = "tracefs"
	CheckTracepoints      = "tracepoints"
	CheckCgroup2          = "cgroup2"
	CheckRingBuf          = "ring buffer"
	CheckCgroupSockAddr   = "cgroup sock_addr"
	CheckFentryLSM        = "fentry/lsm bpf"
	CheckLandlock         = "landlock"
	CheckSeccompNotif     = "seccomp user notif"
	CheckUserns           = "user namespaces"
	CheckNetns            = "network namespaces"
	CheckMountns          = "mount namespaces"
	CheckPidfdGetfd       = "pidfd_getfd"
	CheckIdmapRoot        = "idmapped mounts (root)"
	runAsRoot             = "run as root to check"
	remedyRoot            = "run sysprof as root (sudo)"
	remedyRootOrCaps      = "run as root, or grant CAP_BPF and CAP_PERFMON: sudo setcap cap_bpf,cap_perfmon+ep $(command -v sysprof)"
	remedyTracefs         = "mount tracefs: mount -t tracefs tracefs /sys/kernel/tracing"
	remedyKernelBPFConfig = "use a kernel built with CONFIG_BPF_SYSCALL, CONFIG_BPF_EVENTS and CONFIG_CGROUP_BPF (any current distro kernel)"
)

// Check is one probe's answer.
type Check struct {
	Name     string `json:"name"`
	For      string `json:"for"` // ForLearn, ForEnforce or ForBoth
	Status   Status `json:"status"`
	Optional bool   `json:"optional,omitempty"` // informational: never required
	Detail   string `json:"detail,omitempty"`   // what was found, e.g. "ABI 7", "/sys/fs/cgroup/unified"
	Reason   string `json:"reason,omitempty"`   // why it is missing or could not be checked
	Remedy   string `json:"remedy,omitempty"`   // what to do about it
}

// Err returns nil when the check is Available, else an *UnsupportedError (which matches
// ErrNotSupported) carrying the check's reason and remedy.
func (c Check) Err() error {
	if c.Status == Available {
		return nil
	}
	reason := c.Reason
	if c.Status == Unknown {
		reason = "could not tell: " + reason
	}
	return &UnsupportedError{Feature: c.Name, Reason: reason, Remedy: c.Remedy}
}

func (c Check) neededFor(what string) bool {
	return !c.Optional && (c.For == what || c.For == ForBoth)
}

// ErrNotSupported is matched (errors.Is) by every error that says a host feature is missing.
// It is the same value as sandbox.ErrNotSupported (internal/feature).
var ErrNotSupported = feature.ErrNotSupported

// UnsupportedError says which host feature is missing, why, and what to do about it.
type UnsupportedError struct {
	Feature string
	Reason  string
	Remedy  string
}

func (e *UnsupportedError) Error() string {
	s := e.Feature + ": not supported"
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	if e.Remedy != "" {
		s += " (" + e.Remedy + ")"
	}
	return s
}

// Is makes errors.Is(err, ErrNotSupported) true.
func (e *UnsupportedError) Is(target error) bool { return target == ErrNotSupported }

var (
	runOnce   sync.Once
	runResult []Check
)

// Run runs every probe once per process and returns the cached answers, in a fixed order. The
// returned slice is a copy: callers may modify it.
//
// Probes make real calls (BPF map and program loads, a tracepoint attach, a temporary cgroup
// directory, namespaced /bin/true children) and undo them before returning.
func Run() []Check {
	runOnce.Do(func() { runResult = runAll() })
	return append([]Check(nil), runResult...)
}

// Find returns the check with the given name.
func Find(cs []Check, name string) (Check, bool) {
	for _, c := range cs {
		if c.Name == name {
			return c, true
		}
	}
	return Check{}, false
}

// LearnPossible reports whether every required learn check (For "learn" or "both") is
// Available. Unknown counts as not possible; optional checks are ignored.
func LearnPossible(cs []Check) bool { return possible(cs, ForLearn) }

func possible(cs []Check, what string) bool {
	any := false
	for _, c := range cs {
		if !c.neededFor(what) {
			continue
		}
		any = true
		if c.Status != Available {
			return false
		}
	}
	return any
}

// LearnErr is LearnPossible as an error: nil, or the first failing learn requirement as an
// *UnsupportedError, with the others joined after it.
func LearnErr(cs []Check) error { return requirementsErr(cs, ForLearn) }

func requirementsErr(cs []Check, what string) error {
	var errs []error
	n := 0
	for _, c := range cs {
		if !c.neededFor(what) {
			continue
		}
		n++
		if c.Status != Available {
			errs = append(errs, c.Err())
		}
	}
	if n == 0 {
		return &UnsupportedError{Feature: what, Reason: "no " + what + " checks were run"}
	}
	return errors.Join(errs...)
}
