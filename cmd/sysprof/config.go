package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

// projectFile is the name of the project config that sysprof looks for from the current
// directory up to the repository root.
const projectFile = "sysprof.yaml"

// Settings that flags, SYSPROF_* environment variables and sysprof.yaml share. The viper key of
// profileDir is the file's spelling folded to lower case (viper folds every key).
const (
	keyProfileDir = "profiledir"
	keyConfig     = "config"
	keyDebug      = "debug"

	envProfileDir = "SYSPROF_PROFILE_DIR"
	envConfig     = "SYSPROF_CONFIG"
	envDebug      = "SYSPROF_DEBUG"

	flagProfileDir = "profile-dir"
	flagConfig     = "config"
)

// config is what flags, SYSPROF_* environment variables, sysprof.yaml and defaults resolve to,
// in that order of precedence. Only this file touches viper.
type config struct {
	ProfileDir string // where default profiles live: <ProfileDir>/<name>.yaml
	Debug      bool
	// Project is the sysprof.yaml in force (--config, SYSPROF_CONFIG, or found from the current
	// directory up); nil when there is none.
	Project *project
}

// addConfigFlags registers the flags every subcommand shares with sysprof.yaml.
func addConfigFlags(f *pflag.FlagSet) {
	f.String(flagConfig, "", "project config (default: "+projectFile+" in the current directory or above, or $"+envConfig+")")
	f.String(flagProfileDir, "", "directory of default profiles (default: profileDir of "+projectFile+", or .sysprof; or $"+envProfileDir+")")
}

// loadConfig resolves the configuration for cmd. A sysprof.yaml that exists but does not
// validate is an error, even for commands that only need profileDir from it.
func loadConfig(cmd *cobra.Command) (config, error) {
	v := viper.New()
	v.SetDefault(keyProfileDir, ".sysprof")
	for key, env := range map[string]string{keyProfileDir: envProfileDir, keyConfig: envConfig, keyDebug: envDebug} {
		if err := v.BindEnv(key, env); err != nil {
			return config{}, err
		}
	}
	for key, name := range map[string]string{keyProfileDir: flagProfileDir, keyConfig: flagConfig, keyDebug: "debug"} {
		if f := cmd.Flags().Lookup(name); f != nil {
			if err := v.BindPFlag(key, f); err != nil {
				return config{}, err
			}
		}
	}

	// The config file itself: --config, then SYSPROF_CONFIG, then the nearest sysprof.yaml.
	path, explicit := v.GetString(keyConfig), true
	if path == "" {
		explicit = false
		found, err := findProject()
		if err != nil {
			return config{}, withCode(exitSysprof, err)
		}
		path = found
	}
	cfg := config{Debug: v.GetBool(keyDebug)}
	var raw map[string]any
	if path != "" {
		abs, err := filepath.Abs(path)
		if err != nil {
			return config{}, withCode(exitSysprof, err)
		}
		path = abs
		if explicit {
			if _, err := os.Stat(path); err != nil {
				return config{}, withCode(exitSysprof, fmt.Errorf("config: %w", err))
			}
		}
		// The file alone (for validation), then as the layer below flags and environment.
		fv := viper.New()
		fv.SetConfigFile(path)
		fv.SetConfigType("yaml")
		if err := fv.ReadInConfig(); err != nil {
			return config{}, withCode(exitSysprof, fmt.Errorf("%s: %w", path, err))
		}
		raw = fv.AllSettings()
		if err := v.MergeConfigMap(raw); err != nil {
			return config{}, withCode(exitSysprof, fmt.Errorf("%s: %w", path, err))
		}
	}

	// profileDir: a value from a flag or the environment is relative to the current directory,
	// one from the file relative to the file, the default relative to the project root when
	// there is a project (else the current directory).
	cfg.ProfileDir = v.GetString(keyProfileDir)
	fromUser := flagChanged(cmd, flagProfileDir) || envSet(envProfileDir)
	if path != "" && !fromUser && !filepath.IsAbs(cfg.ProfileDir) {
		cfg.ProfileDir = filepath.Join(filepath.Dir(path), cfg.ProfileDir)
	}
	if path != "" {
		p, err := parseProject(path, raw, cfg.ProfileDir)
		if err != nil {
			return config{}, withCode(exitSysprof, err)
		}
		cfg.Project = p
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

// findProject walks up from the current directory to the first sysprof.yaml, stopping at the
// repository root (a directory with .git) or /. It returns "" when there is none. A file found
// this way decides what `learn --all` runs, often as root, so one that another user could have
// planted (not owned by root, the caller or $SUDO_UID, or writable by others) is refused.
func findProject() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(dir, projectFile)
		fi, err := os.Stat(p)
		switch {
		case err == nil:
			if err := checkOwner(p, fi); err != nil {
				return "", err
			}
			return p, nil
		case !errors.Is(err, fs.ErrNotExist):
			return "", fmt.Errorf("config: %w", err)
		}
		if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
			return "", nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", nil
		}
		dir = parent
	}
}

func checkOwner(path string, fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if fi.Mode().Perm()&0o002 != 0 {
		return fmt.Errorf("%s is writable by every user: refusing to run the steps it names (chmod o-w it, or pass --config)", path)
	}
	owners := []uint32{0, uint32(os.Geteuid())}
	if s := os.Getenv("SUDO_UID"); s != "" {
		if n, err := strconv.ParseUint(s, 10, 32); err == nil {
			owners = append(owners, uint32(n))
		}
	}
	for _, o := range owners {
		if st.Uid == o {
			return nil
		}
	}
	return fmt.Errorf("%s belongs to uid %d, not to you or root: refusing to run the steps it names (pass --config to use it anyway)", path, st.Uid)
}

// defaultProfilePath is .sysprof/<name>.yaml for a command (cargo build → cargo-build).
func (c config) defaultProfilePath(name string) string {
	return filepath.Join(c.ProfileDir, name+".yaml")
}

// requireProject returns the project config or says how to get one.
func (c config) requireProject() (*project, error) {
	if c.Project == nil {
		wd, _ := os.Getwd()
		return nil, withCode(exitSysprof, fmt.Errorf("no %s in %s or above (up to the repository root): run `sysprof init` or pass --config FILE", projectFile, wd))
	}
	return c.Project, nil
}
