package report

import "strings"

// The one markdown escaping of names (drift and diff markdown, `changes diff --format
// markdown`, the audit). Both build on Printable, so a name in markdown is escaped as on a
// terminal and, rendered, still reads back to exactly one name; both are safe in a GitHub
// table cell and in running text, never end a line, and let no name open a comment (`<!--`),
// a link, emphasis, math or HTML.

// mdSpecial are the characters MarkdownText escapes with a backslash: the backslash itself
// (so Printable's `\x1b` renders as written), and what could start markup or end a table cell.
const mdSpecial = "\\`*_[]<>|&~$#!"

// MarkdownText is s as markdown text: Printable, then every character that markdown could
// read as markup backslash-escaped (CommonMark renders `\<` as `<`, GitHub tables `\|` as `|`).
func MarkdownText(s string) string {
	p := Printable(s)
	if !strings.ContainsAny(p, mdSpecial) {
		return p
	}
	var b strings.Builder
	b.Grow(len(p) + 8)
	for i := 0; i < len(p); i++ {
		if strings.IndexByte(mdSpecial, p[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(p[i])
	}
	return b.String()
}

// MarkdownCode is s as an inline code span, delimiters included ("" for an empty s): Printable,
// inside a run of backticks longer than any in it (so a backtick in a name cannot end the span
// and nothing in it is read as markup), with `|` written `\|`, which a GitHub table reads as a
// `|` of the cell (outside a table the span shows `\|`).
func MarkdownCode(s string) string {
	if s == "" {
		return ""
	}
	p := strings.ReplaceAll(Printable(s), "|", `\|`)
	fence := MarkdownFence(p, 1)
	// A span's content that starts or ends with a backtick needs a space beside the fence, and
	// one space each side is stripped when both are there: pad so that what is shown is p.
	pad := ""
	if p[0] == '`' || p[len(p)-1] == '`' || (p[0] == ' ' && p[len(p)-1] == ' ' && strings.Trim(p, " ") != "") {
		pad = " "
	}
	return fence + pad + p + pad + fence
}

// MarkdownFence is the run of backticks that opens and closes a code span (min 1) or a fenced
// block (min 3) around s: longer than any run of backticks in s, so s cannot end it.
func MarkdownFence(s string, min int) string {
	return strings.Repeat("`", max(min, longestRun(s, '`')+1))
}

// longestRun is the length of the longest run of c in s.
func longestRun(s string, c byte) int {
	best, cur := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			cur++
			best = max(best, cur)
		} else {
			cur = 0
		}
	}
	return best
}
