package enforcer

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/paths"
	"github.com/sysprof/sysprof/seccomp"
)

// stagedLink answers a link or linkat the filter sent only for seccomp.WhyLink (a plan with
// stages) and reports whether it did. A link from one directory to another whose source is a
// file of a stage's lower layer (the host's file, copied up or not) is answered EXDEV: on the
// overlay the link would copy the file up (a change of a file the run never wrote, held for
// review) and the new name would stat as the upper inode, not the one the caller stat'ed
// (git's local clone checks and dies "hardlink different from source"). EXDEV is what
// Landlock answers a cross-directory link it has no refer right for, and what a link across
// file systems gets: git, cargo, pnpm and cp fall back to copying. Every other link goes on
// (CONTINUE) to the mounts and Landlock, which decide it as before: this only ever refuses.
// The guard (a root run) sees an EXDEV between two writable names and records nothing.
func (s *supervisor) stagedLink(n *seccompNotif) bool {
	name, _ := SyscallName(n.Data.Arch, uint32(n.Data.Nr))
	if (name != "link" && name != "linkat") || !s.compiled.onlyFails(n, seccomp.WhyLink) {
		return false
	}
	resp := seccompNotifResp{ID: n.ID, Flags: unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE}
	if len(s.compiled.Stages) > 0 {
		if from, to, ok := s.linkOutOfLower(n, name); ok && notifIDValid(s.listener, n.ID) {
			resp.Flags, resp.Error = 0, -int32(unix.EXDEV)
			if s.exdevLinks++; s.exdevLinks == 1 {
				s.exdevFirst = from + " → " + to
			}
		}
	}
	_ = notifSend(s.listener, &resp)
	return true
}

// linkNote says, once the run is over, that links were answered EXDEV and what to do, or "":
// git, cargo, pnpm and cp copy instead, but ln and cp -l have no fallback and fail.
func (s *supervisor) linkNote() string {
	if s.exdevLinks == 0 {
		return ""
	}
	return fmt.Sprintf("links: %d hard link(s) of a host file into another directory of a staged tree answered EXDEV (first: %s): "+
		"the overlay would give the new name another inode (git's local clone refuses that); git, cargo, pnpm and cp copy instead, "+
		"ln and cp -l fail: link files the run made, use cp or ln -s, or link outside the sandbox", s.exdevLinks, s.exdevFirst)
}

// linkOutOfLower reports whether n's link names, as its task sees them, a source in a stage
// that is the host's file there (same inode number: overlayfs keeps the lower inode's number,
// also after a copy-up) and a new name in another directory, and the two paths.
func (s *supervisor) linkOutOfLower(n *seccompNotif, name string) (string, string, bool) {
	pid := int(n.Pid)
	oldDir, oldArg, newDir, newArg, follow := int64(unix.AT_FDCWD), n.Data.Args[0], int64(unix.AT_FDCWD), n.Data.Args[1], false
	if name == "linkat" {
		flags := n.Data.Args[4]
		if flags&unix.AT_EMPTY_PATH != 0 {
			return "", "", false // a descriptor's file (O_TMPFILE made into a name): the run's own
		}
		oldDir, oldArg, newDir, newArg = int64(int32(n.Data.Args[0])), n.Data.Args[1], int64(int32(n.Data.Args[2])), n.Data.Args[3]
		follow = flags&unix.AT_SYMLINK_FOLLOW != 0
	}
	from, ok := taskPath(pid, oldDir, oldArg)
	if !ok {
		return "", "", false
	}
	to, ok := taskPath(pid, newDir, newArg)
	if !ok || filepath.Dir(from) == filepath.Dir(to) {
		return "", "", false
	}
	if !slices.ContainsFunc(s.compiled.Stages, func(st StageSpec) bool { return paths.Within(from, st.Dir) }) {
		return "", "", false
	}
	// The host's file first: most links name a file the run made (git's objects), which the
	// host does not have, and that needs no look into the task's root.
	var in, host unix.Stat_t
	statHost := unix.Lstat
	if follow {
		statHost = unix.Stat
	}
	if statHost(from, &host) != nil {
		return "", "", false // the run made it: an upper file links as any
	}
	root, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/root", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", "", false
	}
	defer unix.Close(root)
	how := unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS}
	if !follow {
		how.Flags |= unix.O_NOFOLLOW
	}
	fd, err := unix.Openat2(root, from, &how)
	if err != nil {
		return "", "", false
	}
	defer unix.Close(fd)
	if unix.Fstat(fd, &in) != nil || in.Mode&unix.S_IFMT == unix.S_IFDIR {
		return "", "", false
	}
	return from, to, in.Ino == host.Ino && in.Mode&unix.S_IFMT == host.Mode&unix.S_IFMT
}

// taskPath is the absolute, clean path a task's call names at addr, relative to dirfd (or its
// working directory) as the task sees them.
func taskPath(pid int, dirfd int64, addr uint64) (string, bool) {
	p, ok := readString(pid, addr)
	if !ok || p == "" {
		return "", false
	}
	return absTaskPath(pid, dirfd, p)
}

// absTaskPath is p, a path a task's call names relative to dirfd (or its working directory),
// made absolute and clean as the task sees it.
func absTaskPath(pid int, dirfd int64, p string) (string, bool) {
	if !filepath.IsAbs(p) {
		link := "/proc/" + strconv.Itoa(pid) + "/cwd"
		if dirfd != unix.AT_FDCWD {
			link = "/proc/" + strconv.Itoa(pid) + "/fd/" + strconv.FormatInt(dirfd, 10)
		}
		base, err := os.Readlink(link)
		if err != nil || !filepath.IsAbs(base) {
			return "", false
		}
		p = filepath.Join(base, p)
	}
	return filepath.Clean(p), true
}
