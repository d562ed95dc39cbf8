package report

import (
	"io"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/olekukonko/tablewriter/pkg/twwidth"
	"golang.org/x/sys/unix"
)

// Width is how many columns a table written to w may take: the terminal's (TIOCGWINSZ) when
// w is one, else $COLUMNS when it is set, else 0: no limit, so that a file or a pipe gets
// whole lines to grep.
func Width(w io.Writer) int {
	if f, ok := w.(interface{ Fd() uintptr }); ok {
		if ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ); err == nil && ws.Col > 0 {
			return int(ws.Col)
		}
	}
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	return 0
}

// Fit wraps the cells of a table (header and rows, already escaped: Printable) into lines
// so that the table, drawn with a border and one space of padding on each side of a cell,
// takes at most width columns. Columns that fit their share keep their width; the others
// share what is left, never narrower than their header. A cell is broken after a '/', a
// space or a comma where it can be, and never inside an escape (\x1b, \u202e), so what is
// printed still reads back as the escaped name. width 0 leaves everything as it is.
func Fit(width int, header []string, rows [][]string) [][]string {
	n := len(header)
	if width <= 0 || n == 0 {
		return rows
	}
	natural := make([]int, n)
	for i, h := range header {
		natural[i] = twwidth.Width(h)
	}
	for _, r := range rows {
		for i := 0; i < n && i < len(r); i++ {
			natural[i] = max(natural[i], twwidth.Width(r[i]))
		}
	}
	widths := shareColumns(width-(3*n+1), natural, header)
	out := make([][]string, len(rows))
	for j, r := range rows {
		out[j] = make([]string, len(r))
		for i, c := range r {
			if i < n && twwidth.Width(c) > widths[i] {
				c = strings.Join(wrapCell(c, widths[i]), "\n")
			}
			out[j][i] = c
		}
	}
	return out
}

// shareColumns gives each column its natural width when that is at most an equal share of
// what the columns that do not fit leave (water-filling), and splits the rest evenly; no
// column gets less than its header.
func shareColumns(budget int, natural []int, header []string) []int {
	n := len(natural)
	widths := make([]int, n)
	done := make([]bool, n)
	left, open := budget, n
	for changed := true; changed && open > 0; {
		changed = false
		for i := range natural {
			if !done[i] && natural[i]*open <= left {
				widths[i], done[i] = natural[i], true
				left -= natural[i]
				open--
				changed = true
			}
		}
	}
	for i := range natural {
		if done[i] {
			continue
		}
		widths[i] = max(left/open, twwidth.Width(header[i]), 1)
		left -= widths[i]
		open--
	}
	return widths
}

// wrapCell breaks s into lines of at most w columns (a single token wider than w gets a line
// of its own, broken at w).
func wrapCell(s string, w int) []string {
	var lines []string
	var line strings.Builder
	lw := 0  // width of line
	cut := 0 // byte length of line after its last break point
	for _, tok := range tokens(s) {
		tw := twwidth.Width(tok)
		if lw+tw > w && lw > 0 {
			l := line.String()
			if cut == 0 || cut == len(l) {
				cut = len(l)
			}
			lines = append(lines, l[:cut])
			rest := l[cut:]
			line.Reset()
			line.WriteString(rest)
			lw, cut = twwidth.Width(rest), 0
		}
		line.WriteString(tok)
		lw += tw
		if tok == "/" || tok == " " || tok == "," {
			cut = line.Len()
		}
	}
	if line.Len() > 0 {
		lines = append(lines, line.String())
	}
	return lines
}

// tokens splits s into the units a line may not break inside: an escape Printable wrote
// (\x1b, \u202e, \U0001f600, \n) or one character.
func tokens(s string) []string {
	var out []string
	for i := 0; i < len(s); {
		n := escapeLen(s[i:])
		if n == 0 {
			_, n = utf8.DecodeRuneInString(s[i:])
		}
		out = append(out, s[i:i+n])
		i += n
	}
	return out
}

// escapeLen is the length of the escape s starts with, or 0.
func escapeLen(s string) int {
	if len(s) < 2 || s[0] != '\\' {
		return 0
	}
	hex := map[byte]int{'x': 2, 'u': 4, 'U': 8}[s[1]]
	if hex == 0 {
		if strings.IndexByte("abfnrtv", s[1]) >= 0 {
			return 2
		}
		return 0
	}
	if len(s) < 2+hex {
		return 0
	}
	for _, c := range []byte(s[2 : 2+hex]) {
		if !strings.ContainsRune("0123456789abcdefABCDEF", rune(c)) {
			return 0
		}
	}
	return 2 + hex
}
