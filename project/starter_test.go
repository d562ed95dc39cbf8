package project

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sysprof/sysprof/internal/testutil"
)

// Every field of the first step is explained by a comment.
func TestStarterCommentsEveryField(t *testing.T) {
	kinds, err := Detect(testutil.Testdata("projects", "gomod"))
	if err != nil {
		t.Fatal(err)
	}
	text := Starter(kinds)
	for _, f := range append(append([]string(nil), TopFields...), StepFields...) {
		if !strings.Contains(text, "# "+f+":") {
			t.Errorf("no comment explains %s", f)
		}
	}
}

// Several kinds in one directory: every step is kept, clashing names get the tool's prefix.
func TestDetectSeveralKinds(t *testing.T) {
	dir := t.TempDir()
	testutil.CopyTree(t, testutil.Testdata("projects", "gomod"), dir)
	testutil.CopyTree(t, testutil.Testdata("projects", "cproj"), dir)
	testutil.CopyTree(t, testutil.Testdata("gates", "npm"), dir)
	kinds, err := Detect(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, k := range kinds {
		for _, s := range k.Steps {
			names = append(names, s.Name)
		}
	}
	if d := cmp.Diff([]string{"vet", "build", "test", "install", "npm-test", "make"}, names); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

// What Starter writes parses, with the steps Detect found.
func TestStarterParses(t *testing.T) {
	dir := t.TempDir()
	testutil.CopyTree(t, testutil.Testdata("projects", "gomod"), dir)
	testutil.CopyTree(t, testutil.Testdata("gates", "npm"), dir)
	kinds, err := Detect(dir)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Parse(dir+"/"+File, []byte(Starter(kinds)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range p.Steps {
		names = append(names, s.Name)
	}
	if d := cmp.Diff([]string{"vet", "build", "test", "install", "npm-test"}, names); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}
