package enforcer

import (
	"os"

	"golang.org/x/sys/unix"

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
	o.relayPTY = r.Slave()
	return o
}

// relayTo makes the relay's pty the command's own, as login makes a terminal its user's: the
// command reopens its terminal by name (`echo >> $(tty)`, node and libuv) and, as root, is a
// host uid of its own (sandbox.RootUID), to whom a pty of host root's (mode 0620) is closed.
// The pty is sysprof's and this run's alone; the user's own terminal is never the command's.
func relayTo(pty *os.File, uid int) {
	if pty == nil {
		return
	}
	var st unix.Stat_t
	if unix.Fstat(int(pty.Fd()), &st) == nil && int(st.Uid) != uid {
		_ = unix.Fchown(int(pty.Fd()), uid, -1)
	}
}
