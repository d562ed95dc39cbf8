package project

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// goHosts and npmHosts stand for where the go command fetches modules and checksums from and
// where npm fetches packages: the hosts GOPROXY/GOSUMDB and npm's registry setting name. The
// starter only comments them, for the user to fill in (sysprof learn records the real ones).
const (
	goHosts  = "MODULE-PROXY:443, CHECKSUM-DB:443"
	npmHosts = "NPM-REGISTRY:443"
)

// Kind is one kind of project found in a directory, with the steps it suggests.
type Kind struct {
	What  string // "Go module example.com/x (go.mod)"
	Steps []StarterStep
}

// StarterStep is a step the starter file suggests.
type StarterStep struct {
	Name    string
	Command []string
	Comment string
	Hosts   string // hosts the step may need, for a commented example; "" for none
}

// Detect returns the kinds of project dir holds, in a fixed order: Go, Cargo, npm, make.
// Step names are unique: a later kind's clashing name gets its tool as a prefix.
func Detect(dir string) ([]Kind, error) {
	exists := func(name string) bool {
		_, err := os.Stat(filepath.Join(dir, name))
		return err == nil
	}
	var kinds []Kind
	if exists("go.mod") {
		mod := firstMatch(filepath.Join(dir, "go.mod"), func(l string) (string, bool) {
			return strings.CutPrefix(l, "module ")
		})
		kinds = append(kinds, Kind{
			What: describe("Go module", mod, "go.mod"),
			Steps: []StarterStep{
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
		kinds = append(kinds, Kind{
			What: describe("Cargo crate", name, "Cargo.toml"),
			Steps: []StarterStep{
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
		k := Kind{What: describe("npm package", pkg.Name, "package.json")}
		if exists("package-lock.json") || exists("npm-shrinkwrap.json") {
			k.Steps = append(k.Steps, StarterStep{"install", []string{"npm", "ci"}, "install exactly what the lockfile pins (install scripts run sandboxed too)", npmHosts})
		}
		testComment := "run the test script"
		if pkg.Scripts["test"] == "" {
			testComment = "package.json has no test script yet: add one, or remove this step"
		}
		k.Steps = append(k.Steps, StarterStep{"test", []string{"npm", "test"}, testComment, ""})
		kinds = append(kinds, k)
	}
	for _, mk := range []string{"GNUmakefile", "makefile", "Makefile"} {
		if exists(mk) {
			kinds = append(kinds, Kind{
				What:  "Makefile",
				Steps: []StarterStep{{"make", []string{"make"}, "build the default target", ""}},
			})
			break
		}
	}
	seen := map[string]bool{}
	for i := range kinds {
		for j := range kinds[i].Steps {
			s := &kinds[i].Steps[j]
			if seen[s.Name] {
				s.Name = s.Command[0] + "-" + s.Name
			}
			seen[s.Name] = true
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

# reports: a directory where every enforce (audit-mode too) and drift run leaves one JSON
# run report (keep it as a CI artifact; sysprof audit DIR reads many). --reports-dir and
# SYSPROF_REPORTS_DIR override it.
# reports: .sysprof/reports

# failOnDenial: enforce fails a step whose command succeeded although something was denied
# (exit 1), as --fail-on-denial does: a denied legitimate action never passes silently.
failOnDenial: true

# steps: the gates, run in this order by --all. Every field is explained on the first step.
steps:
`

// Starter renders the starter file. The first step carries a comment per field; the
// others only say what they do.
func Starter(kinds []Kind) string {
	var b strings.Builder
	b.WriteString(starterHeader)
	first := true
	for _, k := range kinds {
		fmt.Fprintf(&b, "\n  # %s\n", k.What)
		for _, s := range k.Steps {
			fmt.Fprintf(&b, "  # %s: %s.\n", s.Name, s.Comment)
			if !first {
				fmt.Fprintf(&b, "  - name: %s\n", s.Name)
				fmt.Fprintf(&b, "    command: %s\n", flowList(s.Command))
				if s.Hosts != "" {
					fmt.Fprintf(&b, "    # hosts: [%s]\n", s.Hosts)
				}
				continue
			}
			first = false
			hosts := s.Hosts
			if hosts == "" {
				hosts = "registry.example.com:443"
			}
			fmt.Fprintf(&b, `  - # name: names the step (--step %[1]s) and its default profile, <profileDir>/%[1]s.yaml.
    name: %[1]s
    # command: what the step runs, as a list or a string split like a shell splits words.
    # Nothing is expanded and no shell runs it: for pipes write [sh, -c, "a | b"].
    command: %[2]s
    # role: what kind of tool the step runs, which sysprof audit judges escapes against:
    # format, lint, build, test, install, language-server, vcs, other (default: guessed).
    # role: build
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
`, s.Name, flowList(s.Command), hosts)
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
