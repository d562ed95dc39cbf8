package changeset

import (
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// OpenNew opens the file a change would install (in its stage's upper layer), for reading:
// by fds beneath the layer, following no link, refusing anything but a regular file.
func (r *Run) OpenNew(c Change) (*os.File, error) {
	if c.Stage < 0 || c.Stage >= len(r.Stages) {
		return nil, fmt.Errorf("BUG: change %s of stage %d, run %s has %d", c.Path, c.Stage, r.ID, len(r.Stages))
	}
	return r.openRegular(r.Stages[c.Stage].Upper, c.Rel)
}

// OpenOld opens the host file a change would replace or delete, for reading, as OpenNew does.
func (r *Run) OpenOld(c Change) (*os.File, error) {
	if c.Stage < 0 || c.Stage >= len(r.Stages) {
		return nil, fmt.Errorf("BUG: change %s of stage %d, run %s has %d", c.Path, c.Stage, r.ID, len(r.Stages))
	}
	return r.openRegular(r.Stages[c.Stage].Rules.Dir, c.Rel)
}

// Close closes the directories OpenNew and OpenOld keep open; the run stays usable.
func (r *Run) Close() error {
	rootsMu.Lock()
	defer rootsMu.Unlock()
	for k, fd := range r.roots {
		unix.Close(fd)
		delete(r.roots, k)
	}
	return nil
}

// rootsMu guards every Run's roots: OpenNew and OpenOld may be called from many goroutines.
var rootsMu sync.Mutex

func (r *Run) root(root string) (int, error) {
	rootsMu.Lock()
	defer rootsMu.Unlock()
	if dfd, ok := r.roots[root]; ok {
		return dfd, nil
	}
	dfd, err := openRoot(root, unix.O_PATH)
	if err != nil {
		return -1, err
	}
	if r.roots == nil {
		r.roots = map[string]int{}
	}
	r.roots[root] = dfd
	return dfd, nil
}

func (r *Run) openRegular(root, rel string) (*os.File, error) {
	dfd, err := r.root(root)
	if err != nil {
		return nil, err
	}
	fd, err := openBeneath(dfd, rel, unix.O_RDONLY|unix.O_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("open %s below %s: %w", rel, root, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, fmt.Errorf("%s below %s is not a regular file", rel, root)
	}
	// Opened non-blocking so that a FIFO could not hang it; a regular file reads blocking
	// (and os.NewFile then does not try to register it with the poller).
	_ = unix.SetNonblock(fd, false)
	return os.NewFile(uintptr(fd), root+"/"+rel), nil
}
