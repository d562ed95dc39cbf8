package policy

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"go.yaml.in/yaml/v3"
)

// The published contract is profile.schema.json; the loader checks it with a small
// interpreter (schemacheck.go). These tests hold the interpreter to a full draft 2020-12
// validator on every profile in the tree and on many broken variants of them.

func librarySchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemaJSON))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	const url = "https://sysprof.dev/schemas/profile-v1.schema.json"
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(url)
	if err != nil {
		t.Fatalf("profile.schema.json is not a valid JSON Schema: %v", err)
	}
	return s
}

func TestSchemaIsValidJSONSchemaForLibraries(t *testing.T) {
	librarySchema(t)
}

// libraryIssues lists the leaf failures of a full validator as "location kind [keys]".
func libraryIssues(s *jsonschema.Schema, v any) []string {
	err := s.Validate(v)
	if err == nil {
		return nil
	}
	verr, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return []string{"error " + err.Error()}
	}
	var out []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		loc := "/" + strings.Join(e.InstanceLocation, "/")
		switch k := e.ErrorKind.(type) {
		case *kind.AdditionalProperties:
			p := slices.Clone(k.Properties)
			slices.Sort(p)
			out = append(out, fmt.Sprintf("%s additionalProperties %v", loc, p))
		case *kind.Required:
			m := slices.Clone(k.Missing)
			slices.Sort(m)
			out = append(out, fmt.Sprintf("%s required %v", loc, m))
		case *kind.Type:
			out = append(out, fmt.Sprintf("%s type %v %v", loc, k.Got, k.Want))
		case *kind.Const:
			out = append(out, fmt.Sprintf("%s const", loc))
		case *kind.Enum:
			out = append(out, fmt.Sprintf("%s enum", loc))
		case *kind.Pattern:
			out = append(out, fmt.Sprintf("%s pattern %s", loc, k.Want))
		case *kind.Minimum:
			out = append(out, fmt.Sprintf("%s minimum", loc))
		case *kind.Maximum:
			out = append(out, fmt.Sprintf("%s maximum", loc))
		default:
			out = append(out, fmt.Sprintf("%s %T", loc, k))
		}
	}
	walk(verr)
	slices.Sort(out)
	return out
}

func ourIssues(t *testing.T, v any) []string {
	sch, err := compiledSchema()
	if err != nil {
		t.Fatal(err)
	}
	var issues []schemaIssue
	sch.validate(v, nil, &issues)
	var out []string
	for _, e := range issues {
		loc := "/" + strings.Join(e.loc, "/")
		switch e.kind {
		case "additionalProperties", "required":
			k := slices.Clone(e.keys)
			slices.Sort(k)
			out = append(out, fmt.Sprintf("%s %s %v", loc, e.kind, k))
		case "type":
			out = append(out, fmt.Sprintf("%s type %v %v", loc, e.got, e.want))
		case "pattern":
			out = append(out, fmt.Sprintf("%s pattern %s", loc, e.want))
		default:
			out = append(out, loc+" "+e.kind)
		}
	}
	slices.Sort(out)
	return out
}

// variants returns v with one change at every place not yet seen (by its path with indexes
// left out: the items of an array share a schema): each value replaced by values of other
// types and by out-of-range ones, each mapping with an extra key and with each key removed.
func variants(v any, seen map[string]bool, emit func(any)) {
	repl := []any{nil, true, 7, -1, 1.5, 3000000000, "x", "/abs", "EPERM", "tcp", "x86_64", []any{}, []any{"x"}, map[string]any{}, map[string]any{"zz": 1}}
	var walk func(path string, cur any, set func(any))
	walk = func(path string, cur any, set func(any)) {
		if seen[path] {
			return
		}
		seen[path] = true
		for _, r := range repl {
			set(r)
			emit(v)
		}
		set(cur)
		switch x := cur.(type) {
		case map[string]any:
			x["zzUnknown"] = 1
			emit(v)
			delete(x, "zzUnknown")
			for _, k := range sortedMapKeys(x) {
				old := x[k]
				delete(x, k)
				emit(v)
				x[k] = old
				walk(path+"."+k, old, func(n any) { x[k] = n })
			}
		case []any:
			for i := range x {
				walk(path+"[]", x[i], func(n any) { x[i] = n })
			}
		}
	}
	walk("", v, func(any) {})
}

func TestSchemaCheckMatchesLibrary(t *testing.T) {
	lib := librarySchema(t)
	var files []string
	for _, pat := range []string{"../profiles/*.yaml", "../testdata/*/*.yaml", "../testdata/*/*/*.yaml", "../.ci/profiles/*.yaml"} {
		m, _ := filepath.Glob(pat)
		files = append(files, m...)
	}
	n := 0
	seen := map[string]bool{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var root yaml.Node
		if yaml.Unmarshal(data, &root) != nil || len(root.Content) != 1 {
			continue
		}
		tr := &tree{file: f, lines: map[string]int{}, keyLines: map[string]int{}}
		v, lerr := tr.value(root.Content[0], "")
		if lerr != nil {
			continue
		}
		if _, ok := v.(map[string]any); !ok {
			continue
		}
		check := func(v any) {
			n++
			want, got := libraryIssues(lib, v), ourIssues(t, v)
			if !slices.Equal(want, got) {
				t.Errorf("%s: variant %d:\nlibrary: %q\nloader:  %q", f, n, want, got)
			}
		}
		check(v)
		variants(v, seen, check)
		if t.Failed() {
			return
		}
	}
	if n < 500 {
		t.Fatalf("only %d documents compared: the corpus moved?", n)
	}
	t.Logf("%d documents compared", n)
}
