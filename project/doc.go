// Package project owns sysprof.yaml, the project config: the gates a team runs (format, lint,
// build, test, install), each a command in its work directory under its own profile. It finds
// the file (Find), decodes and validates it into a typed Project (Load, Parse), selects steps
// (Select), adds a step's extra allowances to a learned profile (Step.AddAllowances) and writes
// the starter file `sysprof init` offers (Detect, Starter). The CLI only calls it.
//
// # The file
//
//	version: 1                 # required; the only version this sysprof reads
//	profileDir: .sysprof       # where the steps' default profiles live (relative to the file)
//	reports: .sysprof/reports  # each enforce/drift/held run leaves a JSON run report here
//	failOnDenial: true         # enforce fails a step that succeeded with denials
//	steps:
//	  - name: build            # --step build; default profile <profileDir>/build.yaml
//	    command: [go, build, ./...]   # or a string split like a shell splits words, unexpanded
//	    role: build            # format, lint, build, test, install, language-server, vcs, other
//	    workdir: .             # relative to the file; $WORKDIR in the profile
//	    profile: p/build.yaml  # relative to the file
//	    writable: [out, ~/.cache/x, $TMPDIR/y]   # extra paths the step may write
//	    hosts: [registry.example.com:443]        # extra TCP endpoints it may connect to
//	    env: [GOFLAGS=-mod=mod]                  # KEY=VALUE added to its environment
//
// Keys are case-sensitive; an unknown key is an error that suggests the known key it is
// closest to. Every problem is an *Error (policy.LoadError: one format for every YAML file
// sysprof reads) naming file, line and field, and all of them are reported at once, in file
// order:
//
//	sysprof.yaml:7: steps[1].hosts[0]: "example.com" has no port
//
// # Flags and environment
//
// The file is read here only. viper (cmd/sysprof/config.go) resolves flags, SYSPROF_*
// variables and defaults; the one setting both know is profileDir, which a flag or
// SYSPROF_PROFILE_DIR overrides: the CLI passes it as Options.ProfileDir, and Parse resolves
// the steps' default profiles against whichever directory wins.
package project
