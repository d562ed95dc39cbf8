package report

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/olekukonko/tablewriter/pkg/twwidth"
	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/policy"
)

func longReport() *Report {
	r := New([]string{"git", "log", "-p"}, "p.yaml", false)
	r.Add(Denial{Kind: KindFile, What: "/home/alice/src/some/deeply/nested/project/directory/.lesshsQ\x1b[2K create (openat: EROFS)",
		Exe: "/usr/bin/less", Parents: []string{"/usr/bin/git", "/usr/bin/bash"}, Count: 1, Risk: policy.RiskHigh,
		Suggest: "filesystem.write: + $HOME/src/some/deeply/nested/project/directory/.lesshsQ"})
	r.Add(Denial{Kind: KindSyscall, What: "pipe2()", Exe: "/usr/bin/git", Count: 1, Risk: policy.RiskLow, Suggest: "syscalls.allow: + pipe2"})
	return r
}

// The denial table at an 80-column terminal takes at most 80 columns (it took ~125), every
// name is still there in full, and an escape is never split across lines.
func TestDenialTableFitsTheTerminal(t *testing.T) {
	for _, width := range []int{80, 72} {
		t.Setenv("COLUMNS", strconv.Itoa(width))
		var b bytes.Buffer
		if err := longReport().WriteTable(&b); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
			if strings.HasPrefix(l, "sysprof:") {
				continue
			}
			if w := twwidth.Width(l); w > width {
				t.Errorf("width %d: a line of %d columns:\n%s", width, w, out)
				break
			}
		}
		if strings.Contains(out, "\x1b") {
			t.Errorf("width %d: a raw escape reached the table:\n%q", width, out)
		}
		// Read the cells back: each column's pieces, top to bottom, are the escaped name.
		joined := cellsJoined(out)
		for _, want := range []string{`/home/alice/src/some/deeply/nested/project/directory/.lesshsQ\x1b[2K create (openat: EROFS)`,
			"filesystem.write: + $HOME/src/some/deeply/nested/project/directory/.lesshsQ", "/usr/bin/git < /usr/bin/bash"} {
			if !strings.Contains(joined, strings.ReplaceAll(want, " ", "")) {
				t.Errorf("width %d: %q is not in the table read back:\n%s", width, want, out)
			}
		}
	}
}

// Without a terminal or $COLUMNS (a file, a pipe) the lines stay whole.
func TestDenialTableUnlimitedOffTerminal(t *testing.T) {
	t.Setenv("COLUMNS", "")
	var b bytes.Buffer
	if err := longReport().WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "filesystem.write: + $HOME/src/some/deeply/nested/project/directory/.lesshsQ") {
		t.Errorf("a line was wrapped without a width:\n%s", b.String())
	}
}

// Width asks the terminal itself (TIOCGWINSZ) before $COLUMNS.
func TestWidthOfATerminal(t *testing.T) {
	_, pts := openPty(t)
	if err := unix.IoctlSetWinsize(int(pts.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 24, Col: 72}); err != nil {
		t.Fatal(err)
	}
	t.Setenv("COLUMNS", "200")
	if got := Width(pts); got != 72 {
		t.Errorf("Width(terminal of 72 columns) = %d", got)
	}
	var b bytes.Buffer
	if got := Width(&b); got != 200 {
		t.Errorf("Width(buffer) with COLUMNS=200 = %d", got)
	}
}

func TestWrapCellKeepsEscapes(t *testing.T) {
	for _, w := range []int{3, 4, 5, 7, 9} {
		s := `ab\x1bcd\u202eef/gh`
		lines := wrapCell(s, w)
		if strings.Join(lines, "") != s {
			t.Errorf("w=%d: %q does not join back to %q", w, lines, s)
		}
		for _, l := range lines {
			if strings.HasSuffix(l, `\`) || strings.HasSuffix(l, `\x`) || strings.HasSuffix(l, `\x1`) || strings.HasSuffix(l, `\u20`) {
				t.Errorf("w=%d: an escape is split: %q", w, lines)
			}
		}
	}
}

// cellsJoined reads a blueprint table back column by column: the text of each column, line
// after line, with a row's wrapped pieces concatenated and spaces left out.
func cellsJoined(table string) string {
	var cols []string
	for _, l := range strings.Split(table, "\n") {
		if !strings.HasPrefix(l, "│") {
			if len(cols) > 0 {
				cols = append(cols, "\n")
			}
			continue
		}
		cells := strings.Split(strings.Trim(l, "│"), "│")
		for len(cols) < len(cells) {
			cols = append(cols, "")
		}
		for i, c := range cells {
			cols[i] += strings.ReplaceAll(c, " ", "")
		}
	}
	return strings.Join(cols, "\n")
}

// openPty opens a pseudo-terminal pair, closed when the test ends (its terminal end is not the
// test's controlling terminal).
func openPty(t *testing.T) (ptm, pts *os.File) {
	t.Helper()
	ptm, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no pseudo-terminal (CI=true: a failure, not a skip): %v", err)
		}
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	t.Cleanup(func() { ptm.Close() })
	if err := unix.IoctlSetPointerInt(int(ptm.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(ptm.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	pts, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pts.Close() })
	return ptm, pts
}
