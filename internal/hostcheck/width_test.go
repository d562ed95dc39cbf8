package hostcheck

import (
	"bytes"
	"strings"
	"testing"

	"github.com/olekukonko/tablewriter/pkg/twwidth"
)

// doctor's table at an 80-column terminal ($COLUMNS; report.Width) takes at most 80 columns.
func TestRenderFitsTheTerminal(t *testing.T) {
	t.Setenv("COLUMNS", "80")
	cs := []Check{
		{Name: "landlock", For: ForEnforce, Status: Available, Detail: "ABI 7 (fs rights, TCP ports, signal and abstract-unix scoping)"},
		{Name: "idmapped mounts of /", For: ForEnforce, Status: Missing, Optional: true, Reason: "/ is on overlayfs, which cannot be idmapped here",
			Remedy: "run enforce with --degrade=userns, or run sysprof outside the container"},
	}
	var buf bytes.Buffer
	if err := Render(&buf, cs); err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(strings.TrimRight(buf.String(), "\n"), "\n") {
		if w := twwidth.Width(l); w > 80 {
			t.Fatalf("a line of %d columns:\n%s", w, buf.String())
		}
	}
}
