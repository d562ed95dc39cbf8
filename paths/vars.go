package paths

import (
	"bufio"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"strings"
)

// Role says what a variable's directory is, which decides how compile may treat it.
type Role int

const (
	RoleWork      Role = iota // the work tree
	RoleTemp                  // the temporary directory
	RoleHome                  // the user's home, or a tool's home that holds programs on PATH ($PNPM_HOME)
	RoleToolchain             // an installed toolchain ($GOROOT)
	RoleCache                 // a tool's cache or package store, created by the tool on first use
)

// Var is one path variable: a name a portable path may start with ($NAME) and how its value
// is found on a host.
type Var struct {
	Name string // without the `$`
	// Env are the environment variables that set it, the first one set to an absolute path
	// winning (npm reads npm_config_cache, in either case).
	Env []string
	// Default is where the tool puts it when no variable says (see Host); "" has none.
	Default string
	Role    Role
	// Grant: widening a write or exec rule below this directory to an existing ancestor that
	// is still at or below it is harmless (the work tree, temp, tool caches, rustup's home).
	Grant bool
	// Create: compile creates this directory when a write rule names it and it is missing, as
	// the tool would on its first run (a fresh $HOME has no $GOCACHE yet).
	Create bool
}

// vars in the order policy lists them in its messages. rank below orders them for ties.
var vars = []Var{
	{Name: "WORKDIR", Default: "the command's working directory", Role: RoleWork, Grant: true},
	{Name: "HOME", Env: []string{"HOME"}, Default: "the user's home in the password database", Role: RoleHome},
	{Name: "TMPDIR", Env: []string{"TMPDIR"}, Default: "/tmp", Role: RoleTemp, Grant: true},
	{Name: "CARGO_HOME", Env: []string{"CARGO_HOME"}, Default: "$HOME/.cargo", Role: RoleCache, Grant: true, Create: true},
	{Name: "RUSTUP_HOME", Env: []string{"RUSTUP_HOME"}, Default: "$HOME/.rustup", Role: RoleToolchain, Grant: true},
	{Name: "GOROOT", Env: []string{"GOROOT"}, Default: "the root of the go on $PATH, else the one sysprof was built with", Role: RoleToolchain},
	{Name: "GOMODCACHE", Env: []string{"GOMODCACHE"}, Default: "go env file, else $GOPATH/pkg/mod", Role: RoleCache, Grant: true, Create: true},
	{Name: "GOCACHE", Env: []string{"GOCACHE"}, Default: "go env file, else $XDG_CACHE_HOME/go-build, else $HOME/.cache/go-build", Role: RoleCache, Grant: true, Create: true},
	{Name: "NPM_CACHE", Env: []string{"npm_config_cache", "NPM_CONFIG_CACHE"}, Default: "$HOME/.npm", Role: RoleCache, Grant: true, Create: true},
	{Name: "GOPATH", Env: []string{"GOPATH"}, Default: "go env file, else $HOME/go (the first entry of a list)", Role: RoleCache},
	// The go command's own config directory (its telemetry counters, `go env -w`'s env file,
	// which is protected): it follows $XDG_CONFIG_HOME as go does.
	{Name: "GOCONFIG", Default: "$XDG_CONFIG_HOME/go, else $HOME/.config/go", Role: RoleCache, Create: true},
	// pnpm's home holds its global bins (on PATH) beside its store: not a cache as a whole;
	// $PNPM_HOME/store is one (policy, synth).
	{Name: "PNPM_HOME", Env: []string{"PNPM_HOME"}, Default: "$XDG_DATA_HOME/pnpm, else $HOME/.local/share/pnpm", Role: RoleHome},
}

// rank is the order portable paths prefer variables whose values are equal: the narrower,
// more specific name first ($WORKDIR over $HOME when the command runs in the home).
var rank = map[string]int{
	"WORKDIR": 0, "GOCACHE": 1, "GOMODCACHE": 2, "GOROOT": 3, "CARGO_HOME": 4, "RUSTUP_HOME": 5,
	"NPM_CACHE": 6, "GOPATH": 7, "PNPM_HOME": 8, "GOCONFIG": 9, "TMPDIR": 10, "HOME": 11,
}

// Movable reports whether variable name (without the `$`) is a directory the environment
// places anywhere, incidental to what the command does: the temporary directory and the tool
// caches (TMPDIR or GOCACHE inside the work tree or the home, as CI jobs set them). Not the
// work tree, the home or a toolchain.
func Movable(name string) bool {
	for _, v := range vars {
		if v.Name == name {
			return v.Role == RoleTemp || v.Role == RoleCache
		}
	}
	return false
}

// Vars returns the path variables, in the order policy lists them. The caller may modify the
// returned slice.
func Vars() []Var { return append([]Var(nil), vars...) }

// Names returns the variable names without the `$`, in the order of Vars.
func Names() []string {
	out := make([]string, len(vars))
	for i, v := range vars {
		out[i] = v.Name
	}
	return out
}

// GrantRoots returns the values of the Grant variables in values (names without the `$`),
// cleaned, in the order of Vars.
func GrantRoots(values map[string]string) []string {
	var out []string
	for _, v := range vars {
		if x := values[v.Name]; v.Grant && x != "" {
			out = append(out, filepath.Clean(x))
		}
	}
	return out
}

// CacheRoot reports whether host path p is exactly the value of a Create variable (a tool
// cache root such as $GOCACHE: a directory by definition).
func CacheRoot(values map[string]string, p string) bool {
	for _, v := range vars {
		if x := values[v.Name]; v.Create && x != "" && filepath.Clean(x) == p {
			return true
		}
	}
	return false
}

// Lookup finds an environment variable, like os.LookupEnv.
type Lookup func(key string) (string, bool)

// EnvList is a Lookup over an environment list (KEY=value), the last entry winning as in libc.
func EnvList(env []string) Lookup {
	return func(key string) (string, bool) {
		val, found := "", false
		for _, kv := range env {
			if k, v, ok := strings.Cut(kv, "="); ok && k == key {
				val, found = v, true
			}
		}
		return val, found
	}
}

// Host returns the value of every path variable (names without the `$`) for a command run in
// workdir with the environment lookup gives. learn and enforce both call it, so a variable
// learn writes always expands under enforce on the same host with the same environment.
// A variable with no absolute value is left out (no $HOME: nothing under it). Values are
// real paths (Resolve): the same directory has one value however it was reached.
//
// It reads the environment, stats a few files (the go on $PATH, Go's env file) and, only when
// $HOME is unset, the password database: no process is run (`go env` would cost a fork and
// an exec on every enforce), so a value set in a place only the tool reads (a .npmrc's cache=)
// is not seen; pass it as an environment variable.
func Host(workdir string, lookup Lookup) map[string]string {
	get := func(k string) string {
		v, ok := lookup(k)
		if !ok {
			return ""
		}
		return absClean(v)
	}
	out := map[string]string{}
	set := func(k, v string) {
		if v != "" {
			out[k] = v
		}
	}
	if workdir != "" && !filepath.IsAbs(workdir) {
		workdir, _ = filepath.Abs(workdir)
	}
	home := get("HOME")
	if home == "" {
		if u, err := user.Current(); err == nil {
			home = absClean(u.HomeDir)
		}
	}
	set("HOME", home)
	if wd := absClean(workdir); wd != "" {
		set("WORKDIR", ProjectRoot(Resolve(wd), Resolve(home)))
		if gitdir, common, ok := LinkedGitDirs(out["WORKDIR"]); ok {
			set(GitDirKey, gitdir)
			set(GitCommonKey, common)
		}
	}
	under := func(base string, rel ...string) string {
		if base == "" {
			return ""
		}
		return filepath.Join(append([]string{base}, rel...)...)
	}
	first := func(vs ...string) string {
		for _, v := range vs {
			if v != "" {
				return v
			}
		}
		return ""
	}
	set("TMPDIR", first(get("TMPDIR"), "/tmp"))
	set("CARGO_HOME", first(get("CARGO_HOME"), under(home, ".cargo")))
	set("RUSTUP_HOME", first(get("RUSTUP_HOME"), under(home, ".rustup")))
	set("NPM_CACHE", first(get("npm_config_cache"), get("NPM_CONFIG_CACHE"), under(home, ".npm")))
	set("PNPM_HOME", first(get("PNPM_HOME"), under(get("XDG_DATA_HOME"), "pnpm"), under(home, ".local", "share", "pnpm")))

	// Go: the environment, then the file `go env -w` writes, then go's own defaults.
	var goenv map[string]string
	fromGo := func(k string) string {
		if v := get(k); v != "" {
			return v
		}
		if goenv == nil {
			goenv = goEnvFile(lookup, home)
		}
		return goenv[k]
	}
	gopath := firstListEntry(lookup, "GOPATH")
	if gopath == "" {
		if goenv == nil {
			goenv = goEnvFile(lookup, home)
		}
		gopath = goenv["GOPATH"]
	}
	gopath = first(gopath, under(home, "go"))
	set("GOPATH", gopath)
	set("GOMODCACHE", first(fromGo("GOMODCACHE"), under(gopath, "pkg", "mod")))
	set("GOCONFIG", goConfigDir(lookup, home))
	cacheHome := first(get("XDG_CACHE_HOME"), under(home, ".cache"))
	set("GOCACHE", first(fromGo("GOCACHE"), under(cacheHome, "go-build")))
	goroot := get("GOROOT")
	if goroot == "" {
		goroot = gorootOnPath(lookup)
	}
	if goroot == "" {
		goroot = absClean(runtime.GOROOT())
	}
	set("GOROOT", goroot)
	for k, v := range out {
		out[k] = Resolve(v)
	}
	return out
}

// Resolve returns absolute path p with the symlinks of its longest existing ancestor resolved
// (the rest, not there yet, kept as is): the kernel reports and checks the real path, so a
// HOME, a work tree or a TMPDIR reached through a link must have its real value, in learn and
// enforce alike. A path that does not resolve is returned unchanged.
func Resolve(p string) string {
	rest := ""
	for d := p; ; d = filepath.Dir(d) {
		if real, err := filepath.EvalSymlinks(d); err == nil {
			return filepath.Join(real, rest)
		}
		if d == "/" || d == "." {
			return p
		}
		rest = filepath.Join(filepath.Base(d), rest)
	}
}

// absClean returns v cleaned when it is an absolute path, else "".
func absClean(v string) string {
	if v == "" || !filepath.IsAbs(v) {
		return ""
	}
	return filepath.Clean(v)
}

// firstListEntry is the first absolute entry of a list variable (GOPATH=/a:/b is /a: where go
// puts pkg/mod and bin).
func firstListEntry(lookup Lookup, k string) string {
	v, _ := lookup(k)
	for _, e := range filepath.SplitList(v) {
		if e = absClean(e); e != "" {
			return e
		}
	}
	return ""
}

// goEnvFile reads the absolute GOPATH, GOCACHE and GOMODCACHE settings of Go's env file
// ($GOENV, else $XDG_CONFIG_HOME/go/env, else $HOME/.config/go/env), as go itself does.
func goEnvFile(lookup Lookup, home string) map[string]string {
	out := map[string]string{}
	file, _ := lookup("GOENV")
	switch {
	case file == "off":
		return out
	case file == "":
		if dir := goConfigDir(lookup, home); dir != "" {
			file = filepath.Join(dir, "env")
		}
	}
	if file == "" {
		return out
	}
	f, err := os.Open(file)
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), "=")
		switch {
		case !ok:
		case k == "GOPATH":
			for _, e := range filepath.SplitList(v) {
				if e = absClean(e); e != "" {
					out[k] = e
					break
				}
			}
		case k == "GOCACHE" || k == "GOMODCACHE":
			if v = absClean(v); v != "" {
				out[k] = v
			}
		}
	}
	return out
}

// goConfigDir is the go command's config directory: os.UserConfigDir's go ($XDG_CONFIG_HOME/go,
// else $HOME/.config/go), or "" with neither.
func goConfigDir(lookup Lookup, home string) string {
	dir, _ := lookup("XDG_CONFIG_HOME")
	if dir = absClean(dir); dir == "" {
		if home == "" {
			return ""
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "go")
}

// gorootOnPath is the root of the go command on $PATH (…/bin/go, symlinks resolved), when
// that root holds Go's sources: a /usr/bin/go that is not a link must not make /usr $GOROOT.
func gorootOnPath(lookup Lookup) string {
	pathEnv, _ := lookup("PATH")
	for _, dir := range filepath.SplitList(pathEnv) {
		if !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, "go")
		st, err := os.Stat(p)
		if err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			continue
		}
		real, err := filepath.EvalSymlinks(p)
		if err != nil || filepath.Base(filepath.Dir(real)) != "bin" {
			return ""
		}
		root := filepath.Dir(filepath.Dir(real))
		if _, err := os.Stat(filepath.Join(root, "src", "runtime")); err != nil {
			return ""
		}
		return root
	}
	return ""
}

// legacySpellings are the portable forms an older learn wrote for what a variable now names:
// go's config directory was $HOME/.config/go before $GOCONFIG.
var legacySpellings = []struct{ old, now string }{{"$HOME/.config/go", "$GOCONFIG"}}

// Canonical returns portable path p in today's vocabulary: a path an older learn wrote below
// a directory a variable now names starts with that variable ($HOME/.config/go/telemetry →
// $GOCONFIG/telemetry), so that a committed profile and a new learn name it alike.
func Canonical(p string) string {
	for _, l := range legacySpellings {
		if p == l.old || strings.HasPrefix(p, l.old+"/") {
			return l.now + p[len(l.old):]
		}
	}
	return p
}
