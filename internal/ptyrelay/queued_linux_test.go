package ptyrelay

import (
	"bytes"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/internal/testutil"
)

// An end of file already queued at a canonical terminal (script(1) sends VEOF when its own
// stdin ends, often before the relay starts) is taken before raw mode, which would turn it
// into a NUL byte the command reads as data (it then waited for input for ever); lines typed
// ahead come with it.
func TestTakeQueuedKeepsEndOfFile(t *testing.T) {
	ptm, pts := testutil.OpenPTY(t)
	tio, err := unix.IoctlGetTermios(int(pts.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	if tio.Lflag&unix.ICANON == 0 {
		t.Fatal("a new pty is not canonical")
	}
	if _, err := ptm.Write([]byte("typed ahead\n\x04")); err != nil {
		t.Fatal(err)
	}
	got := takeQueued(int(pts.Fd()), tio)
	want := append([]byte("typed ahead\n"), tio.Cc[unix.VEOF])
	if !bytes.Equal(got, want) {
		t.Errorf("takeQueued = %q, want %q", got, want)
	}
	// Nothing queued: nothing taken, and no wait.
	if got := takeQueued(int(pts.Fd()), tio); len(got) != 0 {
		t.Errorf("takeQueued of an empty terminal = %q", got)
	}
}
