// Package kernrun holds the kernel plumbing that learning (package profiler) and enforcing
// (package enforcer) share: the per-run cgroup2 directory a command is born into, finding or
// mounting tracefs (and bpffs, where the guard pins its programs), attaching a BPF program to
// a syscall tracepoint through its own perf event, handing those perf events to a short-lived process at teardown (closing them is
// slow), and the CO-RE fixups of a BPF object kept per kernel under /run/sysprof (CoreFixups:
// learn.c's and guard.c's, each in files of its own). It loads no BPF programs itself.
//
// Requires Linux 5.14 (cgroup.kill) and root.
package kernrun
