//go:build sysprof_init

package enforcer

import _ "embed"

// initProgramData is the init stage program (cmd/sysprof-init): scripts/build.sh builds it
// and hands it to this build with -overlay (nothing is written into the source tree) and the
// sysprof_init tag.
//
//go:embed initbin/sysprof-init
var initProgramData string
