package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"

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
	s := learnSummary{FilesByAccess: map[string]int{}}
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
	paths := map[string]map[string]bool{}
	for _, f := range tr.Files {
		if !f.OK {
			s.FailedProbes++
			continue
		}
		if paths[f.Access] == nil {
			paths[f.Access] = map[string]bool{}
		}
		paths[f.Access][f.Path] = true
	}
	for k, v := range paths {
		s.FilesByAccess[k] = len(v)
	}
	eps := map[string]bool{}
	for _, n := range tr.Network {
		eps[n.Op+" "+n.Proto+" "+n.Addr+":"+strconv.Itoa(n.Port)+n.Path] = true
	}
	s.Endpoints = len(eps)
	s.DNSNames = len(tr.DNS)
	return s
}

func printLearnSummary(w io.Writer, tr *trace.Trace, wall time.Duration, profilePath string) {
	s := summarize(tr)
	t := tablewriter.NewTable(w, tablewriter.WithRenderer(renderer.NewBlueprint()))
	t.Header("learned", "count")
	t.Append("binaries run", strconv.Itoa(s.Binaries))
	t.Append("syscalls", strconv.Itoa(s.Syscalls))
	for _, k := range []string{trace.AccessRead, trace.AccessWrite, trace.AccessCreate, trace.AccessDelete, trace.AccessExec, trace.AccessList, trace.AccessMetadata} {
		if n := s.FilesByAccess[k]; n > 0 {
			t.Append("files: "+k, strconv.Itoa(n))
		}
	}
	t.Append("failed file probes", strconv.Itoa(s.FailedProbes))
	t.Append("network endpoints", strconv.Itoa(s.Endpoints))
	t.Append("DNS names", strconv.Itoa(s.DNSNames))
	t.Append("lost events", strconv.FormatUint(tr.Loss.RingbufDrops+tr.Loss.MapFull, 10))
	t.Append("wall time", wall.Round(time.Millisecond).String())
	t.Render()
	if tr.Incomplete {
		fmt.Fprintf(w, "sysprof: profile marked INCOMPLETE: %v\n", tr.Reasons)
	}
	fmt.Fprintf(w, "sysprof: profile written to %s\n", profilePath)
}

func printExplain(w io.Writer, steps []synth.Step) {
	for _, st := range steps {
		fmt.Fprintf(w, "  [%s] %s\n", st.Pass, st.Message)
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
