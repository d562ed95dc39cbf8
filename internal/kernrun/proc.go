package kernrun

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// ProcStatFields returns the fields of /proc/PID/stat after the command name, which may hold
// spaces and parentheses: index 0 is the state (field 3 in proc(5)), 1 the parent pid, 19 the
// start time. nil when the process is gone.
func ProcStatFields(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(string(b[i+1:]))
}

// ProcStart returns pid's start time (clock ticks after boot; with the pid it names one
// process), ok false when the process is gone or a zombie.
func ProcStart(pid int) (uint64, bool) {
	f := ProcStatFields(pid)
	if len(f) < 20 || f[0] == "Z" || f[0] == "X" {
		return 0, false
	}
	start, err := strconv.ParseUint(f[19], 10, 64)
	return start, err == nil
}

// SelfExe is this executable, as the kernel names it (the init stage runs it). Computed when
// first needed: every process of this binary, the init stage included, would pay for it.
var SelfExe = sync.OnceValue(func() string {
	p, err := os.Executable()
	if err != nil {
		return ""
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
})

// InitProgramName names the sealed memfd the init stage's own program runs from (enforcer).
const InitProgramName = "sysprof-init"

// IsInitExe reports whether exe, as /proc or the guard names it, is the init stage's: this
// binary re-executed, or the init program from its memfd ("/memfd:sysprof-init", "(deleted)"
// in /proc). Callers check the pid too (the sandbox's root): a memfd of that name the
// command makes is no init stage.
func IsInitExe(exe string) bool {
	if exe == "" {
		return false
	}
	if exe == SelfExe() {
		return true
	}
	rest, ok := strings.CutPrefix(exe, "/memfd:"+InitProgramName)
	return ok && (rest == "" || rest == " (deleted)")
}

// ExeOf is pid's executable, or "(unknown)".
func ExeOf(pid int) string {
	exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
	if err != nil {
		return "(unknown)"
	}
	return exe
}

// ParentsOf returns the executables from pid's parent up to rootPid (the sandbox's root).
func ParentsOf(rootPid, pid int) []string {
	var out []string
	cur := tgidOf(pid)
	for range 32 {
		if cur == rootPid || cur <= 1 {
			break
		}
		pp := ppidOf(cur)
		if pp <= 1 || pp == rootPid && IsInitExe(ExeOf(pp)) {
			break // the init stage, PID 1 of the sandbox, is nobody's parent in a report
		}
		out = append(out, ExeOf(pp))
		cur = pp
	}
	return out
}

func tgidOf(tid int) int {
	if ids, ok := StatusIDs(tid); ok {
		return ids.Tgid
	}
	return tid
}

// IDs are a thread's ids from /proc/TID/status: its thread group on the host, and its thread
// group and thread id in its innermost PID namespace (the last of NStgid and NSpid).
type IDs struct{ Tgid, NSTgid, NSPid int }

// StatusIDs reads tid's IDs; ok is false when the thread is gone or a line is missing.
func StatusIDs(tid int) (IDs, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/status")
	if err != nil {
		return IDs{}, false
	}
	last := func(v string) int {
		fs := strings.Fields(v)
		if len(fs) == 0 {
			return 0
		}
		n, _ := strconv.Atoi(fs[len(fs)-1])
		return n
	}
	var ids IDs
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(line, ":")
		switch k {
		case "Tgid":
			ids.Tgid = last(v)
		case "NStgid":
			ids.NSTgid = last(v)
		case "NSpid":
			ids.NSPid = last(v)
		}
	}
	return ids, ids.Tgid > 0 && ids.NSTgid > 0 && ids.NSPid > 0
}

func ppidOf(pid int) int {
	f := ProcStatFields(pid)
	if len(f) < 2 {
		return 0
	}
	n, _ := strconv.Atoi(f[1])
	return n
}
