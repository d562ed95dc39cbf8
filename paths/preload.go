package paths

import (
	"debug/elf"
	"os"
	"path/filepath"
	"strings"
)

// SystemLibDirs are the directories whose libraries only root installs: a library there that
// the user preloads is the host's, not something a project or a tool put in place.
var SystemLibDirs = []string{"/lib", "/lib64", "/usr/lib", "/usr/lib64"}

// UserPreload returns the libraries of the LD_PRELOAD in a run's environment (lookup) and
// whether every one of them is a system library: an absolute path that is, with its links
// resolved and $LIB expanded, in SystemLibDirs, or a bare name the loader finds only there
// (LD_LIBRARY_PATH unset). A preload of a file in the work tree or $HOME is no system library
// (and stays unmappable there: those trees are noexec). files are the system libraries'
// resolved paths (a bare name has none).
func UserPreload(lookup Lookup) (libs, files []string, system bool) {
	v, _ := lookup("LD_PRELOAD")
	// ld.so splits LD_PRELOAD at spaces and colons.
	libs = strings.FieldsFunc(v, func(r rune) bool { return r == ' ' || r == ':' || r == '\t' || r == '\n' })
	if len(libs) == 0 {
		return nil, nil, false
	}
	llp, _ := lookup("LD_LIBRARY_PATH")
	for _, l := range libs {
		if !strings.Contains(l, "/") {
			if llp != "" {
				return libs, nil, false
			}
			continue
		}
		f := ""
		if filepath.IsAbs(l) {
			f = systemLib(l)
		}
		if f == "" {
			return libs, nil, false
		}
		files = append(files, f)
		files = append(files, needed(f)...)
	}
	return libs, files, true
}

// LoaderEnv reports whether the dynamic loader acts on the variable name (ld.so's LD_*, glibc's
// GLIBC_TUNABLES): code or settings the caller gives every dynamically linked program it starts.
// sysprof's own processes in the sandbox (the init stage) never get them; the command does.
func LoaderEnv(name string) bool {
	return strings.HasPrefix(name, "LD_") || name == "GLIBC_TUNABLES"
}

// needed returns the system libraries the library f names as needed (DT_NEEDED), found in the
// directory of f or the system library directories (libfaketime needs libm): the loader reads
// them for the preload, whatever the tool.
func needed(f string) []string {
	e, err := elf.Open(f)
	if err != nil {
		return nil
	}
	defer e.Close()
	names, _ := e.ImportedLibraries()
	dirs := []string{filepath.Dir(f)}
	for _, d := range SystemLibDirs {
		for _, tok := range libTokens {
			if t, ok := strings.CutPrefix(tok, "lib/"); ok {
				dirs = append(dirs, filepath.Join(d, t))
			}
		}
		dirs = append(dirs, d)
	}
	var out []string
	for _, n := range names {
		for _, d := range dirs {
			if real := systemLib(filepath.Join(d, filepath.Base(n))); real != "" {
				out = append(out, real)
				break
			}
		}
	}
	return out
}

// libTokens are what ld.so puts for $LIB in a preload's path (Debian's faketime sets
// /usr/$LIB/faketime/libfaketime.so.1): the multiarch directory or the plain one.
var libTokens = []string{"lib/x86_64-linux-gnu", "lib/aarch64-linux-gnu", "lib64", "lib"}

// systemLib returns the file the preload path l names when it is in SystemLibDirs, links
// resolved, with $LIB expanded as the loader does ("": not a system library); any other token
// ($ORIGIN, $PLATFORM) is not one.
func systemLib(l string) string {
	if !strings.Contains(l, "$") {
		real, err := filepath.EvalSymlinks(l)
		if err != nil || !CoveredBy(real, SystemLibDirs) {
			return ""
		}
		return real
	}
	for _, tok := range libTokens {
		x := strings.NewReplacer("${LIB}", tok, "$LIB", tok).Replace(l)
		if strings.Contains(x, "$") {
			return ""
		}
		if _, err := os.Stat(x); err == nil {
			return systemLib(x)
		}
	}
	return ""
}
