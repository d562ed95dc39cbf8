package kernrun

import (
	"os"
	"strconv"
	"testing"
)

func TestProcStatFields(t *testing.T) {
	f := ProcStatFields(os.Getpid())
	if len(f) < 20 || f[0] != "R" && f[0] != "S" || f[1] != strconv.Itoa(os.Getppid()) {
		t.Errorf("own stat fields %q: want state R or S and parent %d", f[:min(len(f), 3)], os.Getppid())
	}
	if f := ProcStatFields(-1); f != nil {
		t.Errorf("fields of no process: %q", f)
	}
}

func TestProcStart(t *testing.T) {
	a, ok := ProcStart(os.Getpid())
	if b, ok2 := ProcStart(os.Getpid()); !ok || !ok2 || a == 0 || a != b {
		t.Errorf("own start time %d %v, then %d %v: want the same, non-zero", a, ok, b, ok2)
	}
	if _, ok := ProcStart(-1); ok {
		t.Error("a start time for no process")
	}
}

func TestStatusIDs(t *testing.T) {
	ids, ok := StatusIDs(os.Getpid())
	if !ok || ids.Tgid != os.Getpid() || ids.NSTgid != os.Getpid() || ids.NSPid != os.Getpid() {
		t.Errorf("own ids %+v %v: want this process's pid throughout (the host's PID namespace)", ids, ok)
	}
	if _, ok := StatusIDs(-1); ok {
		t.Error("ids of no process")
	}
}

// IsInitExe names the init stage whichever way it started: this binary, or the init program
// from its sealed memfd as the guard ("/memfd:NAME") and /proc ("... (deleted)") name it; a
// memfd of a longer name, or any other program, is not it.
func TestIsInitExe(t *testing.T) {
	for exe, want := range map[string]bool{
		SelfExe():                   true,
		"/memfd:" + InitProgramName: true,
		"/memfd:" + InitProgramName + " (deleted)": true,
		"/memfd:" + InitProgramName + "x":          false,
		"/memfd:evil":                              false,
		"/usr/bin/sh":                              false,
		"":                                         false,
	} {
		if got := IsInitExe(exe); got != want {
			t.Errorf("IsInitExe(%q) = %v, want %v", exe, got, want)
		}
	}
}
