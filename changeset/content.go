package changeset

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// OpenNew opens the file a change would install (in its stage's upper layer), for reading:
// by fds beneath the layer, following no link, refusing anything but a regular file.
func (r *Run) OpenNew(c Change) (*os.File, error) {
	if c.Stage < 0 || c.Stage >= len(r.Stages) {
		return nil, fmt.Errorf("BUG: change %s of stage %d, run %s has %d", c.Path, c.Stage, r.ID, len(r.Stages))
	}
	return openRegular(r.Stages[c.Stage].Upper, c.Rel)
}

// OpenOld opens the host file a change would replace or delete, for reading, as OpenNew does.
func (r *Run) OpenOld(c Change) (*os.File, error) {
	if c.Stage < 0 || c.Stage >= len(r.Stages) {
		return nil, fmt.Errorf("BUG: change %s of stage %d, run %s has %d", c.Path, c.Stage, r.ID, len(r.Stages))
	}
	return openRegular(r.Stages[c.Stage].Rules.Dir, c.Rel)
}

func openRegular(root, rel string) (*os.File, error) {
	dfd, err := openRoot(root, unix.O_PATH)
	if err != nil {
		return nil, err
	}
	defer unix.Close(dfd)
	fd, err := openBeneath(dfd, rel, unix.O_RDONLY|unix.O_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("open %s below %s: %w", rel, root, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, fmt.Errorf("%s below %s is not a regular file", rel, root)
	}
	return os.NewFile(uintptr(fd), root+"/"+rel), nil
}
