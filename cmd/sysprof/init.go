package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
)

type initOptions struct {
	streams
	Dir    string // the project directory (the current one)
	Force  bool   // overwrite an existing sysprof.yaml
	Stdout bool   // print instead of writing
}

func init() {
	subcommands = append(subcommands, func(s streams) *cobra.Command { return newInitCmd(s, runInit) })
}

func newInitCmd(s streams, runF func(context.Context, *initOptions) error) *cobra.Command {
	o := &initOptions{streams: s}
	cmd := &cobra.Command{
		Use:   "init [--force] [--stdout]",
		Short: "Write a starter " + projectFile + " for the project in the current directory",
		Long: `init looks at the current directory and writes a starter ` + projectFile + ` with one step per gate
of the project it finds, each field explained by a comment:

  go.mod         vet, build, test     (go vet ./..., go build ./..., go test ./...)
  Cargo.toml     build, test          (cargo build --offline, cargo test --offline)
  package.json   install, test        (npm ci when there is a lockfile; npm test)
  Makefile       make                 (make)

Then learn every step's profile with ` + "`sudo sysprof learn --all`" + ` and run the gates with
` + "`sysprof enforce --all`" + `. init refuses to overwrite an existing file unless --force.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			wd, err := os.Getwd()
			if err != nil {
				return withCode(exitSysprof, err)
			}
			o.Dir = wd
			return runF(cmd.Context(), o)
		},
	}
	cmd.Flags().BoolVar(&o.Force, "force", false, "overwrite an existing "+projectFile)
	cmd.Flags().BoolVar(&o.Stdout, "stdout", false, "print the file instead of writing it")
	return cmd
}

func runInit(_ context.Context, o *initOptions) error {
	kinds, err := detectProject(o.Dir)
	if err != nil {
		return withCode(exitSysprof, err)
	}
	if len(kinds) == 0 {
		return withCode(exitSysprof, fmt.Errorf("no go.mod, Cargo.toml, package.json or Makefile in %s: run init in the project's root, or write %s by hand (see `sysprof init --help`)", o.Dir, projectFile))
	}
	text := starterConfig(kinds)
	if o.Stdout {
		_, err := fmt.Fprint(o.Out, text)
		return err
	}
	path := filepath.Join(o.Dir, projectFile)
	if _, err := os.Lstat(path); err == nil && !o.Force {
		return withCode(exitSysprof, fmt.Errorf("%s exists: use --force to overwrite it (or --stdout to compare)", path))
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return withCode(exitSysprof, err)
	}
	if err := writeFileAtomic(path, []byte(text)); err != nil {
		return withCode(exitSysprof, fmt.Errorf("write %s: %w", path, err))
	}
	var names []string
	for _, k := range kinds {
		for _, s := range k.steps {
			names = append(names, s.name)
		}
	}
	fmt.Fprintf(o.Err, "sysprof: wrote %s (steps: %s)\n", path, strings.Join(names, ", "))
	fmt.Fprintf(o.Err, "sysprof: next: review it, then `sudo sysprof learn --all` and `sysprof enforce --all`\n")
	return nil
}

// goHosts are where the go command fetches modules and checksums from.
const goHosts = "proxy.golang.org:443, sum.golang.org:443"

// projectKind is one kind of project found in a directory, with the steps it suggests.
type projectKind struct {
	what  string // "Go module example.com/x (go.mod)"
	steps []starterStep
}

type starterStep struct {
	name    string
	command []string
	comment string
	hosts   string // hosts the step may need, for a commented example; "" for none
}

// detectProject returns the kinds of project dir holds, in a fixed order: Go, Cargo, npm, make.
// Step names are unique: a later kind's clashing name gets its tool as a prefix.
func detectProject(dir string) ([]projectKind, error) {
	exists := func(name string) bool {
		_, err := os.Stat(filepath.Join(dir, name))
		return err == nil
	}
	var kinds []projectKind
	if exists("go.mod") {
		mod := firstMatch(filepath.Join(dir, "go.mod"), func(l string) (string, bool) {
			return strings.CutPrefix(l, "module ")
		})
		kinds = append(kinds, projectKind{
			what: describe("Go module", mod, "go.mod"),
			steps: []starterStep{
				{"vet", []string{"go", "vet", "./..."}, "static checks", goHosts},
				{"build", []string{"go", "build", "./..."}, "compile every package", goHosts},
				{"test", []string{"go", "test", "./..."}, "run the tests", goHosts},
			},
		})
	}
	if exists("Cargo.toml") {
		inPackage := false
		name := firstMatch(filepath.Join(dir, "Cargo.toml"), func(l string) (string, bool) {
			if strings.HasPrefix(l, "[") {
				inPackage = l == "[package]"
				return "", false
			}
			k, v, ok := strings.Cut(l, "=")
			if !inPackage || !ok || strings.TrimSpace(k) != "name" {
				return "", false
			}
			return strings.Trim(strings.TrimSpace(v), `"'`), true
		})
		kinds = append(kinds, projectKind{
			what: describe("Cargo crate", name, "Cargo.toml"),
			steps: []starterStep{
				{"build", []string{"cargo", "build", "--offline"}, "compile; --offline: dependencies come from Cargo.lock and the local cache", ""},
				{"test", []string{"cargo", "test", "--offline"}, "run the tests", ""},
			},
		})
	}
	if exists("package.json") {
		var pkg struct {
			Name    string            `json:"name"`
			Scripts map[string]string `json:"scripts"`
		}
		if b, err := os.ReadFile(filepath.Join(dir, "package.json")); err == nil {
			if err := json.Unmarshal(b, &pkg); err != nil {
				return nil, fmt.Errorf("package.json: %w", err)
			}
		}
		k := projectKind{what: describe("npm package", pkg.Name, "package.json")}
		if exists("package-lock.json") || exists("npm-shrinkwrap.json") {
			k.steps = append(k.steps, starterStep{"install", []string{"npm", "ci"}, "install exactly what the lockfile pins (install scripts run sandboxed too)", "registry.npmjs.org:443"})
		}
		testComment := "run the test script"
		if pkg.Scripts["test"] == "" {
			testComment = "package.json has no test script yet: add one, or remove this step"
		}
		k.steps = append(k.steps, starterStep{"test", []string{"npm", "test"}, testComment, ""})
		kinds = append(kinds, k)
	}
	for _, mk := range []string{"GNUmakefile", "makefile", "Makefile"} {
		if exists(mk) {
			kinds = append(kinds, projectKind{
				what:  "Makefile",
				steps: []starterStep{{"make", []string{"make"}, "build the default target", ""}},
			})
			break
		}
	}
	seen := map[string]bool{}
	for i := range kinds {
		for j := range kinds[i].steps {
			s := &kinds[i].steps[j]
			if seen[s.name] {
				s.name = s.command[0] + "-" + s.name
			}
			seen[s.name] = true
		}
	}
	return kinds, nil
}

func describe(kind, name, file string) string {
	if name == "" {
		return kind + " (" + file + ")"
	}
	return kind + " " + name + " (" + file + ")"
}

// firstMatch returns the first value match finds in the trimmed lines of file, or "".
func firstMatch(file string, match func(string) (string, bool)) string {
	f, err := os.Open(file)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := match(strings.TrimSpace(sc.Text())); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

const starterHeader = `# sysprof.yaml: the gates of this project (format, lint, build, test, install), each run inside
# a sandbox under its own profile, learned from what the step really does.
#
#   sudo sysprof learn --all     # learn what every step needs; writes the profiles (commit them)
#   sysprof enforce --all        # run the steps in order, each sandboxed; stops at the first failure
#   sysprof drift --all          # CI: fail when a step starts needing more than its profile allows
#   sysprof enforce --step test  # one step
#
# Relative paths are relative to this file. --config FILE and SYSPROF_CONFIG pick another file;
# --profile-dir and SYSPROF_PROFILE_DIR override profileDir.

# version: the format of this file. Always 1.
version: 1

# profileDir: where the learned profiles live (default .sysprof), one per step.
profileDir: .sysprof

# failOnDenial: enforce fails a step whose command succeeded although something was denied
# (exit 1), as --fail-on-denial does: a denied legitimate action never passes silently.
failOnDenial: true

# steps: the gates, run in this order by --all. Every field is explained on the first step.
steps:
`

// starterConfig renders the starter file. The first step carries a comment per field; the
// others only say what they do.
func starterConfig(kinds []projectKind) string {
	var b strings.Builder
	b.WriteString(starterHeader)
	first := true
	for _, k := range kinds {
		fmt.Fprintf(&b, "\n  # %s\n", k.what)
		for _, s := range k.steps {
			fmt.Fprintf(&b, "  # %s: %s.\n", s.name, s.comment)
			if !first {
				fmt.Fprintf(&b, "  - name: %s\n", s.name)
				fmt.Fprintf(&b, "    command: %s\n", flowList(s.command))
				if s.hosts != "" {
					fmt.Fprintf(&b, "    # hosts: [%s]\n", s.hosts)
				}
				continue
			}
			first = false
			hosts := s.hosts
			if hosts == "" {
				hosts = "registry.example.com:443"
			}
			fmt.Fprintf(&b, `  - # name: names the step (--step %[1]s) and its default profile, <profileDir>/%[1]s.yaml.
    name: %[1]s
    # command: what the step runs, as a list or a string split like a shell splits words.
    # Nothing is expanded and no shell runs it: for pipes write [sh, -c, "a | b"].
    command: %[2]s
    # workdir: where the command runs, relative to this file; it is $WORKDIR in the profile.
    workdir: .
    # profile: the profile file, relative to this file (default <profileDir>/<name>.yaml).
    # profile: .sysprof/%[1]s.yaml
    # writable: extra paths the step may write even if learning never saw it write them:
    # relative to workdir, or starting with $WORKDIR, $HOME, $TMPDIR, $GOCACHE, ... or /.
    writable: []
    # hosts: host:port (TCP) the step may connect to, added to the network allowlist.
    # hosts: [%[3]s]
    hosts: []
    # env: extra environment variables for the step, as KEY=VALUE.
    env: []
`, s.name, flowList(s.command), hosts)
		}
	}
	return b.String()
}

// flowList writes argv as a YAML flow sequence, quoting what YAML would misread.
func flowList(argv []string) string {
	out := make([]string, len(argv))
	for i, a := range argv {
		if a == "" || strings.ContainsAny(a, ",[]{}#&*!|>'\"%@`: ") || strings.HasPrefix(a, "-") && len(a) == 1 {
			b, _ := json.Marshal(a)
			out[i] = string(b)
			continue
		}
		out[i] = a
	}
	return "[" + strings.Join(out, ", ") + "]"
}
