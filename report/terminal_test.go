package report

import (
	"bytes"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The reset goes to a terminal only: a pipe, a file or a buffer (a CI log, a test) gets none.
func TestResetTerminalOnlyOnATerminal(t *testing.T) {
	var b bytes.Buffer
	ResetTerminal(&b)
	if b.Len() != 0 {
		t.Errorf("a buffer got %q", b.String())
	}
	f, err := os.Create(t.TempDir() + "/out")
	if err != nil {
		t.Fatal(err)
	}
	ResetTerminal(f)
	if st, _ := f.Stat(); st.Size() != 0 {
		t.Errorf("a file got %d bytes", st.Size())
	}
	f.Close()
}

// On a terminal the reset goes out just before the first line written, once, and not at all
// when nothing is written (a clean run's output equals the command's own).
func TestResetBeforeFirstWrite(t *testing.T) {
	var b bytes.Buffer
	if w := ResetBeforeFirstWrite(&b); w != &b {
		t.Errorf("a buffer was wrapped: %T", w)
	}
	ptm, pts := openPty(t)
	// Raw, so the terminal passes the bytes as written (no CR added to a newline).
	tio, err := unix.IoctlGetTermios(int(pts.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	tio.Oflag &^= unix.OPOST
	if err := unix.IoctlSetTermios(int(pts.Fd()), unix.TCSETS, tio); err != nil {
		t.Fatal(err)
	}
	if err := unix.IoctlSetWinsize(int(pts.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 24, Col: 72}); err != nil {
		t.Fatal(err)
	}
	w := ResetBeforeFirstWrite(pts)
	t.Setenv("COLUMNS", "200")
	if got := Width(w); got != 72 {
		t.Errorf("Width through the wrapper = %d, want the terminal's 72", got)
	}
	// What reaches the terminal before the first write is the command's own (a marker written
	// past the wrapper): no reset ahead of it.
	pts.Write([]byte("cmd\n"))
	w.Write([]byte("one\n"))
	w.Write([]byte("two\n"))
	want := "cmd\n" + TerminalReset + "one\ntwo\n"
	got := make([]byte, 0, len(want))
	buf := make([]byte, 256)
	deadline := time.Now().Add(5 * time.Second)
	for len(got) < len(want) && time.Now().Before(deadline) {
		ptm.SetReadDeadline(deadline)
		n, err := ptm.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			break
		}
	}
	if string(got) != want {
		t.Errorf("terminal got %q, want %q", got, want)
	}
}
