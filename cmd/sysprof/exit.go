package main

import (
	"errors"
	"fmt"
)

// Exit statuses of sysprof itself; a command's own status passes through unchanged.
const (
	exitOK          = 0
	exitWidened     = 1   // diff/drift: the new profile widens the old one
	exitDenied      = 1   // enforce --fail-on-denial: CMD succeeded, but something was denied
	exitSysprof     = 125 // sysprof's own failure (bad input, missing privilege, BPF unavailable)
	exitNotExec     = 126 // CMD found but not executable
	exitNotFound    = 127 // CMD not found
	exitSignalStart = 128 // CMD killed by signal N → 128+N
)

// exitError carries an exit status up to main without printing anything else.
type exitError struct {
	code int
	err  error // printed to stderr when non-nil
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// withCode wraps err so that main exits with code.
func withCode(code int, err error) error { return &exitError{code: code, err: err} }

// codeOf maps an error to the process exit status: exitError's own code, else sysprof's failure.
func codeOf(err error) int {
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return exitSysprof
}
