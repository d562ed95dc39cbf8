package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/sysprof/sysprof/changeset"
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

// maxHeldShown caps the held changes enforce lists on stderr (`sysprof changes diff` shows all).
const maxHeldShown = 20

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
	shown := 0
	for _, class := range []string{string(changeset.Dangerous), string(changeset.Held)} {
		for _, h := range ch.Held {
			if h.Class != class {
				continue
			}
			if shown == maxHeldShown {
				fmt.Fprintf(w, "  ... (%d more: `sysprof changes diff %s`)\n", ch.Review()-shown, report.Printable(ch.Run))
				return
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
