// Package stdiofds says which of the standard fds (0, 1, 2) were closed when the process
// started. Go's runtime opens /dev/null on a closed one before any Go code runs
// (runtime.checkfds), so that a later open cannot become stdout by accident; a command sysprof
// runs would then get /dev/null where its caller gave it nothing (a print succeeds that fails
// with EBADF without sysprof). The program's entry (entry_*.s, linked in with
// `-ldflags "-E $(go list ./internal/stdiofds).Entry"`: scripts/build.sh) asks the kernel before the
// runtime starts and leaves the answer in closedAtStart.
package stdiofds

// closedAtStart has bit i set when fd i was closed at the entry. Written by Entry before the
// runtime starts (it lives in the zeroed data the kernel maps), only read after.
var closedAtStart uint32

// Closed reports whether fd (0, 1 or 2) was closed when the process started. A binary linked
// without the entry (go test, a plain go build) knows nothing: false.
func Closed(fd int) bool { return fd >= 0 && fd < 3 && closedAtStart&(1<<fd) != 0 }

// ClosedAtStart are the standard fds closed when the process started, in order.
func ClosedAtStart() []int {
	var out []int
	for fd := range 3 {
		if Closed(fd) {
			out = append(out, fd)
		}
	}
	return out
}
