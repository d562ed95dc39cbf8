package policy

import (
	"fmt"
	"strings"
)

// ArgSpec is an argument rule with its constants read: the one reading of ArgRule that the
// enforcer compiles, export writes and the denial explanations print. ParseArgRule makes one
// from the profile's text; Rule and String print it back.
type ArgSpec struct {
	Syscall string
	Arg     int    // 0..5
	Name    string // what the argument is (domain, flags), as the rule says
	// Mask is applied before comparing with Values and Deny; all ones when the rule has none.
	Mask uint64
	// Values: the masked argument must equal one of these; nil when values are not restricted.
	Values []uint64
	// Flags are the bits the argument may have set, when HasFlags.
	Flags    uint64
	HasFlags bool
	// Deny: the masked argument must equal none of these (as written, not masked).
	Deny []uint64
	// Errno answers a refused call; 0 when the rule names none (the enforcer's default).
	Errno uint16
}

// ParseArgRule reads the constants of r. Errors name the rule and the field
// ("syscalls.args: socket arg 0: values: ...").
func ParseArgRule(r ArgRule) (ArgSpec, error) {
	s := ArgSpec{Syscall: r.Syscall, Arg: r.Arg, Name: r.Name, Mask: ^uint64(0)}
	where := fmt.Sprintf("%s: %s arg %d", SectionArgs, r.Syscall, r.Arg)
	if r.Arg < 0 || r.Arg > 5 {
		return s, fmt.Errorf("%s: argument index must be 0..5", where)
	}
	if r.Mask != "" {
		m, err := ParseValue(r.Mask)
		if err != nil {
			return s, fmt.Errorf("%s: mask: %w", where, err)
		}
		s.Mask = m
	}
	list := func(field string, vals []string) ([]uint64, error) {
		if len(vals) == 0 {
			return nil, nil
		}
		out := make([]uint64, 0, len(vals))
		for _, v := range vals {
			x, err := ParseValue(v)
			if err != nil {
				return nil, fmt.Errorf("%s: %s: %w", where, field, err)
			}
			out = append(out, x)
		}
		return out, nil
	}
	var err error
	if s.Values, err = list("values", r.Values); err != nil {
		return s, err
	}
	flags, err := list("flags", r.Flags)
	if err != nil {
		return s, err
	}
	for _, f := range flags {
		s.Flags |= f
	}
	s.HasFlags = flags != nil
	if s.Deny, err = list("deny", r.Deny); err != nil {
		return s, err
	}
	if r.Errno != "" {
		e, err := ParseErrno(r.Errno)
		if err != nil {
			return s, fmt.Errorf("%s: errno: %w", where, err)
		}
		s.Errno = e
	}
	return s, nil
}

// ParseErrno reads an errno as a rule writes it: a name of the errno table (EPERM, ENOSYS) or
// a number 1..4095.
func ParseErrno(s string) (uint16, error) {
	v, err := ParseValue(s)
	if err == nil && SymbolKind(s) != "" && SymbolKind(s) != KindErrno {
		err = fmt.Errorf("%s is a %s constant, not an errno", s, SymbolKind(s))
	}
	if err == nil && (v == 0 || v > 4095) {
		err = fmt.Errorf("%s is not an errno (1..4095)", s)
	}
	if err != nil {
		return 0, fmt.Errorf("unknown errno %q: %w (EPERM, EACCES, ENOSYS, EAFNOSUPPORT, ...)", s, err)
	}
	return uint16(v), nil
}

// Restricts reports whether the rule limits the argument's values at all (Values, Flags or
// Deny). A rule that does not either answers every call with Errno (ErrnoOnly) or, without an
// errno, restricts nothing (a merge of a value list and a flag list leaves such a rule).
func (s ArgSpec) Restricts() bool { return s.Values != nil || s.HasFlags || len(s.Deny) > 0 }

// ErrnoOnly reports a rule that answers every call of its syscall with Errno without running
// it (clone3 answered ENOSYS).
func (s ArgSpec) ErrnoOnly() bool { return s.Errno != 0 && !s.Restricts() }

// Allows reports whether the rule lets argument value v through, as ArgRule defines it (the
// argument as the kernel passes it; callers truncate 32-bit arguments). An ErrnoOnly rule
// allows nothing.
func (s ArgSpec) Allows(v uint64) bool {
	if s.ErrnoOnly() {
		return false
	}
	m := v & s.Mask
	for _, d := range s.Deny {
		if m == d&s.Mask {
			return false
		}
	}
	if s.HasFlags && v&^s.Flags != 0 {
		return false
	}
	if s.Values == nil {
		return true
	}
	for _, x := range s.Values {
		if m == x {
			return true
		}
	}
	return false
}

// Rule prints the spec back as a profile rule, every value in its canonical spelling
// (FormatArg): what a profile written from it would say.
func (s ArgSpec) Rule() ArgRule {
	r := ArgRule{Syscall: s.Syscall, Arg: s.Arg, Name: s.Name}
	if s.Mask != ^uint64(0) {
		r.Mask = hexValue(s.Mask)
	}
	for _, v := range s.Values {
		r.Values = append(r.Values, FormatArg(s.Syscall, s.Arg, v))
	}
	if s.HasFlags {
		r.Flags = []string{FormatArg(s.Syscall, s.Arg, s.Flags)}
	}
	for _, v := range s.Deny {
		r.Deny = append(r.Deny, FormatArg(s.Syscall, s.Arg, v))
	}
	if s.Errno != 0 {
		r.Errno = Symbol(KindErrno, uint64(s.Errno))
	}
	return r
}

// String is the rule in one line: "socket arg 1 (type) & 0xf in {SOCK_STREAM, SOCK_DGRAM}
// else EAFNOSUPPORT", "ioctl arg 1 never {TIOCSTI, TIOCLINUX}", "clone3 arg 0 always ENOSYS".
func (s ArgSpec) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s arg %d", s.Syscall, s.Arg)
	if s.Name != "" {
		fmt.Fprintf(&b, " (%s)", s.Name)
	}
	if s.ErrnoOnly() {
		fmt.Fprintf(&b, " always %s", Symbol(KindErrno, uint64(s.Errno)))
		return b.String()
	}
	if s.Mask != ^uint64(0) {
		fmt.Fprintf(&b, " & %s", hexValue(s.Mask))
	}
	r := s.Rule()
	if s.Values != nil {
		fmt.Fprintf(&b, " in {%s}", strings.Join(r.Values, ", "))
	}
	if s.HasFlags {
		fmt.Fprintf(&b, " may set only %s", r.Flags[0])
	}
	if len(s.Deny) > 0 {
		fmt.Fprintf(&b, " never {%s}", strings.Join(r.Deny, ", "))
	}
	if !s.Restricts() {
		b.WriteString(" any value")
	}
	if s.Errno != 0 {
		fmt.Fprintf(&b, " else %s", r.Errno)
	}
	return b.String()
}

// FormatArg writes value v of syscall's argument arg the way a profile rule would: with the
// symbols of the argument's kind (ArgKind; flag kinds decomposed), clone's exit signal by its
// name (CLONE_VM|SIGCHLD), socket's default protocol as 0, anything else in hex. ParseValue
// reads every result back to v.
func FormatArg(syscall string, arg int, v uint64) string {
	kind := ArgKind(syscall, arg)
	switch {
	case syscall == "clone" && arg == 0:
		// clone(2)'s low byte is the exit signal, not flags.
		var parts []string
		if f := v &^ 0xff; f != 0 {
			parts = append(parts, Symbol(KindClone, f))
		}
		if sig := v & 0xff; sig != 0 {
			parts = append(parts, Symbol(KindSignal, sig))
		}
		if len(parts) == 0 {
			return "0"
		}
		return strings.Join(parts, "|")
	case kind == KindProtocol && v == 0:
		return "0" // the type's default protocol, not IP as such
	case kind == "":
		return hexValue(v)
	}
	if k := kindByName(kind); k != nil && k.flags && v == 0 && kind != KindPersonality && kind != KindProt {
		return "0"
	}
	return Symbol(kind, v)
}
