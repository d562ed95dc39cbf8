package enforcer

import (
	"os"
	"testing"

	"github.com/sysprof/sysprof/internal/ptyrelay"
)

// Relayed gives the run the relay's pty exactly where sysprof's stream was the terminal, and
// asks the init stage to take it as controlling terminal; without a relay nothing changes.
func TestRelayed(t *testing.T) {
	if o := Relayed(Options{}, nil); o.RelayTerminal || o.Stdin != nil || o.Stdout != nil || o.Stderr != nil {
		t.Errorf("no relay: %+v", o)
	}
	pty, err := os.Open(os.DevNull) // stands for the relay's pty
	if err != nil {
		t.Fatal(err)
	}
	defer pty.Close()
	r := &ptyrelay.Relay{Streams: [3]*os.File{pty, nil, pty}}
	o := Relayed(Options{}, r)
	if !o.RelayTerminal || o.Stdin != pty || o.Stdout != nil || o.Stderr != pty {
		t.Errorf("relay on stdin and stderr: %+v", o)
	}
}
