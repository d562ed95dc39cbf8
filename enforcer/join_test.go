package enforcer

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

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
