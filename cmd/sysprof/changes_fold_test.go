package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sysprof/sysprof/changeset"
)

// TestChangesDiffFoldsAFlood (issue 23): a run that made tens of thousands of files (up to
// the changeset's file limit) leaves a review a person can read: per directory, the first
// maxShownPerDir ordinary changes in full, the rest one line naming how to list them; every
// dangerous change and every highlighted one is shown; naming a path shows all of it.
func TestChangesDiffFoldsAFlood(t *testing.T) {
	var entries []diffEntry
	add := func(path string, class changeset.Class, hl bool) {
		e := diffEntry{Change: changeset.Change{Path: path, Class: class, Op: changeset.OpCreate, Type: changeset.TypeFile}, New: &fileSide{Size: 1, SHA256: strings.Repeat("0", 64)}}
		if hl {
			e.Highlights = []highlight{{What: "a download piped to a shell"}}
		}
		entries = append(entries, e)
	}
	for i := range 10000 {
		add(fmt.Sprintf("/w/flood/%05d", i), changeset.Held, i == 9000)
	}
	add("/w/flood/zz-hook", changeset.Dangerous, false)
	for i := range 3 {
		add(fmt.Sprintf("/w/src/%d.c", i), changeset.Held, false)
	}
	folded := foldFlood(entries, true)
	if want := maxShownPerDir + 1 + 1 + 1 + 3; len(folded) != want {
		t.Fatalf("%d entries after folding, want %d", len(folded), want)
	}
	var b strings.Builder
	r := &changeset.Run{ID: "20261204-000000-abcdef01", Started: time.Unix(0, 0)}
	if err := diffText(&b, r, folded); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"9949 more ordinary change(s) in /w/flood (9949 bytes new): `sysprof changes diff 20261204-000000-abcdef01 /w/flood`",
		"/w/flood/09000", "/w/flood/zz-hook", "/w/src/2.c"} {
		if !strings.Contains(out, want) {
			t.Errorf("the folded review lacks %q", want)
		}
	}
	if len(out) > 16<<10 {
		t.Errorf("the folded review of 10,000 files is %d bytes", len(out))
	}
	if got := foldFlood(entries, false); len(got) != len(entries) {
		t.Errorf("with a path named, %d of %d changes shown", len(got), len(entries))
	}
}
