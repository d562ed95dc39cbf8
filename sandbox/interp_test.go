package sandbox

import (
	"path/filepath"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
)

func TestInterpreterRules(t *testing.T) {
	interp := elfInterpreter("/usr/bin/true")
	if interp == "" {
		testutil.RequireNoErr(t, "a dynamically linked /usr/bin/true", testutil.NotAvailable("it has no ELF interpreter"))
	}
	resolved, err := filepath.EvalSymlinks(interp)
	if err != nil {
		t.Fatal(err)
	}
	// A directory of binaries implies its interpreter once.
	added, notes := interpreterRules([]pathRule{{Path: "/usr/bin", Role: "exec", Access: rightsExec}}, rightsExec)
	if len(added) != 1 || added[0].Path != resolved || added[0].Access != rightsExec || len(notes) != 1 {
		t.Errorf("exec /usr/bin: added %+v notes %q, want %s", added, notes, resolved)
	}
	// Already executable under another rule: nothing added.
	added, _ = interpreterRules([]pathRule{
		{Path: "/usr/bin/true", Role: "exec", Access: rightsExec},
		{Path: filepath.Dir(resolved), Role: "exec", Access: rightsExec},
	}, rightsExec)
	if len(added) != 0 {
		t.Errorf("interpreter already allowed: added %+v", added)
	}
	// Read rules never imply exec; non-ELF files are ignored.
	added, _ = interpreterRules([]pathRule{
		{Path: "/usr/bin/true", Role: "read", Access: rightsRead},
		{Path: "/etc/passwd", Role: "exec", Access: rightsExec},
	}, rightsExec)
	if len(added) != 0 {
		t.Errorf("added %+v for read rules and non-ELF", added)
	}
}
