// Command startfloor is the Go floor of `sysprof enforce -- CMD` (issue 28): a small Go program
// that asks the kernel for what enforce's start asks, the way enforce asks it (a Go parent, a
// second Go runtime as the init stage re-executed from /proc/self/exe over a full fork, since
// Go forks without CLONE_VFORK when it makes a user namespace), and nothing else. sysprof can
// come close to it, not below it while it keeps that shape. scripts/startfloor.c is the same
// in C (one process, no runtime, no Landlock). As root:
//
//	go build -o /tmp/startfloor-go ./bench/startfloor
//	bin/sysprof export -p true.yaml --format bpf -o /tmp/true.bpf
//	python3 scripts/pairbench.py -n 40 --warmup 5 --vs "/tmp/startfloor-go /tmp/true.bpf true" -- bin/sysprof enforce -p true.yaml -- true
//
// Steps: the parent starts the stage in new user (uid and gid 0 mapped to 65534 as root, the
// caller's own ids otherwise, with the stage's capabilities ambient, as sysprof does), mount,
// IPC, UTS, PID and network namespaces, with the filter over an inherited fd. The stage (PID 1):
// / private, a tmpfs on /tmp, /var/tmp and /dev/shm, a fresh /proc with /proc/sys bound, the
// whole tree read-only but the tmpfs (mount_setattr), lo up, a Landlock ruleset (read and
// execute below /, write below the three tmpfs, TCP bind and connect handled, signal and
// abstract-unix scoped), every capability dropped, no_new_privs, the filter, exec. Left out, each measured apart in
// BENCHMARKS.md: the idmapped replica of the host's mounts, the covers of hidden paths, the
// exec binds, the guard, the supervisor (the filter here has no user notification) and PID 1
// staying as the command's reaper (the command is exec'd as PID 1: the filter of a profile need
// not allow the fork a reaper makes).
package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

const stageArg = "__startfloor_stage__"

var tmpfs = []string{"/tmp", "/var/tmp", "/dev/shm"}

func main() {
	if len(os.Args) > 1 && os.Args[1] == stageArg {
		stage(os.Args[2:])
		return
	}
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: startfloor FILTER.bpf CMD [ARG...]")
		os.Exit(125)
	}
	os.Exit(parent(os.Args[1], os.Args[2:]))
}

func die(what string, err error) {
	fmt.Fprintf(os.Stderr, "startfloor: %s: %v\n", what, err)
	os.Exit(125)
}

// parent starts the stage in its namespaces and exits with the command's status.
func parent(filter string, argv []string) int {
	f, err := os.Open(filter)
	if err != nil {
		die("open the filter", err)
	}
	idmap := []syscall.SysProcIDMap{{ContainerID: 0, HostID: 65534, Size: 1}}
	var ambient []uintptr
	if uid := os.Getuid(); uid != 0 {
		idmap = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		ambient = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN, unix.CAP_SETPCAP}
	}
	gidmap := idmap
	if gid := os.Getgid(); os.Getuid() != 0 {
		gidmap = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
	}
	cmd := exec.Command("/proc/self/exe", append([]string{stageArg}, argv...)...)
	cmd.Args[0] = "startfloor-stage"
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.ExtraFiles = []*os.File{f} // fd 3
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags: unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWIPC | unix.CLONE_NEWUTS |
			unix.CLONE_NEWPID | unix.CLONE_NEWNET,
		UidMappings: idmap, GidMappings: gidmap, AmbientCaps: ambient,
		Setsid: true, Pdeathsig: syscall.SIGKILL,
	}
	if os.Getuid() == 0 {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: 0, Gid: 0, Groups: []uint32{}}
		cmd.SysProcAttr.GidMappingsEnableSetgroups = true
	}
	runtime.LockOSThread() // Pdeathsig follows the forking thread
	if err := cmd.Start(); err != nil {
		die("start the stage", err)
	}
	f.Close()
	err = cmd.Wait()
	if ee, ok := err.(*exec.ExitError); ok {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	if err != nil {
		die("wait", err)
	}
	return 0
}

// stage runs as PID 1 of the new namespaces and execs argv under every layer.
func stage(argv []string) {
	runtime.LockOSThread() // Landlock, no_new_privs and the filter are per thread
	filter := readFilter()
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		die("make / private", err)
	}
	for _, t := range tmpfs {
		if err := unix.Mount("tmpfs", t, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777"); err != nil {
			die("tmpfs "+t, err)
		}
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		die("mount /proc", err)
	}
	if err := unix.Mount("/proc/sys", "/proc/sys", "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		die("bind /proc/sys", err)
	}
	setattr("/", unix.AT_RECURSIVE, unix.MOUNT_ATTR_RDONLY, 0)
	for _, t := range tmpfs {
		setattr(t, 0, unix.MOUNT_ATTR_NOEXEC, unix.MOUNT_ATTR_RDONLY)
	}
	loUp()
	landlock()
	dropCaps()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		die("no_new_privs", err)
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		die("look up the command", err)
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if _, _, e := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&prog))); e != 0 {
		die("seccomp", e)
	}
	err = syscall.Exec(path, argv, os.Environ())
	fmt.Fprintf(os.Stderr, "startfloor: exec %s: %v\n", path, err)
	os.Exit(126)
}

// readFilter reads the raw BPF program (`sysprof export --format bpf`) from fd 3.
func readFilter() []unix.SockFilter {
	b := make([]byte, 8*4096)
	n, err := unix.Read(3, b)
	if err != nil || n == 0 || n%8 != 0 {
		die("read the filter", fmt.Errorf("%d bytes, %v", n, err))
	}
	unix.Close(3)
	return unsafe.Slice((*unix.SockFilter)(unsafe.Pointer(&b[0])), n/8)
}

// dropCaps empties the bounding set and every capability set of this thread, as the init stage
// does before the command.
func dropCaps() {
	for c := 0; c <= unix.CAP_LAST_CAP; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
			die("drop the bounding set", err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		die("clear ambient capabilities", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		die("capset", err)
	}
}

func setattr(path string, flags int, set, clr uint64) {
	if err := unix.MountSetattr(unix.AT_FDCWD, path, uint(flags), &unix.MountAttr{Attr_set: set, Attr_clr: clr}); err != nil {
		die("mount_setattr "+path, err)
	}
}

func loUp() {
	s, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		die("socket", err)
	}
	defer unix.Close(s)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		die("lo", err)
	}
	if err := unix.IoctlIfreq(s, unix.SIOCGIFFLAGS, ifr); err != nil {
		die("lo flags", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(s, unix.SIOCSIFFLAGS, ifr); err != nil {
		die("lo up", err)
	}
}

// landlock restricts this thread: read and execute below /, write below the tmpfs; TCP bind
// and connect handled (none allowed); signals and abstract unix sockets scoped (ABI 6).
func landlock() {
	const (
		read  = unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR | unix.LANDLOCK_ACCESS_FS_EXECUTE
		write = unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_REMOVE_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_FILE |
			unix.LANDLOCK_ACCESS_FS_MAKE_CHAR | unix.LANDLOCK_ACCESS_FS_MAKE_DIR | unix.LANDLOCK_ACCESS_FS_MAKE_REG |
			unix.LANDLOCK_ACCESS_FS_MAKE_SOCK | unix.LANDLOCK_ACCESS_FS_MAKE_FIFO | unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK |
			unix.LANDLOCK_ACCESS_FS_MAKE_SYM | unix.LANDLOCK_ACCESS_FS_REFER | unix.LANDLOCK_ACCESS_FS_TRUNCATE |
			unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	)
	attr := struct{ fs, net, scoped uint64 }{read | write,
		unix.LANDLOCK_ACCESS_NET_BIND_TCP | unix.LANDLOCK_ACCESS_NET_CONNECT_TCP,
		unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | unix.LANDLOCK_SCOPE_SIGNAL}
	r, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if e != 0 {
		die("landlock_create_ruleset", e)
	}
	rs := int(r)
	rule := func(path string, access uint64) {
		fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			die("open "+path, err)
		}
		a := unix.LandlockPathBeneathAttr{Allowed_access: access, Parent_fd: int32(fd)}
		if _, _, e := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(rs), unix.LANDLOCK_RULE_PATH_BENEATH, uintptr(unsafe.Pointer(&a)), 0, 0, 0); e != 0 {
			die("landlock_add_rule "+path, e)
		}
		unix.Close(fd)
	}
	rule("/", read)
	rule("/dev/null", unix.LANDLOCK_ACCESS_FS_READ_FILE|unix.LANDLOCK_ACCESS_FS_WRITE_FILE|unix.LANDLOCK_ACCESS_FS_TRUNCATE)
	for _, t := range tmpfs {
		rule(t, read|write)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		die("no_new_privs", err)
	}
	if _, _, e := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(rs), 0, 0); e != 0 {
		die("landlock_restrict_self", e)
	}
	unix.Close(rs)
}
