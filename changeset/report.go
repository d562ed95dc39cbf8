package changeset

import (
	"github.com/sysprof/sysprof/report"
)

// Report is what a run's report says of its changeset after res: the counts applied and
// dropped (files of a regenerable cache), and each
// change that was not simply applied (held, dangerous, in conflict, refused, or applied with
// set-id bits or capabilities stripped).
func (res Result) Report(runID string) *report.Changes {
	out := &report.Changes{Run: runID, Applied: len(res.Applied), Held: []report.Change{}}
	add := func(cs []Change, state string) {
		for _, c := range cs {
			rc := report.Change{Path: c.Path, Op: string(c.Op), Type: c.Type, Class: string(c.Class), State: state,
				Reason: c.Reason, Change: c.Grant, Risk: c.Risk}
			if state == report.ChangeStripped {
				rc.Reason = c.Stripped
			}
			out.Held = append(out.Held, rc)
		}
	}
	for _, c := range res.Dropped {
		if c.Type != TypeDir {
			out.Dropped++
		}
	}
	add(res.Held, report.ChangeHeld)
	add(res.Conflicts, report.ChangeConflict)
	add(res.Refused, report.ChangeRefused)
	var stripped []Change
	for _, c := range res.Applied {
		if c.Stripped != "" {
			stripped = append(stripped, c)
		}
	}
	add(stripped, report.ChangeStripped)
	return out
}

// Counts is the number of changes per class.
func Counts(cs []Change) map[Class]int {
	m := map[Class]int{}
	for _, c := range cs {
		m[c.Class]++
	}
	return m
}
