// Package fscopy copies a file's data between file descriptors the way the source holds it:
// its holes stay holes. A run's file that leaves it (the flush of a bounded stage, Apply of
// a changeset) is hostile input: a sparse file of a terabyte takes no space in the run's
// bounded tmpfs, and a plain copy writes a terabyte of zeros to the host's disk.
package fscopy

import (
	"errors"

	"golang.org/x/sys/unix"
)

// Data copies in's data to out from offset 0, out being empty: only in's data extents are
// written (found with SEEK_DATA/SEEK_HOLE; a file system without them is all data), and out
// ends at in's size. out allocates no more than in does, give or take a block per extent.
func Data(out, in int) error {
	var st unix.Stat_t
	if err := unix.Fstat(in, &st); err != nil {
		return err
	}
	size := st.Size
	for off := int64(0); off < size; {
		start, err := unix.Seek(in, off, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) { // nothing but a hole to the end
			break
		}
		if err != nil {
			start = off // no SEEK_DATA here: all of it is data
		}
		end, err := unix.Seek(in, start, unix.SEEK_HOLE)
		if err != nil || end > size {
			end = size
		}
		if err := copyRange(out, in, start, end); err != nil {
			return err
		}
		off = end
	}
	return unix.Ftruncate(out, size)
}

// copyRange copies in's bytes [start, end) to the same offsets of out.
func copyRange(out, in int, start, end int64) error {
	for start < end {
		roff, woff := start, start
		n, err := unix.CopyFileRange(in, &roff, out, &woff, int(min(end-start, 1<<30)), 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			if errors.Is(err, unix.EXDEV) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) {
				return readRange(out, in, start, end)
			}
			return err
		}
		if n == 0 { // in shrank under us: what is left is a hole
			return nil
		}
		start += int64(n)
	}
	return nil
}

func readRange(out, in int, start, end int64) error {
	buf := make([]byte, min(end-start, 1<<20))
	for start < end {
		n, err := unix.Pread(in, buf[:min(int64(len(buf)), end-start)], start)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		for w := 0; w < n; {
			m, err := unix.Pwrite(out, buf[w:n], start+int64(w))
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				return err
			}
			w += m
		}
		start += int64(n)
	}
	return nil
}
