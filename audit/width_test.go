package audit

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/olekukonko/tablewriter/pkg/twwidth"
)

// The audit table at an 80-column terminal ($COLUMNS; report.Width) takes at most 80 columns,
// and every finding's long names are still there.
func TestTableFitsTheTerminal(t *testing.T) {
	t.Setenv("COLUMNS", "80")
	dir := t.TempDir()
	save(t, filepath.Join(dir, "a"), envelope("a", "webapp", "lint", t0, cacheWrite, sdkRead, hookWrite))
	save(t, filepath.Join(dir, "b"), envelope("b", "docs", "lint", t0.Add(24*time.Hour), cacheWrite))
	res, err := Read([]string{dir}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := res.WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n")[1:] { // the summary line is prose
		if w := twwidth.Width(l); w > 80 {
			t.Fatalf("a line of %d columns:\n%s", w, out)
		}
	}
	// The WHAT column read back top to bottom holds the names whole.
	var what strings.Builder
	for _, l := range strings.Split(out, "\n") {
		if cells := strings.Split(l, "│"); len(cells) > 2 {
			what.WriteString(strings.TrimSpace(cells[2]))
		}
	}
	if !strings.Contains(what.String(), "read$WORKDIR/node_modules/@aws-sdk") {
		t.Errorf("a long name is lost (%q):\n%s", what.String(), out)
	}
}
