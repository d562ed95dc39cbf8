package ptyrelay

import (
	"os"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
)

// Not at a terminal (files, pipes) or at one that is not this process's controlling terminal
// in the foreground, Open opens nothing.
func TestOpenNotAtATerminal(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	_, pts := testutil.OpenPTY(t) // a terminal, but not this session's
	for _, c := range []struct {
		name                string
		stdin, stdout, errf *os.File
	}{
		{"files and pipes", null, w, w},
		{"a terminal of another session", pts, pts, pts},
	} {
		relay, err := Open(c.stdin, c.stdout, c.errf)
		if relay != nil || err != nil {
			relay.Close()
			t.Errorf("%s: Open = %v, %v; want nothing", c.name, relay, err)
		}
	}
}
