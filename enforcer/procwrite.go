package enforcer

import (
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/sysprof/sysprof/policy"
)

// A learned write of a per-process /proc file (a launcher's /proc/self/oom_score_adj) cannot be
// a Landlock rule (it names /proc/self once, for the init stage) nor a writable mount (the
// pid directories come and go). It is granted by the supervisor instead, for exactly that
// file: /proc stays read-only in the sandbox, the filter sends every open for writing to the
// supervisor, which opens the learned file of the calling process (or, for a /proc/*/NAME
// rule, of any process of the sandbox but its init stage) itself and installs the descriptor
// in the caller (SECCOMP_IOCTL_NOTIF_ADDFD); every other open goes on, to the read-only
// mounts and Landlock as before. Only files whose writes the kernel checks against the writer
// (not the opener, whose descriptor the caller gets) are granted this way.

// procWritable are the /proc/<pid> files the supervisor may open for a process of the sandbox:
// their writes check the writing task's credentials (oom_score_adj below its minimum needs the
// writer's CAP_SYS_RESOURCE), so a descriptor opened by the supervisor grants nothing more.
var procWritable = []string{"oom_score_adj", "oom_adj"}

// ProcWrite is one per-process /proc file the profile writes.
type ProcWrite struct {
	Name    string `json:"name"`              // the file in /proc/<pid>/, e.g. oom_score_adj
	AnyPID  bool   `json:"any_pid,omitempty"` // a /proc/*/NAME rule: any process of the sandbox; else its own
	Granted bool   `json:"granted"`           // the supervisor opens it (procWritable); else refused
}

// procWrites are the per-process /proc files p writes: /proc/self/NAME, /proc/thread-self/NAME
// and /proc/*/NAME rules (also below task/*/).
func procWrites(p *policy.Profile) []ProcWrite {
	var out []ProcWrite
	for _, r := range p.Filesystem.Write {
		pid, name, ok := procFile(path.Clean(r.Path))
		if !ok {
			continue
		}
		w := ProcWrite{Name: name, AnyPID: pid == "*", Granted: slices.Contains(procWritable, name)}
		if i := slices.IndexFunc(out, func(x ProcWrite) bool { return x.Name == name }); i >= 0 {
			out[i].AnyPID = out[i].AnyPID || w.AnyPID
			continue
		}
		out = append(out, w)
	}
	return out
}

// procFile splits /proc/PID/NAME or /proc/PID/task/TID/NAME: PID is "self", "thread-self", "*"
// or a number (TID "*", "self" or a number); NAME has no slash.
func procFile(p string) (pid, name string, ok bool) {
	rest, ok := strings.CutPrefix(p, "/proc/")
	if !ok {
		return "", "", false
	}
	parts := strings.Split(rest, "/")
	switch {
	case len(parts) == 2:
	case len(parts) == 4 && parts[1] == "task" && (parts[2] == "*" || isPID(parts[2])):
	default:
		return "", "", false
	}
	pid, name = parts[0], parts[len(parts)-1]
	if pid != "self" && pid != "thread-self" && pid != "*" && !isPID(pid) || name == "" || strings.ContainsAny(name, "*?[") {
		return "", "", false
	}
	return pid, name, true
}

func isPID(s string) bool {
	n, err := strconv.Atoi(s)
	return err == nil && n > 0
}

// procTarget decides a write-open of p (absolute, as the caller sees it) by a task whose pid and
// thread id in the sandbox's PID namespace are tgid and tid: the namespace pid whose NAME the
// supervisor opens, or ok=false (the open goes on and meets the read-only /proc).
func procTarget(writes []ProcWrite, p string, tgid, tid int) (pid int, name string, ok bool) {
	who, name, ok := procFile(path.Clean(p))
	if !ok || who == "*" {
		return 0, "", false
	}
	i := slices.IndexFunc(writes, func(w ProcWrite) bool { return w.Name == name && w.Granted })
	if i < 0 {
		return 0, "", false
	}
	switch who {
	case "self", "thread-self":
		return tgid, name, true
	}
	n, _ := strconv.Atoi(who)
	if n == tgid || n == tid {
		return tgid, name, true // its own, by number
	}
	if !writes[i].AnyPID || n == 1 {
		return 0, "", false // another process (PID 1 is the init stage: never)
	}
	return n, name, true
}
