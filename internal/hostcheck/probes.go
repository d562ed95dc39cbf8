package hostcheck

import (
	"errors"
	"fmt"
	"github.com/sysprof/sysprof/sandbox"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// Capability numbers (linux/capability.h); x/sys/unix has them, named here for readability.
const (
	capSysAdmin = unix.CAP_SYS_ADMIN // 21
	capPerfmon  = unix.CAP_PERFMON   // 38
	capBPF      = unix.CAP_BPF       // 39
)

// host is what the probes share: who we are, computed once.
type host struct {
	euid  int
	caps  uint64 // effective capability set
	capOK bool   // capget worked
	root  bool
}

func (h *host) hasCap(c int) bool { return h.capOK && h.caps&(1<<uint(c)) != 0 }

// canBPF reports whether this process may load BPF programs and attach tracing ones.
func (h *host) canBPF() bool {
	return h.hasCap(capSysAdmin) || (h.hasCap(capBPF) && h.hasCap(capPerfmon))
}

func newHost() *host {
	h := &host{euid: os.Geteuid()}
	h.caps, h.capOK = effectiveCaps()
	h.root = h.euid == 0
	return h
}

// effectiveCaps returns the effective capability set with capget(2), version 3 (64 bits).
func effectiveCaps() (uint64, bool) {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return capEffFromStatus()
	}
	return uint64(data[1].Effective)<<32 | uint64(data[0].Effective), true
}

// capEffFromStatus is the fallback: the CapEff line of /proc/self/status.
func capEffFromStatus() (uint64, bool) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return n, err == nil
		}
	}
	return 0, false
}

func runAll() []Check {
	h := newHost()
	cgMount, cgErr := Cgroup2Mount()

	privLearn := probePrivLearn(h)
	userns := probeUserns(h)
	cs := []Check{
		privLearn,
		probePrivEnforce(h, userns),
		probeUnprivBPF(),
		probeBTF(),
		probeTracefs(),
		probeTracepoints(h),
		probeCgroup2(h, cgMount, cgErr),
		probeRingBuf(h),
		probeCgroupSockAddr(h, cgMount, cgErr),
		probeFentryLSM(h),
		probeLandlock(),
		probeSeccompNotif(),
		userns,
		probeNsClone(h, CheckNetns, unix.CLONE_NEWNET, userns),
		probeNsClone(h, CheckMountns, unix.CLONE_NEWNS, userns),
		probePidfdGetfd(),
		probeIdmapRoot(h),
	}
	return cs
}

func available(name, for_, detail string) Check {
	return Check{Name: name, For: for_, Status: Available, Detail: detail}
}

func missing(name, for_, reason, remedy string) Check {
	return Check{Name: name, For: for_, Status: Missing, Reason: reason, Remedy: remedy}
}

func unknown(name, for_, reason, remedy string) Check {
	return Check{Name: name, For: for_, Status: Unknown, Reason: reason, Remedy: remedy}
}

func probePrivLearn(h *host) Check {
	const name = CheckPrivLearn
	if !h.capOK {
		return unknown(name, ForLearn, "cannot read the effective capabilities (capget and /proc/self/status failed)", remedyRootOrCaps)
	}
	var have []string
	switch {
	case h.root && h.hasCap(capSysAdmin):
		return available(name, ForLearn, "root")
	case h.hasCap(capSysAdmin):
		have = append(have, "CAP_SYS_ADMIN")
	case h.hasCap(capBPF) && h.hasCap(capPerfmon):
		have = append(have, "CAP_BPF", "CAP_PERFMON")
	}
	if have != nil {
		return available(name, ForLearn, fmt.Sprintf("euid %d with %s", h.euid, strings.Join(have, "+")))
	}
	var lack []string
	if !h.hasCap(capBPF) {
		lack = append(lack, "CAP_BPF")
	}
	if !h.hasCap(capPerfmon) {
		lack = append(lack, "CAP_PERFMON")
	}
	who := fmt.Sprintf("euid %d", h.euid)
	if h.root {
		who = "root without full capabilities (a container?)"
	}
	return missing(name, ForLearn, fmt.Sprintf("%s lacks %s (CapEff=%016x)", who, strings.Join(lack, " and "), h.caps), remedyRootOrCaps)
}

func probePrivEnforce(h *host, userns Check) Check {
	const name = CheckPrivEnforce
	if h.root {
		return available(name, ForEnforce, "root")
	}
	if userns.Status == Available {
		return available(name, ForEnforce, fmt.Sprintf("euid %d via unprivileged user namespaces", h.euid))
	}
	c := Check{Name: name, For: ForEnforce, Status: userns.Status,
		Reason: "not root and unprivileged user namespaces do not work: " + userns.Reason,
		Remedy: "run as root, or allow unprivileged user namespaces (" + userns.Remedy + ")"}
	return c
}

func probeUnprivBPF() Check {
	const name = CheckUnprivBPF
	const path = "/proc/sys/kernel/unprivileged_bpf_disabled"
	c := Check{Name: name, For: ForLearn, Optional: true}
	b, err := os.ReadFile(path)
	if err != nil {
		c.Status, c.Reason = Unknown, fmt.Sprintf("read %s: %v", path, err)
		return c
	}
	v := strings.TrimSpace(string(b))
	c.Status = Available
	switch v {
	case "0":
		c.Detail = "0: BPF allowed without CAP_BPF"
	case "1":
		c.Detail = "1: BPF needs CAP_BPF (locked until reboot)"
	case "2":
		c.Detail = "2: BPF needs CAP_BPF (admin may change it)"
	default:
		c.Detail = v
	}
	return c
}

const vmlinuxBTF = "/sys/kernel/btf/vmlinux"

func probeBTF() Check {
	const name = CheckBTF
	const remedy = "use a kernel built with CONFIG_DEBUG_INFO_BTF=y (Debian, Ubuntu, Fedora kernels have it)"
	f, err := os.Open(vmlinuxBTF)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return missing(name, ForLearn, vmlinuxBTF+" does not exist", remedy)
		}
		return missing(name, ForLearn, err.Error(), "make "+vmlinuxBTF+" readable, or run as root")
	}
	var buf [4]byte
	_, rerr := f.Read(buf[:])
	st, _ := f.Stat()
	f.Close()
	if rerr != nil {
		return missing(name, ForLearn, fmt.Sprintf("read %s: %v", vmlinuxBTF, rerr), remedy)
	}
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		return missing(name, ForLearn, fmt.Sprintf("parse kernel BTF: %v", err), remedy)
	}
	// The profiler's path walk reads task_struct and friends through CO-RE.
	for _, typ := range []string{"task_struct", "dentry", "files_struct"} {
		if _, err := spec.AnyTypeByName(typ); err != nil {
			return missing(name, ForLearn, fmt.Sprintf("kernel BTF has no %s: %v", typ, err), remedy)
		}
	}
	detail := vmlinuxBTF
	if st != nil {
		detail += fmt.Sprintf(" (%.1f MB)", float64(st.Size())/1e6)
	}
	return available(name, ForLearn, detail)
}

func probeTracefs() Check {
	p, err := TracefsMount()
	if err != nil {
		return fromErr(CheckTracefs, ForLearn, err)
	}
	return available(CheckTracefs, ForLearn, p)
}

// fromErr turns an error into a Missing check, keeping an *UnsupportedError's reason and remedy.
func fromErr(name, for_ string, err error) Check {
	var ue *UnsupportedError
	if errors.As(err, &ue) {
		return missing(name, for_, ue.Reason, ue.Remedy)
	}
	return missing(name, for_, err.Error(), "")
}

// tracepoints the profiler attaches to: group, event.
var requiredTracepoints = [][2]string{
	{"raw_syscalls", "sys_enter"},
	{"sched", "sched_process_exec"},
	{"syscalls", "sys_exit_openat"},
}

func probeTracepoints(h *host) Check {
	const name = CheckTracepoints
	tfs, err := TracefsMount()
	if err != nil {
		return unknown(name, ForLearn, "tracefs is not mounted", remedyTracefs)
	}
	var absent []string
	for _, tp := range requiredTracepoints {
		_, err := os.Stat(filepath.Join(tfs, "events", tp[0], tp[1], "id"))
		switch {
		case err == nil:
		case errors.Is(err, os.ErrNotExist):
			absent = append(absent, tp[0]+"/"+tp[1])
		case errors.Is(err, os.ErrPermission):
			return unknown(name, ForLearn, fmt.Sprintf("%s is not readable as euid %d", tfs, h.euid), runAsRoot)
		default:
			return unknown(name, ForLearn, err.Error(), "")
		}
	}
	if len(absent) > 0 {
		return missing(name, ForLearn, "no such tracepoint: "+strings.Join(absent, ", "),
			"use a kernel built with CONFIG_FTRACE_SYSCALLS=y and CONFIG_BPF_EVENTS=y")
	}
	if !h.canBPF() {
		return unknown(name, ForLearn, "events exist; loading and attaching a program needs CAP_BPF+CAP_PERFMON", runAsRoot)
	}
	// A program that does nothing, attached and detached at once.
	prog, err := ebpf.NewProgramWithOptions(&ebpf.ProgramSpec{
		Name:         "sysprof_probe",
		Type:         ebpf.TracePoint,
		License:      "GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()},
	}, ebpf.ProgramOptions{LogDisabled: true})
	if err != nil {
		return bpfFailure(name, ForLearn, h, "load tracepoint program", err)
	}
	defer prog.Close()
	for _, tp := range requiredTracepoints {
		l, err := link.Tracepoint(tp[0], tp[1], prog, nil)
		if err != nil {
			return bpfFailure(name, ForLearn, h, "attach "+tp[0]+"/"+tp[1], err)
		}
		l.Close()
	}
	return available(name, ForLearn, "attached to raw_syscalls/sys_enter, sched/sched_process_exec, syscalls/sys_exit_openat")
}

// bpfFailure classifies an error from a BPF load or attach.
func bpfFailure(name, for_ string, h *host, what string, err error) Check {
	msg := what + ": " + cleanBPFErr(err)
	switch {
	case errors.Is(err, ebpf.ErrNotSupported):
		return missing(name, for_, msg, remedyKernelBPFConfig)
	case (errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES)) && !h.canBPF():
		return unknown(name, for_, msg, runAsRoot)
	case errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES):
		return missing(name, for_, msg+" as root (kernel lockdown, an LSM or the hypervisor forbids it)",
			"check dmesg and /sys/kernel/security/lockdown; lockdown=confidentiality forbids BPF tracing")
	}
	return missing(name, for_, msg, remedyKernelBPFConfig)
}

// cleanBPFErr drops cilium/ebpf's MEMLOCK hint: on kernels ≥5.11 memory is charged to the
// cgroup and the hint only misleads (see KERNEL-NOTES.md).
func cleanBPFErr(err error) string {
	return strings.Replace(err.Error(), " (MEMLOCK may be too low, consider rlimit.RemoveMemlock)", "", 1)
}

func probeCgroup2(h *host, mount string, mountErr error) Check {
	const name = CheckCgroup2
	if mountErr != nil {
		return fromErr(name, ForBoth, mountErr)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(mount, &st); err != nil {
		return missing(name, ForBoth, fmt.Sprintf("statfs %s: %v", mount, err), "")
	}
	if st.Type != unix.CGROUP2_SUPER_MAGIC {
		return missing(name, ForBoth, fmt.Sprintf("%s is not a cgroup2 filesystem (magic %#x)", mount, st.Type), "")
	}
	detail := mount
	if mount != "/sys/fs/cgroup" {
		detail += " (hybrid v1/v2 hierarchy)"
	}
	dir, err := tempCgroup(mount)
	if err != nil {
		if errors.Is(err, os.ErrPermission) && !h.root {
			return Check{Name: name, For: ForBoth, Status: Unknown, Detail: detail,
				Reason: fmt.Sprintf("cannot create a cgroup as euid %d: %v", h.euid, err), Remedy: runAsRoot}
		}
		return Check{Name: name, For: ForBoth, Status: Missing, Detail: detail,
			Reason: "cannot create a child cgroup: " + err.Error(),
			Remedy: "make " + mount + " writable (a read-only cgroupfs in a container needs --cgroupns=private or a writable delegation)"}
	}
	if err := unix.Rmdir(dir); err != nil {
		return Check{Name: name, For: ForBoth, Status: Missing, Detail: detail,
			Reason: fmt.Sprintf("created %s but cannot remove it: %v", dir, err), Remedy: "rmdir " + dir}
	}
	return available(name, ForBoth, detail+"; child cgroup created and removed")
}

// tempCgroup makes a uniquely named child cgroup under parent.
func tempCgroup(parent string) (string, error) {
	return os.MkdirTemp(parent, "sysprof-doctor-")
}

func probeRingBuf(h *host) Check {
	const name = CheckRingBuf
	if err := features.HaveMapType(ebpf.RingBuf); err != nil {
		return bpfFailure(name, ForLearn, h, "create BPF_MAP_TYPE_RINGBUF", err)
	}
	return available(name, ForLearn, "BPF_MAP_TYPE_RINGBUF")
}

// probeCgroupSockAddr: learn records connect/sendmsg/bind with cgroup sock_addr programs;
// enforce needs none (egress goes through the sandbox's network namespace and proxy).
func probeCgroupSockAddr(h *host, mount string, mountErr error) Check {
	const name = CheckCgroupSockAddr
	if err := features.HaveProgramType(ebpf.CGroupSockAddr); err != nil {
		return bpfFailure(name, ForLearn, h, "load cgroup/connect4 program", err)
	}
	if mountErr != nil {
		return unknown(name, ForLearn, "programs load; no cgroup2 mount to attach them to", "see the cgroup2 check")
	}
	if !h.root {
		return Check{Name: name, For: ForLearn, Status: Unknown, Detail: "cgroup/connect4 loads",
			Reason: "attaching needs a cgroup this user may create", Remedy: runAsRoot}
	}
	dir, err := tempCgroup(mount)
	if err != nil {
		return unknown(name, ForLearn, "programs load; cannot create a cgroup to attach to: "+err.Error(), "see the cgroup2 check")
	}
	defer unix.Rmdir(dir)
	prog, err := ebpf.NewProgramWithOptions(&ebpf.ProgramSpec{
		Name:         "sysprof_probe",
		Type:         ebpf.CGroupSockAddr,
		AttachType:   ebpf.AttachCGroupInet4Connect,
		License:      "GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 1), asm.Return()}, // 1: allow
	}, ebpf.ProgramOptions{LogDisabled: true})
	if err != nil {
		return bpfFailure(name, ForLearn, h, "load cgroup/connect4 program", err)
	}
	defer prog.Close()
	l, err := link.AttachCgroup(link.CgroupOptions{Path: dir, Attach: ebpf.AttachCGroupInet4Connect, Program: prog})
	if err != nil {
		return bpfFailure(name, ForLearn, h, "attach cgroup/connect4", err)
	}
	l.Close()
	return available(name, ForLearn, "cgroup/connect4 loaded and attached to a temp cgroup")
}

func probeFentryLSM(h *host) Check {
	const name = CheckFentryLSM
	c := Check{Name: name, For: ForLearn, Optional: true,
		Remedy: "nothing: sysprof does not need them (it uses tracepoints)"}
	fe := features.HaveProgramType(ebpf.Tracing)
	lsm := features.HaveProgramType(ebpf.LSM)
	if fe == nil && lsm == nil {
		c.Status, c.Detail, c.Remedy = Available, "fentry and lsm programs load", ""
		return c
	}
	if !h.canBPF() {
		c.Status, c.Reason, c.Remedy = Unknown, "loading needs CAP_BPF+CAP_PERFMON", runAsRoot
		return c
	}
	var parts []string
	for _, p := range []struct {
		what string
		err  error
	}{{"fentry", fe}, {"lsm", lsm}} {
		switch {
		case p.err == nil:
			parts = append(parts, p.what+": loads")
			c.Detail = p.what + " loads"
		case errors.Is(p.err, ebpf.ErrNotSupported):
			parts = append(parts, p.what+": not supported by this kernel")
		case errors.Is(p.err, unix.EPERM):
			parts = append(parts, p.what+": EPERM at load as root (BPF trampolines are forbidden here: hypervisor, lockdown or an LSM)")
		default:
			parts = append(parts, p.what+": "+cleanBPFErr(p.err))
		}
	}
	c.Status, c.Reason = Missing, strings.Join(parts, "; ")
	return c
}

// Landlock ABI versions and what each one added (Documentation/userspace-api/landlock.rst).
var landlockFeatures = []struct {
	abi    int
	kernel string
	adds   string
}{
	{2, "5.19", "cross-directory rename and link (REFER)"},
	{3, "6.2", "truncate rights"},
	{4, "6.7", "TCP bind/connect port rules"},
	{5, "6.10", "ioctl on device files"},
	{6, "6.12", "signal and abstract-unix-socket scoping"},
	{7, "6.15", "audit logging flags"},
}

// LandlockABI returns the Landlock ABI version of the running kernel with
// landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION). Requires Linux 5.13 with
// Landlock enabled at boot; the error is an *UnsupportedError otherwise.
func LandlockABI() (int, error) {
	abi, err := sandbox.LandlockABI()
	var ue *sandbox.UnsupportedError
	switch {
	case err == nil:
		return abi, nil
	case errors.As(err, &ue):
		remedy := "use a kernel ≥ 6.15 built with CONFIG_SECURITY_LANDLOCK=y"
		if strings.Contains(ue.Reason, "disabled") {
			remedy = "add landlock to the lsm= kernel parameter (e.g. lsm=landlock,lockdown,yama,integrity,apparmor,bpf) and reboot"
		}
		return 0, &UnsupportedError{Feature: CheckLandlock, Reason: ue.Reason, Remedy: remedy}
	}
	return 0, err
}

func probeLandlock() Check {
	const name = CheckLandlock
	abi, err := LandlockABI()
	if err != nil {
		return fromErr(name, ForEnforce, err)
	}
	c := available(name, ForEnforce, fmt.Sprintf("ABI %d", abi))
	var lost []string
	newest := ""
	for _, f := range landlockFeatures {
		if abi < f.abi {
			lost = append(lost, fmt.Sprintf("%s (ABI %d)", f.adds, f.abi))
			newest = f.kernel
		}
	}
	if len(lost) > 0 {
		c.Reason = "without: " + strings.Join(lost, ", ")
		c.Remedy = "kernel ≥ " + newest + " for all of them; sysprof degrades only with an explicit flag"
	}
	return c
}

// seccompNotifSizes is struct seccomp_notif_sizes.
type seccompNotifSizes struct {
	Notif, NotifResp, Data uint16
}

func probeSeccompNotif() Check {
	const name = CheckSeccompNotif
	action := uint32(unix.SECCOMP_RET_USER_NOTIF)
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_GET_ACTION_AVAIL, 0, uintptr(unsafe.Pointer(&action)))
	switch errno {
	case 0:
	case unix.ENOSYS:
		return missing(name, ForEnforce, "seccomp(2): ENOSYS", "use a kernel built with CONFIG_SECCOMP_FILTER=y")
	case unix.EINVAL:
		return missing(name, ForEnforce, "seccomp filters are not available (CONFIG_SECCOMP_FILTER off, or kernel < 4.14)", "use a kernel ≥ 5.5 built with CONFIG_SECCOMP_FILTER=y")
	case unix.EOPNOTSUPP:
		return missing(name, ForEnforce, "SECCOMP_RET_USER_NOTIF is not available (kernel < 5.0)", "use a kernel ≥ 5.5")
	default:
		return missing(name, ForEnforce, "seccomp(SECCOMP_GET_ACTION_AVAIL): "+errno.Error(), "")
	}
	var sz seccompNotifSizes
	if _, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_GET_NOTIF_SIZES, 0, uintptr(unsafe.Pointer(&sz))); errno != 0 {
		return available(name, ForEnforce, "SECCOMP_RET_USER_NOTIF")
	}
	return available(name, ForEnforce, fmt.Sprintf("SECCOMP_RET_USER_NOTIF; notif %d B, resp %d B", sz.Notif, sz.NotifResp))
}

// truePath is the trivial program the namespace probes run.
func truePath() string {
	for _, p := range []string{"/bin/true", "/usr/bin/true"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("true"); err == nil {
		return p
	}
	return "/bin/true"
}

// runInNamespaces runs /bin/true in new namespaces (clone flags). With CLONE_NEWUSER the
// caller's uid and gid are mapped to root inside, as the enforcer does.
func runInNamespaces(flags uintptr, cred *syscall.Credential, name string, args ...string) error {
	if name == "" {
		name = truePath()
	}
	cmd := exec.Command(name, args...)
	cmd.Env = []string{}
	attr := &syscall.SysProcAttr{Cloneflags: flags, Credential: cred, Pdeathsig: syscall.SIGKILL}
	if flags&unix.CLONE_NEWUSER != 0 {
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}}
		attr.GidMappingsEnableSetgroups = false
	}
	cmd.SysProcAttr = attr
	out, err := cmd.CombinedOutput()
	if err != nil && len(out) > 0 {
		return fmt.Errorf("%w: %s", err, strings.TrimSpace(string(out)))
	}
	return err
}

// usernsSysctls describes the sysctls that gate user namespaces, when present.
func usernsSysctls() (detail []string, blocked string) {
	read := func(p string) (string, bool) {
		b, err := os.ReadFile(p)
		return strings.TrimSpace(string(b)), err == nil
	}
	if v, ok := read("/proc/sys/user/max_user_namespaces"); ok {
		detail = append(detail, "max_user_namespaces="+v)
		if v == "0" {
			blocked = "user.max_user_namespaces=0; fix: sysctl -w user.max_user_namespaces=15000"
		}
	}
	if v, ok := read("/proc/sys/kernel/unprivileged_userns_clone"); ok {
		detail = append(detail, "unprivileged_userns_clone="+v)
		if v == "0" && blocked == "" {
			blocked = "kernel.unprivileged_userns_clone=0; fix: sysctl -w kernel.unprivileged_userns_clone=1"
		}
	}
	if v, ok := read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"); ok {
		detail = append(detail, "apparmor_restrict_unprivileged_userns="+v)
		if v == "1" && blocked == "" {
			blocked = "AppArmor restricts unprivileged user namespaces; fix: an AppArmor profile for sysprof with 'userns,' or sysctl -w kernel.apparmor_restrict_unprivileged_userns=0"
		}
	}
	return detail, blocked
}

func probeUserns(h *host) Check {
	const name = CheckUserns
	sysctls, blocked := usernsSysctls()
	remedy := "allow unprivileged user namespaces"
	if blocked != "" {
		remedy = blocked
	}
	if !h.root {
		if err := runInNamespaces(unix.CLONE_NEWUSER, nil, ""); err != nil {
			return missing(name, ForEnforce, fmt.Sprintf("clone(CLONE_NEWUSER) as euid %d: %v", h.euid, err), remedy)
		}
		return available(name, ForEnforce, join("unprivileged clone works", sysctls...))
	}
	if err := runInNamespaces(unix.CLONE_NEWUSER, nil, ""); err != nil {
		return missing(name, ForEnforce, "clone(CLONE_NEWUSER) as root: "+err.Error(), remedy)
	}
	// As root, also try what an ordinary user would get: unshare(1) as nobody.
	unpriv := "unprivileged: not tested (no unshare(1))"
	if p, err := exec.LookPath("unshare"); err == nil {
		nobody := &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}
		if err := runInNamespaces(0, nobody, p, "--user", "--map-root-user", truePath()); err != nil {
			unpriv = "unprivileged (uid 65534): fails"
			c := available(name, ForEnforce, join("root clone works; "+unpriv, sysctls...))
			c.Reason = "ordinary users cannot create user namespaces: " + err.Error()
			c.Remedy = remedy + "; or enforce as root"
			return c
		}
		unpriv = "unprivileged (uid 65534) too"
	}
	return available(name, ForEnforce, join("root clone works; "+unpriv, sysctls...))
}

func join(head string, tail ...string) string {
	if len(tail) == 0 {
		return head
	}
	return head + "; " + strings.Join(tail, ", ")
}

func probeNsClone(h *host, name string, flag uintptr, userns Check) Check {
	what := map[uintptr]string{unix.CLONE_NEWNET: "CLONE_NEWNET", unix.CLONE_NEWNS: "CLONE_NEWNS"}[flag]
	if h.root {
		if err := runInNamespaces(flag, nil, ""); err != nil {
			return missing(name, ForEnforce, fmt.Sprintf("clone(%s) as root: %v", what, err), "use a kernel with namespaces enabled (CONFIG_NET_NS, CONFIG_NAMESPACES)")
		}
		return available(name, ForEnforce, "clone("+what+") works")
	}
	err := runInNamespaces(flag|unix.CLONE_NEWUSER, nil, "")
	if err == nil {
		return available(name, ForEnforce, "clone(CLONE_NEWUSER|"+what+") works")
	}
	if userns.Status != Available {
		return unknown(name, ForEnforce, "needs a user namespace, which does not work for this user", runAsRoot)
	}
	return missing(name, ForEnforce, fmt.Sprintf("clone(CLONE_NEWUSER|%s): %v", what, err), "")
}

func probePidfdGetfd() Check {
	const name = CheckPidfdGetfd
	remedy := "use a kernel ≥ 5.6 (the seccomp listener is handed over with pidfd_getfd)"
	pidfd, err := unix.PidfdOpen(os.Getpid(), 0)
	if err != nil {
		if errors.Is(err, unix.ENOSYS) {
			return missing(name, ForEnforce, "pidfd_open: ENOSYS", remedy)
		}
		return missing(name, ForEnforce, "pidfd_open: "+err.Error(), "")
	}
	defer unix.Close(pidfd)
	fd, err := unix.PidfdGetfd(pidfd, pidfd, 0)
	if err != nil {
		if errors.Is(err, unix.ENOSYS) {
			return missing(name, ForEnforce, "pidfd_getfd: ENOSYS", remedy)
		}
		return missing(name, ForEnforce, "pidfd_getfd on own process: "+err.Error(), "")
	}
	unix.Close(fd)
	detail := "pidfd_open + pidfd_getfd work"
	if b, err := os.ReadFile("/proc/sys/kernel/yama/ptrace_scope"); err == nil {
		scope := strings.TrimSpace(string(b))
		detail += "; yama ptrace_scope=" + scope
		if scope == "3" {
			return Check{Name: name, For: ForEnforce, Status: Missing, Detail: detail,
				Reason: "Yama ptrace_scope=3 forbids pidfd_getfd on other processes (even children)",
				Remedy: "set kernel.yama.ptrace_scope ≤ 2 (needs a reboot once it is 3)"}
		}
	}
	return available(name, ForEnforce, detail)
}

// probeIdmapRoot: as root, enforce runs the command as an unprivileged uid and hands it the
// host's mounts idmapped (sandbox.PrepareReplica): it needs / to allow idmapped mounts. Tried
// for real: a clone of / idmapped with the user namespace of a short-lived child.
func probeIdmapRoot(h *host) Check {
	const name = CheckIdmapRoot
	if !h.root {
		c := unknown(name, ForEnforce, "only plain root's runs use it", runAsRoot)
		c.Optional = true
		return c
	}
	remedy := "enforce under sudo (the invoking user) or as an ordinary user, or pass --degrade=userns to accept uid 0 in a user namespace"
	if err := sandbox.CanIdmap("/"); err != nil {
		return missing(name, ForEnforce, err.Error(), remedy)
	}
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		return available(name, ForEnforce, "/ is on a filesystem that allows them (not tried: no sleep(1))")
	}
	cmd := exec.Command(sleep, "10")
	m := []syscall.SysProcIDMap{{ContainerID: 0, HostID: sandbox.RootUID, Size: 1}}
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: unix.CLONE_NEWUSER, UidMappings: m, GidMappings: m, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return unknown(name, ForEnforce, "start a process in a user namespace: "+err.Error(), "")
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	ns, err := unix.Open(fmt.Sprintf("/proc/%d/ns/user", cmd.Process.Pid), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return unknown(name, ForEnforce, "open its user namespace: "+err.Error(), "")
	}
	defer unix.Close(ns)
	fd, err := unix.OpenTree(unix.AT_FDCWD, "/", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return missing(name, ForEnforce, "open_tree(/): "+err.Error(), remedy)
	}
	defer unix.Close(fd)
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_IDMAP, Userns_fd: uint64(ns)}); err != nil {
		return missing(name, ForEnforce, "idmap a clone of / (mount_setattr): "+err.Error(), remedy)
	}
	return available(name, ForEnforce, fmt.Sprintf("/ can be idmapped: plain root's command runs as host uid %d", sandbox.RootUID))
}
