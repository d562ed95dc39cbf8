package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/internal/testutil"
)

// A staged tree whose path is longer than fsconfig's 255-byte strings (a checkout deep in a CI
// runner's builds directory: TestPerturbationsSeven's long-cwd, enforce refused with "overlay
// lowerdir=...: invalid argument") is staged all the same, with its upper and work layers as
// long. Detached: nothing is attached to the host's tree.
func TestStageLongPaths(t *testing.T) {
	testutil.RequireRoot(t)
	long := filepath.Join(t.TempDir(), strings.Repeat("a-long-directory-name-", 6), strings.Repeat("another-long-directory-", 6))
	s := Stage{Path: filepath.Join(long, "project"), Upper: filepath.Join(long, "top", "upper"), Work: filepath.Join(long, "top", "work")}
	for _, d := range []string{s.Path, s.Upper, s.Work} {
		if len(d) < 256 {
			t.Fatalf("BUG: %s is not longer than fsconfig takes", d)
		}
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	testutil.WriteFile(t, filepath.Join(s.Path, "hello.c"), "int x;\n", 0o644)
	sm, err := openStage(s, nil, nil, &Result{})
	testutil.RequireNoErr(t, "stage a tree with a long path", err)
	defer sm.close()
	fd, err := unix.Openat(sm.fd, "hello.c", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("the staged tree does not show the lower layer's file: %v", err)
	}
	unix.Close(fd)
	fd, err = unix.Openat(sm.fd, "hello.o", unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
	if err != nil {
		t.Fatalf("write in the staged tree: %v", err)
	}
	unix.Close(fd)
	if _, err := os.Stat(filepath.Join(s.Upper, "hello.o")); err != nil {
		t.Errorf("the write is not in the upper layer: %v", err)
	}
}
