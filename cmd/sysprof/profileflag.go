package main

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/sysprof/sysprof/synth"
)

// resolveProfileFlag returns -p when given; otherwise the single profile in the profile dir.
func resolveProfileFlag(cmd *cobra.Command, flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	cfg, err := loadConfig(cmd)
	if err != nil {
		return "", err
	}
	matches, _ := filepath.Glob(filepath.Join(cfg.ProfileDir, "*.yaml"))
	switch len(matches) {
	case 1:
		return matches[0], nil
	case 0:
		return "", withCode(exitSysprof, fmt.Errorf("no profile in %s: pass -p FILE or run `sysprof learn -- CMD` first", cfg.ProfileDir))
	default:
		return "", withCode(exitSysprof, fmt.Errorf("%d profiles in %s: pass -p FILE", len(matches), cfg.ProfileDir))
	}
}

// commandTarget sets the command after "--" and, when -p was not given, its default profile
// path (.sysprof/<name>.yaml): the shared start of learn, enforce and drift.
func commandTarget(cmd *cobra.Command, args []string, command *[]string, profile *string) (config, error) {
	c, err := commandArgs(cmd, args)
	if err != nil {
		return config{}, err
	}
	*command = c
	cfg, err := loadConfig(cmd)
	if err != nil {
		return config{}, err
	}
	if *profile == "" {
		*profile = cfg.defaultProfilePath(synth.Name(c))
	}
	return cfg, nil
}
