package policy

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// The loader checks profile.schema.json with this small interpreter of the keywords the
// schema uses (type, $ref into $defs, properties, additionalProperties: false, required, items,
// pattern, const, enum, minimum, maximum), with the semantics of a draft 2020-12 validator:
// type, const and enum stop at the first failure; the others all report. A full JSON Schema
// library costs every sysprof process (the enforce init stage included) several milliseconds
// of package initialisation (compiling its meta-schemas) and each load another few compiling
// the schema; the tests check this interpreter against such a library (schema_test.go), and
// newSchemaNode refuses a keyword it does not know, so the schema cannot grow past it.

// schemaNode is one compiled (sub)schema.
type schemaNode struct {
	def        string // the $defs entry this node is in ("" at the top), for messages
	types      []string
	ref        string
	refNode    *schemaNode
	properties map[string]*schemaNode
	closed     bool // additionalProperties: false
	required   []string
	items      *schemaNode
	pattern    *regexp.Regexp
	patternSrc string
	hasConst   bool
	constVal   any
	enum       []any
	minimum    *float64
	maximum    *float64
}

// schemaIssue is one failed keyword, at an instance location (JSON pointer tokens).
type schemaIssue struct {
	loc  []string
	def  string
	kind string // type, const, enum, pattern, minimum, maximum, required, additionalProperties
	got  any
	want any      // []string for type, []any for enum, float64 for minimum/maximum, string for pattern
	keys []string // missing or unknown properties
}

// typeOrder is the order a draft 2020-12 validator lists the wanted types in.
var typeOrder = []string{"null", "boolean", "number", "integer", "string", "array", "object"}

var compiledSchema = sync.OnceValues(func() (*schemaNode, error) {
	var doc map[string]any
	if err := json.Unmarshal(schemaJSON, &doc); err != nil {
		return nil, fmt.Errorf("BUG: embedded profile schema: %w", err)
	}
	defs := map[string]*schemaNode{}
	rawDefs, _ := doc["$defs"].(map[string]any)
	for name := range rawDefs {
		defs[name] = &schemaNode{}
	}
	for name, raw := range rawDefs {
		m, ok := raw.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("BUG: embedded profile schema: $defs/%s is not an object", name)
		}
		if err := fillSchemaNode(defs[name], m, name, defs); err != nil {
			return nil, fmt.Errorf("BUG: embedded profile schema: $defs/%s: %w", name, err)
		}
	}
	root := &schemaNode{}
	if err := fillSchemaNode(root, doc, "", defs); err != nil {
		return nil, fmt.Errorf("BUG: embedded profile schema: %w", err)
	}
	return root, nil
})

func newSchemaNode(m map[string]any, def string, defs map[string]*schemaNode) (*schemaNode, error) {
	n := &schemaNode{}
	return n, fillSchemaNode(n, m, def, defs)
}

func fillSchemaNode(n *schemaNode, m map[string]any, def string, defs map[string]*schemaNode) error {
	n.def = def
	for k, v := range m {
		switch k {
		case "$schema", "$id", "title", "description", "$defs":
		case "type":
			switch t := v.(type) {
			case string:
				n.types = []string{t}
			case []any:
				for _, x := range t {
					s, _ := x.(string)
					n.types = append(n.types, s)
				}
			}
			slices.SortFunc(n.types, func(a, b string) int {
				return slices.Index(typeOrder, a) - slices.Index(typeOrder, b)
			})
		case "$ref":
			s, _ := v.(string)
			name, ok := strings.CutPrefix(s, "#/$defs/")
			if !ok || defs[name] == nil {
				return fmt.Errorf("unsupported $ref %q", s)
			}
			n.ref, n.refNode = name, defs[name]
		case "properties":
			props, _ := v.(map[string]any)
			n.properties = map[string]*schemaNode{}
			for p, raw := range props {
				pm, ok := raw.(map[string]any)
				if !ok {
					return fmt.Errorf("properties/%s is not an object", p)
				}
				c, err := newSchemaNode(pm, def, defs)
				if err != nil {
					return fmt.Errorf("properties/%s: %w", p, err)
				}
				n.properties[p] = c
			}
		case "additionalProperties":
			if b, ok := v.(bool); !ok || b {
				return fmt.Errorf("only additionalProperties: false is supported")
			}
			n.closed = true
		case "required":
			for _, x := range v.([]any) {
				s, _ := x.(string)
				n.required = append(n.required, s)
			}
		case "items":
			im, ok := v.(map[string]any)
			if !ok {
				return fmt.Errorf("items is not an object")
			}
			c, err := newSchemaNode(im, def, defs)
			if err != nil {
				return fmt.Errorf("items: %w", err)
			}
			n.items = c
		case "pattern":
			s, _ := v.(string)
			re, err := regexp.Compile(s)
			if err != nil {
				return fmt.Errorf("pattern: %w", err)
			}
			n.pattern, n.patternSrc = re, s
		case "const":
			n.hasConst, n.constVal = true, v
		case "enum":
			n.enum, _ = v.([]any)
		case "minimum", "maximum":
			f, ok := v.(float64)
			if !ok {
				return fmt.Errorf("%s is not a number", k)
			}
			if k == "minimum" {
				n.minimum = &f
			} else {
				n.maximum = &f
			}
		default:
			return fmt.Errorf("keyword %q is not supported by the loader's schema check (policy/schemacheck.go)", k)
		}
	}
	return nil
}

// jsonTypeOf names v's JSON type as a validator does (every number is a "number").
func jsonTypeOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case int, int64, uint64, float64:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "invalid"
}

func asFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case uint64:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

func jsonEqual(a, b any) bool {
	fa, oka := asFloat(a)
	fb, okb := asFloat(b)
	if oka || okb {
		return oka && okb && fa == fb
	}
	switch x := a.(type) {
	case nil, bool, string:
		return a == b
	case []any:
		y, ok := b.([]any)
		return ok && slices.EqualFunc(x, y, jsonEqual)
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !jsonEqual(v, w) {
				return false
			}
		}
		return true
	}
	return false
}

// validate appends the failures of v against n at loc.
func (n *schemaNode) validate(v any, loc []string, out *[]schemaIssue) {
	issue := func(kind string, got, want any, keys []string) {
		*out = append(*out, schemaIssue{loc: slices.Clone(loc), def: n.def, kind: kind, got: got, want: want, keys: keys})
	}
	t := jsonTypeOf(v)
	if len(n.types) > 0 {
		ok := slices.Contains(n.types, t)
		if !ok && t == "number" && slices.Contains(n.types, "integer") {
			f, _ := asFloat(v)
			ok = f == math.Trunc(f)
		}
		if !ok {
			issue("type", t, n.types, nil)
			return
		}
	}
	if n.hasConst && !jsonEqual(v, n.constVal) {
		issue("const", v, n.constVal, nil)
		return
	}
	if n.enum != nil && !slices.ContainsFunc(n.enum, func(w any) bool { return jsonEqual(v, w) }) {
		issue("enum", v, n.enum, nil)
		return
	}
	if f, ok := asFloat(v); ok {
		if n.minimum != nil && f < *n.minimum {
			issue("minimum", v, *n.minimum, nil)
		}
		if n.maximum != nil && f > *n.maximum {
			issue("maximum", v, *n.maximum, nil)
		}
	}
	if s, ok := v.(string); ok && n.pattern != nil && !n.pattern.MatchString(s) {
		issue("pattern", s, n.patternSrc, nil)
	}
	if obj, ok := v.(map[string]any); ok {
		var missing []string
		for _, r := range n.required {
			if _, ok := obj[r]; !ok {
				missing = append(missing, r)
			}
		}
		if len(missing) > 0 {
			issue("required", nil, nil, missing)
		}
		var unknown []string
		for _, k := range sortedMapKeys(obj) {
			c, ok := n.properties[k]
			if !ok {
				if n.closed {
					unknown = append(unknown, k)
				}
				continue
			}
			c.validate(obj[k], append(loc, k), out)
		}
		if len(unknown) > 0 {
			issue("additionalProperties", nil, nil, unknown)
		}
	}
	if arr, ok := v.([]any); ok && n.items != nil {
		for i, x := range arr {
			n.items.validate(x, append(loc, strconv.Itoa(i)), out)
		}
	}
	if n.refNode != nil {
		n.refNode.validate(v, loc, out)
	}
}

func sortedMapKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// displayValue writes a value the way the schema library's messages did (for const).
func displayValue(v any) string {
	switch x := v.(type) {
	case string:
		return strconv.Quote(x)
	case nil:
		return "null"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
