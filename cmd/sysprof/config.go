package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/sysprof/sysprof/project"
)

// projectFile is the name of the project config that sysprof looks for from the current
// directory up to the repository root.
const projectFile = project.File

// Settings that flags and SYSPROF_* environment variables set, resolved by viper. sysprof.yaml
// is not a viper layer: package project reads it, and the one setting both know, profileDir,
// is decided here: a flag or the environment (viper) over the file (project) over the default.
const (
	keyProfileDir = "profiledir"
	keyConfig     = "config"
	keyDebug      = "debug"
	keyReportsDir = "reportsdir"

	envProfileDir = "SYSPROF_PROFILE_DIR"
	envConfig     = "SYSPROF_CONFIG"
	envDebug      = "SYSPROF_DEBUG"
	envReportsDir = "SYSPROF_REPORTS_DIR"

	flagProfileDir = "profile-dir"
	flagConfig     = "config"
	flagReportsDir = "reports-dir"
)

// config is what flags, SYSPROF_* environment variables, sysprof.yaml and defaults resolve to,
// in that order of precedence. Only this file touches viper.
type config struct {
	ProfileDir string // where default profiles live: <ProfileDir>/<name>.yaml
	Debug      bool
	// ReportsDir is where runs leave a run report each (report.Envelope): --reports-dir or
	// SYSPROF_REPORTS_DIR (relative to the current directory), else reports: of sysprof.yaml;
	// empty: nowhere.
	ReportsDir string
	// Project is the sysprof.yaml in force (--config, SYSPROF_CONFIG, or found from the current
	// directory up); nil when there is none.
	Project *project.Project
}

// addConfigFlags registers the flags every subcommand shares with sysprof.yaml.
func addConfigFlags(f *pflag.FlagSet) {
	f.String(flagConfig, "", "project config (default: "+projectFile+" in the current directory or above, or $"+envConfig+")")
	f.String(flagReportsDir, "", "directory where every enforce (audit-mode too) and drift run leaves a JSON run report (default: reports of "+projectFile+"; or $"+envReportsDir+")")
	f.String(flagProfileDir, "", "directory of default profiles (default: profileDir of "+projectFile+", or "+project.DefaultProfileDir+"; or $"+envProfileDir+")")
}

// loadConfig resolves the configuration for cmd. A sysprof.yaml that exists but does not
// validate is an error, even for commands that only need profileDir from it.
func loadConfig(cmd *cobra.Command) (config, error) {
	v := viper.New()
	v.SetDefault(keyProfileDir, project.DefaultProfileDir)
	for key, env := range map[string]string{keyProfileDir: envProfileDir, keyConfig: envConfig, keyDebug: envDebug, keyReportsDir: envReportsDir} {
		if err := v.BindEnv(key, env); err != nil {
			return config{}, err
		}
	}
	for key, name := range map[string]string{keyProfileDir: flagProfileDir, keyConfig: flagConfig, keyDebug: "debug", keyReportsDir: flagReportsDir} {
		if f := cmd.Flags().Lookup(name); f != nil {
			if err := v.BindPFlag(key, f); err != nil {
				return config{}, err
			}
		}
	}
	cfg := config{Debug: v.GetBool(keyDebug), ProfileDir: v.GetString(keyProfileDir), ReportsDir: v.GetString(keyReportsDir)}

	// The config file itself: --config, then SYSPROF_CONFIG, then the nearest sysprof.yaml.
	path := v.GetString(keyConfig)
	if path == "" {
		wd, err := os.Getwd()
		if err != nil {
			return config{}, withCode(exitSysprof, err)
		}
		if path, err = project.Find(wd); err != nil {
			return config{}, withCode(exitSysprof, err)
		}
		if path == "" {
			return cfg, nil
		}
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return config{}, withCode(exitSysprof, err)
	}
	// profileDir from a flag or the environment is relative to the current directory and wins
	// over the file's; without one the file's (or the default) is relative to the file.
	var o project.Options
	if flagChanged(cmd, flagProfileDir) || envSet(envProfileDir) {
		o.ProfileDir = cfg.ProfileDir
	}
	p, err := project.Load(abs, o)
	if err != nil {
		return config{}, withCode(exitSysprof, err)
	}
	cfg.Project, cfg.ProfileDir = p, p.ProfileDir
	if cfg.ReportsDir == "" {
		cfg.ReportsDir = p.ReportsDir
	}
	return cfg, nil
}

func flagChanged(cmd *cobra.Command, name string) bool {
	f := cmd.Flags().Lookup(name)
	return f != nil && f.Changed
}

func envSet(name string) bool {
	v, ok := os.LookupEnv(name)
	return ok && v != ""
}

// defaultProfilePath is .sysprof/<name>.yaml for a command (cargo build → cargo-build).
func (c config) defaultProfilePath(name string) string {
	return filepath.Join(c.ProfileDir, name+".yaml")
}

// requireProject returns the project config or says how to get one.
func (c config) requireProject() (*project.Project, error) {
	if c.Project == nil {
		wd, _ := os.Getwd()
		return nil, withCode(exitSysprof, fmt.Errorf("no %s in %s or above (up to the repository root): run `sysprof init` or pass --config FILE", projectFile, wd))
	}
	return c.Project, nil
}
