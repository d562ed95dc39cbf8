package policy

import (
	"slices"
	"strings"

	"github.com/sysprof/sysprof/paths"
)

// Learning blesses nothing critical by itself. A poisoned learn run (a step that writes
// .git/hooks or ~/.bashrc, or runs what it wrote) would otherwise end with a profile that lets
// every later enforced run do the same. MarkPending writes those allowances as pending: the
// profile records them (a person sees them in show, diff and drift), enforce compiles
// WithoutPending, and refine (interactive or --only naming each) or learn --accept-risky
// accepts them (Accept). Network destinations are not marked: a new host is reviewed, not held.

// MarkPending marks as pending every filesystem rule new adds to old (nil: a fresh profile)
// that is of a persistence or secret kind, and returns those additions as Diff rates them: a
// write to a protected path (.git, .github, shell rc files, ~/.config/systemd, ...), a read of
// a credential store or system secret. Other widenings (a build directory, running what the
// build built, a new host) are left granted.
func MarkPending(old, new *Profile) []Change {
	var marked []Change
	for _, c := range Diff(old, new) {
		if !c.Widens || !pendingKind(new, c.Section, c.Item) {
			continue
		}
		rules := pathSection(new, c.Section)
		if i := slices.IndexFunc(*rules, func(r PathRule) bool { return r.Path == c.Item }); i >= 0 && !(*rules)[i].Pending {
			(*rules)[i].Pending = true
			marked = append(marked, c)
		}
	}
	return marked
}

// pendingKind reports whether allowing item in section of p persists past the run or exposes a
// secret: what learning may not bless by itself.
func pendingKind(p *Profile, section, item string) bool {
	switch section {
	case SectionWrite:
		return protectedPath(item) != "" || holdsStartupHooks(item)
	case SectionRead, SectionList:
		return exposedCredential(item, p.Filesystem.Hidden) != "" || systemSecret(item) != ""
	}
	// Not an exec rule on a path the run writes: every build runs what it built (go test's
	// binaries, cargo's build scripts, configure checks); holding those would fail the job.
	return false
}

// holdsStartupHooks reports whether a write rule on item lets a run create an interpreter
// start-up hook (a .pth) without naming it: a site-packages directory, a glob over one, or a
// directory above the user site ($HOME/.local/lib/python3.X/site-packages), outside the work
// tree (bound writable, no changeset). Learn rolls a .pth the run wrote into its directory;
// that rule would plant the next one.
func holdsStartupHooks(item string) bool {
	dir := strings.TrimSuffix(strings.TrimSuffix(item, "/**"), "/*")
	if paths.Within(dir, "$WORKDIR") {
		return false // staged: the changeset holds a .pth there as dangerous (a venv's pip install goes on)
	}
	if paths.StartupHook(dir+"/x.pth") != "" {
		return true
	}
	const userSite = "$HOME/.local/lib/python3.0/site-packages"
	return dir != "$HOME" && (paths.Within(userSite, dir) || paths.Covers(dir, "$HOME/.local/lib/python3.0"))
}

// Accept clears the pending mark of item in section (a filesystem section) and reports
// whether there was one.
func Accept(p *Profile, section, item string) bool {
	rules := pathSection(p, section)
	if rules == nil {
		return false
	}
	i := slices.IndexFunc(*rules, func(r PathRule) bool { return r.Path == item && r.Pending })
	if i < 0 {
		return false
	}
	(*rules)[i].Pending = false
	return true
}

// Pending lists p's pending rules as changes (section and item).
func Pending(p *Profile) []Change {
	var out []Change
	for _, s := range []string{SectionRead, SectionWrite, SectionExec, SectionList} {
		for _, r := range *pathSection(p, s) {
			if r.Pending {
				out = append(out, Change{Kind: Added, Section: s, Item: r.Path, By: r.By})
			}
		}
	}
	return out
}

// WithoutPending returns p without its pending rules (a copy; p itself when it has none):
// what enforce compiles and what refine checks a denial against.
func WithoutPending(p *Profile) *Profile {
	if p == nil || len(Pending(p)) == 0 {
		return p
	}
	q := Clone(p)
	for _, s := range []string{SectionRead, SectionWrite, SectionExec, SectionList} {
		rules := pathSection(q, s)
		*rules = slices.DeleteFunc(*rules, func(r PathRule) bool { return r.Pending })
	}
	return q
}

// pathSection is the rule list of a filesystem section of p (nil for another section).
func pathSection(p *Profile, section string) *[]PathRule {
	switch section {
	case SectionRead:
		return &p.Filesystem.Read
	case SectionWrite:
		return &p.Filesystem.Write
	case SectionExec:
		return &p.Filesystem.Exec
	case SectionList:
		return &p.Filesystem.List
	}
	return nil
}
