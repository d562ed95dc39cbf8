package profiler_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/profiler"
	"github.com/sysprof/sysprof/trace"
)

// TestDirectoryPathsAfterRenames checks the paths of events relative to a directory learn.c
// has already sent (it then sends the directory's id, not its path): files stat'ed through a
// held dirfd and a subdirectory opened through it, before and after the directory is renamed by
// the traced process itself and by a process outside the run.
func TestDirectoryPathsAfterRenames(t *testing.T) {
	testutil.RequireRoot(t)
	victim := realPath(t, testutil.BuildC(t, "victim/victim.c"))
	dir := realPath(t, t.TempDir())
	j := func(p string) string { return filepath.Join(dir, p) }
	os.MkdirAll(j("p/a/sub"), 0o755)
	for _, f := range []string{"p/a/x", "p/a/y", "p/a/w", "p/a/v", "p/a/sub/z", "p/a/sub/q"} {
		writeFile(t, j(f), f)
	}

	// The outside rename: when the victim's marker appears, rename p2/a to p2/c, then remove it.
	done := make(chan struct{})
	go func() {
		defer close(done)
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			if _, err := os.Stat(j("mark")); err == nil {
				if err := os.Rename(j("p2/a"), j("p2/c")); err != nil {
					t.Errorf("outside rename: %v", err)
				}
				os.Remove(j("mark"))
				return
			}
			time.Sleep(time.Millisecond)
		}
		t.Errorf("the victim never made its marker")
		os.Remove(j("mark"))
	}()
	// Absolute names where the step must not touch the thread's two cached directories.
	tr := learn(t, withTimeout(t, time.Minute), profiler.Options{Dir: dir, Command: []string{victim,
		"dirfd-open", "p/a", // p/a: its path sent with an id
		"dirfd-stat", "x", // p/a/x: by that id
		"dirfd-sub", "sub", "z", // p/a/sub: the walk stops at p/a; p/a/sub/z by sub's id
		"rename", j("p"), j("p2"), // in the run, a parent of both: every cached path is stale
		"dirfd-stat", "y", // p2/a/y
		"dirfd-sub", "sub", "q", // p2/a/sub/q (p2/a/sub is not sent again: opens dedup by inode)
		"mark-wait", j("mark"), // outside the run: p2/a becomes p2/c
		"dirfd-stat", "w", // p2/c/w
	}})
	<-done
	if tr.ExitCode != 0 || tr.Incomplete {
		t.Fatalf("exit %d, incomplete %v %q", tr.ExitCode, tr.Incomplete, tr.Reasons)
	}
	for _, w := range []struct{ path, access string }{
		{"p/a", trace.AccessList},
		{"p/a/x", trace.AccessMetadata},
		{"p/a/sub", trace.AccessList},
		{"p/a/sub/z", trace.AccessMetadata},
		{"p2/a/y", trace.AccessMetadata},
		{"p2/a/sub/q", trace.AccessMetadata},
		{"p2/c/w", trace.AccessMetadata},
	} {
		if findFile(tr, victim, j(w.path), w.access, true) == nil {
			t.Errorf("missing %s %s; the victim has:\n%s", w.access, w.path, strings.Join(filesOf(tr, victim), "\n"))
		}
	}
	for _, stale := range []string{"p/a/y", "p/a/sub/q", "p2/a/w", "p/a/w"} {
		for _, f := range tr.Files {
			if f.Path == j(stale) {
				t.Errorf("%s recorded under the directory's old name %s", f.Access, stale)
			}
		}
	}
}
