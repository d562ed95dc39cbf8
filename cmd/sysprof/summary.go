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
	header := []string{"learned", "count"}
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
	return boxTable(header, report.Fit(width, header, rows))
}

// boxTable draws what tablewriter's Blueprint renderer draws for ASCII cells (header centred
// and upper-cased, cells left-aligned, a "\n" in a cell a new line): the library's
// setup cost ~0.5 ms and 480 kB at every learn, for a table of a dozen short cells.
func boxTable(header []string, rows [][]string) []byte {
	widths := make([]int, len(header))
	lines := func(c string) []string { // trailing spaces and blank lines left out, as tablewriter does
		var out []string
		for _, l := range strings.Split(c, "\n") {
			if l = strings.TrimRight(l, " "); l != "" {
				out = append(out, l)
			}
		}
		if out == nil {
			return []string{""}
		}
		return out
	}
	for i, h := range header {
		widths[i] = len(h)
	}
	for _, r := range rows {
		for i, c := range r {
			for _, l := range lines(c) {
				widths[i] = max(widths[i], len(l))
			}
		}
	}
	var b bytes.Buffer
	rule := func(left, mid, right string) {
		b.WriteString(left)
		for i, w := range widths {
			if i > 0 {
				b.WriteString(mid)
			}
			b.WriteString(strings.Repeat("─", w+2))
		}
		b.WriteString(right + "\n")
	}
	row := func(cells []string, centre bool) {
		var split [][]string
		n := 1
		for _, c := range cells {
			split = append(split, lines(c))
			n = max(n, len(split[len(split)-1]))
		}
		for k := range n {
			b.WriteString("│")
			for i, w := range widths {
				l := ""
				if k < len(split[i]) {
					l = split[i][k]
				}
				pad := w - len(l)
				left := 0
				if centre {
					left = pad / 2
				}
				b.WriteString(" " + strings.Repeat(" ", left) + l + strings.Repeat(" ", pad-left) + " │")
			}
			b.WriteString("\n")
		}
	}
	rule("┌", "┬", "┐")
	upper := make([]string, len(header))
	for i, h := range header {
		upper[i] = strings.ToUpper(h)
	}
	row(upper, true)
	rule("├", "┼", "┤")
	for _, r := range rows {
		row(r, false)
	}
	rule("└", "┴", "┘")
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
