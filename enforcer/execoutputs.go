package enforcer

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sysprof/sysprof/paths"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/sandbox"
)

// stageExec is what narrowStageExec decided: the stages mounted noexec although exec rules lie
// in them, the output directories made exec when the command makes them, and the existing
// paths inside those stages that stay exec-mappable.
type stageExec struct {
	stages  []string // stage roots mounted noexec as a whole
	outputs []string // missing output directories: bound exec once made (sandbox.Plan.ExecOutputs)
	files   []string // programs written into an existing directory: bound exec at their exec (sandbox.Plan.ExecFiles)
	keep    []string // existing exec rules' paths inside those stages (sandbox.Plan.ExecKeep)
}

// narrowStageExec keeps a stage noexec when the exec rules inside it name outputs the run makes
// in a directory that does not exist yet (cargo's target/, out/, node_modules/ in a fresh
// checkout) or existing files: otherwise exec on the stage, which for an output in the work
// tree is the work tree, would make every file the checkout shipped mappable executable
// (`LD_PRELOAD=./evil.so`, `ld.so ./tool/evil`) and, with Landlock's exec granted on the
// directory holding the output (execDirs), runnable. The output directory (its outermost
// missing directory) becomes a mount of its own without noexec when the command makes it; an
// existing file or directory an exec rule names (not an output) is bound exec over itself. A
// program the run writes right in an existing directory (`go build -o app && ./app`, `gcc -o
// prog && ./prog` at the top of the tree: a binary learn saw run) is bound exec over itself,
// the file alone, when the command execs it (sandbox.Plan.ExecFiles): it has no inode to name
// before the run writes it. A stage holding an exec rule this cannot narrow (a library written
// right in an existing directory, which the loader maps without an exec the supervisor sees;
// a glob whose fixed part is the stage) stays exec as a whole, noted.
func (c *Compiled) narrowStageExec(exec, binds, programs []string, env Env) stageExec {
	var out stageExec
	for _, s := range c.Stages {
		var outputs, files, keep []string
		narrow, any := true, false
		for _, x := range exec {
			sp := staticPrefix(x)
			if paths.Within(s.Dir, sp) {
				narrow = false // a rule on the stage or above it, or a glob of its entries
				break
			}
			if !paths.Within(sp, s.Dir) || paths.CoveredBy(sp, binds) || slices.Contains(binds, sp) {
				continue // elsewhere, or in a bind with its own flags
			}
			any = true
			if k := outputRule(x, s.Keep); k != "" {
				if w := missingOutputDir(x, k); w != "" && paths.Within(w, s.Dir) && w != s.Dir {
					outputs = append(outputs, w)
					continue
				}
				if outputProgram(x, s.Dir, programs) {
					files = append(files, x)
					continue
				}
				narrow = false
				if forbiddenExecRoot(s.Dir, env) {
					c.Notes = append(c.Notes, fmt.Sprintf("filesystem.exec: %s is an output of this run (%s) in no directory of its own: the staged %s stays mappable executable as a whole, the files it had too", x, k, s.Dir))
				}
				break
			}
			if _, err := os.Lstat(sp); err == nil {
				keep = append(keep, sp)
			}
			// A missing path no write rule makes is not there to run: nothing to keep.
		}
		if !narrow || !any {
			continue
		}
		out.stages = append(out.stages, s.Dir)
		out.outputs = append(out.outputs, outputs...)
		out.files = append(out.files, files...)
		out.keep = append(out.keep, keep...)
		if len(outputs) > 0 {
			c.Notes = append(c.Notes, fmt.Sprintf("filesystem.exec: the staged %s is noexec; %s become mappable executable when the command makes them (what the run writes there)", s.Dir, strings.Join(slices.Compact(slices.Sorted(slices.Values(outputs))), ", ")))
		}
		if len(files) > 0 {
			c.Notes = append(c.Notes, fmt.Sprintf("filesystem.exec: the staged %s is noexec; %s run when the command runs them (the file alone: the directory's other files stay noexec)", s.Dir, strings.Join(slices.Compact(slices.Sorted(slices.Values(files))), ", ")))
		}
	}
	for _, p := range []*[]string{&out.stages, &out.outputs, &out.files, &out.keep} {
		slices.Sort(*p)
		*p = slices.Compact(*p)
	}
	return out
}

// outputProgram reports whether exec rule x, an output of the run in stage dir, is a program
// (a binary learn saw run) written right into an existing directory of the stage: a plain path
// whose directory is there.
func outputProgram(x, dir string, programs []string) bool {
	if paths.HasGlob(x) || x == dir || !paths.Within(x, dir) || !slices.Contains(programs, x) {
		return false
	}
	st, err := os.Stat(filepath.Dir(x))
	return err == nil && st.IsDir()
}

// programPaths are the profile's binaries on this host.
func programPaths(p *policy.Profile, env Env) []string {
	var out []string
	for _, b := range p.Binaries {
		if h, err := expand(b.Path, env); err == nil && filepath.IsAbs(h) {
			out = append(out, filepath.Clean(h))
		}
	}
	return out
}

// missingOutputDir returns the directory to bind exec for exec rule x that write rule k covers
// (an output of the run), when it does not exist yet: the outermost missing directory of the
// output directory (k for a plain k that x lies strictly below, the directory of x a glob k's
// first wildcard matches, the directory of a file k; a profile learned in a warm tree names out/app, one learned in a fresh
// checkout out/). "" when the output directory exists.
func missingOutputDir(x, k string) string {
	var o string
	switch {
	case paths.HasGlob(k):
		// The directory of x that k's first wildcard component matches ($WORKDIR/target for
		// a fresh cargo's $WORKDIR/target*), the fixed part when that is all x names.
		sp, xs := staticPrefix(k), staticPrefix(x)
		rel, err := filepath.Rel(sp, xs)
		if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
			o = sp
			break
		}
		first, rest, _ := strings.Cut(rel, string(filepath.Separator))
		if rest == "" && !paths.HasGlob(x) {
			o = sp // x is a file k's wildcard matches: written right in sp
			break
		}
		o = filepath.Join(sp, first)
	case x != k && paths.Within(staticPrefix(x), k):
		o = k
	default:
		o = filepath.Dir(k) // a file output: the directory it is written in
	}
	n := nearestExistingDir(o)
	if n == o {
		return ""
	}
	rel, err := filepath.Rel(n, o)
	if err != nil || strings.HasPrefix(rel, "..") {
		return ""
	}
	first, _, _ := strings.Cut(rel, string(filepath.Separator))
	return filepath.Join(n, first)
}

// mountExec is the exec the mounts allow inside the Landlock exec rules (for the guard, which
// reports an EACCES only where the sandbox refused it): the exec rules in a noexec stage (its
// root, for an output execDirs could only grant there) are replaced by its output directories
// and kept paths.
func (x stageExec) mountExec(ll *sandbox.Landlock) *sandbox.Landlock {
	if ll == nil || len(x.stages) == 0 {
		return ll
	}
	cp := *ll
	cp.Exec = nil
	for _, e := range ll.Exec {
		if !slices.ContainsFunc(x.stages, func(s string) bool { return paths.Within(e, s) }) {
			cp.Exec = append(cp.Exec, e)
		}
	}
	// Not the output files: the mount refuses one it would not bind (a hard link, a symlink,
	// an i386 exec), and that refusal is the sandbox's, on the record.
	cp.Exec = slices.Concat(cp.Exec, x.outputs, x.keep)
	slices.Sort(cp.Exec)
	cp.Exec = slices.Compact(cp.Exec)
	return &cp
}
