// Command sysprof learns what a dev tool needs from the kernel and holds it to exactly that.
package main

import (
	"os"

	"github.com/sysprof/sysprof/enforcer"
	"github.com/sysprof/sysprof/internal/phase"
)

func main() {
	// The enforce init stage re-executes this binary; it must run before the CLI parses anything.
	enforcer.MaybeInit()
	phase.Mark("runtime start to main")
	if len(os.Args) > 1 && os.Args[1] == "enforce" {
		// The init program's memfd and the guard's programs start before the CLI parses
		// anything (~1 ms): in a single run the init stage waits for the memfd.
		enforceProcess()
	}
	code := run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	phase.Mark("exit")
	os.Exit(code)
}
