package kernrun

import (
	"errors"
	"fmt"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// IsBPFFS reports whether dir is on a bpffs mount.
func IsBPFFS(dir string) (bool, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return false, err
	}
	return st.Type == unix.BPF_FS_MAGIC, nil
}

// EnsureBPFFS mounts bpffs at dir (root-only, mode 0700) when dir is not on one already, as
// systemd does at boot: some VMs boot without it, and the guard pins its programs there. The
// check and the mount happen under a lock in CoreFixupDir, so that two sysprof processes
// never stack two instances at dir (the lower one's pins would be unreachable).
// Requires root (CAP_SYS_ADMIN).
func EnsureBPFFS(dir string) error {
	if ok, err := IsBPFFS(dir); err != nil || ok {
		return err
	}
	unlock, err := LockDir(filepath.Join(CoreFixupDir, "bpffs"), true)
	if err != nil {
		return fmt.Errorf("%s is not a bpffs mount, and taking the lock to mount one failed: %w", dir, err)
	}
	defer unlock()
	if ok, err := IsBPFFS(dir); err != nil || ok {
		return err
	}
	if err := unix.Mount("bpf", dir, "bpf", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=0700"); err != nil && !errors.Is(err, unix.EBUSY) {
		return fmt.Errorf("%s is not a bpffs mount and mounting one there failed: %w", dir, err)
	}
	if ok, err := IsBPFFS(dir); err != nil || !ok {
		return fmt.Errorf("%s is not a bpffs mount after mounting one there (%v)", dir, err)
	}
	return nil
}
