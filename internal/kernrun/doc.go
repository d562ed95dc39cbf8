// Package kernrun holds the kernel plumbing that learning (package profiler) and enforcing
// (package enforcer) share: the per-run cgroup2 directory a command is born into, finding or
// mounting tracefs, attaching a BPF program to a syscall tracepoint through its own perf
// event, and handing those perf events to a short-lived process at teardown (closing them is
// slow). It loads no BPF programs itself.
//
// Requires Linux 5.14 (cgroup.kill) and root.
package kernrun
