package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"

	"github.com/sysprof/sysprof/project"
)

// newProjectDir makes a temp repository (a .git directory stops the search for sysprof.yaml)
// holding sysprof.yaml with content, makes it the current directory, clears SYSPROF_* and
// returns it.
func newProjectDir(t *testing.T, content string) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if content != "" {
		if err := os.WriteFile(filepath.Join(dir, projectFile), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []string{envProfileDir, envConfig, envDebug, envReportsDir} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	t.Chdir(dir)
	return dir
}

// configCmd parses args as the flags every subcommand has and returns a command to load the
// configuration for.
func configCmd(t *testing.T, args ...string) *cobra.Command {
	t.Helper()
	cmd := &cobra.Command{Use: "x"}
	cmd.Flags().Bool("debug", false, "")
	addConfigFlags(cmd.Flags())
	if err := cmd.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	return cmd
}

func TestProjectParse(t *testing.T) {
	dir := newProjectDir(t, `
version: 1
profileDir: policies
steps:
  - name: vet
    command: [go, vet, ./...]
  - name: build
    command: "cc -o 'out dir/a' \"x y\" z\\ w"
    workdir: sub
    profile: custom/build.yaml
    writable: [out, ~/.cache/thing, $TMPDIR/x, /var/tmp/y, .]
    hosts: [goproxy.example:443, "127.0.0.1:8080", "[::1]:9000"]
    env: [GOFLAGS=-mod=mod, EMPTY=]
`)
	cfg, err := loadConfig(configCmd(t))
	if err != nil {
		t.Fatal(err)
	}
	want := &project.Project{
		Path: filepath.Join(dir, projectFile), Dir: dir, Version: 1,
		ProfileDir: filepath.Join(dir, "policies"),
		Steps: []project.Step{
			{Name: "vet", Command: []string{"go", "vet", "./..."}, Profile: filepath.Join(dir, "policies/vet.yaml"), Workdir: dir},
			{
				Name:     "build",
				Command:  []string{"cc", "-o", "out dir/a", "x y", "z w"},
				Profile:  filepath.Join(dir, "custom/build.yaml"),
				Workdir:  filepath.Join(dir, "sub"),
				Writable: []string{"$WORKDIR/out", "$HOME/.cache/thing", "$TMPDIR/x", "/var/tmp/y", "$WORKDIR"},
				Hosts:    []string{"goproxy.example:443", "127.0.0.1:8080", "[::1]:9000"},
				Env:      []string{"GOFLAGS=-mod=mod", "EMPTY="},
			},
		},
	}
	if diff := cmp.Diff(want, cfg.Project); diff != "" {
		t.Errorf("project (-want +got):\n%s", diff)
	}
	if cfg.ProfileDir != filepath.Join(dir, "policies") {
		t.Errorf("ProfileDir = %q", cfg.ProfileDir)
	}
}

// The file is found from a subdirectory, and its relative paths stay relative to the file.
func TestProjectFoundFromSubdirectory(t *testing.T) {
	dir := newProjectDir(t, "version: 1\nsteps:\n  - {name: t, command: [\"true\"]}\n")
	sub := filepath.Join(dir, "a", "b")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(sub)
	cfg, err := loadConfig(configCmd(t))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Project == nil || cfg.Project.Path != filepath.Join(dir, projectFile) {
		t.Fatalf("project = %+v", cfg.Project)
	}
	if got, want := cfg.Project.Steps[0].Profile, filepath.Join(dir, ".sysprof", "t.yaml"); got != want {
		t.Errorf("profile = %q, want %q", got, want)
	}
	if got := cfg.Project.Steps[0].Workdir; got != dir {
		t.Errorf("workdir = %q, want %q", got, dir)
	}
}

// No sysprof.yaml: everything works as before, and the search stops at the repository root.
func TestProjectAbsent(t *testing.T) {
	newProjectDir(t, "")
	cfg, err := loadConfig(configCmd(t))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Project != nil || cfg.ProfileDir != ".sysprof" {
		t.Fatalf("cfg = %+v", cfg)
	}
	if _, err := cfg.requireProject(); err == nil || !strings.Contains(err.Error(), "sysprof init") {
		t.Fatalf("requireProject: %v", err)
	}
}

func TestProjectRefusesWorldWritable(t *testing.T) {
	dir := newProjectDir(t, "version: 1\n")
	if err := os.Chmod(filepath.Join(dir, projectFile), 0o666); err != nil {
		t.Fatal(err)
	}
	_, err := loadConfig(configCmd(t))
	if err == nil || !strings.Contains(err.Error(), "writable by every user") {
		t.Fatalf("err = %v", err)
	}
	// Naming it explicitly is the user's choice.
	if _, err := loadConfig(configCmd(t, "--config", filepath.Join(dir, projectFile))); err != nil {
		t.Fatal(err)
	}
}

// A file that does not validate stops every subcommand with exit 125, naming file:line.
func TestProjectInvalid(t *testing.T) {
	dir := newProjectDir(t, "version: 1\nsteps:\n  - {name: t, command: [x], hostz: [a:1]}\n")
	_, err := loadConfig(configCmd(t))
	if err == nil {
		t.Fatal("no error")
	}
	if codeOf(err) != exitSysprof {
		t.Errorf("exit status %d, want %d", codeOf(err), exitSysprof)
	}
	if want := filepath.Join(dir, projectFile) + `:3: steps[0].hostz: unknown field: did you mean "hosts"?`; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error\n%s\ndoes not start with\n%s", err, want)
	}
}

// profileDir: flag > SYSPROF_PROFILE_DIR > sysprof.yaml > default; config file: --config >
// SYSPROF_CONFIG > found from the current directory.
func TestConfigPrecedence(t *testing.T) {
	const withDir = "version: 1\nprofileDir: from-file\nsteps:\n  - {name: s, command: [x]}\n"
	for _, tc := range []struct {
		name    string
		file    string // sysprof.yaml in the project
		env     string // SYSPROF_PROFILE_DIR
		flag    string // --profile-dir
		wantDir string // relative to the project
	}{
		{"default, no file", "", "", "", ".sysprof"},
		{"default with file", "version: 1\n", "", "", ".sysprof"},
		{"file", withDir, "", "", "from-file"},
		{"env over file", withDir, "from-env", "", "from-env"},
		{"flag over env", withDir, "from-env", "from-flag", "from-flag"},
		{"flag over file", withDir, "", "from-flag", "from-flag"},
		{"env, no file", "", "from-env", "", "from-env"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := newProjectDir(t, tc.file)
			if tc.env != "" {
				t.Setenv(envProfileDir, tc.env)
			}
			var args []string
			if tc.flag != "" {
				args = append(args, "--profile-dir", tc.flag)
			}
			cfg, err := loadConfig(configCmd(t, args...))
			if err != nil {
				t.Fatal(err)
			}
			got := cfg.ProfileDir
			if rel, err := filepath.Rel(dir, got); err == nil && filepath.IsAbs(got) {
				got = rel
			}
			if got != tc.wantDir {
				t.Errorf("ProfileDir = %q, want %q", got, tc.wantDir)
			}
			if cfg.Project != nil && len(cfg.Project.Steps) > 0 {
				if want := filepath.Join(cfg.ProfileDir, "s.yaml"); cfg.Project.Steps[0].Profile != want {
					t.Errorf("step profile = %q, want %q (the step default follows profileDir)", cfg.Project.Steps[0].Profile, want)
				}
			}
		})
	}

	t.Run("config file", func(t *testing.T) {
		dir := newProjectDir(t, "version: 1\nsteps:\n  - {name: found, command: [x]}\n")
		write := func(name, step string) string {
			p := filepath.Join(dir, name)
			if err := os.WriteFile(p, []byte("version: 1\nsteps:\n  - {name: "+step+", command: [x]}\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			return p
		}
		fromEnv, fromFlag := write("env.yaml", "env"), write("flag.yaml", "flag")
		stepOf := func(args ...string) string {
			t.Helper()
			cfg, err := loadConfig(configCmd(t, args...))
			if err != nil {
				t.Fatal(err)
			}
			return cfg.Project.Steps[0].Name
		}
		if got := stepOf(); got != "found" {
			t.Errorf("found: step %q", got)
		}
		t.Setenv(envConfig, fromEnv)
		if got := stepOf(); got != "env" {
			t.Errorf("SYSPROF_CONFIG: step %q", got)
		}
		if got := stepOf("--config", fromFlag); got != "flag" {
			t.Errorf("--config over SYSPROF_CONFIG: step %q", got)
		}
		if _, err := loadConfig(configCmd(t, "--config", filepath.Join(dir, "missing.yaml"))); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
			t.Errorf("missing --config: %v", err)
		}
	})

	// reports: flag > SYSPROF_REPORTS_DIR > sysprof.yaml (relative to the file) > nowhere.
	t.Run("reports dir", func(t *testing.T) {
		dir := newProjectDir(t, "version: 1\nreports: out/reports\n")
		get := func(args ...string) string {
			t.Helper()
			cfg, err := loadConfig(configCmd(t, args...))
			if err != nil {
				t.Fatal(err)
			}
			return cfg.ReportsDir
		}
		if got := get(); got != filepath.Join(dir, "out/reports") {
			t.Errorf("from the file: %q", got)
		}
		t.Setenv(envReportsDir, "from-env")
		if got := get(); got != "from-env" {
			t.Errorf("env over file: %q", got)
		}
		if got := get("--reports-dir", "from-flag"); got != "from-flag" {
			t.Errorf("flag over env: %q", got)
		}
		newProjectDir(t, "")
		if got := get(); got != "" {
			t.Errorf("no file, no flag: %q, want none", got)
		}
	})

	t.Run("debug", func(t *testing.T) {
		newProjectDir(t, "")
		t.Setenv(envDebug, "true")
		cfg, err := loadConfig(configCmd(t))
		if err != nil || !cfg.Debug {
			t.Fatalf("SYSPROF_DEBUG: %+v %v", cfg, err)
		}
	})
}
