// Package initstage is sysprof's init stage: the process that enforce starts in the sandbox's
// new namespaces, which receives everything it needs as a Config on an inherited pipe (nothing
// it must compute), applies the sandbox layers' parts in order (package sandbox), installs the
// seccomp filter with a listener, hands the listener to sysprof and runs the command as PID 1
// of the sandbox's PID namespace. It owns that side of the protocol (Config, Status, the
// inherited fds) and nothing else: package enforcer compiles the profile, decides the layers,
// starts this stage and supervises it.
//
// As PID 1 the stage is a target the command can name: it notifies every signal (Go's runtime
// would crash on a SIGABRT or SIGSEGV sent to it) and forwards only those sysprof passes on.
//
// It imports only what the stage itself runs (sandbox, netproxy/inside, x/sys), so that it
// builds into a small program of its own (cmd/sysprof-init): sysprof carries that program
// embedded and starts it from a sealed memfd, a Go process start of ~1.5 ms instead of the
// ~4-5 ms sysprof's own binary (its dependencies' package initialisation and size) takes.
// Without the embedded program (a plain `go build`, or a test binary) sysprof re-executes
// itself with Arg and Main runs here the same way.
//
// A stage in a user namespace is started before its id maps exist (internal/spawn, a vfork):
// it runs unmapped with its capabilities ambient until its config arrives, and then takes the
// ids and capabilities the config's Switch names, before anything else.
//
// Between runs the same program keeps its own memfd (Keep, KeepArg, the escrow record Kept),
// so that the next run need not write it again; package enforcer checks what it takes back.
package initstage
