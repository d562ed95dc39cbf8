package enforcer

import (
	"os"

	"github.com/sysprof/sysprof/internal/ptyrelay"
)

// OpenTerminalRelay puts a pty of sysprof's between the command and the user's terminal when
// sysprof's stdin, stdout or stderr is one and sysprof is in its foreground (ptyrelay.Open):
// the command gets a controlling terminal of its own (/dev/tty prompts, job control, window
// size) and its output reaches the user's terminal only through ptyrelay's filter. nil when
// not at a terminal (nothing is opened then). Give the run its streams (Relayed) and Close
// it once the run is over: the user's terminal is raw until then.
func OpenTerminalRelay() (*ptyrelay.Relay, error) {
	return ptyrelay.Open(os.Stdin, os.Stdout, os.Stderr)
}

// Relayed is o with the relay's pty as the streams that were sysprof's terminal.
func Relayed(o Options, r *ptyrelay.Relay) Options {
	if r == nil {
		return o
	}
	if r.Streams[0] != nil && o.Stdin == nil {
		o.Stdin = r.Streams[0]
	}
	if r.Streams[1] != nil && o.Stdout == nil {
		o.Stdout = r.Streams[1]
	}
	if r.Streams[2] != nil && o.Stderr == nil {
		o.Stderr = r.Streams[2]
	}
	o.RelayTerminal = true
	return o
}
