package report

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// TerminalReset undoes what a command's own output may have left set on the terminal it shares
// with sysprof, so that sysprof's lines after it are seen: it cancels an escape sequence in
// progress (CAN) and ends an unterminated string (ST: an OSC title or DCS that would swallow
// the lines that follow, an OSC 8 link), resets the attributes (SGR 0: concealed, invisible
// colours), the character set (G0 ASCII, shift-in: DEC line drawing garbles letters), origin
// and insert modes, cursor visibility and autowrap, and the scrolling region (cursor saved and
// restored around it). It clears nothing and moves nothing.
const TerminalReset = "\x18\x1b\\\x1b]8;;\x1b\\\x1b[0m\x1b(B\x0f\x1b[?6l\x1b[4l\x1b[?25h\x1b[?7h\x1b7\x1b[r\x1b8"

// ResetTerminal writes TerminalReset to w when w is a terminal (a file or a pipe gets none):
// called once the command is gone, before sysprof's own lines about it.
func ResetTerminal(w io.Writer) {
	f, ok := w.(*os.File)
	if !ok {
		return
	}
	if _, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS); err != nil {
		return
	}
	_, _ = io.WriteString(f, TerminalReset)
}

// ResetBeforeFirstWrite returns w such that TerminalReset goes out just before the first thing
// written to it, when w is a terminal: a run that has nothing to say leaves the terminal exactly
// as the command left it (its output is the same as unsandboxed), and any line of sysprof's
// is still seen. Width reads through it.
func ResetBeforeFirstWrite(w io.Writer) io.Writer {
	f, ok := w.(*os.File)
	if !ok {
		return w
	}
	if _, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS); err != nil {
		return w
	}
	return &resetWriter{f: f}
}

type resetWriter struct {
	f    *os.File
	done bool
}

func (r *resetWriter) Write(p []byte) (int, error) {
	if !r.done && len(p) > 0 {
		r.done = true
		if _, err := io.WriteString(r.f, TerminalReset); err != nil {
			return 0, err
		}
	}
	return r.f.Write(p)
}

// Fd lets Width ask the terminal its size.
func (r *resetWriter) Fd() uintptr { return r.f.Fd() }
