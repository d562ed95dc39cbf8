package enforcer

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/sandbox"
	"github.com/sysprof/sysprof/seccomp"
)

// useExecOutputs gives the supervisor the init stage's socket that makes exec output directories
// and binds exec output files (sandbox.ServeExecOutputMkdirs), and the outputs of each kind.
func (s *supervisor) useExecOutputs(fd int, outputs, files []string) {
	s.execOutFD, s.execOuts, s.execFiles = fd, outputs, files
}

// execOutputExec answers an execve or execveat (every one goes to the supervisor when the plan
// has exec output files: Compile): when its path, absolute or relative to the caller's working
// directory or dirfd, names an exec output file, the init stage binds that file exec over
// itself first (the stage around it stays noexec). An unlink or rename naming one (configure's
// `rm -f conftest`, a linker's rename over its output) has that bind undone first, so that
// the name can go (a mount point cannot: EBUSY). Every call then goes on unchanged: the mounts
// and Landlock decide it. It reports whether it answered n.
func (s *supervisor) execOutputExec(n *seccompNotif) bool {
	args := execFileArgs(s, n)
	if args == nil {
		return false
	}
	if s.compiled.spec == nil || len(s.compiled.spec.ABIs) == 0 || !s.compiled.onlyFails(n, seccomp.WhyExec) {
		return false // another check of the filter sent it too: the call is the usual path's
	}
	s.execFileCall(n, args)
	resp := seccompNotifResp{ID: n.ID, Flags: unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE}
	_ = notifSend(s.listener, &resp)
	return true
}

// execFileArgs returns, for an exec, unlink or rename of a plan with exec output files, the
// arguments naming its paths (dirfd, path; -1: AT_FDCWD; a rename's two names), else nil.
func execFileArgs(s *supervisor, n *seccompNotif) [][2]int {
	if len(s.execFiles) == 0 {
		return nil
	}
	name, _ := SyscallName(n.Data.Arch, uint32(n.Data.Nr))
	switch name {
	case "execve", "unlink", "access":
		return [][2]int{{-1, 0}}
	case "execveat", "unlinkat", "faccessat", "faccessat2":
		return [][2]int{{0, 1}}
	case "rename":
		return [][2]int{{-1, 0}, {-1, 1}}
	case "renameat", "renameat2":
		return [][2]int{{0, 1}, {2, 3}}
	}
	return nil
}

// execFileCall has the init stage bind the exec output file an exec of the native ABI names,
// or undo the bind of one an unlink or rename names.
func (s *supervisor) execFileCall(n *seccompNotif, args [][2]int) {
	if s.compiled.spec == nil || len(s.compiled.spec.ABIs) == 0 {
		return
	}
	if a := s.compiled.spec.ABIs[0].Info; a == nil || n.Data.Arch != uint32(a.ID) {
		return // another ABI's exec of an output meets the noexec stage
	}
	name, _ := SyscallName(n.Data.Arch, uint32(n.Data.Nr))
	mode := uint32(0) // an exec or an access check for exec binds
	if strings.HasPrefix(name, "unlink") || strings.HasPrefix(name, "rename") {
		mode = sandbox.ExecFileUnbind
	}
	for _, a := range args {
		dirfd := int64(unix.AT_FDCWD)
		if a[0] >= 0 {
			dirfd = int64(int32(n.Data.Args[a[0]]))
		}
		if p, ok := s.notifPath(n, dirfd, n.Data.Args[a[1]], s.execFiles); ok && notifIDValid(s.listener, n.ID) {
			s.makeOutput(p, mode)
		}
	}
}

// execOutputMkdir answers a mkdir or mkdirat (every one goes to the supervisor when the plan has
// exec outputs: Compile) of the native ABI without a set-id mode (those are the set-id check's to
// refuse and report): when its path, absolute or relative to the caller's working directory or
// dirfd, names an exec output directory, the init stage makes it with the call's mode less the
// caller's umask and binds it exec before the answer (so a program the command writes there runs
// at once); any other call goes on unchanged. It reports whether it answered n.
func (s *supervisor) execOutputMkdir(n *seccompNotif) bool {
	if len(s.execOuts) == 0 || s.compiled.spec == nil || len(s.compiled.spec.ABIs) == 0 {
		return false
	}
	a := s.compiled.spec.ABIs[0].Info
	if a == nil || n.Data.Arch != uint32(a.ID) {
		return false
	}
	name := a.SyscallNumbers[int(n.Data.Nr)]
	dirfd, pathArg, modeArg := int64(unix.AT_FDCWD), n.Data.Args[0], n.Data.Args[1]
	switch name {
	case "mkdir":
	case "mkdirat":
		dirfd, pathArg, modeArg = int64(int32(n.Data.Args[0])), n.Data.Args[1], n.Data.Args[2]
	default:
		return false
	}
	if uint32(modeArg)&(unix.S_ISUID|unix.S_ISGID) != 0 {
		return false
	}
	resp := seccompNotifResp{ID: n.ID, Flags: unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE}
	if o, mode, ok := s.outputOf(n, dirfd, pathArg, modeArg); ok {
		if errno, made := s.makeOutput(o, mode); made {
			resp.Flags, resp.Error = 0, -int32(errno)
		}
	}
	_ = notifSend(s.listener, &resp)
	return true
}

// outputOf returns the exec output directory n's path names and the mode to make it with.
func (s *supervisor) outputOf(n *seccompNotif, dirfd int64, pathArg, modeArg uint64) (string, uint32, bool) {
	pid := int(n.Pid)
	p, ok := s.notifPath(n, dirfd, pathArg, s.execOuts)
	if !ok {
		return "", 0, false
	}
	umask, ok := procUmask(pid)
	if !ok || !notifIDValid(s.listener, n.ID) { // what /proc said is this task's
		return "", 0, false
	}
	return p, uint32(modeArg) & 0o1777 &^ umask, true
}

// notifPath returns the path n's call names (pathArg, relative to dirfd or the caller's working
// directory) when it is one of outs; the caller checks that n is still valid before trusting it.
func (s *supervisor) notifPath(n *seccompNotif, dirfd int64, pathArg uint64, outs []string) (string, bool) {
	pid := int(n.Pid)
	p, ok := readString(pid, pathArg)
	if !ok || p == "" {
		return "", false
	}
	// Most directories a build makes, and programs it runs, are not outputs: their last name
	// says so without /proc.
	if base := filepath.Base(p); !slices.ContainsFunc(outs, func(o string) bool { return filepath.Base(o) == base }) {
		return "", false
	}
	p, ok = absTaskPath(pid, dirfd, p)
	return p, ok && slices.Contains(outs, p)
}

// makeOutput asks the init stage to make output directory o; made is false when it did not
// (not reachable without a symlink, or the socket is gone): the call then goes on.
func (s *supervisor) makeOutput(o string, mode uint32) (unix.Errno, bool) {
	if s.execOutFD < 0 {
		return 0, false
	}
	s.execOutMu.Lock()
	defer s.execOutMu.Unlock()
	req := binary.NativeEndian.AppendUint32(nil, mode)
	req = append(req, o...)
	if _, err := unix.Write(s.execOutFD, req); err != nil {
		return 0, false
	}
	var ans [4]byte
	if k, err := unix.Read(s.execOutFD, ans[:]); err != nil || k != 4 {
		return 0, false
	}
	v := int32(binary.NativeEndian.Uint32(ans[:]))
	if v < 0 {
		return 0, false
	}
	return unix.Errno(v), true
}

// procUmask reads the Umask line of /proc/PID/status.
func procUmask(pid int) (uint32, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Umask:"); ok {
			u, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32)
			return uint32(u), err == nil
		}
	}
	return 0, false
}
