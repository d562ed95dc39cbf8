package enforcer

import "github.com/sysprof/sysprof/enforcer/initstage"

// The init stage's protocol is package initstage's; these are its names here.
type (
	initConfig = initstage.Config
	initStatus = initstage.Status
	layerState = initstage.LayerState
	sockFilter = initstage.SockFilter
)

// initArg is the hidden first argument that makes sysprof's main run the init stage.
const initArg = initstage.Arg

// Inherited file descriptors of the init stage (exec.Cmd.ExtraFiles start at 3).
const (
	fdConfig  = initstage.FDConfig
	fdSync    = initstage.FDSync
	fdStatus  = initstage.FDStatus
	fdReplica = initstage.FDReplica
)
