package enforcer

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/changeset"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/sandbox"
)

// The write limits: the profile's, else the defaults (capped at a quarter of the host's RAM,
// the changeset being held in memory until the run ends), and the private tmpfs's inodes.
func TestDecideWriteLimits(t *testing.T) {
	const gib = 1 << 30
	for _, tc := range []struct {
		name   string
		l      policy.Limits
		ram    int64
		write  int64
		files  int64
		detail string
	}{
		{"defaults", policy.Limits{}, 64 * gib, policy.DefaultWriteMiB * mib, policy.DefaultWriteFiles, "writes 4096 MiB and 262144 files"},
		{"a small host: a quarter of its RAM", policy.Limits{}, 2 * gib, gib / 2, policy.DefaultWriteFiles, "default: pids, memory, tmp, writes, files"},
		{"a tiny host: never below 64 MiB", policy.Limits{}, 128 * mib, 64 * mib, policy.DefaultWriteFiles, "writes 64 MiB"},
		{"learned", policy.Limits{WriteMiB: 128, WriteFiles: 8192}, 64 * gib, 128 * mib, 8192, "writes 128 MiB and 8192 files"},
		// Learned before write limits (memory learned, writes not): its writes go to disk
		// as before, not into memory counted against its memoryMiB.
		{"learned before write limits", policy.Limits{MemoryMiB: 512}, 64 * gib, 0, policy.DefaultWriteFiles, "writes unbounded (the profile has no limits.writeMiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := limitsFor(&Compiled{profile: &policy.Profile{Limits: tc.l}}, hostFacts{RAM: tc.ram, CPUs: 1})
			if l.Write != tc.write || l.Files != tc.files || !strings.Contains(l.Detail, tc.detail) {
				t.Errorf("limits %+v, want writes %d files %d, detail with %q", l, tc.write, tc.files, tc.detail)
			}
		})
	}
}

// Each stage of the run's own changeset gets the write limits (its upper layer a tmpfs of that
// size); a stage holding an earlier step's writes (a gated run's shared changeset) does not,
// and the private tmpfs gets the inode limit.
func TestWriteLimitsOnStages(t *testing.T) {
	l := runLimits{Pids: 80, Memory: 256 * mib, Tmp: 64 * mib, Write: 128 * mib, Files: 4096}
	compiled := []sandbox.Stage{{Path: "/w"}, {Path: "/w/x", Shared: true}}
	plan := sandbox.Plan{Staged: compiled}
	(&enforcedRun{}).applyLimits(&l, &plan, sandbox.Identity{UID: 1000}, nil, true)
	if s := plan.Staged[0]; s.Size != 128*mib || s.Files != 4096 {
		t.Errorf("own stage %+v, want size 128 MiB and 4096 files", s)
	}
	if s := plan.Staged[1]; s.Size != 0 || s.Files != 0 {
		t.Errorf("shared stage %+v, want unbounded", s)
	}
	if compiled[0].Size != 0 {
		t.Error("applyLimits changed the compiled plan's stages")
	}
	if plan.TmpSize != 64*mib || plan.TmpFiles != 4096 {
		t.Errorf("private tmp size %d files %d, want 64 MiB and 4096", plan.TmpSize, plan.TmpFiles)
	}
}

// A stage whose writes filled its tmpfs is a denial naming the limit, where, and twice the
// limit as the grant; a stage within its limits is none.
func TestWriteLimitDenials(t *testing.T) {
	dir := t.TempDir()
	top := filepath.Join(dir, "stage-0")
	if err := os.MkdirAll(filepath.Join(top, "upper"), 0o755); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "stage-1")
	if err := os.MkdirAll(filepath.Join(other, "upper"), 0o755); err != nil {
		t.Fatal(err)
	}
	hit := `{"path":"/home/u/p","size":67108864,"files":4096,"used":67108864,"usedFiles":4096,"bytesFull":true,"filesFull":true}`
	if err := os.WriteFile(filepath.Join(top, sandbox.LimitFile), []byte(hit), 0o644); err != nil {
		t.Fatal(err)
	}
	stages := []changeset.Stage{
		{Rules: changeset.Rules{Dir: "/home/u/p"}, Upper: filepath.Join(top, "upper"), Top: top},
		{Rules: changeset.Rules{Dir: "/home/u/q"}, Upper: filepath.Join(other, "upper"), Top: other},
	}
	ds := writeLimitDenials(stages, &policy.Profile{}, Env{Vars: map[string]string{"WORKDIR": "/home/u/p"}})
	if len(ds) != 2 {
		t.Fatalf("denials %+v, want one for the bytes and one for the files of the first stage", ds)
	}
	if d := ds[0]; d.Change == nil || d.Change.Section != policy.SectionLimitWrite || d.Change.Item != "128" ||
		!strings.Contains(d.What, "write limit 64 MiB reached in $WORKDIR") || !strings.Contains(d.What, "ENOSPC") {
		t.Errorf("bytes denial %+v", d)
	}
	if d := ds[1]; d.Change == nil || d.Change.Section != policy.SectionLimitFiles || d.Change.Item != "8192" ||
		!strings.Contains(d.What, "file limit 4096 reached in $WORKDIR") {
		t.Errorf("files denial %+v", d)
	}
}

// On a kernel that cannot bound a stage (overlay layers by fd: 6.13), the stages are left
// unbounded and the layer's detail says why; the private tmpfs keeps its inode limit.
func TestWriteLimitsOnAnOlderKernel(t *testing.T) {
	h := hostFacts{RAM: 8 << 30, CPUs: 1, WriteBound: errors.New("Linux 6.1: overlayfs takes a tmpfs upper layer by fd since 6.13")}
	l := limitsFor(&Compiled{profile: &policy.Profile{Limits: policy.Limits{WriteMiB: 64, WriteFiles: 4096}}}, h)
	if l.Write != 0 || l.Files != 4096 || !strings.Contains(l.Detail, "writes unbounded (Linux 6.1") {
		t.Errorf("limits %+v, want writes unbounded and said, 4096 files", l)
	}
	plan := sandbox.Plan{Staged: []sandbox.Stage{{Path: "/w"}}}
	(&enforcedRun{}).applyLimits(&l, &plan, sandbox.Identity{UID: 1000}, nil, true)
	if s := plan.Staged[0]; s.Size != 0 || plan.TmpFiles != 4096 {
		t.Errorf("stage %+v tmp files %d, want unbounded and 4096", s, plan.TmpFiles)
	}
}

// The run's cgroup holds room above the memory limit for the profile's own write limit (a
// learned build's output, in memory until the run ends), none for the default: a memory bomb
// under a profile without write limits meets exactly memoryMiB.
func TestWriteRoom(t *testing.T) {
	h := hostFacts{RAM: 8 << 30, CPUs: 1}
	if l := limitsFor(&Compiled{profile: &policy.Profile{Limits: policy.Limits{MemoryMiB: 256, WriteMiB: 128}}}, h); l.WriteRoom != 128*mib {
		t.Errorf("learned writeMiB 128: room %d, want 128 MiB", l.WriteRoom)
	}
	if l := limitsFor(&Compiled{profile: &policy.Profile{Limits: policy.Limits{MemoryMiB: 256}}}, h); l.WriteRoom != 0 {
		t.Errorf("default write limit: room %d, want 0", l.WriteRoom)
	}
}
