package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/internal/hostcheck"
)

func TestKeptState(t *testing.T) {
	dir := t.TempDir()
	pins, run := filepath.Join(dir, "bpf"), filepath.Join(dir, "run")

	c := keptState(pins, run)
	if c.Status != hostcheck.Available || !c.Optional || !strings.Contains(c.Detail, "nothing kept yet") || c.Remedy != "" {
		t.Errorf("nothing on the host: got %+v", c)
	}

	for _, p := range []string{filepath.Join(pins, "guard-a"), filepath.Join(run, "learn-x.json"), filepath.Join(run, "guard-y.json")} {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	c = keptState(pins, run)
	for _, want := range []string{pins + ": 1 entry", run + ": 2 entries"} {
		if !strings.Contains(c.Detail, want) {
			t.Errorf("detail %q lacks %q", c.Detail, want)
		}
	}
	if !strings.Contains(c.Remedy, "rm -rf "+pins+" "+run) {
		t.Errorf("remedy %q does not say how to free it", c.Remedy)
	}
}
