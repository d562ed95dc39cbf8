package profiler_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/profiler"
	"github.com/sysprof/sysprof/trace"
)

// learnWorkerEnv holds a learnWorker's job: TestLearnWorker runs it in a process of its own.
const learnWorkerEnv = "SYSPROF_TEST_LEARN_WORKER"

type learnWorker struct {
	Warm    string   `json:"warm"`    // the warm hand-over directory the workers share
	Command []string `json:"command"` // what to learn
	Out     string   `json:"out"`     // where the trace goes (JSON)
	D       uint64   `json:"d"`       // the XOR of the two victims' exe keys (steerRunIDs)
	B       bool     `json:"b"`       // the command runs victim b
}

// Learns in separate processes at once, of two executables, hand their probes to each other as
// e2e's and shipped's did (a probe's runs alternate between binaries): each run records what the
// dynamic loader read for its own executable, every round. Before the dedup fingerprint hashed
// the run id on its own, a run of b after one of a lost the loader's reads whenever their run
// ids differed by the XOR of the two exe keys (steerRunIDs gives them such ids; on a host,
// /usr/bin/ls run i and /usr/bin/look run i^1 did).
func TestConcurrentLearnsKeepTheirEvents(t *testing.T) {
	testutil.RequireRoot(t)
	victim := realPath(t, testutil.BuildC(t, "victim/victim.c"))

	// What the loader does for the victim, learned with programs of the run's own.
	restore := profiler.SwapWarmDir("")
	ctl := learn(t, withTimeout(t, time.Minute), profiler.Options{Command: []string{victim, "exit", "0"}})
	restore()
	want := loaderAccesses(ctl, victim)
	if len(want) == 0 {
		t.Fatalf("the victim's loader read nothing (linked statically?): %+v", ctl.Files)
	}

	dir := realPath(t, t.TempDir())
	a, b := filepath.Join(dir, "victim-a"), filepath.Join(dir, "victim-b")
	copyExecutable(t, victim, a)
	copyExecutable(t, victim, b)
	d, err := exeKeyXOR(a, b)
	testutil.RequireNoErr(t, "inode generations of the victims (FS_IOC_GETVERSION)", err)
	if d < 1<<16 {
		testutil.RequireNoErr(t, "victims with exe keys apart", testutil.NotAvailable("exe keys of %s and %s differ by %#x only", a, b, d))
	}

	warm := t.TempDir()
	const rounds = 16
	for round := 1; round <= rounds; round++ {
		var wg sync.WaitGroup
		traces := make([]*trace.Trace, 2)
		for i, exe := range []string{a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				traces[i] = runLearnWorker(t, learnWorker{Warm: warm, Command: []string{exe, "exit", "0"},
					Out: filepath.Join(dir, fmt.Sprintf("trace-%d-%d.json", round, i)), D: d, B: exe == b})
			}()
		}
		wg.Wait()
		for i, exe := range []string{a, b} {
			tr := traces[i]
			if tr == nil {
				continue // the worker failed: reported
			}
			if tr.ExitCode != 0 || tr.Incomplete {
				t.Errorf("round %d, %s: exit %d, incomplete %v %q", round, filepath.Base(exe), tr.ExitCode, tr.Incomplete, tr.Reasons)
			}
			got := loaderAccesses(tr, exe)
			for f := range want {
				if !got[f] {
					t.Errorf("round %d, %s: the loader's %s of %s (ok %v) not recorded", round, filepath.Base(exe), f.access, f.path, f.ok)
				}
			}
		}
	}
}

// TestLearnWorker is a process of TestConcurrentLearnsKeepTheirEvents: it learns one command, as
// the CLI would, and writes the trace. It does nothing unless that test started it.
func TestLearnWorker(t *testing.T) {
	job := os.Getenv(learnWorkerEnv)
	if job == "" {
		return
	}
	var w learnWorker
	if err := json.Unmarshal([]byte(job), &w); err != nil {
		t.Fatalf("%s: %v", learnWorkerEnv, err)
	}
	t.Cleanup(profiler.SwapWarmDir(w.Warm))
	t.Cleanup(profiler.SwapNextRunID(steerRunIDs(w.D, w.B)))
	tr, err := profiler.Run(withTimeout(t, time.Minute), profiler.Options{Command: w.Command,
		Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: io.Discard})
	profiler.Settle() // hands the probe on, as sysprof does before it exits
	if err != nil {
		t.Fatalf("Run %q: %v", w.Command, err)
	}
	b, err := json.Marshal(tr)
	if err == nil {
		err = os.WriteFile(w.Out, b, 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// runLearnWorker runs w in a new process of the test binary and returns its trace (nil, with
// the failure reported, when there is none).
func runLearnWorker(t *testing.T, w learnWorker) *trace.Trace {
	job, _ := json.Marshal(w)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestLearnWorker$", "-test.count=1")
	cmd.Env = append(os.Environ(), learnWorkerEnv+"="+string(job))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Errorf("learn worker %q: %v\n%s", w.Command, err, out.Bytes())
		return nil
	}
	b, err := os.ReadFile(w.Out)
	var tr trace.Trace
	if err == nil {
		err = json.Unmarshal(b, &tr)
	}
	if err != nil {
		t.Errorf("learn worker %q: its trace: %v\n%s", w.Command, err, out.Bytes())
		return nil
	}
	return &tr
}

// steerRunIDs numbers the runs of a probe so that a run of victim b after one of victim a has
// id(a) ^ d, d the XOR of their exe keys. Ids below top stand for x (a run of a), those from
// top up for x ^ d (of b); x grows by one a run, except from a run of a to one of b, so no
// id repeats along a probe's runs.
func steerRunIDs(d uint64, b bool) func(prev uint64) uint64 {
	top := uint64(1) << (bits.Len64(d) - 1)
	return func(prev uint64) uint64 {
		x, afterA := prev, prev < top
		if !afterA {
			x = prev ^ d
		}
		switch {
		case b && afterA:
			return x ^ d
		case b:
			return (x + 1) ^ d
		default:
			return x + 1
		}
	}
}

// fsIocGetversion is FS_IOC_GETVERSION, _IOR('v', 1, long): an inode's generation.
const fsIocGetversion = 0x80087601

// exeKeyXOR is the XOR of learn.c's exe keys of two files on one file system: its read_inode
// makes a key of ino ^ dev*k ^ generation<<32.
func exeKeyXOR(a, b string) (uint64, error) {
	var sa, sb unix.Stat_t
	if err := errors.Join(unix.Stat(a, &sa), unix.Stat(b, &sb)); err != nil {
		return 0, err
	}
	if sa.Dev != sb.Dev {
		return 0, fmt.Errorf("%s and %s are on different file systems", a, b)
	}
	ga, err := generation(a)
	if err != nil {
		return 0, err
	}
	gb, err := generation(b)
	if err != nil {
		return 0, err
	}
	return sa.Ino ^ sb.Ino ^ uint64(ga^gb)<<32, nil
}

func generation(path string) (uint32, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	g, err := unix.IoctlGetUint32(fd, fsIocGetversion)
	if err != nil {
		return 0, fmt.Errorf("FS_IOC_GETVERSION %s: %w", path, err)
	}
	return g, nil
}

func copyExecutable(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err == nil {
		err = os.WriteFile(dst, b, 0o755)
	}
	if err != nil {
		t.Fatal(err)
	}
}

type loaderAccess struct {
	path, access string
	ok           bool
}

// loaderAccesses are exe's file accesses in tr other than its own exec: for `victim exit 0`,
// what the dynamic loader did.
func loaderAccesses(tr *trace.Trace, exe string) map[loaderAccess]bool {
	out := map[loaderAccess]bool{}
	for _, f := range tr.Files {
		if f.Exe == exe && f.Path != exe {
			out[loaderAccess{f.Path, f.Access, f.OK}] = true
		}
	}
	return out
}
