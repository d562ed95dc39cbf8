package policy

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// header is the first line of every profile sysprof writes.
const header = "# sysprof profile. Review changes with `sysprof diff OLD NEW`; format: `go doc github.com/sysprof/sysprof/policy`.\n"

// Marshal returns the YAML file for p: normalized (sorted, no duplicates), in a fixed field
// order, one line per allowance so that a change to the policy is a change to a line. The
// same policy always gives the same bytes. p itself is not modified.
//
// Marshal writes the YAML itself instead of going through a generic encoder: generic encoders
// fold long flow lines at 80 columns, which would make diffs of profiles noisy.
func Marshal(p *Profile) ([]byte, error) {
	if p == nil {
		return nil, fmt.Errorf("marshal profile: nil profile")
	}
	q := Clone(p)
	Normalize(q)
	if q.APIVersion == "" {
		q.APIVersion = APIVersion
	}
	if q.Kind == "" {
		q.Kind = Kind
	}
	e := &emitter{}
	e.raw(header)
	e.kv(0, "apiVersion", q.APIVersion)
	e.kv(0, "kind", q.Kind)
	e.metadata(q.Metadata)
	e.syscalls(q.Syscalls)
	e.filesystem(q.Filesystem)
	e.network(q.Network)
	if len(q.Env.Pass) > 0 {
		e.section(0, "env")
		e.key(1, "pass")
		e.flowSeq(q.Env.Pass)
	}
	e.credentials(q.Credentials)
	e.binaries(q.Binaries)
	if l := q.Limits; l != (Limits{}) {
		e.section(0, "limits")
		for _, f := range l.fields() {
			if f.value != 0 {
				e.kvRaw(1, strings.TrimPrefix(f.section, "limits."), strconv.Itoa(f.value))
			}
		}
	}
	if q.HostRoot {
		e.kvRaw(0, "hostRoot", "true")
	}
	if e.err != nil {
		return nil, fmt.Errorf("marshal profile: %w", e.err)
	}
	return e.buf.Bytes(), nil
}

func (e *emitter) metadata(m Metadata) {
	e.section(0, "metadata")
	e.kv(1, "name", m.Name)
	e.key(1, "command")
	e.flowSeq(m.Command)
	e.kvOpt(1, "sysprofVersion", m.SysprofVersion)
	e.kvOpt(1, "kernel", m.Kernel)
	if len(m.LearnedOn) > 0 {
		e.key(1, "learnedOn")
		e.flowSeq(m.LearnedOn)
	}
	e.kvOpt(1, "created", m.Created)
	e.kvOpt(1, "updated", m.Updated)
	e.kvRaw(1, "runs", strconv.Itoa(m.Runs))
	e.kvRaw(1, "incomplete", strconv.FormatBool(m.Incomplete))
	if len(m.IncompleteReasons) > 0 {
		e.key(1, "incompleteReasons")
		e.flowSeq(m.IncompleteReasons)
	}
	if m.Exact {
		e.kvRaw(1, "exact", "true")
	}
}

func (e *emitter) syscalls(s Syscalls) {
	e.section(0, "syscalls")
	e.key(1, "architectures")
	e.flowSeq(s.Architectures)
	e.key(1, "allow")
	if len(s.Allow) == 0 {
		e.raw(" []\n")
	} else {
		e.raw("\n")
		for _, sc := range s.Allow {
			f := []field{{"name", sc.Name, false}}
			if sc.Base {
				f = append(f, field{"base", "true", true})
			}
			if sc.Family != "" {
				f = append(f, field{"family", sc.Family, false})
			}
			e.flowItem(2, append(f, provFields(sc.Provenance)...))
		}
	}
	if len(s.Args) > 0 {
		e.section(1, "args")
		for _, a := range s.Args {
			e.argRule(a)
		}
	}
}

// argRule is one entry of syscalls.args: a block, not a flow item (its lists can be long).
func (e *emitter) argRule(a ArgRule) {
	e.indent(2)
	e.raw("- ")
	e.raw("syscall: " + scalar(a.Syscall) + "\n")
	e.kvRaw(3, "arg", strconv.Itoa(a.Arg))
	e.kvOpt(3, "name", a.Name)
	e.kvOpt(3, "mask", a.Mask)
	if len(a.Values) > 0 {
		e.key(3, "values")
		e.flowSeq(a.Values)
	}
	if len(a.Flags) > 0 {
		e.key(3, "flags")
		e.flowSeq(a.Flags)
	}
	if len(a.Deny) > 0 {
		e.key(3, "deny")
		e.flowSeq(a.Deny)
	}
	e.kvOpt(3, "errno", a.Errno)
	e.kvOpt(3, "by", a.By)
	if a.Seen != 0 {
		e.kvRaw(3, "seen", strconv.Itoa(a.Seen))
	}
}

func (e *emitter) filesystem(fs Filesystem) {
	e.section(0, "filesystem")
	for _, l := range []struct {
		name  string
		rules []PathRule
	}{{"read", fs.Read}, {"write", fs.Write}, {"exec", fs.Exec}, {"list", fs.List}, {"hidden", fs.Hidden}} {
		if len(l.rules) == 0 {
			continue
		}
		e.section(1, l.name)
		for _, r := range l.rules {
			f := append([]field{{"path", r.Path, false}}, provFields(r.Provenance)...)
			if r.Note != "" {
				f = append(f, field{"note", r.Note, false})
			}
			if r.Pending {
				f = append(f, field{"pending", "true", true})
			}
			e.flowItem(2, f)
		}
	}
	e.kvRaw(1, "privateTmp", strconv.FormatBool(fs.PrivateTmp))
}

func (e *emitter) network(n Network) {
	e.key(0, "network")
	if len(n.Connect)+len(n.Send)+len(n.Bind)+len(n.Resolve) == 0 {
		e.raw(" {}\n")
		return
	}
	e.raw("\n")
	for _, l := range []struct {
		name string
		eps  []Endpoint
	}{{"connect", n.Connect}, {"send", n.Send}, {"bind", n.Bind}, {"resolve", n.Resolve}} {
		if len(l.eps) == 0 {
			continue
		}
		e.section(1, l.name)
		for _, ep := range l.eps {
			f := []field{{"endpoint", ep.Endpoint, false}}
			if ep.Proto != "" {
				f = append(f, field{"proto", ep.Proto, false})
			}
			e.flowItem(2, append(f, provFields(ep.Provenance)...))
		}
	}
}

func (e *emitter) binaries(bins []Binary) {
	if len(bins) == 0 {
		return
	}
	e.section(0, "binaries")
	for _, b := range bins {
		f := []field{{"path", b.Path, false}}
		if b.SHA256 != "" {
			f = append(f, field{"sha256", strconv.Quote(b.SHA256), true}) // always quoted: hex may look like a number
		}
		e.flowItem(1, append(f, provFields(b.Provenance)...))
	}
}

type field struct {
	key, value string
	raw        bool // already a YAML scalar (number, bool)
}

func provFields(p Provenance) []field {
	var f []field
	if p.By != "" {
		f = append(f, field{"by", p.By, false})
	}
	if p.Seen != 0 {
		f = append(f, field{"seen", strconv.Itoa(p.Seen), true})
	}
	return f
}

type emitter struct {
	buf bytes.Buffer
	err error
}

func (e *emitter) raw(s string) { e.buf.WriteString(s) }

func (e *emitter) indent(level int) { e.buf.WriteString(strings.Repeat("  ", level)) }

// key writes "key:" without a value or newline.
func (e *emitter) key(level int, k string) {
	e.indent(level)
	e.raw(k + ":")
}

// section writes "key:" and a newline.
func (e *emitter) section(level int, k string) {
	e.key(level, k)
	e.raw("\n")
}

func (e *emitter) kv(level int, k, v string) {
	e.check(v)
	e.indent(level)
	e.raw(k + ": " + scalar(v) + "\n")
}

func (e *emitter) kvOpt(level int, k, v string) {
	if v != "" {
		e.kv(level, k, v)
	}
}

func (e *emitter) kvRaw(level int, k, v string) {
	e.indent(level)
	e.raw(k + ": " + v + "\n")
}

func (e *emitter) flowSeq(items []string) {
	e.raw(" [")
	for i, s := range items {
		e.check(s)
		if i > 0 {
			e.raw(", ")
		}
		e.raw(scalar(s))
	}
	e.raw("]\n")
}

func (e *emitter) flowItem(level int, fields []field) {
	e.indent(level)
	e.raw("- {")
	for i, f := range fields {
		if i > 0 {
			e.raw(", ")
		}
		v := f.value
		if !f.raw {
			e.check(v)
			v = scalar(v)
		}
		e.raw(f.key + ": " + v)
	}
	e.raw("}\n")
}

func (e *emitter) check(s string) {
	if e.err == nil && !utf8.ValidString(s) {
		e.err = fmt.Errorf("%q is not valid UTF-8", s)
	}
}

// plainSafe matches strings that YAML reads back as the same string when written unquoted, in
// block and flow context alike. Anything else is double-quoted.
var plainSafe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[A-Za-z_$/][A-Za-z0-9_$/.+=~*%@-]*$`)
})

func scalar(s string) string {
	if plainSafe().MatchString(s) {
		switch strings.ToLower(s) {
		case "true", "false", "yes", "no", "on", "off", "y", "n", "null":
		default:
			return s
		}
	}
	return strconv.Quote(s) // Go's escapes are a subset of YAML's double-quoted escapes
}
