package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"

	"github.com/sysprof/sysprof/report"
	"github.com/sysprof/sysprof/synth"
	"github.com/sysprof/sysprof/trace"
)

// learnSummary counts what a trace holds, for the table learn prints at the end.
type learnSummary struct {
	Binaries, Syscalls, Endpoints, DNSNames int
	FilesByAccess                           map[string]int
	FailedProbes                            int
}

func summarize(tr *trace.Trace) learnSummary {
	s := learnSummary{}
	exes := map[string]bool{}
	for _, p := range tr.Processes {
		exes[p.Exe] = true
	}
	s.Binaries = len(exes)
	names := map[string]bool{}
	for _, sc := range tr.Syscalls {
		names[sc.Arch+"/"+sc.Name] = true
	}
	s.Syscalls = len(names)
	s.FilesByAccess, s.FailedProbes = countFiles(tr.Files)
	eps := map[string]bool{}
	for _, n := range tr.Network {
		eps[n.Op+" "+n.Proto+" "+n.Addr+":"+strconv.Itoa(n.Port)+n.Path] = true
	}
	s.Endpoints = len(eps)
	s.DNSNames = len(tr.DNS)
	return s
}

// countFiles counts the distinct paths of each access kind that succeeded, and the failed
// probes. It runs after every learn, on up to hundreds of thousands of records: the profiler
// writes them sorted by exe and then path, so the paths of one kind come sorted when one
// executable did them (find, a compiler) and are counted as they pass; the kinds several
// executables did are collected and sorted.
func countFiles(files []trace.FileAccess) (byAccess map[string]int, failed int) {
	type kind struct {
		access, last string
		distinct     int
		unsorted     bool
	}
	var kinds []kind
	for _, f := range files {
		if !f.OK {
			failed++
			continue
		}
		i := slices.IndexFunc(kinds, func(k kind) bool { return k.access == f.Access })
		if i < 0 {
			i = len(kinds)
			kinds = append(kinds, kind{access: f.Access})
		}
		switch k := &kinds[i]; {
		case k.distinct == 0 || f.Path > k.last:
			k.distinct++
			k.last = f.Path
		case f.Path < k.last:
			k.unsorted = true
		}
	}
	byAccess = make(map[string]int, len(kinds))
	for _, k := range kinds {
		byAccess[k.access] = k.distinct
		if k.unsorted {
			var paths []string
			for _, f := range files {
				if f.OK && f.Access == k.access {
					paths = append(paths, f.Path)
				}
			}
			slices.Sort(paths)
			byAccess[k.access] = len(slices.Compact(paths))
		}
	}
	return byAccess, failed
}

// renderLearnSummary renders the table learn prints at the end (learn renders it while the
// profile is saved and synced), fitted to width columns (report.Width of where it goes).
func renderLearnSummary(tr *trace.Trace, wall time.Duration, width int) []byte {
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

// printLearnSummary prints the rendered table and where the profile went.
func printLearnSummary(w io.Writer, table []byte, tr *trace.Trace, profilePath string) {
	w.Write(table)
	if tr.Incomplete {
		fmt.Fprintf(w, "sysprof: profile marked INCOMPLETE: %v\n", tr.Reasons)
	}
	fmt.Fprintf(w, "sysprof: profile written to %s\n", profilePath)
}

func printExplain(w io.Writer, steps []synth.Step) {
	for _, st := range steps {
		fmt.Fprintf(w, "  [%s] %s\n", st.Pass, report.Printable(st.Message))
	}
}

// printPeakRSS reports sysprof's own peak resident memory (VmHWM), for `make bench`.
func printPeakRSS(w io.Writer) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			fmt.Fprintf(w, "sysprof: peak RSS %s\n", strings.TrimSpace(v))
		}
	}
}
