package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"golang.org/x/sys/unix"
)

const (
	// contentRights reach a file's content.
	contentRights = fsExecute | fsWriteFile | fsReadFile | fsTruncate | fsIoctlDev
	// createRights make new entries in a directory.
	createRights = fsMakeChar | fsMakeDir | fsMakeReg | fsMakeSock | fsMakeFifo | fsMakeBlock | fsMakeSym | fsRefer
)

// maxSplitEntries is the most entries of one directory a rule is split into; a larger
// directory keeps its rule (and its hidden names are covered by their mounts only).
const maxSplitEntries = 4096

// dirEntry is what splitForHidden needs to know about a directory entry.
type dirEntry struct {
	name         string
	dir, symlink bool
}

// isMountRoot reports whether p is the root of a mount: in the sandbox's mount namespace, at a
// hidden name, that is the cover the mounts put there (the host cannot mount in it).
func isMountRoot(p string) bool {
	var stx unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, p, unix.AT_SYMLINK_NOFOLLOW|unix.AT_NO_AUTOMOUNT, unix.STATX_BASIC_STATS, &stx); err != nil {
		return false
	}
	return stx.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT != 0 && stx.Attributes&unix.STATX_ATTR_MOUNT_ROOT != 0
}

// isCover reports whether p is a cover the mounts put there: the root of a mount of an empty
// tmpfs file or directory. Never the host's file itself, whatever mounts the host has: a
// degraded mounts layer leaves the secret in place, and then no read rule is added for it.
func isCover(p string) bool {
	if !isMountRoot(p) {
		return false
	}
	var sfs unix.Statfs_t
	var st unix.Stat_t
	if unix.Statfs(p, &sfs) != nil || sfs.Type != unix.TMPFS_MAGIC || unix.Lstat(p, &st) != nil {
		return false
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		return st.Size == 0
	case unix.S_IFDIR:
		ents, err := os.ReadDir(p)
		return err == nil && len(ents) == 0
	}
	return false
}

// coverReads gives every hidden name that is covered (a cover the mounts put there) the read
// rights: a hidden secret reads as an empty file or lists as an empty directory in every mode,
// whether or not a rule reaches its directory. The rule is on the cover's inode: a file the
// host renames over the name later matches no rule.
func coverReads(hidden []string, read uint64, covered func(string) bool) []pathRule {
	var out []pathRule
	for _, h := range sortedClean(hidden) {
		if read != 0 && covered(h) {
			out = append(out, pathRule{Path: h, Role: "hidden", Access: read})
		}
	}
	return out
}

// listDir lists a directory for splitForHidden.
func listDir(dir string) ([]dirEntry, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := make([]dirEntry, len(ents))
	for i, e := range ents {
		out[i] = dirEntry{name: e.Name(), dir: e.IsDir(), symlink: e.Type()&os.ModeSymlink != 0}
	}
	return out, nil
}

// splitForHidden keeps hidden names unreadable whatever inode the name holds later. A mount
// covers the dentry it was put on: when the host renames a new file over a hidden .env (or
// deletes and recreates it) during the run, the kernel detaches the cover from the sandbox's
// mount namespace and the new file shows. Landlock rules attach to inodes, and a rule on a
// directory reaches every inode below it, new ones too; so a read or exec rule on an ancestor
// of a hidden name is replaced by: the ancestors down to the hidden name's directory get only
// their directory rights (read_dir), and every other entry on the way gets the rule's rights
// on its own inode (directories for all below them). The hidden name itself gets the rule's
// rights only when covered says the cover is there (the cover the mounts put there reads as empty, as
// before); anything that appears at that name later matches no rule.
//
// Not split, and noted: names in a directory a rule lets the tool create entries in (its own
// new files must stay readable, and Landlock cannot tell them from the host's), and
// directories with more than maxSplitEntries entries. Symlinks get no rule of their own:
// access through one is decided by the rules on the path it resolves to, as before. Files the
// host creates during the run in a split directory are unreadable too.
func splitForHidden(rules []pathRule, hidden []string, covered func(string) bool, list func(string) ([]dirEntry, error)) ([]pathRule, []Skipped) {
	var notes []Skipped
	var protect []string
	for _, h := range sortedClean(hidden) {
		parent := filepath.Dir(h)
		reached, writable := false, ""
		for _, r := range rules {
			if r.Access&contentRights != 0 && r.Path != h && under(h, []string{r.Path}) {
				reached = true
			}
			if r.Access&createRights != 0 && under(parent, []string{r.Path}) && writable == "" {
				writable = r.Path
			}
		}
		switch {
		case !reached:
		case writable != "" && !covered(h):
			// Not there now (a name the profile hides in case it appears): nothing to say.
		case writable != "":
			notes = append(notes, Skipped{LayerLandlock, h, fmt.Sprintf("hidden in a writable directory (%s rule on %s): only its mount covers it; a file the host renames over it during the run would show", roleOf(rules, writable), writable)})
		default:
			protect = append(protect, h)
		}
	}
	if len(protect) == 0 {
		return rules, notes
	}
	var out []pathRule
	var split func(r pathRule, dir string, targets []string)
	split = func(r pathRule, dir string, targets []string) {
		ents, err := list(dir)
		if err != nil || len(ents) > maxSplitEntries {
			why := fmt.Sprintf("%d entries", len(ents))
			if err != nil {
				why = err.Error()
			}
			notes = append(notes, Skipped{LayerLandlock, targets[0], fmt.Sprintf("%s rule on %s not split (%s): only the mounts cover the hidden names below it", r.Role, dir, why)})
			out = append(out, pathRule{Path: dir, Role: r.Role, Access: r.Access})
			return
		}
		if a := r.Access &^ contentRights; a != 0 {
			out = append(out, pathRule{Path: dir, Role: r.Role, Access: a})
		}
		for _, e := range ents {
			p := filepath.Join(dir, e.name)
			if slices.Contains(targets, p) {
				if covered(p) {
					out = append(out, pathRule{Path: p, Role: r.Role, Access: r.Access})
				}
				continue
			}
			var below []string
			for _, t := range targets {
				if under(t, []string{p}) {
					below = append(below, t)
				}
			}
			switch {
			case len(below) > 0 && e.dir && !e.symlink:
				split(r, p, below)
			case len(below) > 0 || e.symlink:
				// A symlink on the way to a hidden name, or any symlink: no rule of its own.
			default:
				out = append(out, pathRule{Path: p, Role: r.Role, Access: r.Access})
			}
		}
	}
	for _, r := range rules {
		var targets []string
		for _, h := range protect {
			if h != r.Path && under(h, []string{r.Path}) {
				targets = append(targets, h)
			}
		}
		if r.Access&contentRights == 0 || len(targets) == 0 {
			out = append(out, r)
			continue
		}
		split(r, r.Path, targets)
	}
	return out, notes
}

func roleOf(rules []pathRule, path string) string {
	for _, r := range rules {
		if r.Path == path && r.Access&createRights != 0 {
			return r.Role
		}
	}
	return "a"
}
