package main

import (
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"
)

// config is what flags, SYSPROF_* environment variables and defaults resolve to. Only this file
// touches viper.
type config struct {
	ProfileDir string // where default profiles live: <ProfileDir>/<name>.yaml
	Debug      bool
}

func loadConfig(cmd *cobra.Command) (config, error) {
	v := viper.New()
	v.SetEnvPrefix("SYSPROF")
	v.AutomaticEnv()
	v.SetDefault("profile_dir", ".sysprof")
	if f := cmd.Flags().Lookup("debug"); f != nil {
		if err := v.BindPFlag("debug", f); err != nil {
			return config{}, err
		}
	}
	return config{ProfileDir: v.GetString("profile_dir"), Debug: v.GetBool("debug")}, nil
}

// defaultProfilePath is .sysprof/<name>.yaml for a command (cargo build → cargo-build).
func (c config) defaultProfilePath(name string) string {
	return filepath.Join(c.ProfileDir, name+".yaml")
}
