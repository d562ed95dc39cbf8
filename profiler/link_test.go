package profiler_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/profiler"
	"github.com/sysprof/sysprof/trace"
)

// TestLinkSourceIsRead: the source of a hard link (link, linkat) is recorded as read. Where
// the link crosses a mount under enforce (EXDEV: a staged work tree and a bound $HOME), git's
// local clone, pnpm and ccache copy the file instead, which reads it (issue 24: a local clone
// was denied the objects it had only linked when learned).
func TestLinkSourceIsRead(t *testing.T) {
	testutil.RequireRoot(t)
	ln := realPath(t, "/bin/ln")
	dir := realPath(t, t.TempDir())
	src := filepath.Join(dir, "src.txt")
	if err := os.WriteFile(src, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	// ln makes the link with linkat(AT_FDCWD, src, AT_FDCWD, dst, 0).
	tr := learn(t, withTimeout(t, time.Minute), profiler.Options{Command: []string{ln, "src.txt", "dst.txt"}, Dir: dir})
	if tr.ExitCode != 0 {
		t.Fatalf("ln exit %d", tr.ExitCode)
	}
	if findFile(tr, ln, src, trace.AccessRead, true) == nil {
		t.Errorf("the link's source %s is not recorded as read; ln has:\n%q", src, filesOf(tr, ln))
	}
	if findFile(tr, ln, filepath.Join(dir, "dst.txt"), trace.AccessCreate, true) == nil {
		t.Errorf("the link itself is not recorded as created; ln has:\n%q", filesOf(tr, ln))
	}
}
