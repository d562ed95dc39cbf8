package changeset

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/sysprof/sysprof/paths"
	"github.com/sysprof/sysprof/policy"
)

// Class of one change: what leaves a run. A Class maps to a policy.Risk (Change.Risk): learned
// none, held the policy rating of the write rule that would allow it, dangerous critical.
type Class string

// Classes.
const (
	Learned   Class = "learned"   // a write rule covers it: applied
	Held      Class = "held"      // not learned, ordinary: kept, reported, never discarded
	Dangerous Class = "dangerous" // see Classify: held, critical, whatever a rule says
	// Dropped: a regenerable cache of code (Python's bytecode cache): never applied, not held,
	// discarded with the run; the next import writes it again from its source.
	Dropped Class = "dropped"
)

// Op is what a change does to the host path.
type Op string

// Ops.
const (
	OpCreate   Op = "create"   // a regular file the host does not have
	OpModify   Op = "modify"   // a regular file's content (or a file replacing another type)
	OpDelete   Op = "delete"   // a file, symlink or special file removed
	OpMkdir    Op = "mkdir"    // a directory the host does not have
	OpRmdir    Op = "rmdir"    // a directory removed, with what it holds
	OpMode     Op = "mode"     // permission bits only
	OpSymlink  Op = "symlink"  // a symlink created or replaced
	OpHardlink Op = "hardlink" // a second name of a file the changeset holds
	OpSpecial  Op = "special"  // a FIFO, socket or device node
)

// File types of Change.Type.
const (
	TypeFile    = "file"
	TypeDir     = "dir"
	TypeSymlink = "symlink"
	TypeFIFO    = "fifo"
	TypeSocket  = "socket"
	TypeChar    = "char"
	TypeBlock   = "block"
)

// Change is one entry of a run's changeset, as the command left it in an overlay upper layer.
type Change struct {
	Path   string `json:"path"` // host absolute path it would apply to
	Op     Op     `json:"op"`
	Type   string `json:"type"`           // file, dir, symlink, fifo, socket, char, block
	Mode   uint32 `json:"mode"`           // permission bits incl. set-id as found in the upper layer
	Size   int64  `json:"size,omitempty"` // of a file
	Target string `json:"target,omitempty"`
	// Class, Reason, Grant and Risk are Classify's.
	Class  Class         `json:"class"`
	Reason string        `json:"reason"`
	Grant  *policy.Grant `json:"change,omitempty"`
	Risk   policy.Risk   `json:"risk"`

	// Facts Classify reads (Scan fills them).
	HostMode   uint32 `json:"hostMode,omitempty"` // the host file's permission bits, when it exists
	HostExists bool   `json:"hostExists,omitempty"`
	// HostParent: the host has the directory that holds the path (an append-only cache's
	// entry the run adds a file to).
	HostParent bool `json:"hostParent,omitempty"`
	Caps       bool `json:"caps,omitempty"` // security.capability xattr set
	// GitConfig are the settings a git config file (IsGitConfig) gains that make git run a
	// program (GitConfigRuns of the host's file and the new one).
	GitConfig []string `json:"gitConfig,omitempty"`
	// Links is the file's link count in the upper layer; LinksOutside how many of its links
	// lie outside the changeset (a name that is not in the upper layer).
	Links        int `json:"links,omitempty"`
	LinksOutside int `json:"linksOutside,omitempty"`
	// Names are the file's other names in the changeset (hard links), which Apply applies
	// with it or not at all.
	Names []string `json:"names,omitempty"`
	// Unreadable says why a directory of the changeset could not be read (the command made it
	// unreadable): it and what it holds stay held.
	Unreadable string `json:"unreadable,omitempty"`

	// Stage is the index of the run's stage it belongs to; Rel its path relative to the
	// stage's directory.
	Stage int    `json:"stage"`
	Rel   string `json:"rel"`
	// Stripped says what Apply removed before installing it ("set-id bits removed").
	Stripped string `json:"stripped,omitempty"`
	// BuildDefinition is the build-definition pattern (paths.BuildDefinition) a held change
	// edits: --apply safe leaves it held.
	BuildDefinition string `json:"buildDefinition,omitempty"`

	dev, ino uint64 // the upper inode Scan saw (Apply refuses an entry changed since)
	before   Before // the host entry it replaces, read by Apply before the move (Strip)
	opaque   bool   // a directory that replaced the host's (user.overlay.opaque)
}

// Rules is what classification needs about one staged directory (plain data).
type Rules struct {
	Dir       string            `json:"dir"`       // the staged host directory (resolved, no symlinks)
	Tree      string            `json:"tree"`      // the tree a link must stay inside (usually $WORKDIR or Dir)
	Keep      []string          `json:"keep"`      // write rules (host paths, globs) at or below Dir: covered => learned
	Protected []string          `json:"protected"` // protected paths (paths.ProtectedPaths, host form) at or below Dir
	ExecOK    []string          `json:"execOK"`    // learned output directories (host paths, globs) where a new executable is ordinary
	Vars      map[string]string `json:"vars"`      // for portable suggestions (paths.* vocabulary)
}

// Classify is the one decision of what leaves a run (issue 22 item 2). It is pure: it reads c's
// facts and r, and returns c with Class, Reason, Grant and Risk set.
//
//   - dangerous (held, critical, whatever a rule says): a protected path (r.Protected, or
//     paths.IsProtected of its portable form: hooks, CI config, shell rc, .sysprof, agent and
//     IDE configs, interpreter start-up hooks) that no Keep rule at or below it names; a
//     symlink or hard link whose target leaves r.Tree or names a protected path; a hard link
//     with names outside the changeset; a device node, FIFO or socket; set-id bits on a file
//     or file capabilities; a file that becomes executable outside r.ExecOK; a git
//     directory's config that gains a setting that makes git run a program (c.GitConfig,
//     GitConfigRuns); a change to an entry of an append-only tool cache the host already has
//     (paths.AppendOnlyCaches: another crate's extracted source rewritten, a file added to it).
//   - dropped: a Python bytecode cache (paths.BytecodeCache) created or changed, whatever a
//     rule says: a .pyc whose header names its source's mtime and size runs in place of the
//     source at the next import outside the sandbox, and nobody reviews bytecode; python
//     writes it again from the source.
//   - learned: a Keep rule covers it (inside a protected path only a rule at or below it).
//   - held: the rest.
func Classify(c Change, r Rules) Change {
	roots := paths.NewRoots(r.Vars)
	portable := roots.Portable(c.Path)
	c.Grant, c.Risk, c.Class, c.Reason, c.BuildDefinition = nil, policy.RiskNone, "", "", ""
	if why, grantable := dangerous(c, r, portable); why != "" {
		c.Class, c.Reason, c.Risk = Dangerous, why, policy.RiskCritical
		if grantable {
			c.Grant = &policy.Grant{Section: policy.SectionWrite, Item: paths.Literal(portable)}
		}
		return c
	}
	if c.Op != OpDelete && c.Op != OpRmdir && paths.BytecodeCache(c.Path) {
		c.Class, c.Reason = Dropped, "Python's bytecode cache: never applied (it would run in place of its source outside the sandbox); the next import writes it again"
		return c
	}
	if c.Unreadable != "" {
		g := policy.Grant{Section: policy.SectionWrite, Item: paths.Literal(portable)}
		risk, _ := policy.GrantRisk(nil, g)
		c.Class, c.Grant, c.Risk = Held, &g, risk
		c.Reason = "the directory cannot be read in the changeset (" + c.Unreadable + "): it and what it holds stay held"
		return c
	}
	if keeps(c.Path, portable, r) {
		c.Class, c.Reason = Learned, "a learned write rule covers it"
		return c
	}
	g := policy.Grant{Section: policy.SectionWrite, Item: paths.Literal(portable)}
	risk, why := policy.GrantRisk(nil, g)
	c.Class, c.Grant, c.Risk = Held, &g, risk
	c.Reason = fmt.Sprintf("no learned write rule covers it (%s)", why)
	if bd := paths.BuildDefinition(portable); bd != "" && c.Op != OpDelete {
		c.BuildDefinition = bd
		c.Reason = "a build definition: its commands run at the next build, outside the sandbox; review it (never applied by --apply safe); " + c.Reason
	}
	return c
}

// dangerous returns why c is dangerous ("" when it is not), and whether a write rule naming it
// could make it learned (a protected path the profile names on purpose).
func dangerous(c Change, r Rules, portable string) (why string, grantable bool) {
	switch c.Type {
	case TypeFIFO, TypeSocket, TypeChar, TypeBlock:
		return fmt.Sprintf("a %s: special files never leave a run", TypeWord(c.Type)), false
	}
	if c.Type == TypeFile && c.Op != OpDelete {
		switch {
		case c.Mode&0o4000 != 0:
			return "set-user-ID bit: never installed on the host", false
		case c.Mode&0o2000 != 0:
			return "set-group-ID bit: never installed on the host", false
		case c.Caps:
			return "file capabilities (security.capability): never installed on the host", false
		}
	}
	if c.Op != OpDelete && c.Op != OpRmdir && c.Type != TypeFile && IsGitConfig(c.Path) {
		return fmt.Sprintf("a git directory's %s replaced by a %s: git would read what it names", path.Base(c.Path), TypeWord(c.Type)), false
	}
	if c.Type == TypeSymlink && c.Op != OpDelete && GitDirOnTheWay(c.Path) {
		return fmt.Sprintf("a symlink in place of a git directory's %s: git would read the config it holds from where it points", path.Base(c.Path)), false
	}
	if len(c.GitConfig) > 0 && c.Op != OpDelete {
		return fmt.Sprintf("git config: %s: git runs what it names at the user's next git command outside the sandbox; apply it only if you mean it", strings.Join(c.GitConfig, ", ")), false
	}
	if c.LinksOutside > 0 {
		return fmt.Sprintf("a hard link with %d name(s) outside the changeset", c.LinksOutside), false
	}
	if why := cacheRewrite(c, portable); why != "" {
		return why, false
	}
	if q := protectedOf(c.Path, portable, r); q != "" && inertHook(c, q) {
		return "", false // git's sample hooks are 0755 but never run
	} else if q != "" && !keepsWithin(c.Path, q, r) {
		return fmt.Sprintf("protected path %s: what is written there runs outside the sandbox later", q), true
	}
	if c.Op == OpRmdir {
		if q := protectedBelow(c.Path, portable, r); q != "" {
			return fmt.Sprintf("removes protected path %s with the directory", q), true
		}
	}
	if why := linkLeaves(c, r); why != "" {
		return why, false
	}
	if c.Type == TypeFile && c.Op != OpDelete && c.Mode&0o111 != 0 && (!c.HostExists || c.HostMode&0o111 == 0) {
		if !coveredBy(c.Path, r.ExecOK) {
			return "a new executable outside the learned output directories", false
		}
	}
	return "", false
}

// cacheRewrite says why c rewrites an entry of an append-only tool cache the host has ("" when
// it does not): the entry itself replaced or changed (its removal whole is the tool's own
// clean-up), or anything in it changed, added or removed.
func cacheRewrite(c Change, portable string) string {
	ac, entry, ok := paths.AppendOnlyEntry(portable)
	if !ok || entry == "" {
		return ""
	}
	switch {
	case portable == entry && (!c.HostExists || c.Op == OpRmdir || c.Op == OpDelete):
		return "" // a new entry, or one removed whole
	case portable != entry && !c.HostExists && !c.HostParent:
		return "" // inside a new entry
	case c.Type == TypeFile && (c.Op == OpModify || c.Op == OpCreate) && slices.ContainsFunc(ac.Rewritten, func(f string) bool { return portable == entry+"/"+f }):
		return "" // the tool's own bookkeeping in the entry
	}
	return fmt.Sprintf("rewrites %s, an entry the host's cache already has (%s): never applied", entry, ac.Why)
}

// linkLeaves says why a symlink or hard link may never be placed on the host ("" when it may):
// its target leaves r.Tree or names a protected path. Apply asks it again for every link,
// whatever else made the change dangerous (a link at a protected path pointing out of the tree
// is both).
func linkLeaves(c Change, r Rules) string {
	if c.Op != OpSymlink && c.Op != OpHardlink {
		return ""
	}
	t := c.Target
	if c.Op == OpSymlink && !path.IsAbs(t) {
		t = path.Join(path.Dir(c.Path), t)
	}
	t = path.Clean(t)
	kind := "symlink"
	if c.Op == OpHardlink {
		kind = "hard link"
	}
	if c.Op == OpSymlink && policy.SystemCodePath(t) && !paths.Within(t, r.Tree) {
		// A venv's bin/python3 -> /usr/bin/python3: the system's own programs, which the
		// user cannot write through (as root, what writes there unsandboxed could anyway).
		return ""
	}
	if tree := r.Tree; tree == "" || !paths.Within(t, tree) {
		return fmt.Sprintf("a %s to %s, outside %s", kind, t, orDir(r))
	}
	if q := protectedOf(t, roots(r).Portable(t), r); q != "" {
		return fmt.Sprintf("a %s to protected path %s", kind, q)
	}
	return ""
}

func roots(r Rules) paths.Roots { return paths.NewRoots(r.Vars) }

func orDir(r Rules) string {
	if r.Tree != "" {
		return r.Tree
	}
	return "the staged tree"
}

// TypeWord names Change type t in a sentence ("character device").
func TypeWord(t string) string {
	switch t {
	case TypeChar:
		return "character device"
	case TypeBlock:
		return "block device"
	case TypeDir:
		return "directory"
	}
	return t
}

// protectedOf returns the protected path (or start-up hook pattern) host path p lies in: one of
// r.Protected, or the one list of paths.IsProtected (via policy.ProtectedPath) for its portable
// form.
func protectedOf(p, portable string, r Rules) string {
	best := ""
	for _, q := range r.Protected {
		if paths.Within(p, q) && len(q) > len(best) { // the deepest: .git/hooks inside .git
			best = q
		}
	}
	// The one list's, when deeper: a submodule's hooks (.git/modules/m/hooks) inside a .git
	// that r.Protected names whole.
	if q := policy.ProtectedPath(portable); q != "" && (best == "" || len(q) > len(roots(r).Portable(best))) {
		return q
	}
	return best
}

// protectedBelow returns a protected path strictly below host directory p (r.Protected, or the
// one list for its portable form), or "".
func protectedBelow(p, portable string, r Rules) string {
	for _, q := range r.Protected {
		if q != p && paths.Within(q, p) {
			return q
		}
	}
	if qs := paths.ProtectedBeneath(portable); len(qs) > 0 {
		return qs[0]
	}
	return ""
}

// keeps reports whether a Keep rule covers p; inside a protected path only a rule at or below
// it counts (the work tree's rule never carries a hook in .git).
func keeps(p, portable string, r Rules) bool {
	if q := protectedOf(p, portable, r); q != "" {
		return keepsWithin(p, q, r) || inertHookPath(p, q) && coveredBy(p, r.Keep)
	}
	return coveredBy(p, r.Keep)
}

// inertHook reports a change in git hooks directory q that runs nothing: the directory made
// (git init, clone) or a *.sample file in it (git runs a hook only by its event's exact name).
// Only a new one: a sample the host had, changed in the run, stays dangerous.
func inertHook(c Change, q string) bool {
	return (c.Op == OpCreate && c.Type == TypeFile || c.Op == OpMkdir && c.Type == TypeDir) && !c.HostExists && inertHookPath(c.Path, q)
}

func inertHookPath(p, q string) bool {
	if path.Base(q) != "hooks" {
		return false
	}
	return p == q || path.Dir(p) == q && strings.HasSuffix(p, ".sample")
}

// keepsWithin reports whether a Keep rule at or below protected path q covers p. q is a path
// (host or portable) or a start-up hook pattern: a rule names a hook only when it names the
// hook file itself (the hook pattern matches the rule's own path).
func keepsWithin(p, q string, r Rules) bool {
	for _, k := range r.Keep {
		if !paths.Covers(k, p) {
			continue
		}
		sp := staticPrefix(k)
		switch {
		case paths.Within(sp, q):
			return true
		case paths.StartupHook(q) == q && paths.StartupHook(k) != "":
			return true
		case strings.HasPrefix(q, "$"): // portable: compare the rule's portable form
			if paths.Within(roots(r).Portable(sp), q) {
				return true
			}
		}
	}
	return false
}

// LearnParents is the one rule of Classify that needs the other changes of a stage: a directory
// the command made on its way to a learned path ($HOME/.config of a learned
// $HOME/.config/go/telemetry/* in a fresh home) is learned, the directory itself and nothing
// else it holds; a held new directory holding no learned change stays held (an empty build/
// must not appear on the host while its files are held). cs is one stage's changes,
// classified; it is changed in place and returned.
func LearnParents(cs []Change) []Change {
	parents := map[string]bool{}
	for _, c := range cs {
		if c.Class != Learned {
			continue
		}
		for d := path.Dir(c.Path); d != "/" && d != "." && !parents[d]; d = path.Dir(d) {
			parents[d] = true
		}
	}
	for i := range cs {
		if c := &cs[i]; c.Class == Held && c.Op == OpMkdir && parents[c.Path] {
			c.Class, c.Reason, c.Grant, c.Risk = Learned, "a directory on the way to a learned change", nil, policy.RiskNone
		}
	}
	return cs
}

func coveredBy(p string, rules []string) bool {
	for _, k := range rules {
		if paths.Covers(k, p) {
			return true
		}
	}
	return false
}

// staticPrefix is the part of rule k before its first glob component.
func staticPrefix(k string) string {
	comps := strings.Split(k, "/")
	for i, c := range comps {
		if paths.HasGlob(c) {
			if p := strings.Join(comps[:i], "/"); p != "" {
				return p
			}
			return "/"
		}
	}
	return k
}
