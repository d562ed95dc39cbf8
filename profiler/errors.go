package profiler

import (
	"errors"
	"fmt"
)

// ErrNeedRoot is returned when the caller lacks the privileges to load eBPF programs.
var ErrNeedRoot = errors.New("eBPF needs root or CAP_BPF+CAP_PERFMON: run with sudo, or see `sysprof doctor`")

// LoadError is a failure to load or attach the kernel side; the CLI exits 125 with it.
type LoadError struct {
	Step string // e.g. "load BPF programs", "attach raw_syscalls/sys_enter"
	Err  error
}

func (e *LoadError) Error() string {
	return fmt.Sprintf("%s: %v (run `sysprof doctor` to see what this host supports; --debug shows the verifier log)", e.Step, e.Err)
}

func (e *LoadError) Unwrap() error { return e.Err }

// CommandError says the command could not be started. Code is the shell's convention: 127 when
// it was not found, 126 when it was found but could not be executed.
type CommandError struct {
	Name string
	Code int
	Err  error
}

func (e *CommandError) Error() string {
	if e.Code == 127 {
		return fmt.Sprintf("%s: command not found", e.Name)
	}
	return fmt.Sprintf("%s: cannot execute: %v", e.Name, e.Err)
}

func (e *CommandError) Unwrap() error { return e.Err }
