package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/report"
)

// TestFailOnDenialFailsOnLostRecords: a run whose guard lost records (its ring buffer full) has
// refusals nobody can list; --fail-on-denial must not pass it as clean (issue 23: every blocked
// attempt is on the record, or the gate says it is not).
func TestFailOnDenialFailsOnLostRecords(t *testing.T) {
	var w bytes.Buffer
	rep := &report.Report{Denials: []report.Denial{}, LostRecords: 7}
	err := denialVerdict(&w, "", rep, 0)
	if err == nil || codeOf(err) != exitDenied || !strings.Contains(err.Error(), "7 record(s)") {
		t.Fatalf("a successful run with 7 lost records: verdict %v (exit %d), want exit %d naming the 7 lost records", err, codeOf(err), exitDenied)
	}
	if err := denialVerdict(&w, "", &report.Report{Denials: []report.Denial{}}, 0); err != nil {
		t.Fatalf("a clean run failed the gate: %v", err)
	}
}
