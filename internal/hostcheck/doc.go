// Package hostcheck owns the answer to "can sysprof learn and enforce on this host, and if not,
// why not and what to do": one probe per kernel feature sysprof depends on, each making the real
// call (a syscall, a map or program load, a tracepoint attach, a namespace clone), never reading a
// kernel version number. It also owns finding the cgroup2 and tracefs mount points, which the
// profiler and the enforcer need and must never hard-code. It does not load the profiler's eBPF
// programs, compile policies, or change the host: every probe cleans up what it created (temp
// cgroup directories, links, programs, child processes) before it returns.
//
// # Answers
//
// Each probe answers [Available], [Missing] or [Unknown] ("could not tell", e.g. a probe that needs
// root run by an ordinary user). A Missing or Unknown [Check] carries a Reason and a Remedy;
// [Check.Err] turns it into an [*UnsupportedError], which matches [ErrNotSupported] with
// errors.Is. [Run] runs every probe once per process and caches the answers, so callers can
// ask freely; today that is sysprof doctor. The profiler and the enforcer do not ask first: they
// make the calls they need and say which one failed.
//
// # Learning and enforcing
//
// Every Check says what it is needed for: "learn" (eBPF recording), "enforce" (seccomp, Landlock,
// namespaces) or "both". Optional checks are informational (fentry/LSM BPF, the
// unprivileged_bpf_disabled sysctl): they never make [LearnPossible] false. What one enforced run
// really needs depends on its profile and on who runs it: the enforcer decides that itself, from
// the layers it applies. A single check is looked up with [Find] and turned into an error with
// [Check.Err].
//
// # Privileges
//
// Learning needs root or CAP_BPF+CAP_PERFMON. Enforcing needs root, or unprivileged user
// namespaces. Probes that need privileges and cannot tell without them report Unknown with
// "run as root to check" rather than Missing.
package hostcheck
