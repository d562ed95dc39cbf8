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
