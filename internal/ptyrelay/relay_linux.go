package ptyrelay

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Relay is a pty pair of sysprof's between the command and the user's terminal (Open).
type Relay struct {
	user   int      // the user's terminal: read for input, written with the filtered output
	master int      // the pty's master (non-blocking)
	slave  *os.File // the command's end: its stdio where that was the terminal
	saved  *unix.Termios
	// Streams are the command's stdin, stdout and stderr: the slave where sysprof's was the
	// terminal, nil (sysprof's own) where not.
	Streams [3]*os.File

	filter *Filter
	wake   [2]int // a pipe: Close and SIGWINCH wake the loop
	winch  chan os.Signal
	done   chan struct{}
	once   sync.Once
	// winchDone: the goroutine passing SIGWINCH on has ended.
	winchDone sync.WaitGroup
	stopped   bool // the loop is told to drain and end (wake's 's')
	// queued is the input the user's terminal held before raw mode (takeQueued), relayed first.
	queued []byte
}

// Open returns a relay when one of stdin, stdout or stderr is a terminal of which sysprof's
// process group is the foreground (a background run keeps the terminal as it is: it could not
// read it or set its modes) and stdout is not piped to another program, or nil. The user's terminal is in raw mode and relayed from the
// return on: call Close on every path.
func Open(stdin, stdout, stderr *os.File) (*Relay, error) {
	std := [3]*os.File{stdin, stdout, stderr}
	user := -1
	var at [3]bool
	for i, f := range std {
		if f == nil {
			continue
		}
		fd := int(f.Fd())
		pg, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP)
		if err != nil || pg != unix.Getpgrp() {
			continue
		}
		if user < 0 {
			user = fd
		} else if !sameFile(user, fd) {
			continue // another terminal: left as it is
		}
		at[i] = true
	}
	if user < 0 || (!at[1] && pipeline(stdout)) {
		return nil, nil
	}
	// Output goes to the terminal stream the command wrote to (stdout before stderr), input
	// comes from stdin when it is the terminal, else from the same terminal (opened read-write
	// by the login, as terminals are).
	if at[1] {
		user = int(stdout.Fd())
	} else if at[2] {
		user = int(stderr.Fd())
	}
	saved, err := unix.IoctlGetTermios(user, unix.TCGETS)
	if err != nil {
		return nil, fmt.Errorf("terminal relay: read the terminal's modes: %w", err)
	}
	r := &Relay{user: user, master: -1, saved: saved, filter: NewFilter(), done: make(chan struct{}), wake: [2]int{-1, -1}}
	if err := r.openPTY(); err != nil {
		r.closeFDs()
		return nil, fmt.Errorf("terminal relay: %w (run without a terminal, or with stdio redirected)", err)
	}
	for i := range at {
		if at[i] {
			r.Streams[i] = r.slave
		}
	}
	r.queued = takeQueued(user, saved)
	raw := *saved
	makeRaw(&raw)
	if err := unix.IoctlSetTermios(user, unix.TCSETS, &raw); err != nil {
		r.closeFDs()
		return nil, fmt.Errorf("terminal relay: raw mode: %w", err)
	}
	r.winch = make(chan os.Signal, 1)
	signal.Notify(r.winch, unix.SIGWINCH)
	go r.loop()
	return r, nil
}

// takeQueued reads what the user's terminal already holds while it is still canonical: lines
// typed ahead, and the end of file a program driving the terminal sends when its own input
// ends (script(1) writes VEOF for a stdin at its end): raw mode would turn a pending end of
// file into a NUL byte, and the command would wait for input for ever. An end of file becomes
// the pty's own VEOF (its modes are the terminal's), which the command's read sees as one.
func takeQueued(fd int, t *unix.Termios) []byte {
	if t.Lflag&unix.ICANON == 0 {
		return nil
	}
	var out []byte
	buf := make([]byte, 4096)
	for range 64 {
		p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		if n, err := unix.Poll(p, 0); err != nil || n == 0 || p[0].Revents&unix.POLLIN == 0 {
			break
		}
		n, err := unix.Read(fd, buf)
		if n == 0 && err == nil {
			return append(out, t.Cc[unix.VEOF])
		}
		if n <= 0 {
			break
		}
		out = append(out, buf[:n]...)
	}
	return out
}

// pipeline: f is a pipe or a socket, the output of a pipeline (`sysprof enforce -- git log |
// less`), whose other programs may read the same terminal: a relay would take their keys and
// fight them over its modes. The command then has the terminal as before, without a relay.
func pipeline(f *os.File) bool {
	var st unix.Stat_t
	if f == nil || unix.Fstat(int(f.Fd()), &st) != nil {
		return false
	}
	return st.Mode&unix.S_IFMT == unix.S_IFIFO || st.Mode&unix.S_IFMT == unix.S_IFSOCK
}

func sameFile(a, b int) bool {
	var sa, sb unix.Stat_t
	return unix.Fstat(a, &sa) == nil && unix.Fstat(b, &sb) == nil && sa.Rdev == sb.Rdev
}

// openPTY opens the pair, the slave with the user's modes and window size.
func (r *Relay) openPTY() error {
	m, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return fmt.Errorf("open /dev/ptmx: %w", err)
	}
	r.master = m
	if err := unix.IoctlSetPointerInt(m, unix.TIOCSPTLCK, 0); err != nil {
		return fmt.Errorf("unlock the pty: %w", err)
	}
	// TIOCGPTPEER opens the slave from the master itself: no lookup of /dev/pts by name.
	sfd, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(m), unix.TIOCGPTPEER, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC)
	if errno != 0 {
		return fmt.Errorf("open the pty's terminal end: %w", errno)
	}
	s := int(sfd)
	n, err := unix.IoctlGetInt(m, unix.TIOCGPTN)
	if err != nil {
		unix.Close(s)
		return fmt.Errorf("pty number: %w", err)
	}
	r.slave = os.NewFile(uintptr(s), "/dev/pts/"+strconv.Itoa(n))
	if err := unix.IoctlSetTermios(s, unix.TCSETS, r.saved); err != nil {
		return fmt.Errorf("set the pty's modes: %w", err)
	}
	r.resize()
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		return err
	}
	r.wake = p
	return nil
}

func makeRaw(t *unix.Termios) {
	t.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	t.Oflag &^= unix.OPOST
	t.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	t.Cflag &^= unix.CSIZE | unix.PARENB
	t.Cflag |= unix.CS8
	t.Cc[unix.VMIN] = 1
	t.Cc[unix.VTIME] = 0
}

// resize gives the pty the user's window size (the kernel sends the command SIGWINCH).
func (r *Relay) resize() {
	if ws, err := unix.IoctlGetWinsize(r.user, unix.TIOCGWINSZ); err == nil {
		_ = unix.IoctlSetWinsize(r.master, unix.TIOCSWINSZ, ws)
	}
}

// Name is the pty's terminal end, /dev/pts/N.
func (r *Relay) Name() string { return r.slave.Name() }

// Slave is the pty's slave end: the command's terminal.
func (r *Relay) Slave() *os.File { return r.slave }

// loop relays until Close: the user's input to the master (held while the command does not
// read), the master's output through the filter to the user's terminal.
func (r *Relay) loop() {
	defer close(r.done)
	r.winchDone.Add(1)
	go func() {
		defer r.winchDone.Done()
		for {
			select {
			case <-r.winch:
				r.poke('w')
			case <-r.done:
				return
			}
		}
	}()
	buf := make([]byte, 32*1024)
	var out []byte
	pending := r.queued // input the master did not take yet
	inputOK := true
	var drainUntil time.Time
	defer func() { writeAll(r.user, r.filter.Flush(nil)) }()
	for {
		fds := []unix.PollFd{{Fd: int32(r.master), Events: unix.POLLIN}, {Fd: int32(r.wake[0]), Events: unix.POLLIN}}
		if len(pending) > 0 {
			fds[0].Events |= unix.POLLOUT
		} else if inputOK && !r.stopped {
			fds = append(fds, unix.PollFd{Fd: int32(r.user), Events: unix.POLLIN})
		}
		timeout := -1
		if r.stopped {
			timeout = max(0, int(time.Until(drainUntil)/time.Millisecond))
		}
		n, err := unix.Poll(fds, timeout)
		if err != nil && !errors.Is(err, unix.EINTR) {
			return
		}
		if r.stopped && n == 0 {
			return // the drain's deadline
		}
		if fds[1].Revents != 0 {
			var w [16]byte
			k, _ := unix.Read(r.wake[0], w[:])
			for _, c := range w[:max(k, 0)] {
				switch c {
				case 'w':
					r.resize()
				case 's':
					if !r.stopped {
						r.stopped = true
						drainUntil = time.Now().Add(time.Second)
					}
				}
			}
		}
		if fds[0].Revents&(unix.POLLIN|unix.POLLHUP|unix.POLLERR) != 0 {
			k, err := unix.Read(r.master, buf)
			if k > 0 {
				out = r.filter.Filter(out[:0], buf[:k])
				writeAll(r.user, out)
			} else if r.stopped && (k == 0 || err != nil && !errors.Is(err, unix.EAGAIN) && !errors.Is(err, unix.EINTR)) {
				return // EIO: every terminal end is closed and its output read
			} else if fds[0].Revents&unix.POLLIN == 0 && !r.stopped {
				// Hung up (no terminal end open now): wait for the wake-up instead of spinning.
				time.Sleep(5 * time.Millisecond)
			}
		}
		if len(pending) > 0 && fds[0].Revents&unix.POLLOUT != 0 {
			k, err := unix.Write(r.master, pending)
			if k > 0 {
				pending = pending[k:]
			} else if err != nil && !errors.Is(err, unix.EAGAIN) && !errors.Is(err, unix.EINTR) {
				pending = nil
			}
		}
		if len(fds) > 2 && fds[2].Revents != 0 {
			k, err := unix.Read(r.user, buf)
			if k <= 0 && !errors.Is(err, unix.EAGAIN) && !errors.Is(err, unix.EINTR) {
				inputOK = false // the user's terminal is gone (its hangup reaches sysprof as SIGHUP)
				continue
			}
			if k > 0 {
				pending = append(pending, buf[:k]...)
				if r.suspendKey(buf[:k]) {
					// The command reads it first (its process group stops), then the run stops.
					// One write: a full input queue must not hold the relay.
					if k, _ := unix.Write(r.master, pending); k > 0 {
						pending = pending[k:]
					}
					r.suspend()
				}
			}
		}
	}
}

func writeAll(fd int, p []byte) {
	for len(p) > 0 {
		k, err := unix.Write(fd, p)
		if k > 0 {
			p = p[k:]
			continue
		}
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if errors.Is(err, unix.EAGAIN) {
			_, _ = unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}, 100)
			continue
		}
		return
	}
}

func (r *Relay) poke(c byte) { _, _ = unix.Write(r.wake[1], []byte{c}) }

// suspendKey: in holds the command's terminal's suspend character while that terminal makes
// it a signal (ISIG): the kernel stops the command's process group as it reads it, and the
// run as a whole stops with it (suspend).
func (r *Relay) suspendKey(in []byte) bool {
	t, err := unix.IoctlGetTermios(r.master, unix.TCGETS)
	if err != nil || t.Lflag&unix.ISIG == 0 || t.Cc[unix.VSUSP] == 0 {
		return false
	}
	for _, b := range in {
		if b == t.Cc[unix.VSUSP] {
			return true
		}
	}
	return false
}

// suspend stops sysprof as a shell's Ctrl-Z would have stopped the command: the user's
// terminal back in its modes first; once continued (fg) it is raw again and the command's
// process group continues too.
func (r *Relay) suspend() {
	// The terminal's echo of the key (^Z) first, as a shell's job shows it before "Stopped".
	buf := make([]byte, 4096)
	for {
		if n, _ := unix.Poll([]unix.PollFd{{Fd: int32(r.master), Events: unix.POLLIN}}, 20); n <= 0 {
			break
		}
		k, _ := unix.Read(r.master, buf)
		if k <= 0 {
			break
		}
		writeAll(r.user, r.filter.Filter(nil, buf[:k]))
	}
	_ = unix.IoctlSetTermios(r.user, unix.TCSETSW, r.saved)
	_ = unix.Kill(0, unix.SIGSTOP)
	raw := *r.saved
	makeRaw(&raw)
	_ = unix.IoctlSetTermios(r.user, unix.TCSETSW, &raw)
	r.resize()
	if pg, err := unix.IoctlGetInt(r.master, unix.TIOCGPGRP); err == nil && pg > 0 {
		_ = unix.Kill(-pg, unix.SIGCONT)
	}
}

// Close ends the relay: sysprof's terminal end is closed, what the command wrote is drained
// (until every terminal end is closed, at most a second), the user's terminal gets its modes
// back. It returns what the filter dropped. Safe to call more than once.
func (r *Relay) Close() Dropped {
	if r == nil {
		return nil
	}
	r.once.Do(func() {
		r.slave.Close()
		r.poke('s')
		<-r.done
		signal.Stop(r.winch)
		r.winchDone.Wait() // it pokes the wake pipe: done before the pipe is closed
		_ = unix.IoctlSetTermios(r.user, unix.TCSETSW, r.saved)
		r.closeFDs()
	})
	return r.filter.Dropped()
}

func (r *Relay) closeFDs() {
	if r.slave != nil {
		r.slave.Close()
	}
	for _, fd := range []int{r.master, r.wake[0], r.wake[1]} {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
	r.master, r.wake = -1, [2]int{-1, -1}
}

// Notes are the run report's lines: what was dropped and that the command had a terminal of
// its own.
func (r *Relay) Notes() []string {
	if r == nil {
		return nil
	}
	return r.filter.Dropped().Notes()
}

// String describes the relay for sysprof's timings and errors.
func (r *Relay) String() string {
	return "terminal relay on " + strings.TrimPrefix(r.Name(), "/dev/")
}
