package guard

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/internal/kernrun"
	"github.com/sysprof/sysprof/internal/spawn"
	"github.com/sysprof/sysprof/report"
)

// A hidden file reads as empty: the open succeeds, so no refusal reaches guard.c. Each hidden
// file's cover is an inode of its own (sandbox's mountHidden), and the guard watches those
// inodes with fanotify (root only): an open of one is a read of the secret it hides, named with
// the process that made it. The watch takes permission events (FAN_OPEN_PERM, always allowed):
// the opener waits until its executable is read, so a process that exits at once is still
// named. Only the hidden files pay that round trip. A hidden directory is a denial already
// when a name under it is looked up (ENOENT).

// fanotifyMetaLen is the size of struct fanotify_event_metadata.
const fanotifyMetaLen = int(unsafe.Sizeof(unix.FanotifyEventMetadata{}))

// coverID names a cover: each is a tmpfs of its own, whose inode numbers repeat.
type coverID struct{ dev, ino uint64 }

// hiddenWatch is the fanotify group watching the run's hidden-file covers.
type hiddenWatch struct {
	fd     int
	f      *os.File           // fd, read through the poller
	files  map[coverID]string // cover → the hidden path it covers
	masked map[coverID]bool   // the covers that are masked copies (not empty)
	done   chan struct{}
	closed bool // the reader closed f (set before done is closed)
}

// WatchHidden watches the covers of the hidden files of the sandbox whose init stage is
// stagePID, once its mounts are in place and before the command runs. A cover that cannot be
// watched is a note (the read is still hidden, only not on the record).
func (g *Guard) WatchHidden(stagePID int) error {
	if g == nil || len(g.cfg.Hidden)+len(g.cfg.Masked) == 0 {
		return nil
	}
	mask := uint64(unix.FAN_OPEN_PERM)
	fd, err := unix.FanotifyInit(unix.FAN_CLASS_CONTENT|unix.FAN_CLOEXEC|unix.FAN_NONBLOCK, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_LARGEFILE)
	if errors.Is(err, unix.EINVAL) {
		// A kernel without permission events: notifications, named while the opener lives.
		mask = unix.FAN_OPEN
		fd, err = unix.FanotifyInit(unix.FAN_CLASS_NOTIF|unix.FAN_CLOEXEC|unix.FAN_NONBLOCK, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_LARGEFILE)
	}
	if err != nil {
		return fmt.Errorf("watch hidden files (fanotify_init): %w", err)
	}
	w := &hiddenWatch{fd: fd, f: os.NewFile(uintptr(fd), "fanotify"), files: map[coverID]string{}, masked: map[coverID]bool{}, done: make(chan struct{})}
	root := "/proc/" + strconv.Itoa(stagePID) + "/root"
	var errs []error
	for i, h := range slices.Concat(g.cfg.Hidden, g.cfg.Masked) {
		masked := i >= len(g.cfg.Hidden)
		var st unix.Stat_t
		p := root + h
		var fs unix.Statfs_t
		if unix.Stat(p, &st) != nil || st.Mode != unix.S_IFREG|0o444 || (st.Size != 0 && !masked) ||
			unix.Statfs(p, &fs) != nil || fs.Type != unix.TMPFS_MAGIC {
			continue // not there (stays absent), a directory, or not covered (sandbox's emptyTmpfs, mountCopy)
		}
		if err := unix.FanotifyMark(fd, unix.FAN_MARK_ADD, mask, unix.AT_FDCWD, p); err != nil {
			errs = append(errs, fmt.Errorf("watch hidden %s: %w", h, err))
			continue
		}
		w.files[coverID{st.Dev, st.Ino}] = h
		w.masked[coverID{st.Dev, st.Ino}] = masked
	}
	if len(w.files) == 0 {
		w.f.Close()
		return errors.Join(errs...)
	}
	g.hidden = w
	go g.readHidden(w)
	return errors.Join(errs...)
}

// readHidden records the opens of covers as they come, until closeHidden stops it. Should a
// read fail otherwise, the group is closed at once: the kernel then lets every open waiting on
// it go on, and no later open waits (the reads stay hidden, without a record).
func (g *Guard) readHidden(w *hiddenWatch) {
	defer close(w.done)
	buf := make([]byte, 4096)
	for {
		n, err := w.f.Read(buf)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return
		}
		if err != nil {
			w.f.Close()
			w.closed = true
			g.mu.Lock()
			g.notes = append(g.notes, fmt.Sprintf("reads of hidden files are not recorded from here on: watch: %v", err))
			g.mu.Unlock()
			return
		}
		g.hiddenEvents(w, buf[:n])
	}
}

// hiddenEvents turns each open of a cover in b into a denial.
func (g *Guard) hiddenEvents(w *hiddenWatch, b []byte) {
	for len(b) >= fanotifyMetaLen {
		m := (*unix.FanotifyEventMetadata)(unsafe.Pointer(&b[0]))
		if m.Event_len < uint32(fanotifyMetaLen) || int(m.Event_len) > len(b) {
			return
		}
		b = b[m.Event_len:]
		if m.Fd < 0 {
			if m.Mask&unix.FAN_Q_OVERFLOW != 0 {
				g.mu.Lock()
				g.notes = append(g.notes, "reads of hidden files were not all recorded: the watch's queue overflowed (they still read as empty)")
				g.mu.Unlock()
			}
			continue
		}
		var st unix.Stat_t
		err := unix.Fstat(int(m.Fd), &st)
		id := coverID{st.Dev, st.Ino}
		path, ok := w.files[id]
		if err == nil && ok && int(m.Pid) != int(g.rootPid.Load()) {
			g.record(g.hiddenDenial(path, int(m.Pid), w.masked[id]))
		}
		if m.Mask&unix.FAN_OPEN_PERM != 0 {
			// The open goes on: the file is the empty cover.
			r := unix.FanotifyResponse{Fd: m.Fd, Response: unix.FAN_ALLOW}
			_, _ = unix.Write(w.fd, (*[unsafe.Sizeof(r)]byte)(unsafe.Pointer(&r))[:])
		}
		unix.Close(int(m.Fd))
	}
}

// hiddenDenial is the record of one read of the hidden (or masked) file path by pid. Run lists
// it as information when the profile says the tool reads that secret (learned), else as a
// denial.
func (g *Guard) hiddenDenial(path string, pid int, masked bool) report.Denial {
	exe := kernrun.ExeOf(pid)
	portable := g.portable(path)
	what := fmt.Sprintf("%s read (hidden: it reads as empty)", path)
	if masked {
		what = fmt.Sprintf("%s read (masked: it reads without its credentials)", path)
	}
	d := report.Denial{Kind: report.KindFile, Path: path, Access: "read", Syscall: "open",
		What:  what,
		First: time.Now().UTC(), Count: 1, Exe: exe, Parents: kernrun.ParentsOf(int(g.rootPid.Load()), pid),
		Suggest: "filesystem.read: + " + portable}
	if g.cfg.FileRisk != nil {
		d.Risk = g.cfg.FileRisk("read", portable)
	}
	return d
}

// closeHidden stops the watch once the command is gone. An event is queued by the open that
// causes it, so what the command did is all queued by now: the reader is stopped and what it
// did not take is read here, without waiting.
func (g *Guard) closeHidden() {
	w := g.hidden
	if w == nil {
		return
	}
	g.hidden = nil
	_ = w.f.SetReadDeadline(time.Now())
	<-w.done
	if w.closed {
		return
	}
	buf := make([]byte, 4096)
	for {
		n, err := unix.Read(w.fd, buf)
		if err != nil || n <= 0 {
			break
		}
		g.hiddenEvents(w, buf[:n])
	}
	closeAside(w.f)
}

// closeAside closes f, its last close left to a short-lived child (spawn.Release): the last
// close of a fanotify group waits for an SRCU grace period (fsnotify's mark reaper), 0-22 ms
// measured at the end of a run, while the user waits; the child pays it after this process
// went on. Where spawn cannot, f's close is this process's.
func closeAside(f *os.File) {
	if fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0); err == nil {
		if spawn.Release(fd) != nil {
			unix.Close(fd)
		}
	}
	f.Close() // not the last reference when the child holds one
}
