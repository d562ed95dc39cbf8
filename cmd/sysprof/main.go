// Command sysprof learns what a dev tool needs from the kernel and holds it to exactly that.
package main

import (
	"os"

	"github.com/sysprof/sysprof/enforcer"
)

func main() {
	// The enforce init stage re-executes this binary; it must run before the CLI parses anything.
	enforcer.MaybeInit()
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
