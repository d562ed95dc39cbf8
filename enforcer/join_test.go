package enforcer

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/internal/kernrun"
	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/internal/wire"
	"github.com/sysprof/sysprof/sandbox"
)

// A stage handed a cgroup file it cannot join (initstage.FDJoin: here one opened read-only)
// fails its run in the limits layer and never runs the command: run unbound, the command
// would leave no trace of having escaped its limits.
func TestStageJoinRefusedRunsNothing(t *testing.T) {
	dir := t.TempDir()
	ran := filepath.Join(dir, "ran")
	ro, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	st, err := spawnStage(&syscall.SysProcAttr{}, dir, os.Environ(), nil, nil, nil, false, false, []*os.File{ro})
	ro.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer st.finish()
	cfg := initConfig{Argv: []string{"/bin/sh", "-c", "echo > " + ran}, Dir: dir}
	if err := writeConfig(st.cfgW, cfg); err != nil {
		t.Fatal(err)
	}
	st.syncW.Write([]byte{1})
	var failed *initStatus
	r := bufio.NewReader(st.statusR)
	for {
		var m initStatus
		if err := wire.ReadFrame(r, &m); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("status: %v", err)
		}
		if m.Error != "" {
			failed = &m
		}
	}
	st.wait()
	if failed == nil || failed.Layer != sandbox.LayerLimits || !strings.Contains(failed.Error, "join") {
		t.Errorf("status %+v, want the limits layer's failed join", failed)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Error("the command ran outside the cgroup it was to join")
	}
}

// A cgroup2 limits group that Enter would move the stage into (its own, or an ordinary user's
// delegated one) is where the early stage is born (CLONE_INTO_CGROUP), and the command with
// it; the move is then not asked for. Here the group is a plain cgroup2 directory (this host's
// pids and memory controllers are v1): what is checked is the birth, not the limits.
func TestEarlyStageBornIntoItsLimitGroup(t *testing.T) {
	testutil.RequireRoot(t)
	cg, err := kernrun.NewCgroup()
	testutil.RequireNoErr(t, "a cgroup2 directory", err)
	defer cg.Remove()
	rg := &runLimitGroup{group: &kernrun.LimitGroup{V2: true, Delegated: true, Pids: cg.Dir, Memory: cg.Dir}, made: make(chan struct{})}
	close(rg.made)
	if rg.birth, err = rg.group.BirthDir(); err != nil || rg.birth == nil {
		t.Fatalf("BirthDir: %v, %v", rg.birth, err)
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "cgroup")
	attr := &syscall.SysProcAttr{}
	born := rg.bornInto(attr)
	st, err := spawnStage(attr, dir, os.Environ(), nil, nil, nil, false, false, nil)
	rg.born(born && err == nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.finish()
	rg.enter(st.pid)
	if !rg.self || rg.birth != nil {
		t.Errorf("born: self %v, birth %v (want no move asked, the directory closed)", rg.self, rg.birth)
	}
	if err := writeConfig(st.cfgW, initConfig{Argv: []string{"/bin/sh", "-c", "cat /proc/self/cgroup > " + out}, Dir: dir,
		Filter: sockFilter{{Op: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW}}}); err != nil {
		t.Fatal(err)
	}
	st.syncW.Write([]byte{1})
	r := bufio.NewReader(st.statusR)
	for {
		var m initStatus
		if err := wire.ReadFrame(r, &m); err != nil {
			break
		}
		if m.Error != "" {
			t.Errorf("the stage failed: %+v", m)
		}
	}
	st.wait()
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	rel := strings.TrimPrefix(cg.Dir, filepath.Dir(filepath.Dir(cg.Dir)))
	if !strings.Contains(string(b), "0::"+rel+"\n") {
		t.Errorf("the command's cgroups:\n%s\nwant 0::%s", b, rel)
	}
}
