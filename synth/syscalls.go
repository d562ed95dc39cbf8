package synth

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/elastic/go-seccomp-bpf/arch"

	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/trace"
)

// archInfo returns the syscall table of a trace architecture name, or nil.
func archInfo(name string) *arch.Info {
	switch name {
	case trace.ArchX86_64:
		return arch.X86_64
	case trace.ArchI386:
		return arch.I386
	case trace.ArchX32:
		return arch.X32
	case trace.ArchAArch64:
		return arch.AARCH64
	case trace.ArchARM:
		return arch.ARM
	}
	return nil
}

// syscallName resolves an observed syscall to a name: the trace's name when it has one, else
// the name of its number in the architecture's table (go-seccomp-bpf), else "" .
func syscallName(o sysObs) string {
	if o.name != "" && !strings.HasPrefix(o.name, "syscall_") {
		return o.name
	}
	nr := o.nr
	if n, err := strconv.Atoi(strings.TrimPrefix(o.name, "syscall_")); err == nil && o.name != "" {
		nr = n
	}
	if info := archInfo(o.arch); info != nil {
		if name, ok := info.SyscallNumbers[nr]; ok {
			return name
		}
	}
	return ""
}

// passSyscalls allows the learned syscall set, by name, and records the architectures it was
// entered through. Only the architectures seen are listed: an x86_64 tool that never used
// int 0x80 gets no i386, so the enforcer denies the whole compat table.
func (s *state) passSyscalls() []string {
	var unnamed []string
	perArch := map[string]map[string]bool{}
	for _, o := range s.sys {
		name := syscallName(o)
		if name == "" || !policy.IsSyscall(name) {
			// A profile holds names only, and this one has none in the go-seccomp-bpf tables
			// (a syscall newer than them): it cannot be allowed. Say so loudly; the enforcer
			// will deny it and report the denial.
			unnamed = append(unnamed, fmt.Sprintf("%s nr %d %s(%s)", o.arch, o.nr, strings.TrimPrefix(o.name+" ", " "), o.exe))
			continue
		}
		pr := s.provOf(o.exe)
		if o.seen > 0 {
			pr.seen = o.seen
		}
		if r := s.syscalls[name]; r != nil {
			r.prov = earliest(r.prov, pr)
		} else {
			s.syscalls[name] = &sysRule{prov: pr}
		}
		if o.arch != "" {
			s.arches[o.arch] = true
			if perArch[o.arch] == nil {
				perArch[o.arch] = map[string]bool{}
			}
			perArch[o.arch][name] = true
		}
	}
	if len(s.sys) == 0 {
		return nil
	}
	var parts []string
	for _, a := range sortedKeys(perArch) {
		parts = append(parts, fmt.Sprintf("%s %d", a, len(perArch[a])))
	}
	msgs := []string{fmt.Sprintf("%s learned", plural(len(s.syscalls), "syscall"))}
	if len(parts) > 0 {
		msgs[0] += " (" + strings.Join(parts, ", ") + ")"
	}
	if s.arches[trace.ArchI386] || s.arches[trace.ArchX32] {
		msgs = append(msgs, "compat architecture seen ("+strings.Join(compatSeen(s.arches), ", ")+"): it stays allowed; "+
			"profiles without it deny every syscall made through it")
	}
	slices.Sort(unnamed)
	for _, u := range slices.Compact(unnamed) {
		msg := "not allowed: a syscall with no name in the go-seccomp-bpf tables (a profile stores names only): " + u
		msgs = append(msgs, msg)
		s.warnings = append(s.warnings, msg)
	}
	return msgs
}

func compatSeen(arches map[string]bool) []string {
	var out []string
	for _, a := range []string{trace.ArchI386, trace.ArchX32} {
		if arches[a] {
			out = append(out, a)
		}
	}
	return out
}

// baseSyscalls are allowed in every profile, because a process can need them on paths a
// learn run rarely exercises. Kept deliberately small; each has its reason.
var baseSyscalls = []struct{ name, why string }{
	// The kernel's signal trampoline calls it when a handler returns; a run with no signal
	// delivered never shows it, and without it the first SIGCHLD/SIGINT handler kills the tool.
	{"rt_sigreturn", "return from a signal handler"},
	// Made by the kernel itself to resume an interrupted sleep after SIGSTOP/SIGCONT (Ctrl-Z).
	{"restart_syscall", "resume a syscall interrupted by a stop signal"},
	// A thread's or process's last call; the tracer may miss it when recording stops first.
	{"exit", "thread exit"},
	{"exit_group", "process exit"},
	// The target's own first exec happens before recording starts (the enforcer's init stage
	// execs it after installing the filter), so it is never in the learned set of the root.
	{"execve", "the command's own first exec precedes recording"},
	// glibc aborts the process ("The futex facility returned an unexpected error code") when
	// a futex call fails: locale loading in another LANG, stdio locks once a thread exists.
	{"futex", "glibc aborts when futex fails (locale loading, stdio locks)"},
	// A contended lock spins and yields before it sleeps on a futex: whether it does is timing.
	{"sched_yield", "a contended lock yields before its futex wait"},
	// Shells and runtimes ask the kernel for the cwd only when $PWD is unset or stale (env -i,
	// a CI runner, a wrapper that exported it): the environment, not the tool, decides. It
	// tells the process where it already is.
	{"getcwd", "the cwd asked of the kernel when $PWD is unset or stale (env -i, CI runners)"},
}

// passBase adds the base syscalls, marked base.
func (s *state) passBase() []string {
	var added []string
	names := make([]string, 0, len(baseSyscalls)+1)
	for _, b := range baseSyscalls {
		names = append(names, b.name)
	}
	if s.arches[trace.ArchI386] {
		// i386's non-rt signal return, for handlers installed without SA_SIGINFO.
		names = append(names, "sigreturn")
	}
	for _, n := range names {
		r := s.syscalls[n]
		if r == nil {
			r = &sysRule{}
			s.syscalls[n] = r
			added = append(added, n)
		}
		r.base = true
	}
	msg := fmt.Sprintf("base set always allowed: %s", strings.Join(names, ", "))
	if len(added) > 0 {
		msg += fmt.Sprintf(" (%d not seen during learning: %s)", len(added), strings.Join(added, ", "))
	}
	return []string{msg}
}

// syscallFamilies are the libc-variant groups: one libc (or one version) calls one member,
// another libc another. Unless Options.Exact, seeing any member allows all of them.
var syscallFamilies = [][]string{
	{"open", "openat", "openat2", "creat"},
	{"stat", "lstat", "fstat", "newfstatat", "fstatat", "statx", "stat64", "lstat64", "fstat64", "fstatat64"},
	{"access", "faccessat", "faccessat2"},
	{"dup2", "dup3"},
	{"pipe", "pipe2"},
	{"fork", "vfork", "clone", "clone3"},
	{"wait4", "waitid", "waitpid"},
	{"getdents", "getdents64"},
	{"poll", "ppoll"},
	{"select", "pselect6", "_newselect"},
	{"epoll_create", "epoll_create1"},
	{"epoll_wait", "epoll_pwait", "epoll_pwait2"},
	{"eventfd", "eventfd2"},
	{"signalfd", "signalfd4"},
	{"inotify_init", "inotify_init1"},
	{"rename", "renameat", "renameat2"},
	{"unlink", "unlinkat", "rmdir"},
	{"mkdir", "mkdirat"},
	{"link", "linkat"},
	{"symlink", "symlinkat"},
	{"readlink", "readlinkat"},
	{"chmod", "fchmodat", "fchmodat2"},
	{"chown", "lchown", "fchownat"},
	{"utime", "utimes", "futimesat", "utimensat"},
	{"getrlimit", "setrlimit", "prlimit64", "ugetrlimit"},
	{"accept", "accept4"},
	{"mmap", "mmap2"},
	{"sendfile", "sendfile64"},
	{"truncate", "truncate64"},
	{"ftruncate", "ftruncate64"},
	{"fcntl", "fcntl64"},
	{"statfs", "statfs64"},
	{"fstatfs", "fstatfs64"},
	{"sigaction", "rt_sigaction"},
	{"sigprocmask", "rt_sigprocmask"},
	{"time", "clock_gettime", "gettimeofday"},
}

// runtimeFamilies are syscalls language runtimes pick by timing, not by what the program does:
// which wait a scheduler blocks in when the timer fires first (tokio's epoll_wait vs
// epoll_pwait), whether a spinning lock yields, whether Go's sysmon preempts a goroutine (a
// tgkill of its own thread with SIGURG). A learn run sees one; enforce or drift may see another.
// Seeing any member allows them all; each member carries the same risk as the others.
var runtimeFamilies = [][]string{
	{"epoll_wait", "epoll_pwait", "epoll_pwait2"},
	{"poll", "ppoll"},
	{"select", "pselect6"},
	{"nanosleep", "clock_nanosleep"},
	{"wait4", "waitid"},
	{"futex", "sched_yield"},
	{"sigaltstack", "tgkill", "getpid", "gettid"},
}

// runtimeImplied are syscalls a runtime makes after others, in a thread that may not get to
// them before the process exits: an event loop thread created around an epoll instance waits on
// it (rustup's tokio thread reached epoll_wait in some runs and not in others). Seeing any of the
// first list allows the second.
var runtimeImplied = [][2][]string{
	{{"epoll_create", "epoll_create1"}, {"epoll_wait", "epoll_pwait", "epoll_pwait2"}},
}

// passRuntimeVariants adds the timing-dependent variants of the syscalls the command used.
func (s *state) passRuntimeVariants() []string {
	var added []string
	for _, imp := range runtimeImplied {
		added = append(added, s.addMembers(imp[0], imp[1])...)
	}
	added = append(added, s.addFamilies(runtimeFamilies)...)
	slices.Sort(added)
	if len(added) == 0 {
		return nil
	}
	return []string{fmt.Sprintf("%s added that runtimes pick by timing: %s", plural(len(added), "syscall"), strings.Join(added, ", "))}
}

// addFamilies allows every member of each family of which the command used one, with the
// earliest provenance of the members seen, and returns what it added (sorted).
func (s *state) addFamilies(families [][]string) []string {
	var added []string
	for _, fam := range families {
		added = append(added, s.addMembers(fam, fam)...)
	}
	slices.Sort(added)
	return added
}

// addMembers allows every syscall of then when the command used one of when, with the earliest
// provenance of those used, and returns what it added.
func (s *state) addMembers(when, then []string) []string {
	var pr prov
	used, learned := false, false
	family := ""
	for _, n := range when {
		if r := s.syscalls[n]; r != nil && (!r.base || r.by != "") {
			used = true
			pr = earliest(pr, r.prov)
			learned = learned || r.family == ""
			if family == "" {
				family = r.family
			}
		}
	}
	if !used {
		return nil
	}
	if learned || family != terminalFamily && !slices.Contains(policy.EveryProfileFamilies, family) {
		family = ""
	}
	var added []string
	for _, n := range then {
		if s.syscalls[n] == nil && s.knownName(n) {
			// A variant of a call every profile holds (the terminal calls: fcntl's fcntl64;
			// EveryProfileFamilies: select's _newselect) carries that family: read back, it
			// is no learned syscall.
			s.syscalls[n] = &sysRule{prov: pr, family: family}
			added = append(added, n)
		}
	}
	return added
}

// passPortableSyscalls adds every member of a family the command used, unless Options.Exact;
// the explain line states the cost.
func (s *state) passPortableSyscalls() []string {
	if s.opts.Exact || s.opts.Unportable {
		return nil
	}
	added := s.addFamilies(syscallFamilies)
	// Newer glibc (2.41) blocks signals around process start and exit where 2.36 did not.
	if s.syscalls["rt_sigprocmask"] == nil && len(s.syscalls) > 0 {
		s.syscalls["rt_sigprocmask"] = &sysRule{family: "portable"}
		added = append(added, "rt_sigprocmask")
		slices.Sort(added)
	}
	if len(added) == 0 {
		return []string{"portable: every libc variant of the syscalls used is already allowed (cost: 0 syscalls)"}
	}
	return []string{fmt.Sprintf("portable: cost %s added for other libcs: %s", plural(len(added), "syscall"), strings.Join(added, ", "))}
}

// knownName reports whether name is a syscall on one of the profile's architectures (all of
// the tables when none is known yet).
func (s *state) knownName(name string) bool {
	arches := sortedKeys(s.arches)
	if len(arches) == 0 {
		arches = []string{trace.ArchX86_64, trace.ArchAArch64}
	}
	for _, a := range arches {
		if info := archInfo(a); info != nil {
			if _, ok := info.SyscallNames[name]; ok {
				return true
			}
		}
	}
	return false
}
