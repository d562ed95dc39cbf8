package policy

import (
	"bytes"
	_ "embed"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
)

// SupportedAPIVersions are the profile versions this sysprof reads.
var SupportedAPIVersions = []string{APIVersion}

// LoadError is a problem with a profile file, located for a human: file, line (1-based, 0 when
// unknown) and the field as a path (syscalls.allow[3].name). Its Error reads like a compiler
// message: `cargo-build.yaml:14: syscalls.allow[3].name: "opennat" is not a syscall on any
// supported architecture`.
type LoadError struct {
	File  string
	Line  int
	Field string
	Msg   string
}

func (e *LoadError) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			b.WriteString(":" + strconv.Itoa(e.Line))
		}
		b.WriteString(": ")
	} else if e.Line > 0 {
		b.WriteString("line " + strconv.Itoa(e.Line) + ": ")
	}
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

//go:embed profile.schema.json
var schemaJSON []byte

// Schema returns the JSON Schema (draft 2020-12) of the profile format. The loader checks it
// and, on top, what a schema cannot express (see Parse).
func Schema() []byte { return slices.Clone(schemaJSON) }

// Load reads and validates the profile at path (see Parse). A missing file gives an error
// that wraps fs.ErrNotExist.
func Load(path string) (*Profile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load profile: %w", err)
	}
	return Parse(path, data)
}

// Parse reads a profile from YAML. name is used in error messages only. Every error is a
// *LoadError naming the line and field. Parse checks, in order: YAML syntax (one document, no
// aliases or custom tags), apiVersion and kind, the JSON Schema (Schema), then what a schema
// cannot say: syscall names exist on a supported architecture, argument values are known
// constants or numbers of the right kind, paths are clean, endpoints parse.
// The profile is returned as written (not normalized).
func Parse(name string, data []byte) (*Profile, error) {
	root, err := decodeYAML(name, data)
	if err != nil {
		return nil, err
	}
	t := &tree{file: name, lines: map[string]int{}, keyLines: map[string]int{}}
	v, lerr := t.value(root, "")
	if lerr != nil {
		return nil, lerr
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, t.errAt("", root.Line, "a profile is a mapping (apiVersion: ..., kind: Profile, ...)")
	}
	if lerr := t.checkHead(obj, root.Line); lerr != nil {
		return nil, lerr
	}
	sch, err := compiledSchema()
	if err != nil {
		return nil, err
	}
	var issues []schemaIssue
	sch.validate(v, nil, &issues)
	if len(issues) > 0 {
		return nil, t.schemaError(v, issues)
	}
	var p Profile
	if err := root.Decode(&p); err != nil {
		return nil, &LoadError{File: name, Line: yamlErrLine(err), Msg: strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	if errs := check(&p); len(errs) > 0 {
		e := errs[0]
		e.File = name
		e.Line = t.line(e.Field)
		return nil, e
	}
	return &p, nil
}

// decodeYAML parses exactly one YAML document.
func decodeYAML(name string, data []byte) (root *yaml.Node, err error) {
	defer func() {
		if r := recover(); r != nil {
			// The YAML parser is third-party code; a crafted file must not crash sysprof.
			root, err = nil, &LoadError{File: name, Msg: fmt.Sprintf("invalid YAML (parser panic: %v)", r)}
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if err == io.EOF {
			return nil, &LoadError{File: name, Msg: "empty file: want a profile (apiVersion: " + APIVersion + ", kind: Profile)"}
		}
		return nil, &LoadError{File: name, Line: yamlErrLine(err), Msg: "invalid YAML: " + yamlErrMsg(err)}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err != io.EOF {
		line := extra.Line
		if err != nil {
			line = yamlErrLine(err)
		}
		return nil, &LoadError{File: name, Line: line, Msg: "more than one YAML document: a profile file holds exactly one"}
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, &LoadError{File: name, Msg: "empty file: want a profile (apiVersion: " + APIVersion + ", kind: Profile)"}
	}
	return doc.Content[0], nil
}

// The regexps are compiled on first use: only error paths need them.
var (
	yamlLineRE  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`line (\d+)`) })
	yamlLinePfx = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^line \d+: `) })
)

// YAMLErrorLine is the line a YAML decoder's error names, 0 when none (for file:line messages
// of other YAML files than profiles, e.g. package project's sysprof.yaml).
func YAMLErrorLine(err error) int { return yamlErrLine(err) }

// YAMLErrorMessage is a YAML decoder's error without its "yaml: line N:" prefix.
func YAMLErrorMessage(err error) string { return yamlErrMsg(err) }

func yamlErrLine(err error) int {
	if m := yamlLineRE().FindStringSubmatch(err.Error()); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return 0
}

func yamlErrMsg(err error) string {
	s := strings.TrimPrefix(err.Error(), "yaml: ")
	if m := yamlLinePfx().FindString(s); m != "" {
		s = s[len(m):]
	}
	return s
}

// tree converts a YAML node tree into JSON-like values for the schema, remembering the line of
// every field.
type tree struct {
	file     string
	lines    map[string]int // field path -> line of its value
	keyLines map[string]int // field path -> line of its key
}

func (t *tree) errAt(field string, line int, msg string) *LoadError {
	return &LoadError{File: t.file, Line: line, Field: field, Msg: msg}
}

// line is where a field is: its key for mappings (so "missing field" points at "metadata:"),
// its value otherwise; the closest enclosing field when it is absent.
func (t *tree) line(field string) int {
	for f := field; ; {
		if l, ok := t.keyLines[f]; ok {
			return l
		}
		if l, ok := t.lines[f]; ok {
			return l
		}
		if f == "" {
			return 0
		}
		f = parentField(f)
	}
}

func parentField(f string) string {
	i := strings.LastIndexAny(f, ".[")
	if i < 0 {
		return ""
	}
	return f[:i]
}

func childField(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

func (t *tree) value(n *yaml.Node, field string) (any, *LoadError) {
	t.lines[field] = n.Line
	switch n.Kind {
	case yaml.AliasNode:
		return nil, t.errAt(field, n.Line, "YAML aliases (*name) are not allowed in profiles: write the value out")
	case yaml.MappingNode:
		if n.Tag != "" && n.ShortTag() != "!!map" {
			return nil, t.errAt(field, n.Line, "unsupported YAML tag "+n.Tag)
		}
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode || k.ShortTag() == "!!merge" {
				return nil, t.errAt(field, k.Line, "mapping keys must be plain names (no merge keys or complex keys)")
			}
			f := childField(field, k.Value)
			if _, dup := m[k.Value]; dup {
				return nil, t.errAt(f, k.Line, "duplicate key")
			}
			t.keyLines[f] = k.Line
			v, err := t.value(val, f)
			if err != nil {
				return nil, err
			}
			m[k.Value] = v
		}
		return m, nil
	case yaml.SequenceNode:
		if n.Tag != "" && n.ShortTag() != "!!seq" {
			return nil, t.errAt(field, n.Line, "unsupported YAML tag "+n.Tag)
		}
		s := make([]any, 0, len(n.Content))
		for i, c := range n.Content {
			v, err := t.value(c, field+"["+strconv.Itoa(i)+"]")
			if err != nil {
				return nil, err
			}
			s = append(s, v)
		}
		return s, nil
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!str", "!!timestamp":
			return n.Value, nil
		case "!!null":
			return nil, nil
		case "!!bool", "!!int", "!!float":
			var v any
			if err := n.Decode(&v); err != nil {
				return nil, t.errAt(field, n.Line, yamlErrMsg(err))
			}
			if f, ok := v.(float64); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
				return nil, t.errAt(field, n.Line, "not a finite number")
			}
			return v, nil
		default:
			return nil, t.errAt(field, n.Line, "unsupported YAML tag "+n.Tag)
		}
	default:
		return nil, t.errAt(field, n.Line, "unexpected YAML node")
	}
}

// checkHead looks at apiVersion and kind before anything else, so that a profile from a newer
// sysprof gets "upgrade" rather than a list of unknown fields.
func (t *tree) checkHead(obj map[string]any, rootLine int) *LoadError {
	supported := strings.Join(SupportedAPIVersions, ", ")
	av, ok := obj["apiVersion"]
	if !ok {
		return t.errAt("apiVersion", rootLine, "missing; this sysprof reads profiles with apiVersion "+supported)
	}
	if s, _ := av.(string); !slices.Contains(SupportedAPIVersions, s) {
		msg := fmt.Sprintf("%s is not a profile version this sysprof reads (it reads %s)", quoteAny(av), supported)
		if strings.HasPrefix(s, "sysprof.dev/") {
			msg += "; a newer sysprof wrote it: upgrade sysprof"
		}
		return t.errAt("apiVersion", t.line("apiVersion"), msg)
	}
	k, ok := obj["kind"]
	if !ok {
		return t.errAt("kind", rootLine, "missing; want kind: "+Kind)
	}
	if k != Kind {
		return t.errAt("kind", t.line("kind"), fmt.Sprintf("%s is not a profile; want kind: %s", quoteAny(k), Kind))
	}
	return nil
}

func quoteAny(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	return fmt.Sprint(v)
}

// schemaError turns the first (by line) schema failure into a LoadError with a message meant
// for a person editing the file.
func (t *tree) schemaError(v any, issues []schemaIssue) *LoadError {
	var leaves []*LoadError
	for _, e := range issues {
		leaves = append(leaves, t.leafErrors(v, e)...)
	}
	slices.SortStableFunc(leaves, func(a, b *LoadError) int {
		if a.Line != b.Line {
			return a.Line - b.Line
		}
		return strings.Compare(a.Field, b.Field)
	})
	return leaves[0]
}

func (t *tree) leafErrors(v any, e schemaIssue) []*LoadError {
	field := instanceField(v, e.loc)
	def := e.def
	switch e.kind {
	case "additionalProperties":
		var out []*LoadError
		for _, p := range e.keys {
			f := childField(field, p)
			out = append(out, t.errAt(f, t.line(f), "unknown field"+knownFields(field)))
		}
		return out
	case "required":
		var out []*LoadError
		for _, m := range e.keys {
			out = append(out, t.errAt(childField(field, m), t.line(field), "missing (required)"))
		}
		return out
	}
	line := t.line(field)
	var msg string
	switch e.kind {
	case "type":
		msg = fmt.Sprintf("must be %s, not %s", article(strings.Join(e.want.([]string), " or ")), article(e.got.(string)))
	case "const":
		msg = "value must be " + displayValue(e.want)
	case "pattern":
		got := e.got.(string)
		switch def {
		case "path":
			msg = fmt.Sprintf("%q must be absolute or start with a variable (%s)", got, pathVariables())
		case "syscallName":
			msg = fmt.Sprintf("%q is not a syscall name (lowercase letters, digits and _)", got)
		case "endpoint":
			msg = fmt.Sprintf("%q is not an endpoint: want host:port, CIDR:port, [v6]:port, unix:/path or unix:@name", got)
		case "value":
			msg = fmt.Sprintf("%q is not a constant or number", got)
		default:
			msg = fmt.Sprintf("%s does not match pattern %s", quoteAny(got), quoteAny(e.want))
			if strings.HasSuffix(field, "sha256") {
				msg = fmt.Sprintf("%q is not a sha256 (64 lowercase hex digits)", got)
			} else if strings.HasSuffix(field, "errno") {
				msg = fmt.Sprintf("%q is not an errno name (EPERM, ENOSYS, ...)", got)
			}
		}
	case "enum":
		wants := e.want.([]any)
		want := make([]string, len(wants))
		for i, w := range wants {
			want[i] = fmt.Sprint(w)
		}
		what := "value"
		switch def {
		case "architecture":
			what = "architecture"
		}
		if strings.HasSuffix(field, "proto") {
			what = "protocol"
		}
		msg = fmt.Sprintf("%s is not a supported %s (%s)", quoteAny(e.got), what, strings.Join(want, ", "))
	case "minimum":
		msg = fmt.Sprintf("must be at least %v", e.want)
	case "maximum":
		msg = fmt.Sprintf("must be at most %v", e.want)
		if strings.HasSuffix(field, ".arg") {
			msg = "argument index must be 0..5"
		}
	}
	return []*LoadError{t.errAt(field, line, msg)}
}

func article(s string) string {
	switch {
	case s == "null":
		return "empty"
	case strings.IndexAny(s[:1], "aeiou") == 0:
		return "an " + s
	default:
		return "a " + s
	}
}

// knownFields lists the fields a mapping may have, from the Profile types.
func knownFields(parent string) string {
	f := fieldsOf(parent)
	if len(f) == 0 {
		return ""
	}
	return " (known: " + strings.Join(f, ", ") + ")"
}

var indexRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\[\d+\]`) })

func fieldsOf(parent string) []string {
	switch indexRE().ReplaceAllString(parent, "[]") {
	case "":
		return []string{"apiVersion", "kind", "metadata", "syscalls", "filesystem", "network", "env", "credentials", "binaries", "limits", "hostRoot"}
	case "limits":
		return []string{"pids", "memoryMiB", "tmpMiB", "writeMiB", "writeFiles"}
	case "env":
		return []string{"pass"}
	case "metadata":
		return []string{"name", "command", "sysprofVersion", "kernel", "learnedOn", "created", "updated", "runs", "incomplete", "incompleteReasons", "exact"}
	case "syscalls":
		return []string{"architectures", "allow", "args"}
	case "syscalls.allow[]":
		return []string{"name", "base", "by", "seen"}
	case "syscalls.args[]":
		return []string{"syscall", "arg", "name", "mask", "values", "flags", "deny", "errno", "by", "seen"}
	case "filesystem":
		return []string{"read", "write", "exec", "list", "hidden", "privateTmp"}
	case "filesystem.read[]", "filesystem.write[]", "filesystem.exec[]", "filesystem.list[]", "filesystem.hidden[]":
		return []string{"path", "by", "seen", "note", "pending"}
	case "network":
		return []string{"connect", "send", "bind"}
	case "network.connect[]", "network.send[]", "network.bind[]":
		return []string{"endpoint", "proto", "by", "seen"}
	case "credentials[]":
		return []string{"file", "key", "env", "hosts", "how", "by", "seen"}
	case "binaries[]":
		return []string{"path", "sha256", "by", "seen"}
	}
	return nil
}

// instanceField turns a JSON pointer into a field path, using the value to tell array indices
// from keys.
func instanceField(v any, loc []string) string {
	field := ""
	for _, tok := range loc {
		switch x := v.(type) {
		case []any:
			i, _ := strconv.Atoi(tok)
			field += "[" + tok + "]"
			if i >= 0 && i < len(x) {
				v = x[i]
			} else {
				v = nil
			}
		case map[string]any:
			field = childField(field, tok)
			v = x[tok]
		default:
			field = childField(field, tok)
			v = nil
		}
	}
	return field
}
