package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/report"
)

// Enforce's stderr names every dangerous change up to a cap of their own (a payload's
// persistence files were more than the one cap of 20), then the ordinary held ones up to
// theirs, and the errors after the capped lists.
func TestWriteChangesNeverHidesDangerous(t *testing.T) {
	ch := &report.Changes{Run: "r1", Errors: []string{"apply: boom"}}
	for i := 0; i < maxHeldShown+5; i++ {
		ch.Held = append(ch.Held, report.Change{Path: fmt.Sprintf("/w/new%d.txt", i), Op: "create", Class: "held", State: report.ChangeHeld, Reason: "not learned"})
	}
	for i := 0; i < maxDangerousShown+2; i++ {
		ch.Held = append(ch.Held, report.Change{Path: fmt.Sprintf("/w/.vscode/tasks%d.json", i), Op: "create", Class: "dangerous", State: report.ChangeHeld, Reason: "protected path"})
	}
	var b strings.Builder
	writeChanges(&b, "", ch)
	out := b.String()
	for _, want := range []string{"/w/.vscode/tasks0.json", fmt.Sprintf("/w/.vscode/tasks%d.json", maxDangerousShown-1), "(2 more dangerous", "/w/new0.txt", "(5 more held", "apply: boom"} {
		if !strings.Contains(out, want) {
			t.Errorf("stderr lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, fmt.Sprintf("/w/new%d.txt", maxHeldShown)) {
		t.Errorf("more than %d ordinary held changes listed:\n%s", maxHeldShown, out)
	}
}
