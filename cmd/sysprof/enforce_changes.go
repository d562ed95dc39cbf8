package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/sysprof/sysprof/changeset"
	"github.com/sysprof/sysprof/enforcer"
	"github.com/sysprof/sysprof/project"
	"github.com/sysprof/sysprof/report"
)

// applyFlag is enforce's --apply learned|safe|none (changeset.ParseApplyMode).
type applyFlag struct{ m *changeset.ApplyMode }

func (f applyFlag) String() string {
	if f.m == nil || *f.m == "" {
		return string(changeset.ApplyLearned)
	}
	return string(*f.m)
}

func (f applyFlag) Set(s string) error {
	m, err := changeset.ParseApplyMode(s)
	if err != nil {
		return err
	}
	if m == changeset.ApplyAll {
		return fmt.Errorf("--apply all is not for enforce (it would apply what no rule names): use learned, safe or none, then `sysprof changes apply`")
	}
	*f.m = m
	return nil
}

func (applyFlag) Type() string { return "mode" }

// maxHeldShown caps the ordinary held changes enforce lists on stderr, maxDangerousShown the
// dangerous ones (`sysprof changes diff` shows all). One cap of 20 for both let a payload's
// twenty-first persistence file (and every ordinary held change after it, a Makefile's edit)
// go unnamed; a flood of dangerous ones still cannot fill the terminal.
const (
	maxHeldShown      = 20
	maxDangerousShown = 200
)

// writeChanges prints what the run's changeset did on stderr: one summary line naming the run
// and how to review it, then the dangerous changes and the held ones (capped). prefix names the
// step ("" for a command). Nothing when the run staged nothing or everything was applied.
func writeChanges(w io.Writer, prefix string, ch *report.Changes) {
	if ch == nil {
		return
	}
	counts := map[string]int{}
	for _, h := range ch.Held {
		counts[h.Class]++
	}
	if len(ch.Held) == 0 {
		if len(ch.Errors) > 0 {
			fmt.Fprintf(w, "sysprof: %schangeset %s: %s\n", prefix, report.Printable(ch.Run), report.Printable(strings.Join(ch.Errors, "; ")))
		}
		return
	}
	why := ""
	switch {
	case ch.Gate != "":
		why = fmt.Sprintf(" (gate %s failed: nothing applied)", report.Printable(ch.Gate))
	case ch.Apply == string(changeset.ApplyNone):
		why = " (--apply none)"
	}
	id := report.Printable(ch.Run)
	fmt.Fprintf(w, "sysprof: %srun %s: %d change(s) applied, %d held for review%s: %d dangerous, %d held, %d learned; review with `sysprof changes diff %s`, then `sysprof changes apply %s PATH...|--all` or `sysprof changes drop %s`\n",
		prefix, id, ch.Applied, len(ch.Held), why, counts[string(changeset.Dangerous)], counts[string(changeset.Held)], counts[string(changeset.Learned)], id, id, id)
	for _, class := range []string{string(changeset.Dangerous), string(changeset.Held)} {
		limit := map[string]int{string(changeset.Dangerous): maxDangerousShown}[class]
		if limit == 0 {
			limit = maxHeldShown
		}
		shown := 0
		for _, h := range ch.Held {
			if h.Class != class {
				continue
			}
			if shown == limit {
				fmt.Fprintf(w, "  ... (%d more %s: `sysprof changes diff %s`)\n", counts[class]-shown, class, report.Printable(ch.Run))
				break
			}
			shown++
			line := fmt.Sprintf("  %-9s %-8s %s: %s", h.Class, h.Op, report.Printable(h.Path), report.Printable(h.Reason))
			if h.State != report.ChangeHeld {
				line += " [" + h.State + "]"
			}
			if h.Change != nil && h.Class != string(changeset.Dangerous) {
				line += "; to learn it: " + report.Printable(h.Change.String())
			}
			fmt.Fprintln(w, line)
		}
	}
	for _, e := range ch.Errors {
		fmt.Fprintf(w, "sysprof: %schangeset %s: %s\n", prefix, report.Printable(ch.Run), report.Printable(e))
	}
}

// beginGates begins the one changeset of a gated run (enforce --step/--all).
func beginGates(steps []project.Step) (*changeset.Run, error) {
	cmd := []string{"sysprof", "enforce"}
	for _, st := range steps {
		cmd = append(cmd, "--step", st.Name)
	}
	dir := ""
	if len(steps) > 0 {
		dir = steps[0].Workdir
	}
	cs, err := changeset.Begin(changeset.Run{Command: cmd, WorkDir: dir})
	if err != nil {
		return nil, fmt.Errorf("changeset of the gated run: %w", err)
	}
	return cs, nil
}

// finishGates applies the gated run's changeset once every step ran: as --apply says when
// every step passed (failed is nil), else nothing (the failed gate holds everything). The
// changes go into the last step's report (written again when --report asked for one).
func finishGates(o *enforceOptions, cs *changeset.Run, results []gateResult, failed error) *report.Changes {
	if cs == nil {
		return nil
	}
	gate := ""
	if failed != nil {
		n := len(results)
		switch {
		case n > 0 && (results[n-1].code != 0 || results[n-1].denied):
			gate = results[n-1].step.Name // failed, or failed on denial
		case n < len(o.Gates):
			gate = o.Gates[n].Name // could not run
		case n > 0:
			gate = results[n-1].step.Name // its report could not be written
		}
	}
	changes, notes := enforcer.FinishChangeset(cs, o.Apply, gate)
	if n := len(results); n > 0 {
		last := results[n-1]
		last.rep.Changes = changes
		last.rep.Notes = append(last.rep.Notes, notes...)
		if o.Report != "" {
			_ = last.rep.Save(stepFile(o.Report, last.step.Name))
		}
	}
	return changes
}

// writeGateReview prints the end of a gated run: what its changeset holds per class, and the
// dangerous and held items (writeChanges), or that everything was applied.
func writeGateReview(w io.Writer, ch *report.Changes) {
	if ch == nil {
		return
	}
	if len(ch.Held) == 0 {
		fmt.Fprintf(w, "sysprof: review: %d change(s) applied, nothing held\n", ch.Applied)
		return
	}
	writeChanges(w, "review: ", ch)
}
