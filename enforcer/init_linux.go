package enforcer

import (
	"os"

	"github.com/sysprof/sysprof/enforcer/guard"
	"github.com/sysprof/sysprof/enforcer/initstage"
)

// MaybeInit must be the first thing main (and TestMain of packages that run the enforcer) calls.
// When the process is sysprof's init stage (argv[1] is the hidden init argument: sysprof
// re-executed itself, having no embedded init program) it runs the stage and never returns:
// it execs the command or exits. The same for the guard's helper and the publish forwarder.
// Otherwise it returns at once.
func MaybeInit() {
	if len(os.Args) >= 2 && os.Args[1] == guard.HelperArg {
		os.Exit(guard.Helper(os.Args[2:]))
	}
	if len(os.Args) >= 2 && os.Args[1] == publishArg {
		os.Exit(publishForwarder(os.Args[2:]))
	}
	if len(os.Args) < 2 || os.Args[1] != initArg {
		return
	}
	os.Exit(initstage.Main())
}
