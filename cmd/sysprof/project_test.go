package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"

	"github.com/sysprof/sysprof/policy"
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
	for _, k := range []string{envProfileDir, envConfig, envDebug} {
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
    hosts: [proxy.golang.org:443, "127.0.0.1:8080", "[::1]:9000"]
    env: [GOFLAGS=-mod=mod, EMPTY=]
`)
	cfg, err := loadConfig(configCmd(t))
	if err != nil {
		t.Fatal(err)
	}
	want := &project{
		Path: filepath.Join(dir, projectFile), Dir: dir, Version: 1,
		ProfileDir: filepath.Join(dir, "policies"),
		Steps: []step{
			{Name: "vet", Command: []string{"go", "vet", "./..."}, Profile: filepath.Join(dir, "policies/vet.yaml"), Workdir: dir},
			{
				Name:     "build",
				Command:  []string{"cc", "-o", "out dir/a", "x y", "z w"},
				Profile:  filepath.Join(dir, "custom/build.yaml"),
				Workdir:  filepath.Join(dir, "sub"),
				Writable: []string{"$WORKDIR/out", "$HOME/.cache/thing", "$TMPDIR/x", "/var/tmp/y", "$WORKDIR"},
				Hosts:    []string{"proxy.golang.org:443", "127.0.0.1:8080", "[::1]:9000"},
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

func TestProjectValidation(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []string // substrings of the error, each naming file, step and field
	}{
		{"no version", "steps: []\n", []string{"sysprof.yaml: version: missing"}},
		{"wrong version", "version: 2\n", []string{"sysprof.yaml: version: 2 is not a version"}},
		{"version string", "version: one\n", []string{`sysprof.yaml: version: want the number 1, got "one"`}},
		{"unknown top field", "version: 1\nstep: []\n", []string{"sysprof.yaml: step: unknown field (known: version, profileDir, failOnDenial, steps)"}},
		{"steps not a list", "version: 1\nsteps: {a: b}\n", []string{"sysprof.yaml: steps: want a list"}},
		{"step not a mapping", "version: 1\nsteps: [vet]\n", []string{`sysprof.yaml: steps[0]: step: want a mapping`}},
		{"no name", "version: 1\nsteps:\n  - command: [x]\n", []string{"sysprof.yaml: steps[0]: name: missing"}},
		{"bad name", "version: 1\nsteps:\n  - {name: a/b, command: [x]}\n", []string{`sysprof.yaml: steps[0]: name: "a/b": use letters`}},
		{"no command", "version: 1\nsteps:\n  - name: vet\n", []string{`sysprof.yaml: step "vet" (steps[0]): command: missing`}},
		{"empty command", "version: 1\nsteps:\n  - {name: vet, command: \"\"}\n", []string{`step "vet" (steps[0]): command: empty`}},
		{"shell operator", "version: 1\nsteps:\n  - {name: t, command: \"cat a | wc\"}\n", []string{`step "t" (steps[0]): command: "cat a | wc": "|" needs a shell`}},
		{"unterminated quote", "version: 1\nsteps:\n  - {name: t, command: \"echo 'a\"}\n", []string{`step "t" (steps[0]): command: "echo 'a": unterminated quote`}},
		{"command number", "version: 1\nsteps:\n  - {name: t, command: 3}\n", []string{`step "t" (steps[0]): command: want a list of strings or a string`}},
		{"unknown step field", "version: 1\nsteps:\n  - {name: t, command: [x], hostz: [a:1]}\n", []string{`step "t" (steps[0]): hostz: unknown field (known: name, command, profile, workdir, writable, hosts, env)`}},
		{"duplicate name", "version: 1\nsteps:\n  - {name: t, command: [x]}\n  - {name: t, command: [y]}\n", []string{`step "t" (steps[1]): name: also the name of steps[0]`}},
		{"shared profile", "version: 1\nsteps:\n  - {name: a, command: [x], profile: p.yaml}\n  - {name: b, command: [y], profile: p.yaml}\n", []string{`step "b" (steps[1]): profile: `, `is also the profile of step "a"`}},
		{"writable escapes", "version: 1\nsteps:\n  - {name: t, command: [x], writable: [../up]}\n", []string{`step "t" (steps[0]): writable[0]: "../up" leaves the work directory`}},
		{"writable bad var", "version: 1\nsteps:\n  - {name: t, command: [x], writable: [$NOPE/x]}\n", []string{`step "t" (steps[0]): writable[0]: "$NOPE/x" must be absolute or start with a variable`}},
		{"host without port", "version: 1\nsteps:\n  - {name: t, command: [x], hosts: [example.com]}\n", []string{`step "t" (steps[0]): hosts[0]: "example.com" has no port`}},
		{"host port 0", "version: 1\nsteps:\n  - {name: t, command: [x], hosts: [\"example.com:0\"]}\n", []string{`step "t" (steps[0]): hosts[0]: "example.com:0": port 0`}},
		{"env mapping", "version: 1\nsteps:\n  - {name: t, command: [x], env: {A: b}}\n", []string{`step "t" (steps[0]): env: write a list of KEY=VALUE strings`}},
		{"env no equals", "version: 1\nsteps:\n  - {name: t, command: [x], env: [A]}\n", []string{`step "t" (steps[0]): env[0]: "A": want KEY=VALUE`}},
		{"several at once", "version: 1\nsteps:\n  - {name: a, command: [x], hosts: [nope]}\n  - {name: b}\n", []string{`step "a" (steps[0]): hosts[0]`, `step "b" (steps[1]): command: missing`}},
		{"yaml syntax", "version: 1\nsteps: [\n", []string{"sysprof.yaml: "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := newProjectDir(t, tc.yaml)
			_, err := loadConfig(configCmd(t))
			if err == nil {
				t.Fatal("no error")
			}
			if codeOf(err) != exitSysprof {
				t.Errorf("exit status %d, want %d", codeOf(err), exitSysprof)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, filepath.Join(dir, projectFile)+": ") {
				t.Errorf("error does not name the file first:\n%s", msg)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error\n%s\ndoes not contain\n%s", msg, w)
				}
			}
		})
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

	t.Run("debug", func(t *testing.T) {
		newProjectDir(t, "")
		t.Setenv(envDebug, "true")
		cfg, err := loadConfig(configCmd(t))
		if err != nil || !cfg.Debug {
			t.Fatalf("SYSPROF_DEBUG: %+v %v", cfg, err)
		}
	})
}

func TestSplitCommand(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"go test ./...", []string{"go", "test", "./..."}},
		{"  a\tb\n c ", []string{"a", "b", "c"}},
		{`sh -c 'cat out.txt | wc -l'`, []string{"sh", "-c", "cat out.txt | wc -l"}},
		{`echo "a \"b\" \$c \x"`, []string{"echo", `a "b" $c \x`}},
		{`a\ b c\\d`, []string{"a b", `c\d`}},
		{`x '' ""`, []string{"x", "", ""}},
		{`go test -run 'Test*'`, []string{"go", "test", "-run", "Test*"}},
		{`a=b*c`, []string{"a=b*c"}},
	} {
		got, err := splitCommand(tc.in)
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%q (-want +got):\n%s", tc.in, diff)
		}
	}
	for _, bad := range []string{"a | b", "a && b", "a > f", "echo $HOME", "ls *.go", "echo `x`", "a;b", `a 'b`, `a "b`, `a\`} {
		if got, err := splitCommand(bad); err == nil {
			t.Errorf("%q: no error, got %q", bad, got)
		}
	}
}

func TestAddAllowances(t *testing.T) {
	st := step{Name: "t", Writable: []string{"$WORKDIR/out", "$TMPDIR/x"}, Hosts: []string{"proxy.golang.org:443"}}
	p := &policy.Profile{Filesystem: policy.Filesystem{Write: []policy.PathRule{{Path: "$TMPDIR/x", Provenance: policy.Provenance{By: "/usr/bin/cc", Seen: 1}}}}}
	st.addAllowances(p)
	st.addAllowances(p) // idempotent
	wantWrite := []policy.PathRule{
		{Path: "$TMPDIR/x", Provenance: policy.Provenance{By: "/usr/bin/cc", Seen: 1}},
		{Path: "$WORKDIR/out", Note: fromConfigNote},
	}
	if diff := cmp.Diff(wantWrite, p.Filesystem.Write); diff != "" {
		t.Errorf("write (-want +got):\n%s", diff)
	}
	wantConnect := []policy.Endpoint{{Endpoint: "proxy.golang.org:443", Proto: "tcp", Provenance: policy.Provenance{By: fromConfigNote}}}
	if diff := cmp.Diff(wantConnect, p.Network.Connect); diff != "" {
		t.Errorf("connect (-want +got):\n%s", diff)
	}
	if err := policy.Validate(p); err != nil {
		t.Errorf("profile with allowances does not validate: %v", err)
	}
}
