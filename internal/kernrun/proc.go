package kernrun

import (
	"bytes"
	"os"
	"strconv"
	"strings"
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
