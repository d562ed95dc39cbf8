package project

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/sysprof/sysprof/policy"
)

// The fields of the file, in the order the starter file explains them.
var (
	TopFields  = []string{"version", "profileDir", "reports", "failOnDenial", "steps"}
	StepFields = []string{"name", "command", "role", "profile", "workdir", "writable", "hosts", "env"}
)

var (
	stepName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`) })
	envName  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })
)

// Parse decodes and validates sysprof.yaml from data; file is its absolute path (relative
// paths in it are relative to its directory). Every problem is an *Error naming the line and
// the field; all of them are returned together (errors.Join), in file order.
func Parse(file string, data []byte, o Options) (*Project, error) {
	d := &decoder{file: file}
	root := d.document(data)
	if len(d.errs) > 0 {
		return nil, d.err()
	}
	p := &Project{Path: file, Dir: filepath.Dir(file)}
	d.project(p, root, o)
	if len(d.errs) > 0 {
		return nil, d.err()
	}
	return p, nil
}

type decoder struct {
	file string
	errs []*Error
}

func (d *decoder) errf(line int, field, format string, args ...any) {
	d.errs = append(d.errs, &Error{File: d.file, Line: line, Field: field, Msg: fmt.Sprintf(format, args...)})
}

func (d *decoder) err() error {
	slices.SortStableFunc(d.errs, func(a, b *Error) int { return a.Line - b.Line })
	out := make([]error, len(d.errs))
	for i, e := range d.errs {
		out[i] = e
	}
	return errors.Join(out...)
}

// document parses exactly one YAML document without aliases or merge keys. It returns nil for
// an empty file (no error: the missing fields say what to write).
func (d *decoder) document(data []byte) (root *yaml.Node) {
	defer func() {
		if r := recover(); r != nil {
			// The YAML parser is third-party code; a crafted file must not crash sysprof.
			root = nil
			d.errf(0, "", "invalid YAML (parser panic: %v)", r)
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if err != io.EOF {
			d.errf(policy.YAMLErrorLine(err), "", "invalid YAML: %s", policy.YAMLErrorMessage(err))
		}
		return nil
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err != io.EOF {
		line := extra.Line
		if err != nil {
			line = policy.YAMLErrorLine(err)
		}
		d.errf(line, "", "more than one YAML document: %s holds exactly one", File)
		return nil
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil
	}
	d.plain(doc.Content[0], "")
	return doc.Content[0]
}

// plain refuses what would make the file mean something other than it reads: aliases, merge
// keys and custom tags.
func (d *decoder) plain(n *yaml.Node, field string) {
	switch n.Kind {
	case yaml.AliasNode:
		d.errf(n.Line, field, "YAML aliases (*name) are not allowed here: write the value out")
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.ShortTag() == "!!merge" {
				d.errf(k.Line, field, "merge keys (<<) are not allowed here: write the fields out")
				continue
			}
			d.plain(n.Content[i+1], childField(field, k.Value))
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			d.plain(c, field+"["+strconv.Itoa(i)+"]")
		}
	case yaml.ScalarNode:
		if !strings.HasPrefix(n.Tag, "!!") && n.Tag != "" {
			d.errf(n.Line, field, "unsupported YAML tag %s", n.Tag)
		}
	}
}

func childField(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

// fields returns a mapping's values by key, reporting unknown keys (with the known key they
// are closest to), duplicate keys and keys that are not plain names.
func (d *decoder) fields(n *yaml.Node, field string, known []string) map[string]*yaml.Node {
	out := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.ShortTag() == "!!merge" {
			continue // refused by plain
		}
		f := childField(field, k.Value)
		switch {
		case !slices.Contains(known, k.Value):
			msg := "unknown field"
			if s := closest(k.Value, known); s != "" {
				msg += fmt.Sprintf(": did you mean %q?", s)
			}
			d.errf(k.Line, f, "%s (known: %s)", msg, strings.Join(known, ", "))
		case out[k.Value] != nil:
			d.errf(k.Line, f, "duplicate key")
		default:
			out[k.Value] = v
		}
	}
	return out
}

// closest is the known name a mistyped one most likely meant: the same name in other case,
// else one within a third of its length in edits (at least one); "" when none is that close.
func closest(name string, known []string) string {
	best, bestD := "", max(1, len(name)/3)+1
	for _, k := range known {
		if strings.EqualFold(k, name) {
			return k
		}
		if d := policy.EditDistance(strings.ToLower(name), strings.ToLower(k)); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// str is a node's value when it is a string.
func str(n *yaml.Node) (string, bool) {
	if n == nil || n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		return "", false
	}
	return n.Value, true
}

// show describes a node that is not what a field wants.
func show(n *yaml.Node) string {
	switch {
	case n.Kind == yaml.MappingNode:
		return "a mapping"
	case n.Kind == yaml.SequenceNode:
		return "a list"
	case n.ShortTag() == "!!null":
		return "nothing"
	case n.ShortTag() == "!!str":
		return strconv.Quote(n.Value)
	default:
		return n.Value
	}
}

func (d *decoder) project(p *Project, root *yaml.Node, o Options) {
	rootLine := 1
	var top map[string]*yaml.Node
	switch {
	case root == nil || root.ShortTag() == "!!null":
		top = map[string]*yaml.Node{}
	case root.Kind != yaml.MappingNode:
		d.errf(root.Line, "", "want a mapping (version: %d, steps: ...), got %s", Version, show(root))
		return
	default:
		rootLine = root.Line
		top = d.fields(root, "", TopFields)
	}

	switch v := top["version"]; {
	case v == nil:
		d.errf(rootLine, "version", "missing: add `version: %d` at the top", Version)
	case v.Kind != yaml.ScalarNode || v.ShortTag() != "!!int":
		d.errf(v.Line, "version", "want the number %d, got %s", Version, show(v))
	default:
		n, err := strconv.Atoi(v.Value)
		if err != nil || n != Version {
			d.errf(v.Line, "version", "%s is not a version this sysprof reads (%d)", v.Value, Version)
		}
		p.Version = n
	}

	p.ProfileDir = filepath.Join(p.Dir, DefaultProfileDir)
	if v := top["profileDir"]; v != nil {
		if s, ok := str(v); !ok || s == "" {
			d.errf(v.Line, "profileDir", "want a directory name, got %s", show(v))
		} else {
			p.ProfileDir = resolveFrom(p.Dir, s)
		}
	}
	if o.ProfileDir != "" {
		p.ProfileDir = o.ProfileDir
	}

	if v := top["reports"]; v != nil {
		if s, ok := str(v); !ok || s == "" {
			d.errf(v.Line, "reports", "want a directory name (relative to %s), got %s", filepath.Base(p.Path), show(v))
		} else {
			p.ReportsDir = resolveFrom(p.Dir, s)
		}
	}

	if v := top["failOnDenial"]; v != nil {
		if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!bool" || v.Decode(&p.FailOnDenial) != nil {
			d.errf(v.Line, "failOnDenial", "want true or false, got %s", show(v))
		}
	}

	steps := top["steps"]
	if steps == nil || steps.ShortTag() == "!!null" {
		return
	}
	if steps.Kind != yaml.SequenceNode {
		d.errf(steps.Line, "steps", "want a list of steps (- name: ...), got %s", show(steps))
		return
	}
	names := map[string]int{}
	profiles := map[string]string{}
	for i, n := range steps.Content {
		field := "steps[" + strconv.Itoa(i) + "]"
		st, lines := d.step(p, n, field)
		if st == nil {
			continue
		}
		if j, dup := names[st.Name]; dup {
			d.errf(lines.name, field+".name", "%q is also the name of steps[%d]: names must be unique", st.Name, j)
			continue
		}
		names[st.Name] = i
		if other, dup := profiles[st.Profile]; dup {
			d.errf(lines.profile, field+".profile", "%s is also the profile of step %q: each step needs its own", st.Profile, other)
			continue
		}
		profiles[st.Profile] = st.Name
		p.Steps = append(p.Steps, *st)
	}
}

// stepLines are where a step's name and profile are, for the checks across steps.
type stepLines struct{ name, profile int }

// step decodes one step. It returns nil when the step cannot be used at all.
func (d *decoder) step(p *Project, n *yaml.Node, field string) (*Step, stepLines) {
	lines := stepLines{n.Line, n.Line}
	if n.Kind != yaml.MappingNode {
		d.errf(n.Line, field, "want a mapping (name: ..., command: ...), got %s", show(n))
		return nil, lines
	}
	m := d.fields(n, field, StepFields)
	bad := func(n *yaml.Node, sub, format string, args ...any) {
		d.errf(n.Line, childField(field, sub), format, args...)
	}
	st := &Step{Workdir: p.Dir}

	switch v := m["name"]; {
	case v == nil:
		bad(n, "name", "missing: every step needs a name (vet, build, test)")
	default:
		lines.name = v.Line
		if s, ok := str(v); ok && stepName().MatchString(s) {
			st.Name = s
		} else {
			bad(v, "name", "%s: use letters, digits, '.', '_' and '-' (it names the profile file)", show(v))
		}
	}

	d.command(st, n, m["command"], field)

	if v := m["role"]; v != nil {
		if s, ok := str(v); ok && slices.Contains(Roles, s) {
			st.Role = s
		} else {
			bad(v, "role", "%s is not a role: want one of %s", show(v), strings.Join(Roles, ", "))
		}
	}

	if v := m["workdir"]; v != nil {
		if s, ok := str(v); !ok || s == "" {
			bad(v, "workdir", "want a directory (relative to %s), got %s", filepath.Base(p.Path), show(v))
		} else {
			st.Workdir = resolveFrom(p.Dir, s)
		}
	}
	if v := m["profile"]; v != nil {
		lines.profile = v.Line
		if s, ok := str(v); !ok || s == "" {
			bad(v, "profile", "want a file name, got %s", show(v))
		} else {
			st.Profile = resolveFrom(p.Dir, s)
		}
	} else if st.Name != "" {
		st.Profile = filepath.Join(p.ProfileDir, st.Name+".yaml")
	}

	for _, e := range d.stringList(m["writable"], field+".writable") {
		pw, msg := writablePath(e.s)
		if msg != "" {
			d.errf(e.line, e.field, "%s", msg)
			continue
		}
		st.Writable = append(st.Writable, pw)
	}
	for _, e := range d.stringList(m["hosts"], field+".hosts") {
		if msg := hostProblem(e.s); msg != "" {
			d.errf(e.line, e.field, "%s", msg)
			continue
		}
		st.Hosts = append(st.Hosts, e.s)
	}
	if v := m["env"]; v != nil && v.Kind == yaml.MappingNode {
		bad(v, "env", "write a list of KEY=VALUE strings (- GOFLAGS=-mod=mod): later entries win")
	} else {
		for _, e := range d.stringList(v, field+".env") {
			k, _, ok := strings.Cut(e.s, "=")
			if !ok || !envName().MatchString(k) {
				d.errf(e.line, e.field, "%q: want KEY=VALUE", e.s)
				continue
			}
			st.Env = append(st.Env, e.s)
		}
	}
	if st.Name == "" {
		return nil, lines
	}
	return st, lines
}

// command decodes a step's command: a list of words, or a string split like a shell splits
// words (SplitCommand).
func (d *decoder) command(st *Step, stepNode, v *yaml.Node, field string) {
	f := field + ".command"
	switch {
	case v == nil:
		d.errf(stepNode.Line, f, "missing: the command to run, as a list ([go, test, ./...]) or a string")
		return
	case v.Kind == yaml.SequenceNode:
		ok := true
		for j, a := range v.Content {
			// Any scalar is a word as written ([sleep, 1]); nothing and mappings are not.
			if a.Kind != yaml.ScalarNode || a.ShortTag() == "!!null" {
				d.errf(a.Line, f+"["+strconv.Itoa(j)+"]", "want a string, got %s", show(a))
				ok = false
				continue
			}
			st.Command = append(st.Command, a.Value)
		}
		if ok && len(st.Command) == 0 {
			d.errf(v.Line, f, "empty")
		}
	case v.ShortTag() == "!!str":
		args, err := SplitCommand(v.Value)
		switch {
		case err != nil:
			d.errf(v.Line, f, "%v", err)
		case len(args) == 0:
			d.errf(v.Line, f, "empty")
		}
		st.Command = args
	default:
		d.errf(v.Line, f, "want a list of strings or a string, got %s", show(v))
	}
}

// entry is one string of a list, with where it is.
type entry struct {
	s, field string
	line     int
}

// stringList reads an optional list of non-empty strings; a single string is a list of one.
func (d *decoder) stringList(v *yaml.Node, field string) []entry {
	switch {
	case v == nil || v.ShortTag() == "!!null":
		return nil
	case v.Kind == yaml.SequenceNode:
		var out []entry
		for j, a := range v.Content {
			f := field + "[" + strconv.Itoa(j) + "]"
			s, ok := str(a)
			if !ok || s == "" {
				d.errf(a.Line, f, "want a non-empty string, got %s", show(a))
				continue
			}
			out = append(out, entry{s, f, a.Line})
		}
		return out
	case v.ShortTag() == "!!str" && v.Value != "":
		return []entry{{v.Value, field, v.Line}}
	default:
		d.errf(v.Line, field, "want a list of strings, got %s", show(v))
		return nil
	}
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
