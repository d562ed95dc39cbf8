package profiler

import (
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/bpf"
	"github.com/sysprof/sysprof/paths"
	"github.com/sysprof/sysprof/trace"
)

// envLookup looks a variable up in an environment list (last one wins, like the libc).
func envLookup(env []string, key string) (string, bool) {
	val, found := "", false
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			val, found = v, true
		}
	}
	return val, found
}

// Context returns the machine-specific roots synthesis turns into variables for a command
// run in workdir with environment env: the path variables as paths.Host finds them (what
// enforce reads too) and the user's name. It runs no process: no `go env`, no `rustc --print`.
func Context(workdir string, env []string) map[string]string {
	lookup := paths.EnvList(env)
	ctx := paths.Host(workdir, lookup)
	usr, _ := lookup("USER")
	if usr == "" {
		if u, err := user.Current(); err == nil {
			usr = u.Username
		}
	}
	if usr != "" {
		ctx["USER"] = usr
	}
	return ctx
}

func hostInfo() trace.Host {
	var u unix.Utsname
	h := trace.Host{Arch: bpf.NativeArch.Name}
	if err := unix.Uname(&u); err == nil {
		h.Kernel = unix.ByteSliceToString(u.Release[:])
	}
	h.Hostname, _ = os.Hostname()
	return h
}

// lookPathIn is exec.LookPath over the PATH of the command's environment. It returns a
// *CommandError with 127 when nothing is found, 126 when only non-executable files are.
func lookPathIn(name, pathEnv string) (string, error) {
	if strings.Contains(name, "/") {
		return name, checkExecutable(name, name)
	}
	var found error
	for _, dir := range filepath.SplitList(pathEnv) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, name)
		err := checkExecutable(name, p)
		if err == nil {
			if !filepath.IsAbs(p) {
				if abs, err := filepath.Abs(p); err == nil {
					p = abs
				}
			}
			return p, nil
		}
		if ce, ok := err.(*CommandError); ok && ce.Code == 126 && found == nil {
			found = err
		}
	}
	if found != nil {
		return "", found
	}
	return "", &CommandError{Name: name, Code: 127, Err: exec.ErrNotFound}
}

func checkExecutable(name, p string) error {
	st, err := os.Stat(p)
	if err != nil {
		return &CommandError{Name: name, Code: 127, Err: err}
	}
	if st.IsDir() {
		return &CommandError{Name: name, Code: 126, Err: unix.EISDIR}
	}
	if err := unix.Access(p, unix.X_OK); err != nil || st.Mode()&0o111 == 0 {
		return &CommandError{Name: name, Code: 126, Err: os.ErrPermission}
	}
	return nil
}
