// Command sysprof-init is sysprof's enforce init stage as a small program of its own (package
// initstage): sysprof embeds it and starts it from a sealed memfd (see package enforcer). It
// is not meant to be run by hand: it expects its config on an inherited pipe. Between runs it
// also keeps its own memfd (initstage.KeepArg).
//
// containermaxprocs=0: the Go runtime closes the cgroup CPU files it reads at start instead of
// keeping them open (fds 7 and 8 on a cgroup v1 host) while the stage, as PID 1, waits for the
// command; GOMAXPROCS is the CPU count, which is all the stage needs.
//
//go:debug containermaxprocs=0
package main

import (
	"fmt"
	"os"

	"github.com/sysprof/sysprof/enforcer/initstage"
)

func main() {
	if len(os.Args) >= 2 && os.Args[1] == initstage.KeepArg {
		os.Exit(initstage.Keep(os.Args[2:]))
	}
	if len(os.Args) < 2 || os.Args[1] != initstage.Arg {
		fmt.Fprintln(os.Stderr, "sysprof-init: sysprof's init stage, started by `sysprof enforce`; not meant to be run by hand")
		os.Exit(125)
	}
	os.Exit(initstage.Main())
}
