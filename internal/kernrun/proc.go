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
		if pp <= 1 || pp == rootPid && ExeOf(pp) == SelfExe() {
			break // the init stage, PID 1 of the sandbox, is nobody's parent in a report
		}
		out = append(out, ExeOf(pp))
		cur = pp
	}
	return out
}

func tgidOf(tid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/status")
	if err != nil {
		return tid
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Tgid:"); ok {
			if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
				return n
			}
		}
	}
	return tid
}

func ppidOf(pid int) int {
	f := ProcStatFields(pid)
	if len(f) < 2 {
		return 0
	}
	n, _ := strconv.Atoi(f[1])
	return n
}
