package enforcer

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

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
	sc := bufio.NewScanner(st.statusR)
	for sc.Scan() {
		var m initStatus
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("status %q: %v", sc.Text(), err)
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
