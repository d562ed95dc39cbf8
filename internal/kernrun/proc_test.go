package kernrun

import (
	"os"
	"strconv"
	"testing"
)

func TestProcStatFields(t *testing.T) {
	f := ProcStatFields(os.Getpid())
	if len(f) < 20 || f[0] != "R" && f[0] != "S" || f[1] != strconv.Itoa(os.Getppid()) {
		t.Errorf("own stat fields %q: want state R or S and parent %d", f[:min(len(f), 3)], os.Getppid())
	}
	if f := ProcStatFields(-1); f != nil {
		t.Errorf("fields of no process: %q", f)
	}
}
