// Command sysprof-init is sysprof's enforce init stage as a small program of its own (package
// initstage): sysprof embeds it and starts it from a sealed memfd (see package enforcer). It
// is not meant to be run by hand: it expects its config on an inherited pipe. Between runs it
// also keeps its own memfd (initstage.KeepArg).
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
