package enforcer

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/sysprof/sysprof/paths"
)

// noExecTrees decides the read-only trees mounted noexec (the work tree and the home: a file
// shipped there, never written in the run, must not run through the loader either: `ld.so
// ./evil`, LD_PRELOAD, dlopen) and the paths inside them that stay exec-mappable: each learned
// exec rule (binaries, and the libraries learn saw mapped executable outside the system trees)
// as the file itself, or the directory before its first wildcard; the toolchain roots ($GOROOT,
// $RUSTUP_HOME: installed code whose libraries shipped profiles did not record). Landlock's
// exec rules still decide execve precisely. writableRoots (writable binds, stages, private tmp)
// keep their own noexec decision (noExecRoots) and are skipped; so are hidden paths. A tree an
// exec rule names as a whole stays exec (noted).
func (c *Compiled) noExecTrees(exec, writableRoots, hidden []string, env Env) (trees, keep []string) {
	for _, v := range []string{"WORKDIR", "HOME"} {
		t := resolvedDir(env.Vars[v])
		if t == "" || t == "/" || paths.CoveredBy(t, writableRoots) {
			continue
		}
		trees = append(trees, t)
	}
	inTree := func(p string) bool { return paths.CoveredBy(p, trees) }
	var wide []string
	add := func(p string) {
		switch {
		case !inTree(p) || paths.CoveredBy(p, writableRoots) || paths.CoveredBy(p, hidden):
		case slices.Contains(trees, p):
			wide = append(wide, p)
		default:
			keep = append(keep, p)
		}
	}
	for _, v := range paths.Vars() {
		if v.Role == paths.RoleToolchain {
			if d := resolvedDir(env.Vars[v.Name]); d != "" {
				add(d)
			}
		}
	}
	dirs := map[string]string{} // resolved directories: exec rules share most of theirs
	for _, x := range exec {
		p := staticPrefix(x)
		if r, err := resolveVia(p, dirs); err == nil {
			p = r
		} else {
			p = nearestExistingDir(p)
		}
		add(p)
	}
	for _, w := range wide {
		trees = slices.DeleteFunc(trees, func(t string) bool { return t == w })
		c.Notes = append(c.Notes, fmt.Sprintf("filesystem.exec: a rule covers all of %s: files there stay mappable executable (ld.so, LD_PRELOAD)", w))
	}
	keep = slices.DeleteFunc(keep, func(k string) bool { return !paths.CoveredBy(k, trees) })
	slices.Sort(trees)
	slices.Sort(keep)
	return slices.Compact(trees), slices.Compact(keep)
}

// resolveVia is filepath.EvalSymlinks(p) with p's directory resolved once per directory
// (dirs): an EvalSymlinks per rule was ~15 µs of lstats each.
func resolveVia(p string, dirs map[string]string) (string, error) {
	dir, base := filepath.Split(filepath.Clean(p))
	rd, ok := dirs[dir]
	if !ok {
		var err error
		if rd, err = filepath.EvalSymlinks(dir); err != nil {
			return "", err
		}
		dirs[dir] = rd
	}
	q := filepath.Join(rd, base)
	fi, err := os.Lstat(q)
	if err != nil {
		return "", err
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		return filepath.EvalSymlinks(q)
	}
	return q, nil
}

// resolvedDir is d with its symlinks resolved when it is an existing directory, else "".
func resolvedDir(d string) string {
	if d == "" {
		return ""
	}
	r, err := filepath.EvalSymlinks(d)
	if err != nil {
		return ""
	}
	if st, err := os.Stat(r); err != nil || !st.IsDir() {
		return ""
	}
	return filepath.Clean(r)
}
