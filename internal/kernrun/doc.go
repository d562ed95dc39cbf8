// Package kernrun holds the kernel plumbing that learning (package profiler) and enforcing
// (package enforcer and its guard) share: the per-run cgroup2 directory a command is born into,
// finding or mounting tracefs (Tracefs, doctor's probe shared) and bpffs (where the guard pins
// its programs), the tracepoints (TracepointID, OpenTracepoint for learn's perf events,
// AttachTracepoint for the guard's links with a cookie), handing perf events to a short-lived
// process at teardown (closing them is slow), the fd escrow both warm hand-overs use (a holder
// process keeps a finished run's fds, a file of an escrow directory describes it, the next run
// takes them with pidfd_getfd: escrow.go), the process ancestry in denial reports, and the
// CO-RE fixups of a BPF object kept per kernel under /run/sysprof (CoreFixups: learn.c's and
// guard.c's, each in files of its own). It loads no BPF programs itself.
//
// Requires Linux 5.14 (cgroup.kill) and root.
package kernrun
