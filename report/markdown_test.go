package report

import (
	"strings"
	"testing"
)

// hostileNames are names a command may choose that would forge or hide markdown around them.
var hostileNames = []string{
	"plain/path.go",
	"a`b``c",
	"`edge`",
	" spaced ",
	"<!-- hide the rest",
	"a|b||c",
	"line\nbreak\r\n",
	"x\u202eexe.txt\u2066",
	`lit\x1b`,
	"esc\x1b[8m",
	`\`,
	"[approved](http://x) **ok** _em_ ~~s~~ $\\color{red}x$ &lt; <b>#!",
	"bad\xff",
}

func TestMarkdownText(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"$HOME/.ssh", `\$HOME/.ssh`},
		{"a`b", "a\\`b"},
		{"<!-- x -->", `\<\!-- x --\>`},
		{"a|b", `a\|b`},
		{"a\nb", `a\\nb`},
		{"x\u202ey", `x\\u202ey`},
		{`lit\x1b`, `lit\\\\x1b`},
		{"esc\x1b", `esc\\x1b`},
	} {
		if got := MarkdownText(tc.in); got != tc.want {
			t.Errorf("MarkdownText(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	for _, s := range hostileNames {
		md := MarkdownText(s)
		checkMarkdownSafe(t, "MarkdownText", s, md)
		if got := unprint(t, unescapeMarkdown(md)); got != s {
			t.Errorf("MarkdownText(%q) = %q renders as a different name %q", s, md, got)
		}
	}
}

func TestMarkdownCode(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"$HOME/.ssh", "`$HOME/.ssh`"},
		{"a`b", "``a`b``"},
		{"`x", "`` `x ``"},
		{" a ", "`  a  `"},
		{"<!--", "`<!--`"},
		{"a|b", "`a\\|b`"},
		{"a\nb", "`a\\nb`"},
		{"x\u202ey", "`x\\u202ey`"},
		{`lit\x1b`, "`lit\\\\x1b`"},
		{"esc\x1b", "`esc\\x1b`"},
	} {
		if got := MarkdownCode(tc.in); got != tc.want {
			t.Errorf("MarkdownCode(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	for _, s := range hostileNames {
		md := MarkdownCode(s)
		checkMarkdownSafe(t, "MarkdownCode", s, md)
		if got := unprint(t, strings.ReplaceAll(codeSpanContent(t, md), `\|`, "|")); got != s {
			t.Errorf("MarkdownCode(%q) = %q renders as a different name %q", s, md, got)
		}
	}
}

// checkMarkdownSafe: no raw control, bidi or line break, and no `|` a table would split on.
func checkMarkdownSafe(t *testing.T, fn, s, md string) {
	t.Helper()
	if strings.ContainsFunc(md, mustEscape) {
		t.Errorf("%s(%q) = %q holds a raw control or format character", fn, s, md)
	}
	for i := 0; i < len(md); i++ {
		if md[i] == '|' && (i == 0 || md[i-1] != '\\') {
			t.Errorf("%s(%q) = %q has a | that ends a table cell", fn, s, md)
		}
	}
}

// unescapeMarkdown is what CommonMark shows for text: a backslash before ASCII punctuation
// is dropped. The test's names hold no other markup once escaped.
func unescapeMarkdown(md string) string {
	var b strings.Builder
	for i := 0; i < len(md); i++ {
		if md[i] == '\\' && i+1 < len(md) && strings.IndexByte("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", md[i+1]) >= 0 {
			i++
		} else if strings.IndexByte(mdSpecial, md[i]) >= 0 {
			panic("unescaped markup character " + string(md[i]) + " in " + md)
		}
		b.WriteByte(md[i])
	}
	return b.String()
}

// codeSpanContent is what CommonMark shows for one code span: between two equal backtick
// runs not found inside it, one space stripped each side when both are there.
func codeSpanContent(t *testing.T, md string) string {
	t.Helper()
	n := longestRun(md[:len(md)-len(strings.TrimLeft(md, "`"))], '`')
	fence := strings.Repeat("`", n)
	if n == 0 || !strings.HasSuffix(md, fence) || len(md) < 2*n {
		t.Fatalf("%q is not one code span", md)
	}
	c := md[n : len(md)-n]
	for _, run := range strings.FieldsFunc(c, func(r rune) bool { return r != '`' }) {
		if len(run) == n {
			t.Fatalf("%q: a backtick run inside ends the span early", md)
		}
	}
	if len(c) >= 2 && c[0] == ' ' && c[len(c)-1] == ' ' && strings.Trim(c, " ") != "" {
		c = c[1 : len(c)-1]
	}
	return c
}
