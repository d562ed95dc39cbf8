package policy

import (
	"slices"
	"strings"
)

// Family is a group of syscalls that do the same thing for a tool: which member it calls is
// picked by its I/O environment (a terminal, a pipe, a file, /dev/null), its libc or the
// kernel's fast paths, not by what the tool does. Seeing any member allows all of them, so a
// profile learned with output to a file still runs at a terminal. A family adds no capability a
// learned member does not already give: every member acts only on fds the process already
// holds or on paths the filesystem layers already decide.
type Family struct {
	Name    string
	Why     string
	Members []string
	// Triggers are the members whose use brings the family in (nil: every member). A member
	// that is also another family's (copy_file_range: data-copy's) is no trigger: which one a
	// tool calls depends on its I/O condition, and the other family would come and go with it.
	Triggers []string
	// PassFDs are the members that can hand the process's fds to another process (SCM_RIGHTS
	// in their control data, which seccomp cannot read). In a profile that reaches a pathname
	// unix socket (a host daemon's) they come in only when learned: as mates they would let
	// the command pass its fds to that daemon, which the learned member could not.
	PassFDs []string
}

// chaining are the families whose members, once brought in, are triggers of the families after
// them as if learned (Family.Chains): a rename a warm run would make brings what a learned
// rename brings, so that a profile learned in either state closes to the same set.
var chaining = []string{"rotate"}

// Chains reports whether the members f brings trigger the families after it.
func (f Family) Chains() bool { return slices.Contains(chaining, f.Name) }

// Families is the one table of behaviour-equivalence families: learn adds them (synth), and
// enforce (the seccomp compiler) and drift close them the same way for every profile not
// learned --exact (Metadata.Exact), so that a profile learned before a family existed or grew
// holds under every I/O condition too. Their order is the order `sysprof show --explain`
// prints them in.
var Families = []Family{
	{"data-copy", "moving bytes between fds the process holds: cat calls copy_file_range into a file, write into a pipe or a terminal, sendfile or splice elsewhere",
		[]string{"read", "write", "readv", "writev", "pread64", "pwrite64", "copy_file_range", "sendfile", "splice"}, nil, nil},
	{"rotate", "keeping the newest few of the directories a tool makes one of per run (pytest's pytest-N under pytest-of-USER, three kept): once enough exist, the oldest is renamed aside (garbage-*) and then removed, so a cold run only makes one and a warm one rotates; a rename within what the filesystem layers let it write is no more than the mkdir, write and unlink it already has; its rename brings what a learned one does (chaining)",
		[]string{"rename", "renameat", "renameat2"}, []string{"mkdir", "mkdirat"}, nil},
	{"copy-fallback", "a rename that fails with EXDEV (another file system, or the sandbox's own mounts) falls back to copying: libuv, cargo and go truncate, chmod and copy the destination",
		[]string{"rename", "renameat", "renameat2", "copy_file_range", "sendfile", "ftruncate", "fchmod", "fstatfs"},
		[]string{"rename", "renameat", "renameat2"}, nil},
	{"replace-keeps-owner", "an atomic replace (write a temp file, rename it over the old one) gives the new file the old one's owner and mode: write-file-atomic (npm, pnpm's .modules.yaml) chowns and chmods its temp file only when the target exists, so a first run never shows it; a chown inside the sandbox's user namespace cannot give a file away, set-id modes stay denied and the mounts decide which files it reaches",
		[]string{"chmod", "fchmod", "fchmodat", "chown", "fchown", "fchownat"},
		[]string{"rename", "renameat", "renameat2"}, nil},
	{"dup", "duplicating an fd onto another: dup2 or dup3 by libc version and by whether the target fd is open",
		[]string{"dup2", "dup3"}, nil, nil},
	{"seek", "moving an fd's file offset: glibc's fclose of a stream read only part way seeks the fd back to what was consumed (git reading a worktree's .git file and commondir with stdio), which a run whose reads reach the end of the file never does; an offset is the process's own, on an fd it already holds",
		[]string{"lseek"}, []string{"lseek", "read", "readv", "pread64"}, nil},
	{"pipe", "making a pipe: libc and runtimes pick pipe or pipe2 by version",
		[]string{"pipe", "pipe2"}, nil, nil},
	{"wait-for-fds", "waiting for fds to be ready: which call depends on the runtime and on whether stdin is a terminal, a pipe or closed; a process that sends on a socket waits for the answer (glibc's resolver polls after its query, which a learn without a network, whose send failed, never reached: next dev's version check)",
		[]string{"poll", "ppoll", "select", "pselect6"}, []string{"poll", "ppoll", "select", "pselect6", "sendto", "sendmsg", "sendmmsg"}, nil},
	{"wait-for-children", "reaping child processes: wait4 and waitid by libc version and runtime",
		[]string{"wait4", "waitid"}, nil, nil},
	{"sleep", "sleeping: a process that waits for its children with a timeout (Python's subprocess wait and communicate) polls them and sleeps between polls only while one is still running, which the machine's load decides; Go's scheduler sleeps in its spin when another thread holds a lock long enough (go version learned at a terminal, denied nanosleep at enforce); glibc's sleep calls nanosleep or clock_nanosleep by version; in every profile: a sleep only gives time away",
		[]string{"nanosleep", "clock_nanosleep"}, []string{"nanosleep", "clock_nanosleep", "wait4", "waitid"}, nil},
	{"runtime-timing", "what a language runtime or libc does by timing or by scheduling, not by what the program does: Go's background scavenger and a garbage collector return memory (madvise) when their timers fire, glibc registers a thread's restartable sequence (rseq) only for a thread it starts, a runtime reseeds (getrandom) when its vDSO state runs out, and a contended lock waits on several futexes at once (futex_waitv) where futex is a base syscall; each acts only on the process's own memory, its own threads or the kernel's randomness",
		[]string{"madvise", "rseq", "getrandom", "futex_waitv"}, nil, nil},
	{"fd-kind", "asking what kind of fd the process holds: libuv (node) asks a stdio fd that is no file, pipe or terminal whether it is a socket (getsockname, getsockopt SO_TYPE), which only a run whose stdin is a socket does (inetd, a CI runner's or a supervisor's socket, systemd socket activation); both only read what the process holds",
		[]string{"getsockname", "getsockopt"}, nil, nil},
	{"timers", "interval timers: which timer API a runtime arms differs by version",
		[]string{"setitimer", "getitimer", "alarm", "timer_create", "timer_settime", "timer_gettime", "timer_delete"},
		// Not setitimer/getitimer: every profile has them (TerminalCalls), and git arms one only
		// at a terminal, so they would bring the family in at a terminal and not into a file.
		[]string{"alarm", "timer_create", "timer_settime", "timer_gettime", "timer_delete"}, nil},
	{"stat", "file metadata: newer glibc calls fstat where older called newfstatat, and statx where the kernel has it",
		[]string{"fstat", "newfstatat", "statx"}, nil, nil},
	{"access", "checking access to a path: glibc falls back from faccessat2 to faccessat",
		[]string{"faccessat", "faccessat2"}, nil, nil},
	{"rename-at", "renaming: coreutils and libcs try renameat2 and fall back to renameat",
		[]string{"renameat", "renameat2"}, nil, nil},
	{"process-session", "process groups and sessions of a command that starts processes: a runtime detaches a helper into a session of its own by who runs it and when, not by what the tool does (the go command starts its telemetry child with setsid once a day per user: in a fresh HOME, a CI runner, another user's run); the sandbox's PID namespace ends every process with the run, and the command's session has no terminal to take",
		[]string{"setsid", "setpgid", "getsid", "getpgid", "getpgrp"},
		[]string{"setsid", "setpgid", "getsid", "getpgid", "getpgrp", "clone", "clone3", "fork", "vfork"}, nil},
	{"working-directory", "changing the working directory, which a process that starts others does in the child (Go's os/exec Dir, Python's subprocess cwd=, make -C): a warm build cache starts no compiler, a cold one (another user, a CI runner, a fresh clone) starts one per package in its directory; where a process may go is the filesystem layers' decision",
		[]string{"chdir", "fchdir"},
		[]string{"chdir", "fchdir", "clone", "clone3", "fork", "vfork"}, nil},
	{"remove", "removing a name: a tool that renames files into place (a cache replacing its entries: mypy's .mypy_cache, pip, ccache) deletes stale ones on a later run, with a cold cache never; a rename over a name removes it already, and which names may go is the filesystem layers' decision",
		[]string{"unlink", "unlinkat"}, []string{"rename", "renameat", "renameat2"}, nil},
	{"touch", "refreshing an entry instead of writing it again: a content-addressed store (git's objects, Go's build cache) writes an entry through a temp file linked or renamed into place when it is new, and only sets its times when it exists already (git commit of a tree it has seen; a warm cache); which files may be touched is the mounts' decision (a read-only one answers EROFS)",
		[]string{"utimensat", "utime", "utimes", "futimesat"}, []string{"link", "linkat", "rename", "renameat", "renameat2"}, nil},
	{"clear-output", "emptying an output directory: a tool that makes its output directory on a first run finds it on the next and empties it first (vite build, a build script's rm -rf dist, cargo doc): it lists the directory and removes what it holds; which directories it reaches is the filesystem layers' decision, and it can already overwrite what it removes",
		[]string{"getdents", "getdents64", "unlink", "unlinkat", "rmdir"}, []string{"mkdir", "mkdirat"}, nil},
	{"copy-tree", "a rename of a directory that fails with EXDEV (`mv dist dist.old` of a directory the sandbox binds from the host) falls back to copying the tree: coreutils' mv makes the directories, lists them, copies each file (FICLONE first: a TerminalRequests member), advises the kernel of the sequential read, copies the extended attributes and removes the source (copy-fallback, remove and touch bring the rest); each acts on fds the process holds or on names the filesystem layers decide, which the rename already reached",
		[]string{"mkdir", "mkdirat", "getdents", "getdents64", "rmdir", "fadvise64", "flistxattr", "fgetxattr", "fsetxattr",
			"fremovexattr", "llistxattr", "lgetxattr", "lsetxattr", "lremovexattr", "listxattr", "getxattr", "setxattr", "removexattr"},
		[]string{"rename", "renameat", "renameat2"}, nil},
	{"serve", "ending and inspecting an accepted connection: a server shuts its side down when the client half-closes first (a dev server behind the host's published port, a browser) and asks an accepted socket its addresses when it logs a request; all act only on connections its learned listener accepted",
		[]string{"shutdown", "getpeername", "getsockname"}, []string{"listen", "accept", "accept4"}, nil},
	{"send", "sending on a socket the process holds: glibc's resolver asks A and AAAA at once with sendmmsg on a dual-stack host and sendto on an IPv4-only one; runtimes pick sendto or sendmsg (the destinations are the network rules'; send(2) is sendto on x86_64 and arm64)",
		[]string{"sendto", "sendmsg", "sendmmsg"}, nil, []string{"sendmsg", "sendmmsg"}},
}

// EveryProfileFamilies are the families every profile (but --exact) holds, learned or not:
// whether a command uses them is decided by where it was started, by what it found or by
// timing, not by the tool (git started below its tree's top goes there; a learn at the top never
// sees it; a runtime polls its stdout only before a write, which a linter with nothing to say
// never makes: shellcheck; Go's scheduler sleeps in its spin when another thread holds the lock
// long enough, which a learn may never see: go version at a terminal; node asks whether its
// stdin is a socket only when it is one). None of them reaches
// anything. The one place for such calls: a call a runtime makes by timing is a member of sleep
// or runtime-timing, not a trigger of another family (a futex seen in one run and not in the
// other would bring a family in and out with it).
var EveryProfileFamilies = []string{"working-directory", "wait-for-fds", "sleep", "runtime-timing", "fd-kind"}

// TerminalFamily marks what every profile (but --exact) allows for a terminal the learn run may
// not have had.
const TerminalFamily = "terminal"

// TerminalCalls are allowed in every profile (but --exact): git and pagers arm a progress or
// refresh timer only when stderr is a terminal (a timer signals the process itself), node
// puts the terminal it reopens by name over its stdio with dup3, and less flushes its terminal
// (fsync) after putting it in raw mode. A shell saves its stdout aside before `cmd > file` and
// restores it after (dash: fcntl F_DUPFD_CLOEXEC; bash: fcntl and dup2) only on the branch of a
// script that redirects, which the learn may not have taken: an fd's copies and flags reach
// nothing the process does not hold already. bash opens /dev/tty at start, and where that
// fails (the sandboxed command's session has no controlling terminal; a learn's had one) asks
// glibc's ttyname(0), which reads the link /proc/self/fd/0 (readlink, readlinkat on arm64) and
// lists /dev/pts only when that is refused: a link's target is a name, not a file's content.
var TerminalCalls = []string{"setitimer", "getitimer", "dup", "dup2", "dup3", "fcntl", "fsync", "readlink", "readlinkat"}

// TerminalRequests are the ioctl requests every profile (but --exact) allows, learned or not:
// asking whether an fd is a terminal (isatty, stdio's buffering: TCGETS also on /dev/null) and
// its size, and setting the modes of a terminal the command holds (a pager's raw mode, a
// prompt without echo), which a tool does only when it runs at one, or whether it is a
// pseudo-terminal's (TIOCGPTN: libuv asks of a terminal it reopens by name); and the fd flags an event
// loop sets on its stdio by ioctl rather than fcntl (libuv's FIONBIO on a pipe or a terminal
// but not on a file: node's stdout into a pipe; FIOCLEX/FIONCLEX), which depend on what the
// stdio is; and FICLONE, copy_file_range's ioctl (data-copy: coreutils' mv and cp try it
// first when a rename falls back to copying, which a learn on one file system never sees), from
// an fd the process reads to one it writes. None puts input into a terminal (TIOCSTI,
// TIOCLINUX stay denied everywhere).
var TerminalRequests = []string{"TCGETS", "TCSETS", "TCSETSF", "TCSETSW", "TIOCGWINSZ", "TIOCGPTN", "FIONBIO", "FIOCLEX", "FIONCLEX", "FICLONE"}

// CloseTerminalRequests returns rules with a values rule on ioctl's request that holds terminal
// requests only widened to all of TerminalRequests: a profile learned before the list grew, or
// one whose learn made some of them, runs at a terminal as a newer learn's would. enforce (the
// seccomp compiler) and drift close them for every profile but one learned --exact.
func CloseTerminalRequests(rules []ArgRule) []ArgRule {
	out := slices.Clone(rules)
	for i, r := range out {
		if r.Syscall != "ioctl" || r.Arg != 1 || len(r.Values) == 0 || len(r.Flags) > 0 || len(r.Deny) > 0 {
			continue
		}
		terminal := true
		for _, v := range r.Values {
			terminal = terminal && slices.ContainsFunc(TerminalRequests, func(t string) bool { return sameValue(t, v) })
		}
		if terminal {
			out[i].Values = slices.Clone(TerminalRequests)
		}
	}
	return out
}

// sameValue reports whether two values as argument rules write them are one number.
func sameValue(a, b string) bool {
	x, errA := ParseValue(a)
	y, errB := ParseValue(b)
	return errA == nil && errB == nil && x&0xffffffff == y&0xffffffff
}

// TriggerNames are the members whose use brings f in.
func (f Family) TriggerNames() []string {
	if f.Triggers == nil {
		return f.Members
	}
	return f.Triggers
}

// Triggers reports whether s, an allowed syscall, brings its families in: it was learned (not
// added by a family itself, but one that Chains), and is not a base syscall nobody was seen
// making.
func (s Syscall) Triggers() bool {
	return (s.Family == "" || chains(s.Family)) && (!s.Base || s.By != "")
}

// chains reports whether the family named name Chains.
func chains(name string) bool { return slices.Contains(chaining, name) }

// FamilyMates returns the syscalls that p's allowed syscalls bring in through Families, each
// with the family that brings it: every member of each family one of whose triggers p holds as
// a learned syscall (Syscall.Triggers), as synthesis adds them, Family.PassFDs only where p
// reaches no unix socket by path. Names p already allows are included; a caller skips them.
func FamilyMates(p *Profile) map[string]string {
	unixPath := ReachesUnixPath(p)
	have := map[string]bool{}
	for _, s := range p.Syscalls.Allow {
		if s.Triggers() {
			have[s.Name] = true
		}
	}
	mates := map[string]string{}
	// Every profile has the terminal calls: one learned before they were is closed with them.
	for _, n := range TerminalCalls {
		mates[n] = TerminalFamily
	}
	for _, f := range Families {
		if slices.Contains(EveryProfileFamilies, f.Name) {
			for _, m := range f.Members {
				mates[m] = f.Name
			}
		}
	}
	for _, f := range Families {
		for _, n := range f.TriggerNames() {
			if have[n] {
				for _, m := range f.Members {
					if unixPath && slices.Contains(f.PassFDs, m) {
						continue
					}
					if by, ok := mates[m]; !ok || by == TerminalFamily {
						mates[m] = f.Name
					}
					have[m] = have[m] || f.Chains()
				}
				break
			}
		}
	}
	return mates
}

// ClosesFamilies reports whether p's families are closed wherever it is used (enforce, drift):
// every profile but one learned --exact.
func (p *Profile) ClosesFamilies() bool { return !p.Metadata.Exact }

// ReachesUnixPath reports whether p connects or sends to a pathname unix socket: a process
// listening there may take fds from the command (Family.PassFDs). Abstract sockets are the
// sandbox's own (its network namespace).
func ReachesUnixPath(p *Profile) bool {
	return slices.ContainsFunc(p.Network.Connect, func(e Endpoint) bool { return UnixPathEndpoint(e.Endpoint) }) ||
		slices.ContainsFunc(p.Network.Send, func(e Endpoint) bool { return UnixPathEndpoint(e.Endpoint) })
}

// UnixPathEndpoint reports whether ep names a pathname unix socket (not an abstract one).
func UnixPathEndpoint(ep string) bool {
	rest, ok := strings.CutPrefix(ep, "unix:")
	return ok && rest != "" && !strings.HasPrefix(rest, "@")
}

// ExecPaths are the paths of p's exec rules.
func (p *Profile) ExecPaths() []string {
	out := make([]string, 0, len(p.Filesystem.Exec))
	for _, e := range p.Filesystem.Exec {
		out = append(out, e.Path)
	}
	return out
}
