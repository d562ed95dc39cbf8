package e2e

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
)

// The CLI these tests run is built as make builds it (scripts/build.sh): with the enforce init
// stage's program embedded (the sysprof_init tag, the program non-empty in the binary), so
// that every enforce test here goes through the program started from a sealed memfd, the
// path that ships, not sysprof re-executing itself.
func TestCLIEmbedsTheInitProgram(t *testing.T) {
	out, err := exec.Command("go", "version", "-m", testutil.SysprofBin).CombinedOutput()
	if err != nil {
		t.Fatalf("go version -m: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "-tags=sysprof_init") {
		t.Errorf("sysprof built without the sysprof_init tag (no init program embedded):\n%s", out)
	}
	prog, err := os.ReadFile(testutil.SysprofBin + ".init")
	if err != nil {
		t.Fatalf("the init program scripts/build.sh built: %v", err)
	}
	bin, err := os.ReadFile(testutil.SysprofBin)
	if err != nil {
		t.Fatal(err)
	}
	if len(prog) < 1<<20 || !strings.Contains(string(bin), string(prog[:4096])) {
		t.Error("the init program is not in the sysprof binary")
	}
}
