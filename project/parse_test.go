package project

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sysprof/sysprof/policy"
)

const testFile = "/p/sysprof.yaml"

func TestParse(t *testing.T) {
	p, err := Parse(testFile, []byte(`version: 1
profileDir: policies
reports: out/reports
failOnDenial: true
steps:
  - name: vet
    command: [go, vet, ./..., 1]
    role: lint
  - name: build
    command: "cc -o 'out dir/a' \"x y\" z\\ w"
    workdir: sub
    profile: custom/build.yaml
    writable: [out, ~/.cache/thing, $TMPDIR/x, /var/tmp/y, .]
    hosts: [registry.example.com:443, "127.0.0.1:8080", "[::1]:9000"]
    env: [GOFLAGS=-mod=mod, EMPTY=]
  - name: one
    command: make
    writable: out
`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := &Project{
		Path: testFile, Dir: "/p", Version: 1, ProfileDir: "/p/policies", FailOnDenial: true, ReportsDir: "/p/out/reports",
		Steps: []Step{
			{Name: "vet", Command: []string{"go", "vet", "./...", "1"}, Role: "lint", Profile: "/p/policies/vet.yaml", Workdir: "/p"},
			{
				Name:     "build",
				Command:  []string{"cc", "-o", "out dir/a", "x y", "z w"},
				Profile:  "/p/custom/build.yaml",
				Workdir:  "/p/sub",
				Writable: []string{"$WORKDIR/out", "$HOME/.cache/thing", "$TMPDIR/x", "/var/tmp/y", "$WORKDIR"},
				Hosts:    []string{"registry.example.com:443", "127.0.0.1:8080", "[::1]:9000"},
				Env:      []string{"GOFLAGS=-mod=mod", "EMPTY="},
			},
			{Name: "one", Command: []string{"make"}, Profile: "/p/policies/one.yaml", Workdir: "/p", Writable: []string{"$WORKDIR/out"}},
		},
	}
	if d := cmp.Diff(want, p); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

// profileDir: Options (a flag or the environment) over the file over the default; the steps'
// default profiles follow whichever wins.
func TestParseProfileDir(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, opt, want string
	}{
		{"default", "version: 1\nsteps: [{name: s, command: x}]\n", "", "/p/.sysprof"},
		{"file", "version: 1\nprofileDir: pol\nsteps: [{name: s, command: x}]\n", "", "/p/pol"},
		{"file absolute", "version: 1\nprofileDir: /etc/pol\nsteps: [{name: s, command: x}]\n", "", "/etc/pol"},
		{"option over file", "version: 1\nprofileDir: pol\nsteps: [{name: s, command: x}]\n", "flag", "flag"},
	} {
		p, err := Parse(testFile, []byte(tc.yaml), Options{ProfileDir: tc.opt})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if p.ProfileDir != tc.want || p.Steps[0].Profile != filepath.Join(tc.want, "s.yaml") {
			t.Errorf("%s: profileDir %q, step profile %q; want %q", tc.name, p.ProfileDir, p.Steps[0].Profile, tc.want)
		}
	}
}

// Every problem names file:line and the field, all at once, in file order.
func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []string // the error's lines, after "/p/sysprof.yaml:"; "..." ends a prefix
	}{
		{"empty file", "", []string{`1: version: missing: add ` + "`version: 1`" + ` at the top`}},
		{"no version", "steps: []\n", []string{`1: version: missing: add ` + "`version: 1`" + ` at the top`}},
		{"wrong version", "# c\nversion: 2\n", []string{`2: version: 2 is not a version this sysprof reads (1)`}},
		{"version string", "version: one\n", []string{`1: version: want the number 1, got "one"`}},
		{"version quoted", "version: \"1\"\n", []string{`1: version: want the number 1, got "1"`}},
		{"not a mapping", "- a\n- b\n", []string{`1: want a mapping (version: 1, steps: ...), got a list`}},
		{"unknown top field", "version: 1\nstep: []\n", []string{`2: step: unknown field: did you mean "steps"? (known: version, profileDir, reports, failOnDenial, steps)`}},
		{"wrong case", "version: 1\nprofiledir: x\n", []string{`2: profiledir: unknown field: did you mean "profileDir"? (known: version, profileDir, reports, failOnDenial, steps)`}},
		{"unknown, nothing close", "version: 1\ncolour: red\n", []string{`2: colour: unknown field (known: version, profileDir, reports, failOnDenial, steps)`}},
		{"duplicate key", "version: 1\nversion: 1\n", []string{`2: version: duplicate key`}},
		{"profileDir empty", "version: 1\nprofileDir: \"\"\n", []string{`2: profileDir: want a directory name, got ""`}},
		{"reports empty", "version: 1\nreports: [a]\n", []string{`2: reports: want a directory name (relative to sysprof.yaml), got a list`}},
		{"role unknown", "version: 1\nsteps:\n  - name: t\n    command: [x]\n    role: linter\n", []string{`5: steps[0].role: "linter" is not a role: want one of format, lint, build, test, install, language-server, vcs, other`}},
		{"failOnDenial", "version: 1\nfailOnDenial: sometimes\n", []string{`2: failOnDenial: want true or false, got "sometimes"`}},
		{"steps not a list", "version: 1\nsteps:\n  a: b\n", []string{`3: steps: want a list of steps (- name: ...), got a mapping`}},
		{"step not a mapping", "version: 1\nsteps:\n  - vet\n", []string{`3: steps[0]: want a mapping (name: ..., command: ...), got "vet"`}},
		{"no name", "version: 1\nsteps:\n  - command: [x]\n", []string{`3: steps[0].name: missing: every step needs a name (vet, build, test)`}},
		{"bad name", "version: 1\nsteps:\n  - command: [x]\n    name: a/b\n", []string{`4: steps[0].name: "a/b": use letters, digits, '.', '_' and '-' (it names the profile file)`}},
		{"no command", "version: 1\nsteps:\n  - name: vet\n", []string{`3: steps[0].command: missing: the command to run, as a list ([go, test, ./...]) or a string`}},
		{"empty command", "version: 1\nsteps:\n  - name: vet\n    command: \"\"\n", []string{`4: steps[0].command: empty`}},
		{"empty command list", "version: 1\nsteps:\n  - name: vet\n    command: []\n", []string{`4: steps[0].command: empty`}},
		{"command element", "version: 1\nsteps:\n  - name: vet\n    command:\n      - go\n      - {a: b}\n", []string{`6: steps[0].command[1]: want a string, got a mapping`}},
		{"shell operator", "version: 1\nsteps:\n  - name: t\n    command: cat a | wc\n", []string{`4: steps[0].command: "cat a | wc": "|" needs a shell, and none runs the command: write [sh, -c, "cat a | wc"]`}},
		{"unterminated quote", "version: 1\nsteps:\n  - name: t\n    command: \"echo 'a\"\n", []string{`4: steps[0].command: "echo 'a": unterminated quote`}},
		{"command number", "version: 1\nsteps:\n  - name: t\n    command: 3\n", []string{`4: steps[0].command: want a list of strings or a string, got 3`}},
		{"unknown step field", "version: 1\nsteps:\n  - name: t\n    command: [x]\n    hostz: [a:1]\n", []string{`5: steps[0].hostz: unknown field: did you mean "hosts"? (known: name, command, role, profile, workdir, writable, hosts, env)`}},
		{"workdir", "version: 1\nsteps:\n  - name: t\n    command: [x]\n    workdir: [a]\n", []string{`5: steps[0].workdir: want a directory (relative to sysprof.yaml), got a list`}},
		{"profile", "version: 1\nsteps:\n  - name: t\n    command: [x]\n    profile:\n", []string{`5: steps[0].profile: want a file name, got nothing`}},
		{"duplicate name", "version: 1\nsteps:\n  - {name: t, command: [x]}\n  - {name: t, command: [y]}\n", []string{`4: steps[1].name: "t" is also the name of steps[0]: names must be unique`}},
		{"shared profile", "version: 1\nsteps:\n  - {name: a, command: [x], profile: p.yaml}\n  - name: b\n    command: [y]\n    profile: p.yaml\n", []string{`6: steps[1].profile: /p/p.yaml is also the profile of step "a": each step needs its own`}},
		{"explicit profile is another's default", "version: 1\nsteps:\n  - {name: a, command: [x]}\n  - {name: b, command: [y], profile: .sysprof/a.yaml}\n", []string{`4: steps[1].profile: /p/.sysprof/a.yaml is also the profile of step "a": each step needs its own`}},
		{"writable escapes", "version: 1\nsteps:\n  - name: t\n    command: [x]\n    writable:\n      - ok\n      - ../up\n", []string{`7: steps[0].writable[1]: "../up" leaves the work directory: write an absolute or $VARIABLE path`}},
		{"writable bad var", "version: 1\nsteps:\n  - name: t\n    command: [x]\n    writable: [$NOPE/x]\n", []string{`5: steps[0].writable[0]: "$NOPE/x" must be absolute or start with a variable ($WORKDIR $HOME ...`}},
		{"writable number", "version: 1\nsteps:\n  - name: t\n    command: [x]\n    writable: [3]\n", []string{`5: steps[0].writable[0]: want a non-empty string, got 3`}},
		{"writable mapping", "version: 1\nsteps:\n  - name: t\n    command: [x]\n    writable: {a: b}\n", []string{`5: steps[0].writable: want a list of strings, got a mapping`}},
		{"host without port", "version: 1\nsteps:\n  - name: t\n    command: [x]\n    hosts: [example.com]\n", []string{`5: steps[0].hosts[0]: "example.com" has no port: want host:port, CIDR:port, [v6]:port or unix:/path`}},
		{"host port 0", "version: 1\nsteps:\n  - name: t\n    command: [x]\n    hosts: [\"example.com:0\"]\n", []string{`5: steps[0].hosts[0]: "example.com:0": port 0 cannot be connected to: name the port (host:443)`}},
		{"host unix", "version: 1\nsteps:\n  - name: t\n    command: [x]\n    hosts: [\"unix:/run/x\"]\n", []string{`5: steps[0].hosts[0]: "unix:/run/x": hosts are network endpoints (host:port); unix sockets are not supported here`}},
		{"env mapping", "version: 1\nsteps:\n  - name: t\n    command: [x]\n    env: {A: b}\n", []string{`5: steps[0].env: write a list of KEY=VALUE strings (- GOFLAGS=-mod=mod): later entries win`}},
		{"env no equals", "version: 1\nsteps:\n  - name: t\n    command: [x]\n    env: [A]\n", []string{`5: steps[0].env[0]: "A": want KEY=VALUE`}},
		{"several at once, in file order", "version: 1\nsteps:\n  - name: a\n    command: [x]\n    hosts: [nope]\n  - name: b\n  - name: c\n    command: [z]\n    colour: red\n", []string{
			`5: steps[0].hosts[0]: "nope" has no port: want host:port, CIDR:port, [v6]:port or unix:/path`,
			`6: steps[1].command: missing: the command to run, as a list ([go, test, ./...]) or a string`,
			`9: steps[2].colour: unknown field (known: name, command, role, profile, workdir, writable, hosts, env)`,
		}},
		{"yaml syntax", "version: 1\nsteps: [\n", []string{`2: invalid YAML: did not find expected node content`}},
		{"two documents", "version: 1\n---\nversion: 1\n", []string{`2: more than one YAML document: sysprof.yaml holds exactly one`}},
		{"alias", "version: 1\nsteps:\n  - &s {name: a, command: [x]}\n  - *s\n", []string{`4: steps[1]: YAML aliases (*name) are not allowed here: write the value out`}},
		{"merge key", "version: 1\nsteps:\n  - name: a\n    <<: {command: [x]}\n", []string{`4: steps[0]: merge keys (<<) are not allowed here: write the fields out`}},
		{"custom tag", "version: 1\nprofileDir: !env HOME\n", []string{`2: profileDir: unsupported YAML tag !env`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(testFile, []byte(tc.yaml), Options{})
			if err == nil {
				t.Fatal("no error")
			}
			var want []string
			got := strings.Split(err.Error(), "\n")
			for i, w := range tc.want {
				w = testFile + ":" + w
				if p, ok := strings.CutSuffix(w, "..."); ok && i < len(got) && strings.HasPrefix(got[i], p) {
					w = got[i] // the rest is policy's to word
				}
				want = append(want, w)
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
			var pe *Error
			if !errors.As(err, &pe) || pe.File != testFile || pe.Line == 0 {
				t.Errorf("error is not a located *Error: %#v", err)
			}
		})
	}
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
		got, err := SplitCommand(tc.in)
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%q (-want +got):\n%s", tc.in, diff)
		}
	}
	for _, bad := range []string{"a | b", "a && b", "a > f", "echo $HOME", "ls *.go", "echo `x`", "a;b", `a 'b`, `a "b`, `a\`} {
		if got, err := SplitCommand(bad); err == nil {
			t.Errorf("%q: no error, got %q", bad, got)
		}
	}
}

func TestAddAllowances(t *testing.T) {
	st := Step{Name: "t", Writable: []string{"$WORKDIR/out", "$TMPDIR/x"}, Hosts: []string{"registry.example.com:443"}}
	p := &policy.Profile{Filesystem: policy.Filesystem{Write: []policy.PathRule{{Path: "$TMPDIR/x", Provenance: policy.Provenance{By: "/usr/bin/cc", Seen: 1}}}}}
	st.AddAllowances(p)
	st.AddAllowances(p) // idempotent
	wantWrite := []policy.PathRule{
		{Path: "$TMPDIR/x", Provenance: policy.Provenance{By: "/usr/bin/cc", Seen: 1}},
		{Path: "$WORKDIR/out", Note: FromConfigNote},
	}
	if diff := cmp.Diff(wantWrite, p.Filesystem.Write); diff != "" {
		t.Errorf("write (-want +got):\n%s", diff)
	}
	wantConnect := []policy.Endpoint{{Endpoint: "registry.example.com:443", Proto: "tcp", Provenance: policy.Provenance{By: FromConfigNote}}}
	if diff := cmp.Diff(wantConnect, p.Network.Connect); diff != "" {
		t.Errorf("connect (-want +got):\n%s", diff)
	}
	if err := policy.Validate(p); err != nil {
		t.Errorf("profile with allowances does not validate: %v", err)
	}
}

func TestSelect(t *testing.T) {
	p := &Project{Path: testFile, Steps: []Step{{Name: "vet"}, {Name: "build"}, {Name: "test"}}}
	got, err := p.Select([]string{"test", "vet"}, false)
	if err != nil || len(got) != 2 || got[0].Name != "test" || got[1].Name != "vet" {
		t.Errorf("Select(test, vet) = %v, %v", got, err)
	}
	if _, err := p.Select([]string{"lint"}, false); err == nil || !strings.Contains(err.Error(), `no step "lint" (steps: vet, build, test)`) {
		t.Errorf("unknown step: %v", err)
	}
	if _, err := (&Project{Path: testFile}).Select(nil, true); err == nil || !strings.Contains(err.Error(), "has no steps") {
		t.Errorf("--all without steps: %v", err)
	}
}

// A file found by walking up must be one only root, the caller or $SUDO_UID could have
// written: it names what `learn --all` runs as root.
func TestFindRefusesPlantedFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "a", "b")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := Find(sub); got != "" || err != nil {
		t.Fatalf("no file: %q, %v", got, err)
	}
	f := filepath.Join(dir, File)
	if err := os.WriteFile(f, []byte("version: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := Find(sub); got != f || err != nil {
		t.Fatalf("Find = %q, %v; want %q", got, err, f)
	}
	if err := os.Chmod(f, 0o666); err != nil {
		t.Fatal(err)
	}
	if _, err := Find(sub); err == nil || !strings.Contains(err.Error(), "writable by every user") {
		t.Errorf("world-writable: %v", err)
	}
	if os.Geteuid() == 0 {
		if err := os.Chmod(f, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(f, 4242, 4242); err != nil {
			t.Fatal(err)
		}
		t.Setenv("SUDO_UID", "")
		if _, err := Find(sub); err == nil || !strings.Contains(err.Error(), "belongs to uid 4242") {
			t.Errorf("another user's file: %v", err)
		}
	}
}
