package kernrun

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/sysprof/sysprof/internal/hostcheck"
	"github.com/sysprof/sysprof/internal/testutil"
)

// Tracefs is doctor's tracefs, with its events (mounted when nothing provided it).
func TestTracefs(t *testing.T) {
	testutil.RequireRoot(t)
	d, err := Tracefs()
	testutil.RequireNoErr(t, "tracefs", err)
	if _, err := os.Stat(filepath.Join(d, "events", "syscalls")); err != nil {
		t.Errorf("tracefs %s has no syscall events: %v", d, err)
	}
	if p, err := hostcheck.TracefsMount(); err != nil || p != d {
		t.Errorf("doctor finds tracefs at %q (%v), runs at %q", p, err, d)
	}
}
