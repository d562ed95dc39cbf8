package profiler

import (
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

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

// runContext returns the machine-specific roots synthesis turns into variables. It only reads
// the environment and the file system: no `go env`, no `rustc --print`.
func runContext(workdir string, env []string) map[string]string {
	ctx := map[string]string{"WORKDIR": workdir}
	get := func(k string) string {
		v, _ := envLookup(env, k)
		return v
	}
	home := get("HOME")
	if home == "" {
		if u, err := user.Current(); err == nil {
			home = u.HomeDir
		}
	}
	if home != "" {
		ctx["HOME"] = filepath.Clean(home)
	}
	tmp := get("TMPDIR")
	if tmp == "" {
		tmp = "/tmp"
	}
	ctx["TMPDIR"] = filepath.Clean(tmp)
	usr := get("USER")
	if usr == "" {
		if u, err := user.Current(); err == nil {
			usr = u.Username
		}
	}
	if usr != "" {
		ctx["USER"] = usr
	}
	orHome := func(key, rel string) {
		if v := get(key); v != "" {
			ctx[key] = filepath.Clean(v)
		} else if home != "" {
			ctx[key] = filepath.Join(home, rel)
		}
	}
	orHome("CARGO_HOME", ".cargo")
	orHome("RUSTUP_HOME", ".rustup")
	for _, k := range []string{"GOROOT", "GOMODCACHE", "GOCACHE", "GOPATH", "NPM_CONFIG_CACHE"} {
		if v := get(k); v != "" {
			ctx[k] = filepath.Clean(v)
		}
	}
	if _, ok := ctx["GOROOT"]; !ok {
		// The go command in PATH lives in $GOROOT/bin: cheap, and usually right.
		if p, err := lookPathIn("go", get("PATH")); err == nil {
			if r, err := filepath.EvalSymlinks(p); err == nil && filepath.Base(filepath.Dir(r)) == "bin" {
				root := filepath.Dir(filepath.Dir(r))
				if _, err := os.Stat(filepath.Join(root, "src", "runtime")); err == nil {
					ctx["GOROOT"] = root
				}
			}
		}
	}
	if _, ok := ctx["GOMODCACHE"]; !ok {
		gopath := ctx["GOPATH"]
		if gopath == "" && home != "" {
			gopath = filepath.Join(home, "go")
		}
		if gopath != "" {
			ctx["GOMODCACHE"] = filepath.Join(strings.Split(gopath, ":")[0], "pkg", "mod")
		}
	}
	if _, ok := ctx["GOCACHE"]; !ok {
		if x := get("XDG_CACHE_HOME"); x != "" {
			ctx["GOCACHE"] = filepath.Join(x, "go-build")
		} else if home != "" {
			ctx["GOCACHE"] = filepath.Join(home, ".cache", "go-build")
		}
	}
	if v := get("npm_config_cache"); v != "" {
		ctx["NPM_CACHE"] = filepath.Clean(v)
	}
	delete(ctx, "NPM_CONFIG_CACHE")
	return ctx
}

func hostInfo() trace.Host {
	var u unix.Utsname
	h := trace.Host{Arch: trace.ArchX86_64}
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
