package main

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sysprof/sysprof/trace"
)

// countFiles takes a shortcut for paths that arrive sorted; it must count what a set would,
// whatever the order and however many executables share a path.
func TestCountFilesMatchesSets(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	exes := []string{"/usr/bin/find", "/usr/bin/cc", "/usr/bin/ld"}
	accesses := []string{trace.AccessRead, trace.AccessMetadata, trace.AccessList}
	for _, tc := range []struct {
		name    string
		exes    int
		shuffle bool
	}{{"one exe, sorted", 1, false}, {"three exes, sorted by exe", 3, false}, {"three exes, any order", 3, true}} {
		t.Run(tc.name, func(t *testing.T) {
			var files []trace.FileAccess
			for e := range tc.exes {
				for i := range 500 {
					for _, a := range accesses {
						if rng.IntN(3) == 0 {
							continue
						}
						files = append(files, trace.FileAccess{Exe: exes[e], Path: fmt.Sprintf("/usr/p%03d", i%(100*(e+1))),
							Access: a, OK: rng.IntN(5) != 0})
					}
				}
			}
			if tc.shuffle {
				rng.Shuffle(len(files), func(i, j int) { files[i], files[j] = files[j], files[i] })
			}
			sets := map[string]map[string]bool{}
			failed := 0
			for _, f := range files {
				if !f.OK {
					failed++
					continue
				}
				if sets[f.Access] == nil {
					sets[f.Access] = map[string]bool{}
				}
				sets[f.Access][f.Path] = true
			}
			want := map[string]int{}
			for a, s := range sets {
				want[a] = len(s)
			}
			before := fmt.Sprint(files)
			got, gotFailed := countFiles(files)
			if diff := cmp.Diff(want, got); diff != "" || gotFailed != failed {
				t.Errorf("countFiles: failed %d, want %d; counts (-want +got):\n%s", gotFailed, failed, diff)
			}
			if fmt.Sprint(files) != before {
				t.Error("countFiles reordered the trace's files")
			}
		})
	}
}
