package synth

import (
	"fmt"
	"path/filepath"
	"slices"

	"github.com/sysprof/sysprof/paths"
	"github.com/sysprof/sysprof/trace"
)

// withGitIndexRefresh adds to t the index refresh of a git that reads the index of a work tree
// the run writes, when the learn did not see it: t itself when there is nothing to add.
//
// git diff (and other commands comparing the work tree with the index) refreshes the index
// when an entry's stat data changed but not its content: it takes .git/index.lock and
// renames it over .git/index, whatever GIT_OPTIONAL_LOCKS says. Whether an entry's stat data
// changed after the run rewrote a tracked file is timing on the host (a freed inode number
// reused, the same second), and certain under enforce, where the staged tree gives every file
// the run makes a new inode: a learn that did not meet the refresh held no rename and no
// .git write, and every later run was denied it. The lock-file rename is incidental to git's
// reading of its index, as a temp name is to the write it ends in: only index.lock and index
// of that .git, never its hooks or config (a failed probe of the post-index-change hook is
// what git makes, as a learn that met the refresh records it).
func withGitIndexRefresh(t *trace.Trace) (*trace.Trace, []string) {
	type gitdir struct{ exe, dir string }
	var reads []gitdir
	seen := map[gitdir]bool{}
	for _, f := range t.Files {
		if f.OK && !f.Dir && f.Access == trace.AccessRead && filepath.Base(f.Exe) == "git" &&
			filepath.Base(f.Path) == "index" && filepath.Base(filepath.Dir(f.Path)) == ".git" {
			g := gitdir{f.Exe, filepath.Dir(f.Path)}
			if !seen[g] {
				seen[g] = true
				reads = append(reads, g)
			}
		}
	}
	if len(reads) == 0 {
		return t, nil
	}
	var files []trace.FileAccess
	var calls []trace.SyscallCount
	var msgs []string
	for _, g := range reads {
		work := filepath.Dir(g.dir)
		lock := filepath.Join(g.dir, "index.lock")
		writesTree, locked := false, false
		for _, f := range t.Files {
			switch {
			case !f.OK:
			case f.Path == lock && f.Access == trace.AccessCreate:
				locked = true
			case (f.Access == trace.AccessWrite || f.Access == trace.AccessCreate || f.Access == trace.AccessDelete) &&
				paths.Within(f.Path, work) && f.Path != work && !paths.Within(f.Path, g.dir):
				writesTree = true
			}
		}
		if !writesTree || locked {
			continue
		}
		index := filepath.Join(g.dir, "index")
		files = append(files,
			trace.FileAccess{Exe: g.exe, Path: lock, Access: trace.AccessCreate, OK: true, Count: 1},
			trace.FileAccess{Exe: g.exe, Path: lock, Access: trace.AccessMetadata, OK: true, Count: 1},
			trace.FileAccess{Exe: g.exe, Path: lock, Access: trace.AccessDelete, OK: true, Count: 1},
			trace.FileAccess{Exe: g.exe, Path: index, Access: trace.AccessCreate, OK: true, Count: 1},
			trace.FileAccess{Exe: g.exe, Path: filepath.Join(g.dir, "hooks", "post-index-change"), Access: trace.AccessMetadata, Errno: 2, Count: 1})
		for _, arch := range exeArches(t, g.exe) {
			info := archInfo(arch)
			if info == nil {
				continue
			}
			// The lock's rename (rename where the architecture has it), its owner's pid and
			// the index's symlink check.
			for _, alts := range [][]string{{"rename", "renameat", "renameat2"}, {"getpid"}, {"readlink", "readlinkat"}} {
				for _, name := range alts {
					if nr, ok := info.SyscallNames[name]; ok {
						calls = append(calls, trace.SyscallCount{Exe: g.exe, Arch: arch, Name: name, Nr: nr, Count: 1})
						break
					}
				}
			}
		}
		msgs = append(msgs, fmt.Sprintf("%s reads the index of %s, a work tree the run writes: its index refresh (index.lock renamed over index) is held, met or not", g.exe, g.dir))
	}
	if len(files) == 0 {
		return t, nil
	}
	c := *t
	c.Files = append(slices.Clip(t.Files), files...)
	c.Syscalls = append(slices.Clip(t.Syscalls), calls...)
	return &c, msgs
}

// exeArches are the architectures exe made syscalls through in t.
func exeArches(t *trace.Trace, exe string) []string {
	var as []string
	for _, c := range t.Syscalls {
		if c.Exe == exe && c.Count > 0 && !slices.Contains(as, c.Arch) {
			as = append(as, c.Arch)
		}
	}
	return as
}
