package project

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// Find walks up from dir to the first sysprof.yaml, stopping at the repository root (a
// directory with .git) or /. It returns "" when there is none. A file found this way decides
// what `learn --all` runs, often as root, so one that another user could have planted (not
// owned by root, the caller or $SUDO_UID, or writable by others) is refused; a file named
// explicitly (--config) is the user's choice and not checked.
func Find(dir string) (string, error) {
	for {
		p := filepath.Join(dir, File)
		fi, err := os.Stat(p)
		switch {
		case err == nil:
			if err := checkOwner(p, fi); err != nil {
				return "", err
			}
			return p, nil
		case !errors.Is(err, fs.ErrNotExist):
			return "", fmt.Errorf("config: %w", err)
		}
		if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
			return "", nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", nil
		}
		dir = parent
	}
}

func checkOwner(path string, fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if fi.Mode().Perm()&0o002 != 0 {
		return fmt.Errorf("%s is writable by every user: refusing to run the steps it names (chmod o-w it, or pass --config)", path)
	}
	owners := []uint32{0, uint32(os.Geteuid())}
	if s := os.Getenv("SUDO_UID"); s != "" {
		if n, err := strconv.ParseUint(s, 10, 32); err == nil {
			owners = append(owners, uint32(n))
		}
	}
	for _, o := range owners {
		if st.Uid == o {
			return nil
		}
	}
	return fmt.Errorf("%s belongs to uid %d, not to you or root: refusing to run the steps it names (pass --config to use it anyway)", path, st.Uid)
}
