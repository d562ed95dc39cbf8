package synth

import (
	"fmt"
	"strings"

	"github.com/sysprof/sysprof/paths"
	"github.com/sysprof/sysprof/trace"
)

// passToolState grants each tool-state file (paths.ToolStates) the command touched as one write
// rule, and the directory its sqlite writer syncs as a list rule, whether this run wrote it or
// only read it: its tool rewrites it on a clock (cargo's last-use database when new and about
// once a day), so a run a day later writes what the learn run did not, and a run right after
// writes less. Read back, a rule the pattern covers brings the same rules (unless
// Options.Exact). The exact rules it covers go in the coverage pass.
func (s *state) passToolState() []string {
	if s.opts.Exact {
		return nil
	}
	provs := s.exeProvs()
	// The observations, once for all the patterns: any access, even a failed probe (the tool
	// looks for it). A path is tested only when its first byte is one a pattern's directory
	// starts with (a $VAR: most observations are absolute paths).
	n := len(paths.ToolStates)
	dirs := make([]string, n)
	var first [256]bool
	for i, ts := range paths.ToolStates {
		dirs[i] = coverDir(ts.Files)
		if dirs[i] == "" || dirs[i] == "/" {
			first = [256]bool{}
			for b := range first {
				first[b] = true
			}
			break
		}
		first[dirs[i][0]] = true
	}
	prs := make([]prov, n)
	touches := make([]bool, n)
	for _, f := range s.files {
		if f.path != "" && !first[f.path[0]] {
			continue
		}
		for i, ts := range paths.ToolStates {
			if underDir(dirs[i], f.path) && paths.Covers(ts.Files, f.path) {
				prs[i] = earliest(prs[i], provs[f.exe])
				touches[i] = true
			}
		}
	}
	var msgs []string
	for i, ts := range paths.ToolStates {
		pr, touched, dir := prs[i], touches[i], dirs[i]
		for _, set := range []*ruleSet{s.read, s.write, s.list} {
			set.under(dir, func(p string, r *pathRule) {
				if paths.Covers(ts.Files, p) {
					pr = earliest(pr, r.prov)
					touched = true
				}
			})
		}
		if !touched {
			continue
		}
		target, note := writeTarget(ts.Files, trace.AccessWrite, false, s.storeSet)
		if target == "" {
			continue
		}
		if note == "" {
			note = ts.Why
		}
		var added []string
		if r := s.write.get(target); r == nil {
			s.write.set(target, &pathRule{prov: pr, note: note, files: 1})
			added = append(added, "write "+target)
		} else if r.note == "" || target == ts.Files {
			r.note = note
		}
		if ts.Dir != "" && s.list.get(ts.Dir) == nil {
			s.list.set(ts.Dir, &pathRule{prov: pr, note: ts.Why, files: 1})
			added = append(added, "list "+ts.Dir)
		}
		if len(added) > 0 {
			msgs = append(msgs, fmt.Sprintf("+ %s (%s: written or not by the time since its last run)", strings.Join(added, ", "), ts.Why))
		}
	}
	return msgs
}

// coverDir is the literal directory every path pat covers is at or below: its components
// before the first one with a glob (which match only themselves), or pat when it has none.
// The passes test Covers only on the paths under it, not on every observation and rule.
func coverDir(pat string) string {
	g := strings.IndexAny(pat, "*?[")
	if g < 0 {
		return pat
	}
	return pat[:max(strings.LastIndexByte(pat[:g], '/'), 0)]
}

// underDir reports whether p is dir or below it ("" and "/" hold everything).
func underDir(dir, p string) bool {
	if dir == "" || dir == "/" {
		return true
	}
	// The first byte first: most paths are absolute and most dirs a $VAR, or the other way.
	return len(p) >= len(dir) && p[0] == dir[0] && p[:len(dir)] == dir && (len(p) == len(dir) || p[len(dir)] == '/')
}
