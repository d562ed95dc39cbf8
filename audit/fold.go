package audit

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/sysprof/sysprof/policy"
)

// Finding is one escape folded over every run that showed it: the same kind, access and target
// by the same binary under the same role.
type Finding struct {
	Class  Class  `json:"class"`
	Reason string `json:"reason"`
	Action string `json:"action"`

	Kind    string      `json:"kind"`
	Access  string      `json:"access,omitempty"`
	Target  string      `json:"target"`
	Host    string      `json:"host,omitempty"`
	Proto   string      `json:"proto,omitempty"`
	What    string      `json:"what"`
	Change  string      `json:"change,omitempty"`
	Exe     string      `json:"exe"`
	Parents []string    `json:"parents,omitempty"` // the chain seen first
	Role    string      `json:"role"`
	Risk    policy.Risk `json:"risk"`
	// Dangerous: a run's changeset held it as dangerous.
	Dangerous bool `json:"dangerous,omitempty"`

	Projects []string `json:"projects"`
	Steps    []string `json:"steps"` // project/step
	Machines []string `json:"machines"`
	// Sources are up to 3 report files that show it (for refine --from).
	Sources []string  `json:"sources"`
	First   time.Time `json:"first"`
	Last    time.Time `json:"last"`
	Runs    int       `json:"runs"`  // run reports it was in
	Count   int       `json:"count"` // operations, summed
	// Days counts runs per day (YYYY-MM-DD), for the split over time.
	Days map[string]int `json:"days"`

	knownHosts map[string]bool
	sets       [3]map[string]bool
}

// Folder folds the escapes of many runs into findings. The zero value is not ready: use
// NewFolder. Add may be called in any order: the result does not depend on it.
type Folder struct {
	byKey map[string]*Finding
	Runs  int
	// Machines, Projects seen over all runs.
	machines, projects map[string]bool
	first, last        time.Time
}

// NewFolder returns an empty Folder.
func NewFolder() *Folder {
	return &Folder{byKey: map[string]*Finding{}, machines: map[string]bool{}, projects: map[string]bool{}}
}

// Add folds one run's escapes.
func (f *Folder) Add(r Run, escapes []Escape) {
	f.Runs++
	f.machines[r.Host] = true
	f.projects[r.Project] = true
	if !r.Time.IsZero() {
		if f.first.IsZero() || r.Time.Before(f.first) {
			f.first = r.Time
		}
		if r.Time.After(f.last) {
			f.last = r.Time
		}
	}
	day := ""
	if !r.Time.IsZero() {
		day = r.Time.UTC().Format(time.DateOnly)
	}
	seen := map[*Finding]bool{}
	for _, e := range escapes {
		key := strings.Join([]string{e.Kind, e.Access, e.Target, e.Exe, r.Role}, "\x00")
		fd := f.byKey[key]
		if fd == nil {
			fd = &Finding{Dangerous: e.Dangerous, Kind: e.Kind, Access: e.Access, Target: e.Target, Host: e.Host, Proto: e.Proto, What: e.What,
				Change: e.Change, Exe: e.Exe, Parents: e.Parents, Role: r.Role, Risk: e.Risk, First: r.Time, Last: r.Time,
				Days: map[string]int{}, knownHosts: map[string]bool{}}
			for i := range fd.sets {
				fd.sets[i] = map[string]bool{}
			}
			f.byKey[key] = fd
		}
		fd.Count += e.Count
		fd.Risk = max(fd.Risk, e.Risk)
		if fd.Host == "" {
			fd.Host = e.Host
		}
		if seen[fd] {
			continue
		}
		seen[fd] = true
		fd.Runs++
		if day != "" {
			fd.Days[day]++
		}
		// The earliest run's parent chain and wording; ties by the smaller chain text.
		if !r.Time.IsZero() && (fd.First.IsZero() || r.Time.Before(fd.First) ||
			r.Time.Equal(fd.First) && strings.Join(e.Parents, "\x00") < strings.Join(fd.Parents, "\x00")) {
			fd.First, fd.Parents, fd.What, fd.Change = r.Time, e.Parents, e.What, e.Change
		}
		if r.Time.After(fd.Last) {
			fd.Last = r.Time
		}
		fd.sets[0][r.Project] = true
		fd.sets[1][r.Project+"/"+stepName(r.Step)] = true
		fd.sets[2][r.Host] = true
		fd.Sources = append(fd.Sources, r.Source)
		for _, h := range r.KnownHosts {
			fd.knownHosts[h] = true
		}
	}
}

func stepName(s string) string {
	if s == "" {
		return "(command)"
	}
	return s
}

// Result is the audit of a set of run reports.
type Result struct {
	Runs     int       `json:"runs"`
	Machines int       `json:"machines"`
	Projects int       `json:"projects"`
	First    time.Time `json:"first"`
	Last     time.Time `json:"last"`
	// Skipped are the reports that could not be read, one line each.
	Skipped  []string  `json:"skipped,omitempty"`
	Findings []Finding `json:"findings"`
}

// Result classifies every finding and ranks them: suspicious first, then overbroad, then
// legitimate; within a class by risk, then by how many runs showed it.
func (f *Folder) Result() *Result {
	res := &Result{Runs: f.Runs, Machines: len(f.machines), Projects: len(f.projects), First: f.first, Last: f.last, Findings: []Finding{}}
	for _, fd := range f.byKey {
		fd.Projects, fd.Steps, fd.Machines = sortedKeys(fd.sets[0]), sortedKeys(fd.sets[1]), sortedKeys(fd.sets[2])
		slices.Sort(fd.Sources)
		fd.Sources = fd.Sources[:min(len(fd.Sources), 3)]
		fd.Class, fd.Reason = Classify(Subject{Kind: fd.Kind, Access: fd.Access, Target: fd.Target, Host: fd.Host, Proto: fd.Proto,
			What: fd.What, Change: fd.Change, Exe: fd.Exe, Parents: fd.Parents, Role: fd.Role, Risk: fd.Risk, KnownHosts: sortedKeys(fd.knownHosts), Dangerous: fd.Dangerous})
		fd.Action = fd.Class.Action()
		res.Findings = append(res.Findings, *fd)
	}
	slices.SortFunc(res.Findings, func(a, b Finding) int {
		return cmp.Or(cmp.Compare(a.Class.rank(), b.Class.rank()), cmp.Compare(b.Risk, a.Risk), cmp.Compare(b.Runs, a.Runs),
			strings.Compare(a.Target, b.Target), strings.Compare(a.Exe, b.Exe), strings.Compare(a.Access, b.Access), strings.Compare(a.Role, b.Role))
	})
	return res
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Split counts findings and runs-with-the-finding per class.
type Split struct {
	Findings map[Class]int `json:"findings"`
	// Occurrences is the number of (run, finding) pairs: how often each class was hit.
	Occurrences map[Class]int `json:"occurrences"`
}

// Split returns the class split of the findings.
func (r *Result) Split() Split {
	s := Split{Findings: map[Class]int{}, Occurrences: map[Class]int{}}
	for _, c := range Classes { // every class, also at 0, for readers of the JSON
		s.Findings[c], s.Occurrences[c] = 0, 0
	}
	for _, f := range r.Findings {
		s.Findings[f.Class]++
		s.Occurrences[f.Class] += f.Runs
	}
	return s
}

// DaySplit is the occurrences per class of one day.
type DaySplit struct {
	Day    string        `json:"day"`
	Counts map[Class]int `json:"counts"`
}

// Timeline returns the occurrences per class and day, oldest day first.
func (r *Result) Timeline() []DaySplit {
	by := map[string]map[Class]int{}
	for _, f := range r.Findings {
		for d, n := range f.Days {
			if by[d] == nil {
				by[d] = map[Class]int{Suspicious: 0, Overbroad: 0, Legitimate: 0}
			}
			by[d][f.Class] += n
		}
	}
	var out []DaySplit
	for _, d := range sortedKeys(func() map[string]bool {
		m := map[string]bool{}
		for d := range by {
			m[d] = true
		}
		return m
	}()) {
		out = append(out, DaySplit{Day: d, Counts: by[d]})
	}
	return out
}
