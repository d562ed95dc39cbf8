package main

import (
	"bytes"
	"strconv"
	"testing"
	"time"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"

	"github.com/sysprof/sysprof/report"
	"github.com/sysprof/sysprof/trace"
)

// The learn summary is drawn without tablewriter (its setup cost more than the rest of the
// summary): the output stays what tablewriter's Blueprint draws, at every width.
func TestLearnSummaryAsTablewriter(t *testing.T) {
	big := &trace.Trace{Loss: trace.Loss{RingbufDrops: 123456789}}
	for i := range 3 {
		big.Processes = append(big.Processes, trace.Process{Exe: "/bin/x" + strconv.Itoa(i)})
		big.Files = append(big.Files, trace.FileAccess{Path: "/a/" + strconv.Itoa(i), Access: trace.AccessRead, OK: true},
			trace.FileAccess{Path: "/b/" + strconv.Itoa(i), Access: trace.AccessList, OK: true},
			trace.FileAccess{Path: "/c", Access: trace.AccessRead})
	}
	for _, tr := range []*trace.Trace{{}, big} {
		for _, wall := range []time.Duration{0, time.Second, 2053 * time.Millisecond, 3 * time.Hour} {
			for width := range 61 {
				got := renderLearnSummary(tr, wall, width)
				want := tablewriterSummary(tr, wall, width)
				if !bytes.Equal(got, want) {
					t.Fatalf("width %d, wall %v: got\n%s\nwant (tablewriter)\n%s", width, wall, got, want)
				}
			}
		}
	}
}

// tablewriterSummary is renderLearnSummary as it was drawn with tablewriter.
func tablewriterSummary(tr *trace.Trace, wall time.Duration, width int) []byte {
	s := summarize(tr)
	var b bytes.Buffer
	t := tablewriter.NewTable(&b, tablewriter.WithRenderer(renderer.NewBlueprint()))
	header := []string{"learned", "count"}
	t.Header(header)
	rows := [][]string{{"binaries run", strconv.Itoa(s.Binaries)}, {"syscalls", strconv.Itoa(s.Syscalls)}}
	for _, k := range trace.Accesses {
		if n := s.FilesByAccess[k]; n > 0 {
			rows = append(rows, []string{"files: " + k, strconv.Itoa(n)})
		}
	}
	rows = append(rows,
		[]string{"failed file probes", strconv.Itoa(s.FailedProbes)},
		[]string{"network endpoints", strconv.Itoa(s.Endpoints)},
		[]string{"DNS names", strconv.Itoa(s.DNSNames)},
		[]string{"lost events", strconv.FormatUint(tr.Loss.RingbufDrops+tr.Loss.MapFull, 10)},
		[]string{"wall time", wall.Round(time.Millisecond).String()})
	for _, row := range report.Fit(width, header, rows) {
		t.Append(row)
	}
	t.Render()
	return b.Bytes()
}
