package enforcer

import (
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// stdioTerminal is the pseudo-terminal (/dev/pts/N) the command's stdin, stdout or stderr is
// on (a nil stream is sysprof's own), or "" when none is. The command may reopen it (node and
// libuv reopen their terminal by name to get a descriptor of their own): it holds that
// terminal already, and seccomp denies injection (TIOCSTI, TIOCLINUX) on every descriptor.
// Terminal numbers differ every run, so no profile can name it: withBase grants it.
func stdioTerminal(streams ...any) string {
	defaults := []*os.File{os.Stdin, os.Stdout, os.Stderr}
	for i, s := range streams {
		if s == nil && i < len(defaults) {
			s = defaults[i]
		}
		f, ok := s.(*os.File)
		if !ok || f == nil {
			continue
		}
		if _, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS); err != nil {
			continue
		}
		p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(f.Fd())))
		if err == nil && ptyPath(p) {
			return p
		}
	}
	return ""
}

// ptyPath reports /dev/pts/N.
func ptyPath(p string) bool {
	n, ok := strings.CutPrefix(p, "/dev/pts/")
	if !ok || n == "" {
		return false
	}
	_, err := strconv.ParseUint(n, 10, 32)
	return err == nil
}
