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
