package enforcer

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sysprof/sysprof/paths"
	"github.com/sysprof/sysprof/sandbox"
)

// StageSpec is one staged directory of the plan (sandbox.Stage) and the rules its changeset is
// classified by (changeset.Rules): what a Keep rule covers is learned and applied after the run;
// everything else the command wrote there is held for review, never discarded.
type StageSpec struct {
	Dir string `json:"dir"` // host path, no symlinks
	// Keep are the write rules (host paths, globs allowed) at or below Dir: a path they cover
	// is learned.
	Keep []string `json:"keep"`
	// Protected are the protected paths (paths.ProtectedPaths) at or below Dir that no Keep
	// rule names whole: below one, only what a Keep rule at or below it covers is learned
	// (the work tree's rule never carries a hook in .git; a .git/index rule carries the index).
	Protected []string `json:"protected,omitempty"`
}

// writeGrants is what planWrites decided.
type writeGrants struct {
	landlock []string // Landlock write rules: bound directories, stage roots, private tmp roots
	binds    []string // host directories bound writable
	stages   []StageSpec
}

// planWrites turns the write rules into grants that mean exactly what was learned (issue 14
// item 3):
//   - an existing directory is bound writable, unless it became a symlink or resolves outside
//     the root its variable names (refused: Unenforceable). Protected paths inside it stay
//     read-only (a read-only bind when they exist; when one does not, the directory is staged
//     instead, so that the tool cannot create it);
//   - a file, a path that does not exist yet, or a glob is never widened to its directory: its
//     nearest existing directory is staged (an overlay whose writes are applied only for
//     the rules that cover them);
//   - a tool cache root ($GOCACHE, ...) that is missing is created, as the tool would;
//   - paths in the private /tmp get the tmpfs, which is private anyway.
func (c *Compiled) planWrites(write, exec []string, privateTmp bool, env Env) writeGrants {
	protected := protectedHostPaths(env)
	w := c.sortWrites(write, exec, privateTmp, env)
	binds, staged := c.protectBinds(w.binds, protected, w.keep, appendOnlyTrees(env))
	stageDirs := c.stageDirs(append(w.stage, staged...), binds, w.keep, env)
	g := writeGrants{landlock: w.landlock, binds: binds}
	for _, d := range stageDirs {
		s := StageSpec{Dir: d, Keep: keepUnder(w.keep, d)}
		for _, q := range protected {
			if paths.Within(q, d) && !namesWhole(q, s.Keep) {
				s.Protected = append(s.Protected, q)
			}
		}
		g.stages = append(g.stages, s)
		c.Notes = append(c.Notes, fmt.Sprintf("filesystem.write: %s is staged: writes there go to the run's changeset; what %s cover is applied after the run, anything else is held for review (`sysprof changes`)", d, strings.Join(s.Keep, ", ")))
	}
	g.landlock = append(g.landlock, g.binds...)
	g.landlock = append(g.landlock, stageDirs...)
	slices.Sort(g.landlock)
	g.landlock = slices.Compact(g.landlock)
	return g
}

// sortedWrites are the write rules sorted by what grants them (sortWrites).
type sortedWrites struct {
	landlock []string // devices and private tmp roots: Landlock only
	binds    []string // existing directories, resolved
	stage    []string // the directories to stage for files, missing paths and globs
	keep     []string // what the changeset applies: every rule that is bound or staged, resolved
}

// sortWrites decides for each write rule whether Landlock alone grants it (a device, the
// private /tmp), a writable bind (an existing directory) or a stage of its nearest existing
// directory (a file, a missing path, a glob). A rule that is not what it was learned as (a
// symlink, outside its variable's root) is Unenforceable.
func (c *Compiled) sortWrites(write, exec []string, privateTmp bool, env Env) sortedWrites {
	var out sortedWrites
	for _, w := range write {
		if isDevice(w) {
			out.landlock = append(out.landlock, w)
			continue
		}
		t := hostTempDir(w, privateTmp, env)
		if t != "" {
			// A temp file's name is incidental (mkstemp, Python's tempfile): the host's
			// $TMPDIR is granted as a whole, which no protected path lies in.
			if w != t {
				c.Notes = append(c.Notes, fmt.Sprintf("filesystem.write: %s is in $TMPDIR (%s): all of it is writable", w, t))
			}
			w = t
		}
		glob := paths.HasGlob(w)
		_, statErr := os.Lstat(w)
		missing := glob || errors.Is(statErr, os.ErrNotExist)
		if root := privateTmpRoot(w); privateTmp && root != "" && t == "" && (w == root || missing || filepath.Dir(w) == root) && !hostTreeInTmp(w, root, env) {
			// Inside the private /tmp: binding or staging the host's copy would undo PrivateTmp,
			// also for a name right in it the host has now (another run's
			// /dev/shm/faketime_shm_N, a stale lock): its parent staged showed the command the
			// host's whole /dev/shm or /tmp. What the command writes there is its own
			// (privateTmpWrites; the host's $TMPDIR and the trees bound below /tmp stay the
			// host's, and so does a directory deeper down the host has: a GOPATH under /tmp).
			// The private tmpfs is writable anyway; Landlock gets its root (a rule needs an
			// existing path).
			if w != root {
				c.Notes = append(c.Notes, fmt.Sprintf("filesystem.write: %s is in the private %s: Landlock allows writes to all of it", w, root))
			}
			out.landlock = append(out.landlock, root)
			continue
		}
		if c.createCacheDir(w, env) {
			missing = false
		}

		if missing {
			out.stage = append(out.stage, nearestExistingDir(staticPrefix(w)))
			out.keep = append(out.keep, w)
			continue
		}
		resolved, err := c.resolveWritable(w, env)
		if err != nil {
			c.Unenforceable = append(c.Unenforceable, err.Error())
			continue
		}
		if paths.BytecodeCache(resolved) {
			// Python's bytecode cache (a profile learned before it was never granted, the
			// shipped python3): staged, never bound, so the changeset drops what the run
			// wrote there (changeset.Dropped) instead of a planted .pyc landing on the host.
			out.stage = append(out.stage, nearestExistingDir(resolved))
			out.keep = append(out.keep, resolved)
			continue
		}
		if st, err := os.Stat(resolved); err == nil && st.IsDir() {
			out.keep = append(out.keep, resolved)
			if p := replaceableParent(resolved, env); p != "" && !holdsExec(resolved, exec) {
				out.stage = append(out.stage, p)
				c.Notes = append(c.Notes, fmt.Sprintf("filesystem.write: %s is an output directory in the work tree: staged with %s, so that the command may remove and make it again (rm -rf, cargo clean)", resolved, p))
				continue
			}
			out.binds = append(out.binds, resolved)
			continue
		}
		// A file: tools replace files (write a sibling, rename over; unlink and create), which
		// a bind-mounted file or a Landlock rule on its inode cannot follow.
		out.stage = append(out.stage, filepath.Dir(resolved))
		out.keep = append(out.keep, resolved)
	}
	return out
}

// replaceableParent returns the directory to stage instead of binding existing directory d
// ("" to bind it): its parent when d lies below the work tree, outside protected paths. Tools
// remove and make their output directories again (`rm -rf dist && mkdir dist`, cargo clean,
// npm ci's node_modules, vite's and tsc's clean, git clean -fdx), and a directory bound over
// itself is a mount point, which cannot be removed (EBUSY, EROFS) nor renamed (EXDEV); in its
// parent's stage it is an ordinary directory of the run's writable layer, and its removal and
// recreation reach the host through the changeset like any other change. Directories outside
// the work tree (caches such as $GOCACHE, the host's $TMPDIR) stay bound: tools empty them,
// they do not remove them, and their writes should land at once.
func replaceableParent(d string, env Env) string {
	wd := resolvedDir(env.Vars["WORKDIR"])
	if wd == "" || wd == "/" || d == wd || !paths.Within(d, wd) {
		return ""
	}
	p := filepath.Dir(d)
	for _, q := range protectedHostPaths(env) {
		if paths.Within(d, q) || paths.Within(p, q) {
			return "" // inside .git and the like: the protected path's own rules decide
		}
	}
	return p
}

// holdsExec reports whether an exec rule names something inside directory d. Such an output
// directory stays bound over itself (exec, a mount of its own) rather than staged with its
// parent: exec in a stage is granted on the directory that holds the output, and for an
// output directory in the work tree that is the work tree, where files the run never wrote
// (a package's shipped evil.so, ./evil) would become executable and mappable too.
func holdsExec(d string, exec []string) bool {
	for _, x := range exec {
		if paths.Within(staticPrefix(x), d) || paths.Covers(d, x) {
			return true
		}
	}
	return false
}

// protectBinds keeps the protected paths inside a bound directory out of reach: read-only
// binds when they exist; a missing one could be created (a .github/workflows in a fresh
// checkout), and one named only in part (.git/index but not .git/hooks) must not be written
// whole, so such a directory is staged instead (the changeset applies only what is named). It
// returns the directories still bound and those to stage.
//
// A directory at or above an append-only tool cache (paths.AppendOnlyCaches) the host has, or
// inside one, is staged too: its new entries are applied after the run, a rewrite of one the
// host has is held dangerous (changeset.Classify).
func (c *Compiled) protectBinds(bound, protected, keep, appendOnly []string) (binds, stage []string) {
	for _, b := range topLevelPaths(bound) {
		if t := appendOnlyMeets(b, appendOnly); t != "" {
			stage = append(stage, b)
			c.Notes = append(c.Notes, fmt.Sprintf("filesystem.write: %s is staged, not bound: it holds the tool cache %s, whose existing entries a run may not rewrite", b, t))
			continue
		}
		var ro []string
		stageIt := false
		for _, q := range protected {
			if q == b || !paths.Within(q, b) || namesWhole(q, keep) {
				continue
			}
			if _, err := os.Lstat(q); err != nil || namesPart(q, keep) {
				stageIt = true
				break
			}
			ro = append(ro, q)
		}
		if stageIt {
			stage = append(stage, b)
			continue
		}
		binds = append(binds, b)
		c.Plan.ReadOnly = append(c.Plan.ReadOnly, ro...)
		if len(ro) > 0 {
			c.Notes = append(c.Notes, fmt.Sprintf("filesystem.write: %s is writable but %s stay read-only (protected; name them in filesystem.write to allow)", b, strings.Join(ro, ", ")))
		}
	}
	return binds, stage
}

// appendOnlyTrees are the append-only tool caches (paths.AppendOnlyCaches) this host has,
// resolved.
func appendOnlyTrees(env Env) []string {
	var out []string
	for _, ac := range paths.AppendOnlyCaches {
		h, err := expand(ac.Tree, env)
		if err != nil || !filepath.IsAbs(h) {
			continue
		}
		if r, err := filepath.EvalSymlinks(h); err == nil {
			out = append(out, r)
		}
	}
	return out
}

// appendOnlyMeets returns the tree of trees that directory b holds or lies in, or "".
func appendOnlyMeets(b string, trees []string) string {
	for _, t := range trees {
		if paths.Within(t, b) || paths.Within(b, t) {
			return t
		}
	}
	return ""
}

// stageDirs are the directories to stage for candidates: the top-level ones not inside a bind
// (binds below a staged directory stay binds, the host's own attached over the overlay),
// refusing / and the kernel trees, and a directory that resolves elsewhere (a stage on a
// symlink would apply into wherever it points).
func (c *Compiled) stageDirs(candidates, binds, keep []string, env Env) []string {
	var out []string
	for _, d := range topLevelPaths(candidates) {
		if paths.CoveredBy(d, binds) {
			continue
		}
		if d == "/" || kernelTree(d) {
			c.Unenforceable = append(c.Unenforceable, fmt.Sprintf("filesystem.write: rules below %s cannot be staged (%s)", d, strings.Join(keepUnder(keep, d), ", ")))
			continue
		}
		if r, err := c.resolveWritable(d, env); err != nil {
			c.Unenforceable = append(c.Unenforceable, err.Error())
			continue
		} else if r != d {
			c.Unenforceable = append(c.Unenforceable, fmt.Sprintf("filesystem.write: %s resolves to %s (a symlink among its directories): refused", d, r))
			continue
		}
		out = append(out, d)
	}
	return out
}

// resolveWritable returns w without symlinks, refusing a w that is a symlink itself or that
// resolves outside the directory of the variable it lies under (a build/ swapped for a link to
// $HOME between two runs would make $HOME writable).
func (c *Compiled) resolveWritable(w string, env Env) (string, error) {
	fi, err := os.Lstat(w)
	if err != nil {
		return "", fmt.Errorf("filesystem.write: %s: %w", w, err)
	}
	resolved, err := filepath.EvalSymlinks(w)
	if err != nil {
		return "", fmt.Errorf("filesystem.write: %s: %w", w, err)
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		return "", fmt.Errorf("filesystem.write: %s is a symlink (to %s): refused; a writable path must be the directory or file itself (remove the link, or name its target in the profile)", w, resolved)
	}
	if root := varRoot(w, env); root != "" {
		rr, err := filepath.EvalSymlinks(root)
		if err == nil && !paths.Within(resolved, rr) {
			return "", fmt.Errorf("filesystem.write: %s resolves to %s, outside %s: refused (a symlink among its directories?)", w, resolved, root)
		}
	}
	return resolved, nil
}

// varRoot is the deepest path variable's directory (other than /) at or above host path p.
func varRoot(p string, env Env) string {
	best := ""
	for _, v := range env.Vars {
		v = filepath.Clean(v)
		if v != "/" && filepath.IsAbs(v) && paths.Within(p, v) && len(v) > len(best) {
			best = v
		}
	}
	return best
}

// protectedHostPaths expands paths.ProtectedPaths for this host (those whose variable is set),
// $WORKDIR/.git also where a `git worktree`'s or a submodule's .git file leads
// (paths.LinkedGitPaths), with the hooks and config of that git directory (linkedGitDir), and
// sysprof's own files for the run (Env.Own: its profile, the run reports directory).
func protectedHostPaths(env Env) []string {
	var out []string
	for _, q := range paths.ProtectedPaths() {
		if h, err := expand(q, env); err == nil && filepath.IsAbs(h) {
			out = append(out, filepath.Clean(h))
			out = append(out, paths.LinkedGitPaths(filepath.Clean(h), env.Vars)...)
		}
	}
	out = append(out, linkedGitDir(env.Vars["WORKDIR"])...)
	for _, own := range env.Own {
		if privateTmpRoot(own) != "" {
			// Out of the command's reach behind a private /tmp; a cover there would show
			// sysprof's own files in it. (A profile without a private /tmp that writes
			// the host's /tmp whole leaves them unprotected: README, Attacks tried.)
			continue
		}
		out = append(out, own)
		if real, err := filepath.EvalSymlinks(own); err == nil && real != own {
			out = append(out, real) // the file a link names is what the next run reads
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// linkedGitDir returns what runs code in the git directory a work tree's .git file names (a
// `git worktree`, a submodule): the hooks and config of its common directory, and the
// worktree's own config.worktree when there is one. They lie outside the work tree, and stay
// protected even from a rule that names $WORKDIR/.git whole (a learned `git commit` writes the
// main repository's .git: a core.fsmonitor set in its config ran at the user's next `git
// status`). Nil when .git is a directory or absent.
func linkedGitDir(work string) []string {
	gitdir, common, ok := paths.LinkedGitDirs(work)
	if !ok {
		return nil
	}
	out := []string{filepath.Join(common, "hooks"), filepath.Join(common, "config")}
	for _, d := range []string{gitdir, common} {
		if _, err := os.Lstat(filepath.Join(d, "config.worktree")); err == nil {
			out = append(out, filepath.Join(d, "config.worktree"))
		}
	}
	return out
}

// namesWhole reports whether a rule of keep names protected path q itself (q, or a glob of as
// many components matching it): the profile grants q, so q is not protected from it. A rule
// above q (the work tree) does not name it; one below it names only that part (namesPart).
func namesWhole(q string, keep []string) bool {
	n := strings.Count(q, "/")
	for _, k := range keep {
		if k == q || paths.HasGlob(k) && strings.Count(k, "/") == n && paths.Covers(k, q) {
			return true
		}
	}
	return false
}

// namesPart reports whether a rule of keep lies strictly below protected path q.
func namesPart(q string, keep []string) bool {
	for _, k := range keep {
		if sp := staticPrefix(k); sp != q && paths.Within(sp, q) {
			return true
		}
	}
	return false
}

func keepUnder(keep []string, d string) []string {
	var out []string
	for _, k := range keep {
		if paths.Within(staticPrefix(k), d) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// staticPrefix is p up to (not including) its first component with a glob character.
func staticPrefix(p string) string {
	if !paths.HasGlob(p) {
		return p
	}
	i := strings.IndexAny(p, "*?[")
	return filepath.Dir(p[:i+1])
}

// nearestExistingDir is p or its nearest ancestor that is an existing directory.
func nearestExistingDir(p string) string {
	for {
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			return p
		}
		if p == "/" || p == "." {
			return "/"
		}
		p = filepath.Dir(p)
	}
}

func topLevelPaths(ps []string) []string {
	s := slices.Clone(ps)
	slices.Sort(s)
	var out []string
	for _, p := range slices.Compact(s) {
		if !paths.CoveredBy(p, out) {
			out = append(out, p)
		}
	}
	return out
}

// noExecRoots are the writable mounts of the plan in which no exec rule lies (nor covers them).
func noExecRoots(roots, exec []string) []string {
	var out []string
	for _, r := range roots {
		if !slices.ContainsFunc(exec, func(x string) bool { x = staticPrefix(x); return paths.Within(x, r) || paths.Within(r, x) }) {
			out = append(out, r)
		}
	}
	return out
}

// forbiddenExecRoot reports directories an exec rule is never widened to: the work tree, the
// home, a direct child of the home, a toolchain or cache root.
func forbiddenExecRoot(d string, env Env) bool {
	home := filepath.Clean(env.Vars["HOME"])
	if d == "/" || d == home || (home != "." && filepath.Dir(d) == home) {
		return true
	}
	for _, v := range paths.Vars() {
		x := env.Vars[v.Name]
		if x != "" && filepath.Clean(x) == d && (v.Role == paths.RoleWork || v.Role == paths.RoleHome || v.Role == paths.RoleToolchain || v.Role == paths.RoleCache) {
			return true
		}
	}
	return false
}

// execDirs keeps exec rules on existing paths. A missing one (a build output such as
// target/debug/build/*/build-script-build before the first build) gets an inode to name: its
// nearest existing directory, inside a writable directory or a stage. Nothing is made for it:
// the tree inside is the host's (`[ -d build ] || ./configure` takes the host's branch). It is
// never widened to the work tree, the home, one of its direct children or a toolchain root:
// such a rule stays as is (Landlock skips it, the exec is denied and reported) — except inside a
// stage when the profile also writes what the rule names (a fresh checkout's go build -o app &&
// ./app, or cargo's target/debug/deps/* with no target/ yet, or a warm one that cargo clean
// removes first): there exec is granted on the directory holding the learned output (execRoot),
// the stage root at worst, whether the output exists yet or not. A Landlock rule names an inode,
// and a tool that removes its output directory and makes it again (cargo clean, rm -rf build)
// makes new inodes that a rule on the old ones does not reach. What runs there was written in
// this run (or is the host's own file in the tree), and only learned outputs leave it.
func (c *Compiled) execDirs(exec, binds []string, stages []StageSpec, env Env) []string {
	var out []string
	for _, x := range exec {
		inBind := paths.CoveredBy(staticPrefix(x), binds) || slices.Contains(binds, staticPrefix(x))
		if i := slices.IndexFunc(stages, func(s StageSpec) bool { return paths.Within(staticPrefix(x), s.Dir) }); i >= 0 && !inBind {
			s := stages[i]
			if k := outputRule(x, s.Keep); k != "" {
				n := nearestExistingDir(execRoot(k))
				if !paths.Within(n, s.Dir) {
					n = s.Dir
				}
				out = append(out, n)
				c.Notes = append(c.Notes, fmt.Sprintf("filesystem.exec: %s is an output of this run (%s): exec granted on %s in the staged %s (the tool may remove and make it again; only learned outputs leave it)", x, k, n, s.Dir))
				continue
			}
		}
		if !paths.HasGlob(x) {
			if st, err := os.Stat(x); err == nil {
				if d := boundOutputExecDir(x, st, binds, env); d != "" {
					out = append(out, d)
					c.Notes = append(c.Notes, fmt.Sprintf("filesystem.exec: %s lies in an output directory bound writable: exec granted on %s (a relink makes a new inode)", x, d))
					continue
				}
				out = append(out, x)
				continue
			}
		}
		d := staticPrefix(x)
		if !paths.HasGlob(x) {
			d = filepath.Dir(x)
		}
		if !inBind && slices.ContainsFunc(stages, func(s StageSpec) bool { return paths.Within(x, s.Dir) }) {
			out = append(out, x) // not an output of this run: stays as is
			continue
		}
		// In a directory bound writable inside a stage (a sub-make's app/ holding the program
		// it links and the recipe runs): granted on the bind's directory, as outside a stage.
		n := nearestExistingDir(d)
		if !paths.CoveredBy(n, binds) && !slices.Contains(binds, n) || forbiddenExecRoot(n, env) {
			out = append(out, x) // stays as is: Landlock skips a missing path
			continue
		}
		c.Notes = append(c.Notes, fmt.Sprintf("filesystem.exec: %s does not exist yet: exec granted on %s", x, n))
		out = append(out, n)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// boundOutputExecDir returns the directory to grant exec on for exec rule x, an existing
// regular file inside a directory of the work tree bound writable over itself (an output
// holding an exec rule: meson's or cmake's build/hello): the directory holding it, since a
// linker replaces the file (a new inode a rule on the old one does not reach: EACCES at the
// next `meson test` after an edit). The bind is the run's own output and its mount is exec
// already, so this grants what the mount allows: what the run writes there may run. "" for
// anything else (the file rule stays).
func boundOutputExecDir(x string, st os.FileInfo, binds []string, env Env) string {
	if !st.Mode().IsRegular() {
		return ""
	}
	d := filepath.Dir(x)
	for _, b := range binds {
		// An output of the work tree (outside its protected paths) bound for its exec rule.
		if paths.Within(d, b) && replaceableParent(b, env) != "" && !forbiddenExecRoot(d, env) {
			return d
		}
	}
	return ""
}

// outputRule returns the write rule of keep that covers exec rule x (a glob: its static
// prefix), the one nearest the root when several do, or "".
func outputRule(x string, keep []string) string {
	best := ""
	for _, k := range keep {
		if (paths.Covers(k, x) || paths.Covers(k, staticPrefix(x))) && (best == "" || len(staticPrefix(k)) < len(staticPrefix(best))) {
			best = k
		}
	}
	return best
}

// execRoot is the directory holding what write rule k names: the directory of a plain path
// (the work tree for $WORKDIR/target or $WORKDIR/app), the static prefix of a glob (the work
// tree for $WORKDIR/target*).
func execRoot(k string) string {
	if paths.HasGlob(k) {
		return staticPrefix(k)
	}
	return filepath.Dir(k)
}

// stagesToPlan lists the stages for the sandbox; Run fills in their upper and work directories.
func stagesToPlan(stages []StageSpec) []sandbox.Stage {
	var out []sandbox.Stage
	for _, s := range stages {
		out = append(out, sandbox.Stage{Path: s.Dir})
	}
	return out
}

func stageDirsOf(stages []StageSpec) []string {
	var out []string
	for _, s := range stages {
		out = append(out, s.Dir)
	}
	return out
}

func allDirs(ps []string) bool {
	for _, p := range ps {
		if st, err := os.Lstat(p); err != nil || !st.IsDir() {
			return false
		}
	}
	return true
}

// hostTreeInTmp reports whether w lies in a host directory that is bound into the private tmp
// root (a work tree or home under /tmp): such a path is the host's, not the private tmpfs's.
func hostTreeInTmp(w, root string, env Env) bool {
	for _, name := range []string{"WORKDIR", "HOME"} {
		if v := filepath.Clean(env.Vars[name]); v != root && paths.Within(v, root) && paths.Within(w, v) {
			return true
		}
	}
	return false
}

// writesExact refuses a plan whose writable mounts or Landlock write rules reach further than
// planWrites grants: each must be a bound directory, a stage, a device, the private tmp or the
// sandbox's /proc, and no bound directory may hold a protected path that is neither read-only
// nor named by a rule. Each is a bug in compile, never something to run with.
func (c *Compiled) writesExact(env Env) error {
	pl := &c.Plan
	if pl.Landlock == nil {
		return nil
	}
	stages := stageDirsOf(c.Stages)
	for _, w := range pl.Landlock.Write {
		ok := slices.Contains(pl.Writable, w) || slices.Contains(stages, w) || isDevice(w) ||
			(pl.PrivateTmp && slices.Contains(privateTmpDirs, w))
		if !ok {
			return fmt.Errorf("BUG: compile: Landlock write rule %s is neither a writable directory nor a stage; refusing to run", w)
		}
	}
	protected := protectedHostPaths(env)
	named := slices.Clone(pl.Writable)
	for _, st := range c.Stages {
		named = append(named, st.Keep...)
	}
	for _, b := range topLevelPaths(pl.Writable) {
		for _, q := range protected {
			if q == b || !paths.Within(q, b) || slices.Contains(pl.ReadOnly, q) || paths.CoveredBy(q, pl.Hidden) || namesWhole(q, named) {
				continue
			}
			return fmt.Errorf("BUG: compile: protected %s is writable inside %s; refusing to run", q, b)
		}
	}
	return nil
}

// hostTempDir returns the host's $TMPDIR when w lies in it and it is a directory of its own:
// not a private tmp root itself (/tmp: private anyway), not the work tree or the home or above
// them. One below /tmp is bound into the private tmp like a work tree there.
func hostTempDir(w string, privateTmp bool, env Env) string {
	t := filepath.Clean(env.Vars["TMPDIR"])
	if t == "." || t == "/" || !filepath.IsAbs(t) || !paths.Within(w, t) || privateTmp && privateTmpRoot(t) == t {
		return ""
	}
	for _, name := range []string{"WORKDIR", "HOME"} {
		if v := env.Vars[name]; v != "" && paths.Within(filepath.Clean(v), t) {
			return ""
		}
	}
	if st, err := os.Stat(t); err != nil || !st.IsDir() {
		return ""
	}
	return t
}
