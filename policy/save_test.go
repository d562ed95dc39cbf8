package policy

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// learnOnce is one simulated learn into path: Lock → Load → Merge → Save.
func learnOnce(path, who string) error {
	return Update(path, func(cur *Profile) (*Profile, error) {
		run := &Profile{
			Metadata: Metadata{Name: "t", Command: []string{"t"}, Runs: 1},
			Syscalls: Syscalls{Allow: []Syscall{{Name: "read", Provenance: Provenance{By: "/bin/" + who, Seen: 1}}}},
			Filesystem: Filesystem{
				Read: []PathRule{{Path: "$WORKDIR/" + who, Provenance: Provenance{Seen: 1}}},
			},
		}
		return Merge(cur, run), nil
	})
}

func checkLearned(t *testing.T, path string, whos []string) {
	t.Helper()
	p, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if p.Metadata.Runs != len(whos) {
		t.Errorf("runs = %d, want %d: a learn was lost", p.Metadata.Runs, len(whos))
	}
	if len(p.Syscalls.Allow) != 1 || p.Syscalls.Allow[0].Seen != len(whos) {
		t.Errorf("read seen %+v, want %d", p.Syscalls.Allow, len(whos))
	}
	have := map[string]bool{}
	for _, r := range p.Filesystem.Read {
		have[r.Path] = true
	}
	for _, w := range whos {
		if !have["$WORKDIR/"+w] {
			t.Errorf("$WORKDIR/%s lost", w)
		}
	}
	leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".*.tmp-*"))
	if len(leftovers) > 0 {
		t.Errorf("temporary files left behind: %v", leftovers)
	}
}

func TestConcurrentLearnsGoroutines(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".sysprof", "t.yaml")
	const workers, each = 8, 10
	var wg sync.WaitGroup
	var whos []string
	errs := make(chan error, workers*each)
	for w := range workers {
		for i := range each {
			whos = append(whos, fmt.Sprintf("g%d-%d", w, i))
		}
		wg.Go(func() {
			for i := range each {
				if err := learnOnce(path, fmt.Sprintf("g%d-%d", w, i)); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	checkLearned(t, path, whos)
}

const lockHelperEnv = "SYSPROF_POLICY_TEST_LEARN"

// TestMain makes the test binary a child of TestConcurrentLearnsProcesses when lockHelperEnv
// names the profile and the child's id: it learns 10 times and exits.
func TestMain(m *testing.M) {
	if spec := os.Getenv(lockHelperEnv); spec != "" {
		path, id, _ := strings.Cut(spec, "|")
		for i := range 10 {
			if err := learnOnce(path, id+"-"+strconv.Itoa(i)); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestConcurrentLearnsProcesses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.yaml")
	const procs = 6
	var cmds []*exec.Cmd
	var whos []string
	for p := range procs {
		id := "p" + strconv.Itoa(p)
		for i := range 10 {
			whos = append(whos, id+"-"+strconv.Itoa(i))
		}
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), lockHelperEnv+"="+path+"|"+id)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	// Learn from this process too, while the children run.
	for i := range 10 {
		id := "parent-" + strconv.Itoa(i)
		whos = append(whos, id)
		if err := learnOnce(path, id); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("child: %v", err)
		}
	}
	checkLearned(t, path, whos)
}

func TestSaveAtomicReplacesAndKeepsMode(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "p.yaml")
	p := sampleProfile()
	if err := Save(path, p); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", fi.Mode().Perm())
	}
	q, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := Marshal(p)
	got, _ := Marshal(q)
	if string(want) != string(got) {
		t.Error("Save → Load changed the profile")
	}
	// An invalid profile is refused and the old file stays.
	bad := Clone(p)
	bad.Syscalls.Allow = append(bad.Syscalls.Allow, Syscall{Name: "opennat"})
	if err := Save(path, bad); err == nil || !strings.Contains(err.Error(), `syscalls.allow[6].name: "opennat"`) {
		t.Errorf("Save of an invalid profile: %v", err)
	}
	after, _ := os.ReadFile(path)
	if string(after) != string(want) {
		t.Error("a refused Save changed the file")
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}
}

func TestUpdateNoWriteOnError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.yaml")
	if err := Update(path, func(cur *Profile) (*Profile, error) {
		if cur != nil {
			t.Error("current profile of a new file should be nil")
		}
		return nil, fmt.Errorf("boom")
	}); err == nil || err.Error() != "boom" {
		t.Errorf("Update: %v", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("Update wrote a file although fn failed: %v", err)
	}
}

func TestUnlockTwice(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.yaml")
	unlock, err := Lock(path)
	if err != nil {
		t.Fatal(err)
	}
	unlock()
	unlock()
	unlock2, err := Lock(path)
	if err != nil {
		t.Fatal(err)
	}
	unlock2()
}
