package main

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sysprof/sysprof/changeset"
	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/report"
)

// The write bombs, bounded so that a run whose write limits do not hold still ends: a 256 MiB
// file (the limit under test is 16 MiB) and 10,000 empty files in the work tree (limit 4,096),
// and 10,000 empty files in the private /tmp.
const (
	diskBomb     = `dd if=/dev/zero of=big bs=1M count=256 2>/dev/null; echo "dd=$?"`
	inodeBomb    = `i=0; while [ $i -lt 10000 ] && printf '' > f$i 2>/dev/null; do i=$((i+1)); done; echo "made $i"`
	tmpInodeBomb = `i=0; while [ $i -lt 10000 ] && printf '' > ` + tmpFillFile + `$i 2>/dev/null; do i=$((i+1)); done; echo "made $i"`
	// learnedBuild writes 24 MiB and a few files, as the build learned.
	learnedBuild    = `dd if=/dev/zero of=out.bin bs=1M count=24 2>/dev/null; for i in 1 2 3; do echo $i > o$i; done; echo built`
	writeLimitMiB   = 16
	writeLimitFiles = 4096
)

// The host survives a disk bomb and an inode bomb under enforce, root and ordinary user: the
// stage's writes stop at the profile's limits with ENOSPC, what fitted is kept in the run's
// changeset, and the report names the limit and what may suffice. A build learned writing
// 24 MiB runs under its learned limits with no denial, its output applied whole.
func TestWriteLimitsHoldBombs(t *testing.T) {
	testutil.RequireRoot(t)
	exe, dir, shProf, _, bnd := bombSetup(t)
	tmpBomb := withWriteLimits(t, shProf, filepath.Join(dir, "tmpbomb.yaml"))
	prof := filepath.Join(dir, "build.yaml")
	learn := exec.Command(exe, "learn", "--fresh", "-p", prof, "--", "sh", "-c", learnedBuild+"; "+diskBomb+"; rm -f big")
	learn.Dir, learn.Env = dir, origEnv
	if out, err := learn.CombinedOutput(); err != nil {
		t.Fatalf("learn: %v\n%s", err, out)
	}
	p, err := policy.Load(prof)
	if err != nil {
		t.Fatal(err)
	}
	// 24 MiB (+256 MiB of the bomb's, removed again: not seen) x4 -> 128 MiB, the floor.
	if p.Limits.WriteMiB != policy.MinWriteMiB || p.Limits.WriteFiles != policy.MinWriteFiles {
		t.Errorf("learned write limits %+v, want the floors (24 MiB x4 is below): writeMiB %d, writeFiles %d", p.Limits, policy.MinWriteMiB, policy.MinWriteFiles)
	}
	os.Chmod(prof, 0o644)
	for _, f := range []string{"out.bin", "o1", "o2", "o3"} {
		os.Remove(filepath.Join(dir, f))
	}
	bombs := withWriteLimits(t, prof, filepath.Join(dir, "bombs.yaml"))
	t.Setenv("SYSPROF_STATE_DIR", filepath.Join(dir, ".local", "state", "sysprof", "runs"))

	for _, asUser := range []bool{false, true} {
		who := "root"
		if asUser {
			who = "nobody"
			os.RemoveAll(filepath.Join(dir, ".local")) // root's run state: nobody makes its own
		}
		t.Run(who+"/learned-build", func(t *testing.T) {
			_, rep, stdout := underBound(t, exe, dir, prof, asUser, learnedBuild, bnd)
			dropRuns(t)
			if !strings.Contains(stdout, "built") || len(limitHits(rep)) > 0 {
				t.Errorf("the learned build under its learned limits: %q, limit denials %+v", stdout, limitHits(rep))
			}
			if st, err := os.Stat(filepath.Join(dir, "out.bin")); err != nil || st.Size() != 24<<20 {
				t.Errorf("out.bin not applied whole: %v %v", st, err)
			}
			for _, f := range []string{"out.bin", "o1", "o2", "o3"} {
				os.Remove(filepath.Join(dir, f))
			}
		})
		t.Run(who+"/disk-bomb", func(t *testing.T) {
			_, rep, stdout := underBound(t, exe, dir, bombs, asUser, diskBomb, bnd)
			bytes, _ := heldInStages(t)
			dropRuns(t)
			// The profile learned writing big: what fitted is applied, not held.
			if st, err := os.Stat(filepath.Join(dir, "big")); err == nil {
				bytes += st.Sys().(*syscall.Stat_t).Blocks * 512
			}
			if !strings.Contains(stdout, "dd=1") || bytes > writeLimitMiB<<20 {
				t.Errorf("the stage took %d MiB (limit %d MiB); dd said %q", bytes>>20, writeLimitMiB, stdout)
			}
			if bytes < (writeLimitMiB-1)<<20 {
				t.Errorf("the stage kept %d bytes of what fitted, want about %d MiB", bytes, writeLimitMiB)
			}
			checkWriteHit(t, rep, policy.SectionLimitWrite, "write limit 16 MiB reached in $", "32")
			os.Remove(filepath.Join(dir, "big"))
		})
		t.Run(who+"/inode-bomb", func(t *testing.T) {
			_, rep, stdout := underBound(t, exe, dir, bombs, asUser, inodeBomb, bnd)
			_, files := heldInStages(t)
			dropRuns(t)
			if files > writeLimitFiles || strings.Contains(stdout, "made 10000") {
				t.Errorf("the stage took %d files (limit %d); the bomb said %q", files, writeLimitFiles, stdout)
			}
			checkWriteHit(t, rep, policy.SectionLimitFiles, "file limit 4096 reached in $", "8192")
		})
		t.Run(who+"/tmp-inode-bomb", func(t *testing.T) {
			_, _, stdout := underBound(t, exe, dir, tmpBomb, asUser, tmpInodeBomb, bnd)
			dropRuns(t)
			if !strings.Contains(stdout, "made 40") || strings.Contains(stdout, "made 10000") {
				t.Errorf("the private /tmp took more than %d files: %q", writeLimitFiles, stdout)
			}
		})
	}
}

// withWriteLimits writes the profile from with the write limits under test to to.
func withWriteLimits(t *testing.T, from, to string) string {
	t.Helper()
	p, err := policy.Load(from)
	if err != nil {
		t.Fatal(err)
	}
	p.Limits.WriteMiB, p.Limits.WriteFiles = writeLimitMiB, writeLimitFiles
	if err := policy.Save(to, p); err != nil {
		t.Fatal(err)
	}
	os.Chmod(to, 0o644)
	return to
}

func limitHits(rep *report.Report) []report.Denial {
	var out []report.Denial
	for _, d := range rep.Denials {
		if d.Kind == report.KindLimit {
			out = append(out, d)
		}
	}
	return out
}

// checkWriteHit wants a limit denial of section whose text has what and whose grant raises the
// limit to suffice.
func checkWriteHit(t *testing.T, rep *report.Report, section, what, suffice string) {
	t.Helper()
	for _, d := range limitHits(rep) {
		if d.Change != nil && d.Change.Section == section {
			if !strings.Contains(d.What, what) || d.Change.Item != suffice {
				t.Errorf("denial %q (%s: %s), want %q and %s: %s", d.What, d.Change.Section, d.Change.Item, what, section, suffice)
			}
			return
		}
	}
	t.Errorf("no %s denial in the report: %+v", section, rep.Denials)
}

// heldInStages is what the runs' stages hold on the host: bytes allocated and entries.
func heldInStages(t *testing.T) (bytes, files int64) {
	t.Helper()
	runs, err := changeset.List()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		for _, s := range r.Stages {
			filepath.WalkDir(s.Upper, func(p string, d fs.DirEntry, err error) error {
				if err != nil || p == s.Upper {
					return nil
				}
				files++
				if info, err := d.Info(); err == nil {
					bytes += info.Sys().(*syscall.Stat_t).Blocks * 512
				}
				return nil
			})
		}
	}
	return bytes, files
}

func dropRuns(t *testing.T) {
	t.Helper()
	runs, _ := changeset.List()
	for _, r := range runs {
		if err := r.Drop(); err != nil {
			t.Errorf("drop run %s: %v", r.ID, err)
		}
	}
}
