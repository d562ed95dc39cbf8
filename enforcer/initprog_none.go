//go:build !sysprof_init

package enforcer

// initProgramData is empty in a build without the init stage program (a plain go build, the
// tests): sysprof re-executes itself as its init stage (MaybeInit).
var initProgramData string
