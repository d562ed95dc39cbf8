package main

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/sysprof/sysprof/policy"
)

// projectVersion is the sysprof.yaml format version this sysprof reads and writes.
const projectVersion = 1

// fromConfigNote marks the allowances sysprof.yaml adds to a learned profile.
const fromConfigNote = "from " + projectFile

// project is a validated sysprof.yaml: the gates a team runs, each under its own profile.
// Every path in it is absolute.
type project struct {
	Path       string // the file
	Dir        string // its directory: relative paths in the file are relative to it
	Version    int
	ProfileDir string
	// FailOnDenial (failOnDenial) makes `enforce --step/--all` fail a step whose command
	// succeeded with denials, as --fail-on-denial does.
	FailOnDenial bool
	Steps        []step
}

// step is one gate: a command run in its work directory under its own profile.
type step struct {
	Name    string
	Command []string
	Profile string // profile file
	Workdir string // where the command runs ($WORKDIR)
	// Writable are extra paths the command may write, in profile form ($WORKDIR/out, $HOME/x,
	// /abs), added to the learned profile.
	Writable []string
	// Hosts are extra network endpoints (host:port, tcp) the command may connect to.
	Hosts []string
	// Env is KEY=VALUE added to sysprof's environment for the command.
	Env []string
}

// configError is one problem in sysprof.yaml, naming the file, the step and the field.
type configError struct {
	File  string
	Step  string // "" for top-level fields
	Index int    // index in steps when Step is set or the name is missing
	Field string
	Msg   string
}

func (e *configError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	b.WriteString(": ")
	if e.Index >= 0 {
		if e.Step != "" {
			fmt.Fprintf(&b, "step %q (steps[%d]): ", e.Step, e.Index)
		} else {
			fmt.Fprintf(&b, "steps[%d]: ", e.Index)
		}
	}
	b.WriteString(e.Field)
	b.WriteString(": ")
	b.WriteString(e.Msg)
	return b.String()
}

var (
	topFields  = []string{"version", "profileDir", "failOnDenial", "steps"}
	stepFields = []string{"name", "command", "profile", "workdir", "writable", "hosts", "env"}
	stepName   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`) })
	envName    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })
)

// parseProject validates the settings read from file (keys folded to lower case, as viper
// reads them) and resolves its paths. profileDir is the profile directory flags, environment,
// file and default resolved to. All problems are returned together, in file order.
func parseProject(file string, raw map[string]any, profileDir string) (*project, error) {
	p := &project{Path: file, Dir: filepath.Dir(file), ProfileDir: profileDir}
	var errs []error
	top := func(field, format string, args ...any) {
		errs = append(errs, &configError{File: file, Index: -1, Field: field, Msg: fmt.Sprintf(format, args...)})
	}
	errs = append(errs, unknownFields(raw, topFields, func(k string) error {
		return &configError{File: file, Index: -1, Field: k, Msg: "unknown field (known: " + strings.Join(topFields, ", ") + ")"}
	})...)

	switch v := raw["version"].(type) {
	case nil:
		top("version", "missing: add `version: %d` at the top", projectVersion)
	case int:
		if v != projectVersion {
			top("version", "%d is not a version this sysprof reads (%d)", v, projectVersion)
		}
		p.Version = v
	default:
		top("version", "want the number %d, got %q", projectVersion, fmt.Sprint(v))
	}
	if v, ok := raw["profiledir"]; ok {
		if s, ok := v.(string); !ok || s == "" {
			top("profileDir", "want a directory name, got %q", fmt.Sprint(v))
		}
	}

	switch v := raw["failondenial"].(type) {
	case nil:
	case bool:
		p.FailOnDenial = v
	default:
		top("failOnDenial", "want true or false, got %q", fmt.Sprint(v))
	}

	var rawSteps []any
	switch v := raw["steps"].(type) {
	case nil:
	case []any:
		rawSteps = v
	default:
		top("steps", "want a list of steps (- name: ...), got %T", v)
	}
	names := map[string]int{}
	profiles := map[string]string{}
	for i, rs := range rawSteps {
		st, serrs := parseStep(file, p.Dir, profileDir, i, rs)
		errs = append(errs, serrs...)
		if st == nil {
			continue
		}
		if j, dup := names[st.Name]; dup {
			errs = append(errs, &configError{File: file, Step: st.Name, Index: i, Field: "name", Msg: fmt.Sprintf("also the name of steps[%d]: names must be unique", j)})
			continue
		}
		names[st.Name] = i
		if other, dup := profiles[st.Profile]; dup {
			errs = append(errs, &configError{File: file, Step: st.Name, Index: i, Field: "profile", Msg: fmt.Sprintf("%s is also the profile of step %q: each step needs its own", st.Profile, other)})
			continue
		}
		profiles[st.Profile] = st.Name
		p.Steps = append(p.Steps, *st)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return p, nil
}

// parseStep validates steps[i]. It returns nil when the step cannot be used at all.
func parseStep(file, dir, profileDir string, i int, raw any) (*step, []error) {
	m, ok := raw.(map[string]any)
	if !ok {
		return nil, []error{&configError{File: file, Index: i, Field: "step", Msg: fmt.Sprintf("want a mapping (name: ..., command: ...), got %q", fmt.Sprint(raw))}}
	}
	st := &step{}
	if s, ok := m["name"].(string); ok {
		st.Name = s
	}
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, &configError{File: file, Step: st.Name, Index: i, Field: field, Msg: fmt.Sprintf(format, args...)})
	}
	errs = append(errs, unknownFields(m, stepFields, func(k string) error {
		return &configError{File: file, Step: st.Name, Index: i, Field: k, Msg: "unknown field (known: " + strings.Join(stepFields, ", ") + ")"}
	})...)

	switch {
	case m["name"] == nil:
		bad("name", "missing: every step needs a name (vet, build, test)")
	case st.Name == "" || !stepName().MatchString(st.Name):
		st.Name = ""
		bad("name", "%q: use letters, digits, '.', '_' and '-' (it names the profile file)", fmt.Sprint(m["name"]))
	}

	switch v := m["command"].(type) {
	case nil:
		bad("command", "missing: the command to run, as a list ([go, test, ./...]) or a string")
	case string:
		args, err := splitCommand(v)
		if err != nil {
			bad("command", "%v", err)
		}
		st.Command = args
	case []any:
		for j, a := range v {
			s, ok := a.(string)
			if !ok {
				s = fmt.Sprint(a)
				if _, isMap := a.(map[string]any); isMap || a == nil {
					bad("command", "element %d is not a string", j)
					continue
				}
			}
			st.Command = append(st.Command, s)
		}
	default:
		bad("command", "want a list of strings or a string, got %q", fmt.Sprint(v))
	}
	if m["command"] != nil && len(st.Command) == 0 && len(errs) == 0 {
		bad("command", "empty")
	}

	st.Workdir = dir
	if v, ok := m["workdir"]; ok {
		s, ok := v.(string)
		if !ok || s == "" {
			bad("workdir", "want a directory (relative to %s), got %q", filepath.Base(file), fmt.Sprint(v))
		} else {
			st.Workdir = resolveFrom(dir, s)
		}
	}

	if v, ok := m["profile"]; ok {
		s, ok := v.(string)
		if !ok || s == "" {
			bad("profile", "want a file name, got %q", fmt.Sprint(v))
		} else {
			st.Profile = resolveFrom(dir, s)
		}
	} else if st.Name != "" {
		st.Profile = filepath.Join(profileDir, st.Name+".yaml")
	}

	for j, w := range stringList(m, "writable", bad) {
		pw, msg := writablePath(w)
		if msg != "" {
			bad(fmt.Sprintf("writable[%d]", j), "%s", msg)
			continue
		}
		st.Writable = append(st.Writable, pw)
	}
	for j, h := range stringList(m, "hosts", bad) {
		if msg := hostProblem(h); msg != "" {
			bad(fmt.Sprintf("hosts[%d]", j), "%s", msg)
			continue
		}
		st.Hosts = append(st.Hosts, h)
	}
	if _, isMap := m["env"].(map[string]any); isMap {
		bad("env", "write a list of KEY=VALUE strings (- GOFLAGS=-mod=mod): a mapping's keys lose their case")
	} else {
		for j, e := range stringList(m, "env", bad) {
			k, _, ok := strings.Cut(e, "=")
			if !ok || !envName().MatchString(k) {
				bad(fmt.Sprintf("env[%d]", j), "%q: want KEY=VALUE", e)
				continue
			}
			st.Env = append(st.Env, e)
		}
	}
	if st.Name == "" {
		return nil, errs
	}
	return st, errs
}

// stringList reads an optional list of strings; a single string is a list of one.
func stringList(m map[string]any, field string, bad func(string, string, ...any)) []string {
	switch v := m[field].(type) {
	case nil:
		return nil
	case string:
		return []string{v}
	case []any:
		var out []string
		for j, a := range v {
			s, ok := a.(string)
			if !ok || s == "" {
				bad(fmt.Sprintf("%s[%d]", field, j), "want a non-empty string, got %q", fmt.Sprint(a))
				continue
			}
			out = append(out, s)
		}
		return out
	default:
		bad(field, "want a list of strings, got %q", fmt.Sprint(v))
		return nil
	}
}

func unknownFields(m map[string]any, known []string, mk func(string) error) []error {
	var keys []string
	for k := range m {
		if !slices.ContainsFunc(known, func(f string) bool { return strings.EqualFold(f, k) }) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var errs []error
	for _, k := range keys {
		errs = append(errs, mk(k))
	}
	return errs
}

func resolveFrom(dir, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(dir, p)
}

// writablePath turns a writable entry into profile form: a relative path is under the step's
// work directory ($WORKDIR), ~/ is $HOME; absolute paths and $VARIABLE paths stay as they are.
func writablePath(w string) (string, string) {
	var p string
	switch {
	case strings.HasPrefix(w, "/"), strings.HasPrefix(w, "$"):
		p = w
	case w == "~" || strings.HasPrefix(w, "~/"):
		p = "$HOME" + strings.TrimPrefix(w, "~")
	default:
		rel := path.Clean(w)
		if rel == ".." || strings.HasPrefix(rel, "../") {
			return "", fmt.Sprintf("%q leaves the work directory: write an absolute or $VARIABLE path", w)
		}
		p = "$WORKDIR"
		if rel != "." {
			p += "/" + rel
		}
	}
	p = strings.TrimSuffix(p, "/")
	if err := policy.Validate(&policy.Profile{Filesystem: policy.Filesystem{Write: []policy.PathRule{{Path: p}}}}); err != nil {
		var le *policy.LoadError
		if errors.As(err, &le) {
			return "", le.Msg
		}
		return "", err.Error()
	}
	return p, ""
}

// hostProblem checks a host entry: host:port, IP:port, CIDR:port or [v6]:port (TCP), with a
// port.
func hostProblem(h string) string {
	if strings.HasPrefix(h, "unix:") {
		return fmt.Sprintf("%q: hosts are network endpoints (host:port); unix sockets are not supported here", h)
	}
	a, err := policy.ParseEndpoint(h)
	if err != nil {
		return err.Error()
	}
	if a.Port == 0 {
		return fmt.Sprintf("%q: port 0 cannot be connected to: name the port (host:443)", h)
	}
	return ""
}

// splitCommand splits a command string the way a POSIX shell splits words, without expanding
// anything: whitespace separates words, '…' quotes literally, "…" quotes with \ escaping
// " \ $ and `, and \ outside quotes escapes the next character. Shell operators outside quotes
// are refused: no shell runs the command.
func splitCommand(s string) ([]string, error) {
	var (
		args    []string
		cur     strings.Builder
		inWord  bool
		squote  bool
		dquote  bool
		escaped bool
	)
	for _, r := range s {
		switch {
		case escaped:
			if dquote && !strings.ContainsRune("\"\\$`\n", r) {
				cur.WriteRune('\\')
			}
			if r != '\n' {
				cur.WriteRune(r)
			}
			escaped = false
		case squote:
			if r == '\'' {
				squote = false
			} else {
				cur.WriteRune(r)
			}
		case dquote:
			switch r {
			case '"':
				dquote = false
			case '\\':
				escaped = true
			default:
				cur.WriteRune(r)
			}
		case r == '\\':
			escaped, inWord = true, true
		case r == '\'':
			squote, inWord = true, true
		case r == '"':
			dquote, inWord = true, true
		case r == ' ' || r == '\t' || r == '\n':
			if inWord {
				args = append(args, cur.String())
				cur.Reset()
				inWord = false
			}
		case strings.ContainsRune("|&;<>()`", r) || r == '$' || (r == '*' || r == '?' || r == '~') && !inWord:
			return nil, fmt.Errorf("%q: %q needs a shell, and none runs the command: write [sh, -c, %q]", s, string(r), s)
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if squote || dquote {
		return nil, fmt.Errorf("%q: unterminated quote", s)
	}
	if escaped {
		return nil, fmt.Errorf("%q: ends with a backslash", s)
	}
	if inWord {
		args = append(args, cur.String())
	}
	return args, nil
}

// selectSteps returns the steps named (in the order given) or, with all, every step in file
// order.
func (p *project) selectSteps(names []string, all bool) ([]step, error) {
	if all {
		if len(p.Steps) == 0 {
			return nil, withCode(exitSysprof, fmt.Errorf("%s has no steps", p.Path))
		}
		return slices.Clone(p.Steps), nil
	}
	var out []step
	for _, n := range names {
		i := slices.IndexFunc(p.Steps, func(s step) bool { return s.Name == n })
		if i < 0 {
			var known []string
			for _, s := range p.Steps {
				known = append(known, s.Name)
			}
			return nil, withCode(exitSysprof, fmt.Errorf("%s has no step %q (steps: %s)", p.Path, n, strings.Join(known, ", ")))
		}
		out = append(out, p.Steps[i])
	}
	return out, nil
}

// environ is sysprof's environment with the step's variables added (later entries win).
func (s step) environ() []string {
	return append(os.Environ(), s.Env...)
}

// checkWorkdir fails before anything runs when the step's directory is missing.
func (s step) checkWorkdir() error {
	fi, err := os.Stat(s.Workdir)
	if err != nil {
		return fmt.Errorf("step %s: workdir: %w", s.Name, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("step %s: workdir %s is not a directory", s.Name, s.Workdir)
	}
	return nil
}

// addAllowances adds the step's extra writable paths and hosts to a learned profile, each
// marked as coming from sysprof.yaml, so that enforcement allows them even when the learn run
// did not use them (a write rule grants reading too). p is modified and normalized.
func (s step) addAllowances(p *policy.Profile) {
	for _, w := range s.Writable {
		if !slices.ContainsFunc(p.Filesystem.Write, func(r policy.PathRule) bool { return r.Path == w }) {
			p.Filesystem.Write = append(p.Filesystem.Write, policy.PathRule{Path: w, Note: fromConfigNote})
		}
	}
	for _, h := range s.Hosts {
		if !slices.ContainsFunc(p.Network.Connect, func(e policy.Endpoint) bool { return e.Endpoint == h && e.Proto == "tcp" }) {
			// Endpoints have no note; By says where the allowance comes from.
			p.Network.Connect = append(p.Network.Connect, policy.Endpoint{Endpoint: h, Proto: "tcp", Provenance: policy.Provenance{By: fromConfigNote}})
		}
	}
	policy.Normalize(p)
}
