package report

import (
	"fmt"
	"time"

	"github.com/sysprof/sysprof/policy"
)

// Changes is the changeset summary of one run: which run holds the changes (`sysprof changes
// diff RUN`), how many changes were applied, and every change that was not simply applied.
type Changes struct {
	Run     string `json:"run"`
	Applied int    `json:"applied"`
	// Dropped counts the files of a regenerable code cache (Python's bytecode) the run wrote
	// and that were not kept (changeset.Dropped).
	Dropped int      `json:"dropped,omitempty"`
	Held    []Change `json:"held"`
	// Apply is the apply mode of the run (learned, safe, none); Gate the gate (step) that
	// failed in a gated run, which held everything.
	Apply  string   `json:"apply,omitempty"`
	Gate   string   `json:"gate,omitempty"`
	Errors []string `json:"errors,omitempty"`
}

// Review counts the held changes a reviewer must look at: every one not learned (a learned
// change held only by the apply mode or a failed gate, or one applied with its set-id bits
// stripped, is not counted).
func (c *Changes) Review() int {
	if c == nil {
		return 0
	}
	n := 0
	for _, h := range c.Held {
		if h.Class != "learned" && h.State != ChangeStripped {
			n++
		}
	}
	return n
}

// Change is one entry of a run's changeset as a report lists it.
type Change struct {
	Path  string `json:"path"`
	Op    string `json:"op"`   // create, modify, delete, mkdir, rmdir, mode, symlink, hardlink, special
	Type  string `json:"type"` // file, dir, symlink, fifo, socket, char, block
	Class string `json:"class"`
	// State is held (in the changeset), conflict (the host side moved: held, never
	// overwritten), refused (cannot be placed safely: held) or stripped (applied without its
	// set-id bits or file capabilities).
	State  string `json:"state"`
	Reason string `json:"reason"`
	// Change is the write rule that would make it learned next time (what refine applies);
	// nil for a change no rule may allow (a special file, a set-id bit, a link leaving its tree).
	Change *policy.Grant `json:"change,omitempty"`
	Risk   Risk          `json:"risk"`
}

// Change states.
const (
	ChangeHeld     = "held"
	ChangeConflict = "conflict"
	ChangeRefused  = "refused"
	ChangeStripped = "stripped"
)

// Denial is the change as a file denial with its write rule, so that refine accepts a held
// change like any denial; ok is false for a change with no rule to suggest.
func (c Change) Denial(first time.Time) (d Denial, ok bool) {
	if c.Change == nil || c.State == ChangeStripped {
		return Denial{}, false
	}
	g := *c.Change
	return Denial{Kind: KindFile, Path: c.Path, Access: "write", Exe: "(changeset)", Count: 1, First: first,
		What:    fmt.Sprintf("%s %s (%s: %s)", c.Path, c.Op, c.Class, c.Reason),
		Suggest: g.String(), Change: &g, Risk: c.Risk}, true
}
