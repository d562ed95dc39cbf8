package report

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Printable returns s as it may be shown to a human: every byte or character that could move
// the cursor, erase or hide text, or reorder what a terminal, a browser or an editor shows is
// written as a Go escape (\x1b, \r, \n, \u202e, \x80 for a byte that is not UTF-8). That is C0
// and C1 controls and DEL (unicode.IsControl), format characters (Cf: the bidi embeddings,
// overrides and isolates U+202A–U+202E and U+2066–U+2069, the marks U+200E/U+200F and U+061C,
// zero-width characters) and the line and paragraph separators. Everything else is kept, so a
// plain name prints as itself. A backslash is kept too ("\*" in a suggestion stays a glob
// escape) unless what follows it would read as one of these escapes: then it is doubled, so
// that a name holding the four characters `\x1b` prints as `\\x1b`, never as ESC's `\x1b`
// (the output reads back to exactly one name). Every printer of names a command chose
// (paths, executables, hosts, suggestions) passes them through here: a file named
// "\e[2K\e[1Asysprof: 0 operation(s) denied" must not rewrite the lines around it.
func Printable(s string) string {
	i := 0
	for i < len(s) && s[i] >= 0x20 && s[i] < 0x7f && s[i] != '\\' {
		i++
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteString(`\x`)
			b.WriteString(strconv.FormatUint(uint64(s[i])|0x100, 16)[1:])
		case r == '\\':
			if readsAsEscape(s[i+1:]) {
				b.WriteString(`\\`)
			} else {
				b.WriteByte('\\')
			}
		case mustEscape(r):
			q := strconv.QuoteRuneToASCII(r) // '\x1b', '\u202e'
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// mustEscape reports whether Printable writes r as an escape.
func mustEscape(r rune) bool {
	return unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp)
}

// readsAsEscape reports whether a backslash followed by rest would read as an escape in
// Printable's output: rest starts with what Printable escapes, a backslash, or a letter of
// the escapes it writes (\xHH, \uHHHH, \UHHHHHHHH, \a \b \f \n \r \t \v).
func readsAsEscape(rest string) bool {
	if rest == "" {
		return false
	}
	r, n := utf8.DecodeRuneInString(rest)
	return (r == utf8.RuneError && n == 1) || mustEscape(r) || strings.ContainsRune(`\xuUabfnrtv`, r)
}

// PrintableAll is Printable of each of ss, in a new slice.
func PrintableAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = Printable(s)
	}
	return out
}
