package report

import (
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestPrintable(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"/home/u/src/main.go", "/home/u/src/main.go"},
		{`a\b*c`, `a\\b*c`}, // \b alone would read as backspace
		{`a\*c\[d\]`, `a\*c\[d\]`},
		{"héllo wörld", "héllo wörld"},
		{"\x1b[2K\x1b[1Asysprof: 0 operation(s) denied\x1b[8m", `\x1b[2K\x1b[1Asysprof: 0 operation(s) denied\x1b[8m`},
		{"a\rb\nc\td\x7f", `a\rb\nc\td\x7f`},
		{"c1\u0085\u009b", `c1\u0085\u009b`},
		{"x\u202eexe.txt", `x\u202eexe.txt`},
		{"\u202a\u202b\u202c\u202d\u2066\u2067\u2068\u2069\u200e\u200f\u061c", `\u202a\u202b\u202c\u202d\u2066\u2067\u2068\u2069\u200e\u200f\u061c`},
		{"zw\u200bj\ufeff\u2028\u2029", `zw\u200bj\ufeff\u2028\u2029`},
		{"bad\xff\xc3", `bad\xff\xc3`},
		// A backslash that could read as an escape is doubled; a glob escape is not.
		{`$WORKDIR/.git/hooks/\*`, `$WORKDIR/.git/hooks/\*`},
		{`lit\x1b`, `lit\\x1b`},
		{"esc\x1b", `esc\x1b`},
		{"\\\x1b", `\\\x1b`},
		{`a\\b`, `a\\\\b`},
		{`trail\`, `trail\`},
		{`C:\Users\n`, `C:\\Users\\n`},
	} {
		if got := Printable(tc.in); got != tc.want {
			t.Errorf("Printable(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	// Nothing Printable returns holds a character it escapes.
	for r := rune(0); r < 0x30000; r++ {
		if got := Printable(string(r)); strings.ContainsFunc(got, mustEscape) {
			t.Fatalf("Printable(%U) = %q keeps a control or format character", r, got)
		}
	}
}

// TestPrintableIsUnambiguous: two names never print alike (a literal `\x1b` and ESC, a
// backslash before an escaped character), because the output reads back to its name.
func TestPrintableIsUnambiguous(t *testing.T) {
	if Printable(`\x1b`) == Printable("\x1b") {
		t.Fatalf("a name holding `\\x1b` prints as one holding ESC: %q", Printable(`\x1b`))
	}
	for _, s := range []string{`\x1b`, "\x1b", "\\\x1b", `\\x1b`, "\\\xff", `\`, `\\`, "\\\u202e", `\u202e`, `\U0001f600`, `\q\*`, "\\\n", `\n`} {
		if got := unprint(t, Printable(s)); got != s {
			t.Errorf("Printable(%q) = %q reads back as %q", s, Printable(s), got)
		}
	}
}

func FuzzPrintable(f *testing.F) {
	for _, s := range []string{`\x1b`, "\x1b", "\\\x1b", "a\\\xffb", forged, "x\u202e\\"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p := Printable(s)
		if strings.ContainsFunc(p, mustEscape) || !utf8.ValidString(p) {
			t.Fatalf("Printable(%q) = %q keeps a control, format or invalid character", s, p)
		}
		if got := unprint(t, p); got != s {
			t.Fatalf("Printable(%q) = %q reads back as %q", s, p, got)
		}
	})
}

// unprint reads Printable's output back: \\ is a backslash, \xHH a byte, \u and \U a
// character, \a…\v a control; any other backslash is itself.
func unprint(t *testing.T, p string) string {
	t.Helper()
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] != '\\' || i+1 == len(p) {
			b.WriteByte(p[i])
			continue
		}
		c := p[i+1]
		switch {
		case c == '\\':
			b.WriteByte('\\')
			i++
		case c == 'x' || c == 'u' || c == 'U':
			n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[c]
			if i+2+n > len(p) {
				t.Fatalf("%q: a short \\%c escape", p, c)
			}
			v, err := strconv.ParseUint(p[i+2:i+2+n], 16, 32)
			if err != nil {
				t.Fatalf("%q: %v", p, err)
			}
			if c == 'x' {
				b.WriteByte(byte(v))
			} else {
				b.WriteRune(rune(v))
			}
			i += 1 + n
		case strings.IndexByte("abfnrtv", c) >= 0:
			b.WriteByte("\a\b\f\n\r\t\v"[strings.IndexByte("abfnrtv", c)])
			i++
		default:
			b.WriteByte('\\')
		}
	}
	return b.String()
}

// forged is a file name that, printed raw, erases the line above and claims a clean run.
const forged = "\x1b[2K\x1b[1Asysprof: 0 operation(s) denied\x1b[8m"

func TestWriteTableEscapesNames(t *testing.T) {
	r := New([]string{"tool\x1b[8m"}, "p.yaml", false)
	r.Add(Denial{Kind: KindFile, What: "/w/.git/hooks/" + forged + " write", Path: "/w/.git/hooks/" + forged,
		Exe: "/w/\u202etxt.exe", Parents: []string{"/bin/sh\r"}, Suggest: "filesystem.write: + $WORKDIR/.git/hooks/" + forged,
		First: time.Unix(1, 0), Risk: RiskCritical})
	r.SetLayer(Layer{Name: "landlock", State: LayerDegraded, Detail: "no \x1b[31m"})
	r.Unobservable = []string{"x\u2066"}
	var b strings.Builder
	if err := r.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.ContainsFunc(strings.ReplaceAll(out, "\n", ""), mustEscape) {
		t.Errorf("the denial table holds raw control or bidi characters:\n%q", out)
	}
	for _, want := range []string{`\x1b[2K\x1b[1Asysprof: 0 operation(s) denied\x1b[8m`, `\u202etxt.exe`, `/bin/sh\r`, `no \x1b[31m`, `x\u2066`} {
		if !strings.Contains(out, want) {
			t.Errorf("the denial table lacks %s:\n%s", want, out)
		}
	}
}
