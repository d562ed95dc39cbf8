package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sysprof/sysprof/internal/testutil"
)

// guardSlotWork makes $2 distinct denied creates under $1, ~0.1 s apart, then a last one.
const guardSlotWork = `i=0
while [ $i -lt ${2:-30} ]; do
  echo x > $1/gsrepro-$i 2>/dev/null
  i=$((i+1)); sleep 0.1
done
echo x > $1/gsrepro-LAST 2>/dev/null
exit 0
`

// TestGuardSlotConcurrentRunsAcrossPidNamespaces (issue 23): while an enforce records ~3 s of
// file denials, short enforces run beside it, two at a time, half of them in a pid namespace
// of their own (`unshare -pf --mount-proc`). Those saw no pid of the long run's: they freed its
// guard slot as if its owner were dead, the next short run took the slot, and the long run's
// report lost every file denial from then on (4 of 4 trials before the fix).
func TestGuardSlotConcurrentRunsAcrossPidNamespaces(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireTools(t, hostPath, "unshare", "sh")
	dir, err := os.MkdirTemp("/var/cache", "sysprof-e2e-guardslot-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.WriteFile(filepath.Join(dir, "work.sh"), []byte(guardSlotWork), 0o755); err != nil {
		t.Fatal(err)
	}
	profile := filepath.Join(dir, "p.yaml")
	run := func(wrap []string, args ...string) error {
		argv := append(append(wrap, testutil.SysprofBin), args...)
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "PATH="+hostPath)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%q: %v\n%s", argv, err, out)
		}
		return nil
	}
	if err := run(nil, "learn", "-p", profile, "--", "sh", "./work.sh", "/nonexistent-guardslot"); err != nil {
		t.Fatal(err)
	}
	for trial := range 3 {
		rep := filepath.Join(dir, fmt.Sprintf("long%d.json", trial))
		long := make(chan error, 1)
		go func() {
			long <- run(nil, "enforce", "-p", profile, "--report", rep, "--", "sh", "./work.sh", "/usr", "30")
		}()
		time.Sleep(300 * time.Millisecond)
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for _, wrap := range [][]string{nil, nil, {"unshare", "-pf", "--mount-proc"}, {"unshare", "-pf", "--mount-proc"}} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 6 {
					if err := run(wrap, "enforce", "-p", profile, "--", "sh", "./work.sh", "/usr", "1"); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if err := <-long; err != nil {
			t.Fatal(err)
		}
		rp := testutil.ReadReport(t, rep)
		n := 0
		for _, d := range rp.Denials {
			if strings.Contains(d.Path, "/gsrepro-") {
				n++
			}
		}
		var lost []string
		for _, note := range rp.Notes {
			if strings.Contains(note, "may be missing") {
				lost = append(lost, note)
			}
		}
		if n != 31 || len(lost) > 0 || rp.LostRecords != 0 {
			t.Errorf("trial %d: the long run recorded %d of its 31 denied creates (%d lost): %q", trial, n, rp.LostRecords, lost)
		}
	}
}
